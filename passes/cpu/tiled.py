"""Big 2-D tiles for `convert-tile-to-cpu`: tiles kept in stack buffers, ops as
loops over register-sized chunks.

A tile of a few thousand elements as one flat vector makes LLVM's code
generation take minutes (a 128 x 128 x 64 matmul tile) and spills anyway.
For a kernel with a 2-D tile of more than `BIG` elements (and no `scf.while`
carrying one), every tile of more than `BIG` elements lives instead in a
stack buffer (an `llvm.alloca` in the entry block, aligned to the SIMD width;
booleans one byte each), and each op touching one is lowered here:

| op | form |
|---|---|
| elementwise (`arith`/`math`, `tile.load`/`store`/`addptr`/`range`, `tensor.splat`, splat constants, int<->ptr casts) | one `scf.for` over chunks of up to `strip_width` lanes: operand chunks loaded from their buffers, the op's usual rule on `vector<W>` values (`lw.width`, `lw.chunk_start`), the result chunk stored.  The result reuses an operand's buffer when that operand is dead after the op (an accumulator or a pointer tile updated in a loop). |
| `tile.expand_dims`, `tile.reshape` | the source's buffer (row-major data is unchanged). |
| `tile.broadcast` | a chunk loop; each chunk (within one row) reads one source lane splat, or a contiguous source run. |
| `tile.trans` | a chunk loop of `llvm.intr.masked.gather`s down the source's columns. |
| `tile.restride` | a contiguous run of the sources: a view into the one source's buffer, or `memcpy`s from both; otherwise a chunk loop of loads (last view stride 1) or gathers from the sources' elements (two sources: copied into one buffer first).  A whole-tile `vector.shuffle` of a 3-D dot's 8192 f16 elements took LLVM minutes. |
| `tile.dot` | the register-blocked microkernel (microkernel.py) on the buffers, in place over the accumulator when it is dead after the dot. |
| `scf.for` carrying big tiles | one carry buffer per big iter_arg (the init's own when it is dead after the loop, else a copy); the yield copies into it unless the value was computed in place; the results are the carry buffers. |
| `scf.if` yielding big tiles | a result buffer per big result, filled by each branch's yield. |
| anything else | the op's usual rule on whole vectors loaded from the buffers (results stored back). |

Tiles of at most `BIG` elements (the usual 1-D offsets and masks, (M, 1) columns)
stay vectors, lowered as before.

Nearest upstream analogue: one-shot bufferization followed by `scf` tiling
of elementwise `linalg` ops.
"""
from __future__ import annotations

import math
from typing import Callable, Iterator

from mlir import ir
from mlir.dialects import arith, llvm, scf, vector

from tilec.dialects import tile
from tilec.dialects import tile_elements as el
from tilec.passes.cpu import microkernel
from tilec.passes.cpu.context import (GEP_DYNAMIC, Lowering, all_true, const_int, entry_alloca,
                                      for_loop, int_t, is_bool, lane_ptr, scalar_bytes)
from tilec.passes.cpu.rows import strip_width

BIG = 128   # tiles with more elements than this live in stack buffers
_ELEMENTWISE = frozenset({"tile.load", "tile.store", "tile.addptr", "tile.range", "tensor.splat",
                          "tile.int_to_ptr", "tile.ptr_to_int"})


def _count(t: ir.Type) -> int:
    return math.prod(tile.shape_of(t)) if isinstance(t, ir.RankedTensorType) else 0


def _big(t: ir.Type) -> bool:
    return _count(t) > BIG


def _walk(block: ir.Block) -> Iterator[ir.Operation]:
    for view in block.operations:
        op = view.operation
        yield op
        for region in op.regions:
            for b in region.blocks:
                yield from _walk(b)


