"""Strip-mining for `convert-tile-to-cpu`: elementwise 1-D kernels, and 1-D
"row" kernels with reductions.

The strip width is a few SIMD registers' worth of lanes (`strip_width`: four
registers of 32-bit lanes, from `target.vector_bytes`), so values stay in
registers and LLVM compiles small vectors instead of tile-wide ones.

*Elementwise* (`lower_elementwise`): a body that is straight-line elementwise
work on one 1-D tile shape becomes its scalar ops, then one `scf.for` over
chunks of the strip width holding every tile op; vector stores are
non-temporal there (`lw.streaming`, see memory.py).

*Rows* (`lower_rows`): a body that is such work plus full reductions of such
tiles to scalars (softmax, LayerNorm, ...) is split into *stages*: stage 0 is
everything that needs no reduction result; a reduction's result is available
from the next stage on.  Each stage becomes one strip-mined `scf.for`:

* a reduction in stage s accumulates lane-wise into a `vector<W>` loop-carried
  value (started at the combine's identity) and finishes after the loop with
  the usual halving + `vector.reduction` (reduce.reduce_slab);
* a tile value of an earlier stage used in stage s is recomputed in the loop
  when that is cheap (range/splat/addptr/compares/selects/add-like arith and
  loads, the latter only if no earlier stage stored to memory), otherwise it is
  written to a stack buffer (an `llvm.alloca` of n lanes) in its own stage and
  read back per chunk (e.g. softmax's exp(x - max));
* scalar ops run between the loops, in program order within their stage;
* stores are plain `llvm.intr.masked.store`s (or `llvm.store`s when unmasked),
  never non-temporal: a row kernel's output is often read again soon, and
  non-temporal stores measured 1.15-1.6x slower per launch here even for rows
  far beyond the caches (softmax/LayerNorm, 64 and 4096 rows of 1024 fp32).

Per-lane program order of loads and stores is kept (a lane's load happens in
the same chunk before its store), which is what a GPU program guarantees too;
only the order of a reduction's combines changes (they are assumed
associative and commutative, as everywhere in tilec).
Rows apply only when every reduction has a single operand and a recognised
combine kind with an identity (add, mul, max/min, and/or/xor); otherwise the
kernel keeps the whole-tile lowering.
"""
from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith, llvm, scf

from tilec.dialects import tile
from tilec.passes.cpu.combine import Combiner
from tilec.passes.cpu.context import (Lowering, const_int, for_loop, int_attr, int_t, lane_ptr,
                                      splat, touches_tiles, zeros)
from tilec.passes.cpu.reduce import reduce_slab

# Registers of 32-bit lanes per strip-mined value.
STRIP_REGISTERS = 4
_STRIP_TILE_OPS = frozenset({"tile.range", "tile.addptr", "tile.load", "tile.store",
                             "tile.program_id", "tile.num_programs"})
# Tile ops cheap enough to recompute in a later stage rather than buffer.
_CHEAP = frozenset({"tile.range", "tile.addptr", "tile.load", "tensor.splat", "arith.constant",
                    "arith.addi", "arith.subi", "arith.muli", "arith.cmpi", "arith.cmpf",
                    "arith.select", "arith.addf", "arith.subf", "arith.mulf", "arith.andi",
                    "arith.ori", "arith.extf", "arith.truncf", "arith.extsi", "arith.extui",
                    "arith.sitofp", "arith.maxnumf", "arith.minnumf"})
# Longest chain of cheap ops recomputed for one value.
MAX_RECOMPUTE = 12


def strip_width(lw: Lowering) -> int:
    return STRIP_REGISTERS * lw.vector_bytes // 4


def _is_chunkable_op(name: str) -> bool:
    """Ops that act elementwise on 1-D tiles, so a tile can be processed in chunks."""
    return name.startswith(("arith.", "math.")) or name in _STRIP_TILE_OPS or \
        name in ("tensor.splat", "func.return")


def _chunkable_length(op: ir.Operation, n: int | None) -> int | None:
    """The common 1-D tile length of `op` and the ops before it (`n`): None when
    no tile is involved yet, -1 when `op` breaks the pattern (a 2-D tile, a
    different length, a scalar load or store)."""
    if op.name in ("tile.load", "tile.store") and not touches_tiles(op):
        return -1
    for v in list(op.results) + list(op.operands):
        if isinstance(v.type, ir.RankedTensorType):
            shape = tile.shape_of(v.type)
            if len(shape) != 1 or (n is not None and shape[0] != n):
                return -1
            n = shape[0]
    return n


def _strip_minable(lw: Lowering, n: int | None) -> bool:
    w = strip_width(lw)
    return n is not None and n > w and n % w == 0


# ---------------------------------------------------------------- elementwise

