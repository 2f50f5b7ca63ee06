"""Strip-mining of 1-D "row" kernels with reductions for `convert-tile-to-cpu`.

A kernel body that is straight-line elementwise work on one 1-D tile shape (n)
plus full reductions of such tiles to scalars (softmax, LayerNorm, ...) is
split into *stages*: stage 0 is everything that needs no reduction result; a
reduction's result is available from the next stage on.  Each stage becomes
one `scf.for` over chunks of `STRIP_WIDTH` lanes, so every value lives in a few
SIMD registers instead of an n-wide vector that LLVM spills (and compiles
slowly):

* a reduction in stage s accumulates lane-wise into a `vector<W>` loop-carried
  value (started at the combine's identity) and finishes after the loop with
  the usual halving + `vector.reduction` (lower_reduce_cpu._reduce_slab);
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
Applies only when every reduction has a single operand and a recognised
combine kind with an identity (add, mul, max/min, and/or/xor); otherwise the
kernel keeps the whole-tile lowering.
"""
from __future__ import annotations

import math

from mlir import ir

from tilec.dialects import tile
from tilec.passes.cpu import STRIP_WIDTH, _Lowering, _touches_tiles, \
    chunkable_length, is_chunkable_op

# Tile ops cheap enough to recompute in a later stage rather than buffer.
_CHEAP = frozenset({"tile.range", "tile.addptr", "tile.load", "tensor.splat", "arith.constant",
                    "arith.addi", "arith.subi", "arith.muli", "arith.cmpi", "arith.cmpf",
                    "arith.select", "arith.addf", "arith.subf", "arith.mulf", "arith.andi",
                    "arith.ori", "arith.extf", "arith.truncf", "arith.extsi", "arith.extui",
                    "arith.sitofp", "arith.maxnumf", "arith.minnumf"})
# Longest chain of cheap ops recomputed for one value.
MAX_RECOMPUTE = 12
# Stack buffers are 64-byte aligned and chunks start at multiples of STRIP_WIDTH
# lanes (at least 64 bytes), so every chunk access is 64-byte aligned.
_BUF_ALIGN = 64


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


def _plan(lw: _Lowering, block: ir.Block) -> _Plan | None:
    from tilec.passes.lower_reduce_cpu import _Combiner
    ops = [v.operation for v in block.operations]
    n = None
    has_reduce = False
    for op in ops:
        name = op.name
        if len(op.regions):
            return None
        if name == "tile.reduce":
            if len(op.operands) != 1 or len(op.results) != 1 or \
                    ir.IntegerAttr(op.attributes["axis"]).value != 0:
                return None
            comb = _Combiner(lw, op)
            et = tile.element_type(op.operands[0].type)
            if comb.kind is None or _identity(comb.kind, et) is None:
                return None
            has_reduce = True
        elif not is_chunkable_op(name):
            return None
        n = chunkable_length(op, n)
        if n == -1:
            return None
    if not has_reduce or n is None or n <= STRIP_WIDTH or n % STRIP_WIDTH:
        return None
    plan = _Plan(ops, n)
    for i, op in enumerate(ops):
        s = max((plan.val_stage.get(v, 0) for v in op.operands), default=0)
        plan.op_stage[i] = s
        for r in op.results:
            plan.val_stage[r] = s + 1 if op.name == "tile.reduce" else s
            plan.defs[r] = i
    return plan


def _is_tile(v: ir.Value) -> bool:
    return isinstance(v.type, ir.RankedTensorType)


def try_lower(lw: _Lowering, block: ir.Block) -> bool:
    """Lower `block` staged and strip-mined if it qualifies; False (nothing emitted) if not."""
    plan = _plan(lw, block)
    if plan is None:
        return False
    _Staged(lw, plan).emit()
    return True