def applies(block: ir.Block) -> bool:
    """Whether the kernel body `block` has a big 2-D tile and nothing this
    lowering cannot carry (an `scf.while` with a big tile)."""
    found = False
    for op in _walk(block):
        values = list(op.results) + list(op.operands)
        if op.name == "scf.while" and any(_big(v.type) for v in values):
            return False
        found = found or any(_big(v.type) and len(tile.shape_of(v.type)) >= 2 for v in values)
    return found


def lower_tiled(lw: Lowering, block: ir.Block) -> bool:
    """Lower the kernel body `block` with big tiles in buffers, if it `applies`."""
    if not applies(block):
        return False
    lw.intercept = Tiled(lw).lower_op
    try:
        lw.lower_block(block)
    finally:
        lw.intercept = None
    return True


class Tiled:
    """The buffers of one kernel's big tiles, and the rules that use them."""

    def __init__(self, lw: Lowering) -> None:
        self.lw = lw
        self.buf: dict[ir.Value, ir.Value] = {}
        self.shared: set[ir.Value] = set()    # buffers that several live tiles hold
        self.yields: dict[ir.Operation, list[ir.Value | None]] = {}
        self.order: dict[ir.Operation, int] = {}
        self.width = strip_width(lw)

    # ---------------------------------------------------------------- types and buffers
    def mem_elem(self, t: ir.Type) -> ir.Type:
        """The in-memory element type of tile type `t` (a byte per boolean)."""
        et = self.lw.scalar(tile.element_type(t))
        return int_t(8) if isinstance(et, ir.IntegerType) and ir.IntegerType(et).width == 1 else et

    def alloc(self, t: ir.Type) -> ir.Value:
        return entry_alloca(self.lw, self.mem_elem(t), _count(t))

    def load_chunk(self, v: ir.Value, at: ir.Value, w: int,
                   buf: ir.Value | None = None) -> ir.Value:
        """`w` lanes of tile `v` (from `buf`, by default its buffer) from lane
        `at` on, as a vector of its type."""
        me = self.mem_elem(v.type)
        raw = llvm.LoadOp(ir.VectorType.get([w], me),
                          lane_ptr(buf if buf is not None else self.buf[v], at, me),
                          alignment=scalar_bytes(me)).result
        if me == self.lw.scalar(tile.element_type(v.type)):
            return raw
        return arith.TruncIOp(ir.VectorType.get([w], int_t(1)), raw).result

    def store_chunk(self, buf: ir.Value, value: ir.Value, at: ir.Value) -> None:
        if is_bool(value.type):
            value = arith.ExtUIOp(ir.VectorType.get(ir.VectorType(value.type).shape, int_t(8)),
                                  value).result
        me = ir.VectorType(value.type).element_type
        llvm.StoreOp(value, lane_ptr(buf, at, me), alignment=scalar_bytes(me))

    def buffer_of(self, v: ir.Value) -> ir.Value:
        """The buffer of tile `v`; a small tile is stored to a fresh one here."""
        if v in self.buf:
            return self.buf[v]
        b = self.alloc(v.type)
        self.store_chunk(b, self.lw.mapped(v), const_int(int_t(32), 0))
        return b

    def copy(self, dst: ir.Value, src: ir.Value, t: ir.Type) -> None:
        size = _count(t) * scalar_bytes(self.mem_elem(t))
        n = llvm.ConstantOp(int_t(64), ir.IntegerAttr.get(int_t(64), size)).result
        llvm.MemcpyOp(dst, src, n, False)

    # ---------------------------------------------------------------- liveness
    def _position(self, op: ir.Operation) -> int:
        if op not in self.order:
            for k, view in enumerate(op.block.operations):
                self.order[view.operation] = k
        return self.order[op]

    def reusable(self, v: ir.Value, op: ir.Operation) -> bool:
        """Whether `op` may overwrite the buffer of big tile `v`: `v` is defined
        in `op`'s block, holds its buffer alone, and nothing reads it after
        `op` (nor inside `op`'s regions)."""
        if v not in self.buf or self.buf[v] in self.shared:
            return False
        block = op.block
        owner = v.owner
        home = owner if isinstance(owner, ir.Block) else owner.operation.block
        if home != block:
            return False
        pos = self._position(op)
        for use in v.uses:
            user = use.owner.operation
            if user == op:
                continue
            while user.block != block:
                parent = user.parent
                if parent is None:
                    return False
                user = parent.operation
            if user == op or self._position(user) > pos:
                return False
        return True

    # ---------------------------------------------------------------- dispatch
    def lower_op(self, op: ir.Operation) -> None:
        name = op.name
        results = list(op.results)
        if name == "scf.yield" and op in self.yields:
            return self._yield(op, self.yields.pop(op))
        with op.location:
            if name == "scf.for" and any(_big(r.type) for r in results):
                return self._for(op)
            if name == "scf.if" and any(_big(r.type) for r in results):
                return self._if(op)
            if name == "tile.dot":
                return self._dot(op)
            if not any(v in self.buf for v in op.operands) and \
                    not any(_big(r.type) for r in results):
                return self.lw.apply_rule(op)
            if name in ("tile.expand_dims", "tile.reshape"):
                src = self.buffer_of(op.operands[0])
                self.buf[op.result] = src
                self.shared.add(src)
                return None
            if name == "tile.broadcast":
                return self._broadcast(op)
            if name == "tile.trans":
                return self._trans(op)
            if name == "tile.restride":
                return self._restride(op)
            if _is_elementwise(op):
                return self._elementwise(op)
            return self._whole(op)

    # ---------------------------------------------------------------- chunk loops
    def _chunks(self, n: int, w: int, body: Callable[[ir.Value], None]) -> None:
        loop = for_loop(n, w)
        with ir.InsertionPoint(loop.body):
            body(loop.induction_variable)
            scf.YieldOp([])

    def _result_buffer(self, op: ir.Operation, r: ir.Value,
                       candidates: list[ir.Value]) -> ir.Value:
        for v in candidates:
            if _count(v.type) == _count(r.type) and \
                    self.mem_elem(v.type) == self.mem_elem(r.type) and self.reusable(v, op):
                return self.buf[v]
        return self.alloc(r.type)

    def _elementwise(self, op: ir.Operation) -> None:
        lw = self.lw
        tiles = [v for v in list(op.results) + list(op.operands)
                 if isinstance(v.type, ir.RankedTensorType)]
        n = _count(tiles[0].type)
        w = math.gcd(self.width, n)
        ins = [v for v in dict.fromkeys(op.operands) if isinstance(v.type, ir.RankedTensorType)]
        in_bufs = [self.buffer_of(v) for v in ins]    # (all big: they have the result's shape)
        outs = [(r, self._result_buffer(op, r, ins)) for r in op.results]

        def body(at: ir.Value) -> None:
            for v, b in zip(ins, in_bufs):
                lw.bind(v, self.load_chunk(v, at, w, b))
            lw.width, lw.chunk_start = w, at
            try:
                lw.apply_rule(op)
            finally:
                lw.width, lw.chunk_start = None, None
            for r, b in outs:
                self.store_chunk(b, lw.mapped(r), at)
                del lw.vmap[r]
            for v in ins:
                del lw.vmap[v]
        self._chunks(n, w, body)
        for r, b in outs:
            self.buf[r] = b

    def _broadcast(self, op: ir.Operation) -> None:
        src_v, res = op.operands[0], op.result
        src_shape, shape = tile.shape_of(src_v.type), tile.shape_of(res.type)
        src, out = self.buffer_of(src_v), self.alloc(res.type)
        me = self.mem_elem(res.type)
        i32 = int_t(32)
        w = math.gcd(self.width, shape[-1])
        strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
        src_strides = [math.prod(src_shape[d + 1:]) for d in range(len(shape))]

        def body(at: ir.Value) -> None:
            idx = const_int(i32, 0)
            for d in range(len(shape)):
                if src_shape[d] == 1:
                    continue
                c = arith.DivUIOp(at, const_int(i32, strides[d])).result if strides[d] > 1 else at
                if d:
                    c = arith.RemUIOp(c, const_int(i32, shape[d])).result
                if src_strides[d] > 1:
                    c = arith.MulIOp(c, const_int(i32, src_strides[d])).result
                idx = arith.AddIOp(idx, c).result
            vt = ir.VectorType.get([w], me)
            if src_shape[-1] == 1:
                one = llvm.LoadOp(me, lane_ptr(src, idx, me)).result
                chunk = vector.BroadcastOp(vt, one).result
            else:
                chunk = llvm.LoadOp(vt, lane_ptr(src, idx, me), alignment=scalar_bytes(me)).result
            llvm.StoreOp(chunk, lane_ptr(out, at, me), alignment=scalar_bytes(me))
        self._chunks(_count(res.type), w, body)
        self.buf[res] = out

    def _trans(self, op: ir.Operation) -> None:
        src_v, res = op.operands[0], op.result
        rows, cols = tile.shape_of(src_v.type)      # result: cols x rows
        src, out = self.buffer_of(src_v), self.alloc(res.type)
        me = self.mem_elem(res.type)
        i32 = int_t(32)
        w = math.gcd(self.width, rows)
        offsets = ", ".join(str(r * cols) for r in range(w))
        lane_t = ir.VectorType.get([w], i32)
        pt = ir.VectorType.get([w], self.lw.llvm_ptr)
        vt = ir.VectorType.get([w], me)

        def body(at: ir.Value) -> None:
            # out[j, i:i+w] = src[i:i+w, j], where at = j * rows + i
            j = arith.DivUIOp(at, const_int(i32, rows)).result
            i = arith.RemUIOp(at, const_int(i32, rows)).result
            first = arith.AddIOp(arith.MulIOp(i, const_int(i32, cols)).result, j).result
            chunk = _gather(pt, lane_t, vt, lane_ptr(src, first, me), offsets, me, w)
            llvm.StoreOp(chunk, lane_ptr(out, at, me), alignment=scalar_bytes(me))
        self._chunks(_count(res.type), w, body)
        self.buf[res] = out

    def _restride(self, op: ir.Operation) -> None:
        view, strides, offset = el.restride_params(op)
        res, srcs = op.result, list(op.operands)
        n, me, i32 = _count(res.type), self.mem_elem(res.type), int_t(32)
        bufs = [self.buffer_of(v) for v in srcs]
        starts = [0, _count(srcs[0].type)]
        if all(s == math.prod(view[d + 1:]) for d, s in enumerate(strides) if view[d] > 1):
            # The elements [offset, offset + n) of the sources in order.
            j = next((j for j, v in enumerate(srcs) if starts[j] <= offset and
                      offset + n <= starts[j] + _count(v.type)), None)
            if j is not None:   # within one source: a view into its buffer
                out = lane_ptr(bufs[j], const_int(i32, offset - starts[j]), me)
                self.shared.update((bufs[j], out))
            else:
                out = self.alloc(res.type)
                for v, b, start in zip(srcs, bufs, starts):
                    lo, hi = max(offset, start), min(offset + n, start + _count(v.type))
                    if lo < hi:
                        nbytes = llvm.ConstantOp(int_t(64), ir.IntegerAttr.get(
                            int_t(64), (hi - lo) * scalar_bytes(me))).result
                        llvm.MemcpyOp(lane_ptr(out, const_int(i32, lo - offset), me),
                                      lane_ptr(b, const_int(i32, lo - start), me), nbytes, False)
            return self._bind_result(res, out)
        src = bufs[0]
        if len(srcs) == 2:   # one buffer holding both sources in order
            src = self.alloc(ir.RankedTensorType.get([starts[1] + _count(srcs[1].type)], me))
            self.copy(src, bufs[0], srcs[0].type)
            self.copy(lane_ptr(src, const_int(i32, starts[1]), me), bufs[1], srcs[1].type)
        out = self.alloc(res.type)
        w = math.gcd(self.width, view[-1])
        lane_t, pt, vt = (ir.VectorType.get([w], t) for t in (i32, self.lw.llvm_ptr, me))
        lanes = ", ".join(str(k * strides[-1]) for k in range(w))

        def body(at: ir.Value) -> None:
            # out[at + k] = src[offset + sum(coord_d * strides[d]) + k * strides[-1]]
            first = const_int(i32, offset)
            for d in range(len(view)):
                c = arith.DivUIOp(at, const_int(i32, math.prod(view[d + 1:]))).result
                c = arith.RemUIOp(c, const_int(i32, view[d])).result if d else c
                step = arith.MulIOp(c, const_int(i32, strides[d])).result
                first = arith.AddIOp(first, step).result
            if strides[-1] == 1:
                chunk = llvm.LoadOp(vt, lane_ptr(src, first, me), alignment=scalar_bytes(me)).result
            else:
                chunk = _gather(pt, lane_t, vt, lane_ptr(src, first, me), lanes, me, w)
            llvm.StoreOp(chunk, lane_ptr(out, at, me), alignment=scalar_bytes(me))
        self._chunks(n, w, body)
        self._bind_result(res, out)

    def _bind_result(self, res: ir.Value, out: ir.Value) -> None:
        """Tile `res` is the contents of buffer `out` (loaded as a vector if small)."""
        if _big(res.type):
            self.buf[res] = out
        else:
            self.lw.bind(res, self.load_chunk(res, const_int(int_t(32), 0), _count(res.type), out))

    # ---------------------------------------------------------------- dot
    def _dot(self, op: ir.Operation) -> None:
        a, b, acc = op.operands
        m, k = tile.shape_of(a.type)
        n = tile.shape_of(b.type)[1]
        bufs = [self.buffer_of(v) for v in (a, b, acc)]
        if acc in self.buf and acc != a and acc != b and _big(op.result.type) and \
                self.reusable(acc, op):
            out = bufs[2]
        else:
            out = self.alloc(op.result.type)
        microkernel.emit(self.lw, bufs[0], bufs[1], bufs[2], out, (m, n, k),
                         self.lw.scalar(tile.element_type(a.type)),
                         self.lw.scalar(tile.element_type(op.result.type)))
        if _big(op.result.type):
            self.buf[op.result] = out
        else:
            vt = self.lw.convert(op.result.type)
            self.lw.bind(op.result, llvm.LoadOp(vt, out, alignment=self.lw.vector_bytes).result)

    # ---------------------------------------------------------------- whole vectors
    def _whole(self, op: ir.Operation) -> None:
        """`op`'s own rule on whole vectors loaded from the buffers."""
        lw = self.lw
        loaded = [v for v in dict.fromkeys(op.operands) if v in self.buf]
        zero = const_int(int_t(32), 0)
        for v in loaded:
            lw.bind(v, self.load_chunk(v, zero, _count(v.type)))
        lw.apply_rule(op)
        for v in loaded:
            del lw.vmap[v]
        for r in op.results:
            if _big(r.type):
                b = self.alloc(r.type)
                self.store_chunk(b, lw.mapped(r), zero)
                del lw.vmap[r]
                self.buf[r] = b

    # ---------------------------------------------------------------- control flow
    def _for(self, op: ir.Operation) -> None:
        lw = self.lw
        lb, ub, step = (lw.mapped(v) for v in list(op.operands)[:3])
        inits = list(op.operands)[3:]
        carries: list[ir.Value | None] = []
        for v, r in zip(inits, op.results):
            if not _big(r.type):
                carries.append(None)
                continue
            src = self.buffer_of(v)
            if (v in self.buf and self.reusable(v, op)
                    and not any(c is not None and c == src for c in carries)):
                carries.append(src)
            else:
                c = self.alloc(r.type)
                self.copy(c, src, r.type)
                carries.append(c)
        small = [lw.mapped(v) for v, c in zip(inits, carries) if c is None]
        new = scf.ForOp(lb, ub, step, small)
        body = op.regions[0].blocks[0]
        args = list(body.arguments)
        lw.bind(args[0], new.induction_variable)
        it = iter(new.inner_iter_args)
        for arg, c in zip(args[1:], carries):
            if c is None:
                lw.bind(arg, next(it))
            else:
                self.buf[arg] = c
        self.yields[list(body.operations)[-1].operation] = carries
        with ir.InsertionPoint(new.body):
            lw.lower_block(body)
        res = iter(new.results)
        for r, c in zip(op.results, carries):
            if c is None:
                lw.bind(r, next(res))
            else:
                self.buf[r] = c

    def _if(self, op: ir.Operation) -> None:
        lw = self.lw
        has_else = len(op.regions[1].blocks) > 0
        outs: list[ir.Value | None] = [self.alloc(r.type) if _big(r.type) else None
                                       for r in op.results]
        new = scf.IfOp(lw.mapped(op.operands[0]),
                       [lw.convert(r.type) for r, o in zip(op.results, outs) if o is None],
                       has_else=has_else)
        for region, block in ((op.regions[0], new.then_block),
                              (op.regions[1], new.else_block if has_else else None)):
            if block is None:
                continue
            old = region.blocks[0]
            self.yields[list(old.operations)[-1].operation] = outs
            with ir.InsertionPoint(block):
                lw.lower_block(old)
        res = iter(new.results)
        for r, o in zip(op.results, outs):
            if o is None:
                lw.bind(r, next(res))
            else:
                self.buf[r] = o

    def _yield(self, op: ir.Operation, targets: list[ir.Value | None]) -> None:
        lw = self.lw
        with op.location:
            small, pending = [], []
            for v, dst in zip(op.operands, targets):
                if dst is None:
                    small.append(lw.mapped(v))
                    continue
                src = self.buffer_of(v)
                if src != dst:
                    pending.append((v, src, dst))
            # A source that is another position's target is read before any write.
            staged = []
            for v, src, dst in pending:
                if any(src == t for t in targets if t is not None):
                    tmp = self.alloc(v.type)
                    self.copy(tmp, src, v.type)
                    src = tmp
                staged.append((v, src, dst))
            for v, src, dst in staged:
                self.copy(dst, src, v.type)
            scf.YieldOp(small)


def _is_elementwise(op: ir.Operation) -> bool:
    name = op.name
    if not (name.startswith(("arith.", "math.")) or name in _ELEMENTWISE) or len(op.regions):
        return False
    shapes = {tuple(tile.shape_of(v.type)) for v in list(op.results) + list(op.operands)
              if isinstance(v.type, ir.RankedTensorType)}
    return len(shapes) == 1


def _gather(pt: ir.Type, lane_t: ir.Type, vt: ir.Type, first: ir.Value, offsets: str,
            me: ir.Type, w: int) -> ir.Value:
    """The `w` elements at `first` + each of `offsets` (element counts, a
    comma-separated list) as one vector: a gather of constant lane offsets."""
    base = vector.BroadcastOp(pt, first).result
    lanes = arith.ConstantOp(lane_t, ir.Attribute.parse(f"dense<[{offsets}]> : {lane_t}"))
    ptrs = llvm.GEPOp(pt, base, [lanes.result], [GEP_DYNAMIC], me,
                      llvm.GEPNoWrapFlags.none).result
    return llvm.masked_gather(vt, ptrs, all_true(w), [llvm.PoisonOp(vt).result],
                              scalar_bytes(me)).result