def lower_elementwise(lw: Lowering, block: ir.Block) -> bool:
    """Lower `block` strip-mined if it is purely elementwise over one 1-D tile
    shape (no control flow, broadcasts or scalar memory accesses); False
    (nothing emitted) if not."""
    n = None
    for view in block.operations:
        op = view.operation
        if len(op.regions) or not _is_chunkable_op(op.name):
            return False
        n = _chunkable_length(op, n)
        if n == -1:
            return False
    if not _strip_minable(lw, n):
        return False
    assert n is not None
    # Scalar ops first (they never depend on tiles here), then every tile op
    # inside one loop over chunks.
    ops = [v.operation for v in block.operations]
    is_tile = [touches_tiles(op) for op in ops]
    for op, t in zip(ops, is_tile):
        if not t and op.name != "func.return":
            lw.lower_op(op)
    w = strip_width(lw)
    with lw.src.location:
        loop = for_loop(n, w)
    with ir.InsertionPoint(loop.body):
        lw.width, lw.chunk_start = w, loop.induction_variable
        lw.streaming = True
        for op, t in zip(ops, is_tile):
            if t:
                lw.lower_op(op)
        with lw.src.location:
            scf.YieldOp([])
    lw.width, lw.chunk_start = None, None
    lw.streaming = False
    lw.lower_op(ops[-1])  # func.return
    return True


# ---------------------------------------------------------------- rows

def _identity(kind: str, t: ir.Type) -> ir.Attribute | None:
    if isinstance(t, ir.FloatType):
        v = {"add": -0.0, "mul": 1.0, "maxnumf": math.nan, "minnumf": math.nan,
             "maximumf": -math.inf, "minimumf": math.inf}.get(kind)
        return None if v is None else ir.FloatAttr.get(t, v)
    if isinstance(t, ir.IntegerType):
        w = ir.IntegerType(t).width
        iv = {"add": 0, "mul": 1, "or": 0, "xor": 0, "and": -1, "maxui": 0, "minui": -1,
              "maxsi": -(1 << (w - 1)), "minsi": (1 << (w - 1)) - 1}.get(kind)
        return None if iv is None else ir.IntegerAttr.get(t, iv)
    return None


class _Plan:
    def __init__(self, ops: list[ir.Operation], n: int) -> None:
        self.ops = ops
        self.n = n
        self.op_stage: dict[int, int] = {}
        self.val_stage: dict[ir.Value, int] = {}
        self.defs: dict[ir.Value, int] = {}   # value -> index of its defining op


def _plan(lw: Lowering, block: ir.Block) -> _Plan | None:
    ops = [v.operation for v in block.operations]
    n = None
    has_reduce = False
    for op in ops:
        name = op.name
        if len(op.regions):
            return None
        if name == "tile.reduce":
            if len(op.operands) != 1 or len(op.results) != 1 or int_attr(op, "axis") != 0:
                return None
            comb = Combiner(op)
            et = tile.element_type(op.operands[0].type)
            if comb.kind is None or _identity(comb.kind, et) is None:
                return None
            has_reduce = True
        elif not _is_chunkable_op(name):
            return None
        n = _chunkable_length(op, n)
        if n == -1:
            return None
    if not has_reduce or not _strip_minable(lw, n):
        return None
    assert n is not None
    plan = _Plan(ops, n)
    for k, op in enumerate(ops):
        s = max((plan.val_stage.get(v, 0) for v in op.operands), default=0)
        plan.op_stage[k] = s
        for r in op.results:
            plan.val_stage[r] = s + 1 if op.name == "tile.reduce" else s
            plan.defs[r] = k
    return plan


def _is_tile(v: ir.Value) -> bool:
    return isinstance(v.type, ir.RankedTensorType)


def lower_rows(lw: Lowering, block: ir.Block) -> bool:
    """Lower `block` staged and strip-mined if it qualifies; False (nothing emitted) if not."""
    plan = _plan(lw, block)
    if plan is None:
        return False
    _Staged(lw, plan).emit()
    return True