class _Staged:
    def __init__(self, lw: _Lowering, plan: _Plan) -> None:
        self.lw = lw
        self.p = plan
        self.ops = plan.ops
        self.is_tile = [_touches_tiles(op) for op in self.ops]
        self.nstages = 1 + max((plan.op_stage[i] for i, t in enumerate(self.is_tile) if t),
                               default=0)
        self.store_stages = {plan.op_stage[i] for i, op in enumerate(self.ops)
                             if op.name == "tile.store"}
        self.buffers: dict[ir.Value, ir.Value] = {}

    def recomputable(self, v: ir.Value, stage: int, budget: list[int]) -> bool:
        i = self.p.defs.get(v)
        if i is None:
            return True  # a block argument (scalar)
        op = self.ops[i]
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
        i = self.p.defs.get(v)
        if i is None or not _is_tile(v) or i in out:
            return
        out.add(i)
        for o in self.ops[i].operands:
            self.slice_of(o, out)

    def emit(self) -> None:
        lw, p = self.lw, self.p
        # Which tile values cross stages, and how they get there.
        needs: list[tuple[set[int], list[ir.Value]]] = []   # per stage: ops to emit, buffers to read
        to_buffer: set[ir.Value] = set()
        for s in range(self.nstages):
            emit_ops = {i for i, t in enumerate(self.is_tile) if t and p.op_stage[i] == s}
            reads: list[ir.Value] = []
            for i in sorted(emit_ops):
                for v in self.ops[i].operands:
                    if not _is_tile(v) or v not in p.defs or p.val_stage[v] >= s:
                        continue
                    if self.recomputable(v, s, [MAX_RECOMPUTE]):
                        self.slice_of(v, emit_ops)
                    elif v not in reads:
                        reads.append(v)
                        to_buffer.add(v)
            needs.append((emit_ops, reads))
        i64 = ir.IntegerType.get_signless(64)
        lw.loc = lw.src.location
        for v in sorted(to_buffer, key=lambda x: p.defs[x]):
            et = self.buffer_elem(v)
            count = lw.const_int(i64, p.n)
            self.buffers[v] = lw.make("llvm.alloca", [lw.llvm_ptr], [count], {
                "elem_type": ir.TypeAttr.get(et), "alignment": lw.i64(_BUF_ALIGN)}).result
        for s in range(self.nstages):
            for i, op in enumerate(self.ops):
                if not self.is_tile[i] and p.op_stage[i] == s and op.name != "func.return":
                    lw.lower_op(op)
            emit_ops, reads = needs[s]
            if emit_ops:
                self.loop(sorted(emit_ops), reads)
        lw.lower_op(self.ops[-1])  # func.return

    def buffer_elem(self, v: ir.Value) -> ir.Type:
        et = tile.element_type(v.type)
        if isinstance(et, ir.IntegerType) and ir.IntegerType(et).width == 1:
            return ir.IntegerType.get_signless(8)
        return lw_scalar(self.lw, et)

    def lane_ptr(self, buf: ir.Value, et: ir.Type) -> ir.Value:
        lw = self.lw
        assert lw.chunk_start is not None
        return lw.make("llvm.getelementptr", [lw.llvm_ptr], [buf, lw.chunk_start], {
            "rawConstantIndices": ir.DenseI32ArrayAttr.get([-2 ** 31]),
            "elem_type": ir.TypeAttr.get(et)}).result

    def loop(self, order: list[int], reads: list[ir.Value]) -> None:
        from tilec.passes.lower_reduce_cpu import _Combiner, _reduce_slab
        lw, p = self.lw, self.p
        w = STRIP_WIDTH
        i32 = ir.IntegerType.get_signless(32)
        reduces = [i for i in order if self.ops[i].name == "tile.reduce"]
        combs = {i: _Combiner(lw, self.ops[i]) for i in reduces}
        lw.loc = lw.src.location
        inits = []
        for i in reduces:
            et = tile.element_type(self.ops[i].operands[0].type)
            vt = ir.VectorType.get([w], et)
            ident = _identity(combs[i].kind or "", et)
            assert ident is not None
            inits.append(lw.make("arith.constant", [vt], [], {
                "value": ir.DenseElementsAttr.get_splat(vt, ident)}).result)
        loop = lw.make("scf.for", [v.type for v in inits],
                       [lw.const_int(i32, 0), lw.const_int(i32, p.n), lw.const_int(i32, w)] +
                       inits, regions=1)
        body = loop.regions[0].blocks.append(i32, *[v.type for v in inits])
        saved = lw.ip
        lw.ip = ir.InsertionPoint(body)
        lw.width, lw.chunk_start = w, body.arguments[0]
        accs = dict(zip(reduces, list(body.arguments)[1:]))
        for v in reads:
            lw.loc = lw.src.location
            et = self.buffer_elem(v)
            vt = ir.VectorType.get([w], et)
            val = lw.make("llvm.load", [vt], [self.lane_ptr(self.buffers[v], et)],
                          {"alignment": lw.i64(_BUF_ALIGN)}).result
            if et != lw_scalar(lw, tile.element_type(v.type)):
                val = lw.make("arith.cmpi", [lw.convert(v.type)], [val, lw.zeros(vt)],
                              {"predicate": lw.i64(1)}).result
            lw.bind(v, val)
        for i in order:
            op = self.ops[i]
            lw.loc = op.location
            if op.name == "tile.reduce":
                accs[i] = combs[i]([accs[i]], [lw.mapped(op.operands[0])])[0]
                continue
            lw.lower_op(op)
            for r in op.results:
                if r in self.buffers:
                    self.store_buffer(r)
        lw.loc = lw.src.location
        lw.make("scf.yield", [], [accs[i] for i in reduces])
        lw.width, lw.chunk_start = None, None
        lw.ip = saved
        for k, i in enumerate(reduces):
            op = self.ops[i]
            lw.loc = op.location
            lw.bind(op.results[0], _reduce_slab(lw, combs[i], [loop.results[k]], w, 1)[0])

    def store_buffer(self, v: ir.Value) -> None:
        lw = self.lw
        val = lw.mapped(v)
        et = self.buffer_elem(v)
        if et != lw_scalar(lw, tile.element_type(v.type)):
            val = lw.make("arith.extui", [ir.VectorType.get([STRIP_WIDTH], et)], [val]).result
        lw.make("llvm.store", [], [val, self.lane_ptr(self.buffers[v], et)],
                {"alignment": lw.i64(_BUF_ALIGN)})


def lw_scalar(lw: _Lowering, t: ir.Type) -> ir.Type:
    return lw.scalar(t)