class _Staged:
    def __init__(self, lw: Lowering, plan: _Plan) -> None:
        self.lw = lw
        self.p = plan
        self.ops = plan.ops
        self.width = strip_width(lw)
        self.is_tile = [touches_tiles(op) for op in self.ops]
        self.nstages = 1 + max((plan.op_stage[k] for k, t in enumerate(self.is_tile) if t),
                               default=0)
        self.store_stages = {plan.op_stage[k] for k, op in enumerate(self.ops)
                             if op.name == "tile.store"}
        self.buffers: dict[ir.Value, ir.Value] = {}

    def recomputable(self, v: ir.Value, stage: int, budget: list[int]) -> bool:
        k = self.p.defs.get(v)
        if k is None:
            return True  # a block argument (scalar)
        op = self.ops[k]
        if not _is_tile(v):
            return True  # scalars are computed between the loops
        if op.name not in _CHEAP:
            return False
        if op.name == "tile.load" and any(s < stage for s in self.store_stages):
            return False
        budget[0] -= 1
        if budget[0] < 0:
            return False
        return all(self.recomputable(o, stage, budget) for o in op.operands)

    def slice_of(self, v: ir.Value, out: set[int]) -> None:
        k = self.p.defs.get(v)
        if k is None or not _is_tile(v) or k in out:
            return
        out.add(k)
        for o in self.ops[k].operands:
            self.slice_of(o, out)

    def emit(self) -> None:
        lw, p = self.lw, self.p
        # Which tile values cross stages, and how they get there.
        needs: list[tuple[set[int], list[ir.Value]]] = []   # per stage: ops to emit, buffers to read
        to_buffer: set[ir.Value] = set()
        for s in range(self.nstages):
            emit_ops = {k for k, t in enumerate(self.is_tile) if t and p.op_stage[k] == s}
            reads: list[ir.Value] = []
            for k in sorted(emit_ops):
                for v in self.ops[k].operands:
                    if not _is_tile(v) or v not in p.defs or p.val_stage[v] >= s:
                        continue
                    if self.recomputable(v, s, [MAX_RECOMPUTE]):
                        self.slice_of(v, emit_ops)
                    elif v not in reads:
                        reads.append(v)
                        to_buffer.add(v)
            needs.append((emit_ops, reads))
        with lw.src.location:
            for v in sorted(to_buffer, key=lambda x: p.defs[x]):
                count = const_int(int_t(64), p.n)
                self.buffers[v] = llvm.AllocaOp(lw.llvm_ptr, count, self.buffer_elem(v),
                                                alignment=lw.vector_bytes).result
        for s in range(self.nstages):
            for k, op in enumerate(self.ops):
                if not self.is_tile[k] and p.op_stage[k] == s and op.name != "func.return":
                    lw.lower_op(op)
            emit_ops, reads = needs[s]
            if emit_ops:
                self.loop(sorted(emit_ops), reads)
        lw.lower_op(self.ops[-1])  # func.return

    def buffer_elem(self, v: ir.Value) -> ir.Type:
        """Booleans are buffered as bytes."""
        et = tile.element_type(v.type)
        if isinstance(et, ir.IntegerType) and ir.IntegerType(et).width == 1:
            return int_t(8)
        return self.lw.scalar(et)

    def loop(self, order: list[int], reads: list[ir.Value]) -> None:
        """One strip-mined loop over the ops `order`, reading the buffers of `reads`.
        Buffers are aligned to the SIMD width and chunks start at multiples of
        the strip width (at least one register of bytes), so every chunk access
        is register-aligned."""
        lw, p, w = self.lw, self.p, self.width
        reduces = [k for k in order if self.ops[k].name == "tile.reduce"]
        combs = {k: Combiner(self.ops[k]) for k in reduces}
        with lw.src.location:
            inits = []
            for k in reduces:
                et = tile.element_type(self.ops[k].operands[0].type)
                ident = _identity(combs[k].kind or "", et)
                assert ident is not None
                inits.append(splat(ir.VectorType.get([w], et), ident))
            loop = for_loop(p.n, w, inits)
        with ir.InsertionPoint(loop.body):
            lw.width, lw.chunk_start = w, loop.induction_variable
            accs = dict(zip(reduces, list(loop.inner_iter_args)))
            for v in reads:
                with lw.src.location:
                    et = self.buffer_elem(v)
                    vt = ir.VectorType.get([w], et)
                    val = llvm.LoadOp(vt, self._chunk_ptr(v), alignment=lw.vector_bytes).result
                    if et != lw.scalar(tile.element_type(v.type)):
                        val = arith.CmpIOp(arith.CmpIPredicate.ne, val, zeros(vt)).result
                lw.bind(v, val)
            for k in order:
                op = self.ops[k]
                if op.name == "tile.reduce":
                    with op.location:
                        accs[k] = combs[k]([accs[k]], [lw.mapped(op.operands[0])])[0]
                    continue
                lw.lower_op(op)
                for r in op.results:
                    if r in self.buffers:
                        with op.location:
                            self.store_buffer(r)
            with lw.src.location:
                scf.YieldOp([accs[k] for k in reduces])
        lw.width, lw.chunk_start = None, None
        for n, k in enumerate(reduces):
            op = self.ops[k]
            with op.location:
                lw.bind(op.results[0], reduce_slab(lw, combs[k], [loop.results[n]], w, 1)[0])

    def _chunk_ptr(self, v: ir.Value) -> ir.Value:
        assert self.lw.chunk_start is not None
        return lane_ptr(self.buffers[v], self.lw.chunk_start, self.buffer_elem(v))

    def store_buffer(self, v: ir.Value) -> None:
        lw = self.lw
        val = lw.mapped(v)
        et = self.buffer_elem(v)
        if et != lw.scalar(tile.element_type(v.type)):
            val = arith.ExtUIOp(ir.VectorType.get([self.width], et), val).result
        llvm.StoreOp(val, self._chunk_ptr(v), alignment=lw.vector_bytes)
