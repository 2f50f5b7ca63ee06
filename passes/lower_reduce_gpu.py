"""`tile-warp-sync-lowering`: reductions, scans and warp/program barriers on GPUs.

Lowering rules registered in `convert-tile-to-gpu`'s registry (they run while
that pass distributes a kernel, on the per-thread fragments it builds).

Input: `tile.reduce`, `tile.scan`, `tile.barrier`, `tile.warp_sync` at the
tiled level: reduce/scan operands share one `#tile.blocked` (or slice) layout,
tile results of `tile.reduce {axis}` have `#tile.slice<axis, operand layout>`
(what `tile-layout` assigns), scan results the operands' layout; `combine`
names a `func.func private` of scalars made of arith/math ops (no regions).
Output: upstream ops only, at the per-thread level:
  * `tile.reduce`: (a) the combine body cloned over the elements a thread holds
    along `axis`, in increasing coordinate order; (b) a butterfly of
    `gpu.shuffle xor` over the lane-id bits that tell threads apart along the
    axis (offsets largest first, width = `target.warp_size`; 16..1 for a full
    warp of 32, 32..1 for 64); each operand is shuffled (argmax: value and
    index); (c) when warps span the axis: one `gpu.barrier`-separated round
    trip through workgroup memory (`llvm.mlir.global` addrspace 3, one per
    operand per op, so reductions never share scratch): one canonical lane
    per warp stores its partial, every thread loads the partials of all warps
    along the axis and folds them in warp order, so every thread holds the
    bit-identical result (no second barrier is needed).
  * `tile.scan` (inclusive, `reverse` scans from the end): per repetition of
    the layout along the axis, an in-thread scan, a Hillis-Steele scan of the
    thread totals with `gpu.shuffle up` (`down` for reverse) guarded by the
    lane position, the exclusive lane carry by one more shuffle, warp totals
    through workgroup memory (one barrier for the whole op), and the carry of
    earlier repetitions.  A combine has no identity, so carries travel with an
    i1 "has a carry" flag and `arith.select`.
  * `tile.barrier` -> `gpu.barrier`; `tile.warp_sync` -> `nvvm.bar.warp.sync`
    with a full mask where `target.has(Feature.WARP_SYNC_INSTR)`, nothing on lock-step
    targets.
Shuffle widths and offsets are validated in Python against the target's warp
size before anything is emitted (some invalid combinations abort LLVM on AMD
instead of failing; see /work/shared/STACK.md).

Nearest upstream analogue: `gpu-lower-subgroup-reduce` plus
`gpu.all_reduce` lowering (`gpu-kernel-outlining`'s AllReduceLowering), which
MLIR 22 does not run to completion for these targets; Triton's
`ReduceOpToLLVM`/`ScanOpToLLVM`.
"""
from __future__ import annotations

import contextlib
import itertools
import math
from typing import Iterator, Sequence, Union

from mlir import ir
from mlir.dialects import arith, gpu, llvm, nvvm, scf, vector

from tilec.dialects import tile
from tilec.errors import CompilerBugError, TilecError
from tilec.passes.gpu import (_DYNAMIC_INDEX, _FuncLowering, _i32, _is_tile,
                                              lowering, source_loc)
from tilec.passes.analysis.layouts import Distribution, axis_span, log2, replica_masks
from tilec.targets import Feature, Target

Flag = Union[bool, ir.Value]          # statically known, or an i1
Tup = list[ir.Value]                  # one value per reduce/scan operand
Key = tuple[int, ...]


# ---------------------------------------------------------------- combine functions

class Combine:
    """The `combine` function of a reduce/scan op, cloned onto scalars."""

    def __init__(self, op: ir.Operation) -> None:
        name = ir.FlatSymbolRefAttr(op.attributes["combine"]).value
        func = tile.combine_function(op)
        if func is None:
            raise CompilerBugError(f"combine function @{name} of {op.name} not found")
        self.func = func
        body = self.func.regions[0].blocks[0]
        for o in body.operations:
            if len(o.operation.regions):
                raise TilecError(f"combine function @{name}: '{o.operation.name}' with regions "
                                 "is not supported on GPUs", source_loc(op.location))
        self.body = body

    def __call__(self, running: Sequence[ir.Value], new: Sequence[ir.Value]) -> Tup:
        env: dict[ir.Value, ir.Value] = dict(zip(self.body.arguments, list(running) + list(new)))
        for o in self.body.operations:
            o = o.operation
            if o.name in ("func.return", "return"):
                return [env[v] for v in o.operands]
            new_op = ir.Operation.create(
                o.name, results=[r.type for r in o.results], operands=[env[v] for v in o.operands],
                attributes={n: o.attributes[n] for n in o.attributes})
            env.update(zip(o.results, new_op.results))
        raise CompilerBugError("combine function without a return")


# ---------------------------------------------------------------- small builders

def check_shuffle(target: Target, offset: int, width: int) -> None:
    """Raise instead of emitting a shuffle the back ends cannot lower (on AMD an
    invalid width/offset pair aborts LLVM rather than failing)."""
    if width != target.warp_size:
        raise CompilerBugError(f"shuffle width {width} on {target.name} "
                               f"(warp size {target.warp_size})")
    if not 0 < offset < width:
        raise CompilerBugError(f"shuffle offset {offset} outside a warp of {width} "
                               f"on {target.name}")


def shuffle(L: _FuncLowering, v: ir.Value, offset: int | ir.Value, mode: gpu.ShuffleMode) -> ir.Value:
    """`gpu.shuffle` of any scalar of at most 64 bits, through 32-bit words."""
    ws = L.target.warp_size
    if isinstance(offset, int):
        check_shuffle(L.target, offset, ws)
        off = L.const_i32(offset)
    else:
        off = offset
    width = L.const_i32(ws)
    t = v.type
    bits = t.width if isinstance(t, (ir.IntegerType, ir.FloatType)) else 0
    if not bits or bits > 64:
        raise TilecError(f"cannot shuffle values of type {t} on {L.target.name}")
    if bits == 32 and (t == _i32() or isinstance(t, ir.F32Type)):
        return gpu.ShuffleOp(v, off, width, mode).results[0]
    as_int = ir.IntegerType.get_signless(bits)
    x = v if isinstance(t, ir.IntegerType) else arith.BitcastOp(as_int, v).result
    if bits == 64:
        vt = ir.VectorType.get([2], _i32())
        words = arith.BitcastOp(vt, x).result
        parts = [gpu.ShuffleOp(L.extract(words, i), off, width, mode).results[0] for i in range(2)]
        y = arith.BitcastOp(as_int, vector.FromElementsOp(vt, parts).result).result
    else:
        w = x if bits == 32 else arith.ExtUIOp(_i32(), x).result
        y = gpu.ShuffleOp(w, off, width, mode).results[0]
        if bits != 32:
            y = arith.TruncIOp(as_int, y).result
    return y if isinstance(t, ir.IntegerType) else arith.BitcastOp(t, y).result


def _select(c: ir.Value, a: Tup, b: Tup) -> Tup:
    return [arith.SelectOp(c, x, y).result for x, y in zip(a, b)]


def _cmp(L: _FuncLowering, pred: arith.CmpIPredicate, a: ir.Value, b: int) -> ir.Value:
    return arith.CmpIOp(pred, a, L.const_i32(b)).result


def _field(L: _FuncLowering, v: ir.Value, shift: int, bits: int) -> ir.Value:
    if shift:
        v = arith.ShRUIOp(v, L.const_i32(shift)).result
    return arith.AndIOp(v, L.const_i32((1 << bits) - 1)).result


def lane_and_warp(L: _FuncLowering) -> tuple[ir.Value, ir.Value]:
    assert L.tid is not None
    ws = L.target.warp_size
    lane = arith.AndIOp(L.tid, L.const_i32(ws - 1)).result
    warp = arith.ShRUIOp(L.tid, L.const_i32(log2(ws))).result
    return lane, warp


def canonical_thread(L: _FuncLowering, d: Distribution, extra_lane_mask: int = 0) -> ir.Value | None:
    """i1: the calling thread holds the canonical copy of its elements (its
    replica bits, and `extra_lane_mask`, are clear); None when every thread does."""
    lm, wm = replica_masks(d)
    lane, warp = lane_and_warp(L)
    conds = []
    if lm | extra_lane_mask:
        conds.append(arith.AndIOp(lane, L.const_i32(lm | extra_lane_mask)).result)
    if wm:
        conds.append(arith.AndIOp(warp, L.const_i32(wm)).result)
    if not conds:
        return None
    acc = conds[0] if len(conds) == 1 else arith.OrIOp(conds[0], conds[1]).result
    return _cmp(L, arith.CmpIPredicate.eq, acc, 0)


def elements(L: _FuncLowering, v: ir.Value, d: Distribution) -> dict[Key, ir.Value]:
    """A thread's fragment of `v` as scalars keyed by local coordinates."""
    out = {}
    for key, chunk in zip(d.chunk_keys, L.frag(v)):
        for i in range(d.vec_len):
            local = list(key)
            local[d.fast] += i
            out[tuple(local)] = L.extract(chunk, i)
    return out


def fragment(L: _FuncLowering, d: Distribution, elems: dict[Key, ir.Value]) -> list[ir.Value]:
    """Inverse of `elements`: per-thread vectors of distribution `d`."""
    out = []
    for key in d.chunk_keys:
        vals = []
        for i in range(d.vec_len):
            local = list(key)
            local[d.fast] += i
            vals.append(elems[tuple(local)])
        vt = ir.VectorType.get([d.vec_len], vals[0].type)
        out.append(vector.FromElementsOp(vt, vals).result)
    return out


@contextlib.contextmanager
def _maybe_if(cond: ir.Value | None) -> Iterator[None]:
    """Emit the body under `scf.if cond` (unconditionally for None)."""
    if cond is None:
        yield
        return
    if_op = scf.IfOp(cond, [], has_else=False)
    with ir.InsertionPoint(if_op.then_block):
        yield
        scf.YieldOp([])


def _in_loop(op: ir.Operation) -> bool:
    p = op.parent
    while p is not None and p.name not in ("func.func", "gpu.func"):
        if p.name in ("scf.for", "scf.while"):
            return True
        p = p.parent
    return False


class Scratch:
    """Per-operand workgroup-memory arrays of one op, indexed by a dynamic i32."""

    def __init__(self, L: _FuncLowering, types: Sequence[ir.Type], count: int) -> None:
        self.L = L
        self.mem_types = [ir.IntegerType.get_signless(8) if _is_bool(t) else t for t in types]
        self.types = list(types)
        self.bufs = [L.shared_buffer(t, count) for t in self.mem_types]

    def _ptr(self, i: int, index: ir.Value) -> ir.Value:
        buf = self.bufs[i]
        return llvm.GEPOp(buf.type, buf, [index], [_DYNAMIC_INDEX], self.mem_types[i],
                          llvm.GEPNoWrapFlags.none).result

    def store(self, index: ir.Value, values: Tup) -> None:
        for i, v in enumerate(values):
            if self.mem_types[i] != self.types[i]:
                v = arith.ExtUIOp(self.mem_types[i], v).result
            llvm.StoreOp(v, self._ptr(i, index))

    def load(self, index: ir.Value) -> Tup:
        out = []
        for i, t in enumerate(self.types):
            v = llvm.LoadOp(self.mem_types[i], self._ptr(i, index)).result
            out.append(v if self.mem_types[i] == t else arith.TruncIOp(t, v).result)
        return out


def _is_bool(t: ir.Type) -> bool:
    return isinstance(t, ir.IntegerType) and t.width == 1


def position(L: _FuncLowering, d: Distribution, axis: int, local: Key) -> ir.Value:
    """Row-major index, over the dimensions other than `axis`, of the element
    at `local` (an i32; the same for every element along `axis`)."""
    acc: ir.Value | None = None
    stride = 1
    for dim in reversed(range(d.rank)):
        if dim == axis or d.shape[dim] == 1:
            continue
        base = L.thread_base(d, dim)
        off = d.static_offset(dim, local[dim])
        c = L.const_i32(off) if isinstance(base, int) else base
        if isinstance(base, int):
            c = L.const_i32(base + off)
        elif off:
            c = arith.AddIOp(base, L.const_i32(off)).result
        if stride != 1:
            c = arith.MulIOp(c, L.const_i32(stride)).result
        acc = c if acc is None else arith.AddIOp(acc, c).result
        stride *= d.shape[dim]
    return acc if acc is not None else L.const_i32(0)


def _lines(d: Distribution, axis: int) -> dict[Key, list[Key]]:
    """Local coordinates grouped by line along `axis` (key: axis coordinate 0),
    each line in increasing coordinate order."""
    lines: dict[Key, list[Key]] = {}
    for local in sorted(_all_locals(d)):
        k = tuple(0 if i == axis else c for i, c in enumerate(local))
        lines.setdefault(k, []).append(local)
    for k in lines:
        lines[k].sort(key=lambda loc: loc[axis])
    return lines


def _all_locals(d: Distribution) -> list[Key]:
    return list(itertools.product(*(range(n) for n in d.local)))


def _operands(L: _FuncLowering, op: ir.Operation) -> tuple[list[ir.Value], Distribution, int]:
    srcs = list(op.operands)
    if not srcs or not all(_is_tile(s.type) for s in srcs):
        raise TilecError(f"{op.name} needs tile operands", source_loc(op.location))
    d = L.dist(srcs[0].type)
    for s in srcs[1:]:
        if L.dist(s.type) != d:
            raise CompilerBugError(f"{op.name} operands with different layouts")
    axis = int(ir.IntegerAttr(op.attributes["axis"]).value)
    if d.sliced_dim is not None and axis >= d.sliced_dim:
        axis += 1          # coordinates of the expanded shape
    return srcs, d, axis


# ---------------------------------------------------------------- tile.reduce

@lowering("tile.reduce")
def _reduce(L: _FuncLowering, op: ir.Operation) -> None:
    srcs, d, axis = _operands(L, op)
    combine = Combine(op)
    ops_elems = [elements(L, s, d) for s in srcs]
    # (a) in-thread
    acc: dict[Key, Tup] = {}
    for key, line in _lines(d, axis).items():
        run = [e[line[0]] for e in ops_elems]
        for local in line[1:]:
            run = combine(run, [e[local] for e in ops_elems])
        acc[key] = run
    # (b) butterfly across the lanes that hold different elements along the axis
    span = axis_span(d, axis)
    for off in span.xor_offsets():
        for key, run in acc.items():
            acc[key] = combine(run, [shuffle(L, v, off, gpu.ShuffleMode.XOR) for v in run])
    # (c) across the warps along the axis, through workgroup memory
    if span.warp_bits:
        acc = _cross_warp_reduce(L, op, d, axis, span.warp_shift, span.warp_positions,
                                 span.lane_shift, span.lane_bits, acc, combine)
    _bind_reduce_results(L, op, d, axis, acc)


def _cross_warp_reduce(L: _FuncLowering, op: ir.Operation, d: Distribution, axis: int,
                       wshift: int, W: int, lshift: int, lbits: int, acc: dict[Key, Tup],
                       combine: Combine) -> dict[Key, Tup]:
    positions = math.prod(s for i, s in enumerate(d.shape) if i != axis)
    scratch = Scratch(L, [v.type for v in next(iter(acc.values()))], positions * W)
    _, warp = lane_and_warp(L)
    w = _field(L, warp, wshift, log2(W))
    wv = L.const_i32(W)
    if _in_loop(op):
        gpu.BarrierOp()          # the previous iteration may still read the scratch
    writer = canonical_thread(L, d, ((1 << lbits) - 1) << lshift)
    pos = {key: position(L, d, axis, key) for key in acc}
    with _maybe_if(writer):
        for key, run in acc.items():
            scratch.store(arith.AddIOp(arith.MulIOp(pos[key], wv).result, w).result, run)
    gpu.BarrierOp()
    out = {}
    for key in acc:
        base = arith.MulIOp(pos[key], wv).result
        run = scratch.load(base)
        for j in range(1, W):
            run = combine(run, scratch.load(arith.AddIOp(base, L.const_i32(j)).result))
        out[key] = run
    return out


def _bind_reduce_results(L: _FuncLowering, op: ir.Operation, d: Distribution, axis: int,
                         acc: dict[Key, Tup]) -> None:
    for i, r in enumerate(op.results):
        if not _is_tile(r.type):
            L.values[r] = acc[(0,) * d.rank][i]
            continue
        dr = L.dist(r.type)
        if dr.blocked != d.blocked or dr.sliced_dim != axis:
            raise CompilerBugError(f"tile.reduce result layout {r.type} is not the slice of "
                                   f"its operand's layout along axis {axis}")
        L.values[r] = fragment(L, dr, {k: v[i] for k, v in acc.items()})


# ---------------------------------------------------------------- tile.scan

Carry = tuple[Tup, Flag]


def _merge(L: _FuncLowering, combine: Combine, a: Carry | None, b: Carry | None) -> Carry | None:
    """The carry of `a` followed by `b` (each may be absent, statically or not)."""
    if a is None or a[1] is False:
        return b
    if b is None or b[1] is False:
        return a
    both = combine(a[0], b[0])
    if a[1] is True and b[1] is True:
        return both, True
    if a[1] is True:
        assert isinstance(b[1], ir.Value)
        return _select(b[1], both, a[0]), True
    if b[1] is True:
        assert isinstance(a[1], ir.Value)
        return _select(a[1], both, b[0]), True
    assert isinstance(a[1], ir.Value) and isinstance(b[1], ir.Value)
    v = _select(b[1], _select(a[1], both, b[0]), a[0])
    return v, arith.OrIOp(a[1], b[1]).result


def _apply(L: _FuncLowering, combine: Combine, carry: Carry | None, x: Tup) -> Tup:
    if carry is None or carry[1] is False:
        return x
    both = combine(carry[0], x)
    if carry[1] is True:
        return both
    assert isinstance(carry[1], ir.Value)
    return _select(carry[1], both, x)


@lowering("tile.scan")
def _scan(L: _FuncLowering, op: ir.Operation) -> None:
    srcs, d, axis = _operands(L, op)
    reverse = "reverse" in op.attributes
    combine = Combine(op)
    span = axis_span(d, axis)
    ops_elems = [elements(L, s, d) for s in srcs]
    lane, warp = lane_and_warp(L)
    npos = span.lane_positions
    lpos = _field(L, lane, span.lane_shift, span.lane_bits)
    up, down = gpu.ShuffleMode.UP, gpu.ShuffleMode.DOWN
    mode = down if reverse else up
    ept, reps = d.ept[axis], d.reps[axis]
    lines = _lines(d, axis)
    # Phase 1, per line and repetition: in-thread scan, warp scan of thread totals.
    runs: dict[tuple[Key, int], list[tuple[Key, Tup]]] = {}
    lane_carry: dict[tuple[Key, int], Carry | None] = {}
    warp_total: dict[tuple[Key, int], Tup] = {}
    for key, line in lines.items():
        for r in range(reps):
            seg = line[r * ept:(r + 1) * ept]
            if reverse:
                seg = seg[::-1]
            run: list[tuple[Key, Tup]] = []
            cur: Tup | None = None
            for local in seg:
                x = [e[local] for e in ops_elems]
                cur = x if cur is None else combine(cur, x)
                run.append((local, cur))
            assert cur is not None
            runs[key, r] = run
            incl = cur
            for k in range(span.lane_bits):
                step = 1 << k
                off = step << span.lane_shift
                got = [shuffle(L, v, off, mode) for v in incl]
                ok = (_cmp(L, arith.CmpIPredicate.uge, lpos, step) if not reverse
                      else _cmp(L, arith.CmpIPredicate.ult, lpos, npos - step))
                incl = _select(ok, combine(got, incl), incl)
            if span.lane_bits:
                prev = [shuffle(L, v, 1 << span.lane_shift, mode) for v in incl]
                has = _cmp(L, arith.CmpIPredicate.ne, lpos, npos - 1 if reverse else 0)
                lane_carry[key, r] = (prev, has)
            else:
                lane_carry[key, r] = None
            warp_total[key, r] = incl
    # Phase 2: totals of whole warps (and of whole repetitions).
    warp_carry: dict[tuple[Key, int], Carry | None] = {}
    rep_total: dict[tuple[Key, int], Tup] = {}
    if span.warp_bits:
        W = span.warp_positions
        positions = math.prod(s for i, s in enumerate(d.shape) if i != axis)
        types = [e[next(iter(e))].type for e in ops_elems]
        scratch = Scratch(L, types, positions * reps * W)
        w = _field(L, warp, span.warp_shift, span.warp_bits)
        if _in_loop(op):
            gpu.BarrierOp()
        last = 0 if reverse else npos - 1
        lane_ok = _cmp(L, arith.CmpIPredicate.eq, lpos, last)
        canon = canonical_thread(L, d)
        writer = lane_ok if canon is None else arith.AndIOp(canon, lane_ok).result
        index: dict[tuple[Key, int], ir.Value] = {}
        for key in lines:
            pos = position(L, d, axis, key)
            for r in range(reps):
                index[key, r] = arith.MulIOp(pos, L.const_i32(reps * W)).result
                if r:
                    index[key, r] = arith.AddIOp(index[key, r], L.const_i32(r * W)).result
        with _maybe_if(writer):
            for kr, tot in warp_total.items():
                scratch.store(arith.AddIOp(index[kr], w).result, tot)
        gpu.BarrierOp()
        order = list(reversed(range(W))) if reverse else list(range(W))
        for kr in warp_total:
            carry: Carry | None = None
            total: Tup | None = None
            for j in order:
                t = scratch.load(arith.AddIOp(index[kr], L.const_i32(j)).result)
                # Warp j comes before this one in scan order: j < w (j > w reversed).
                before = _cmp(L, arith.CmpIPredicate.ult if reverse else arith.CmpIPredicate.ugt,
                              w, j)
                carry = _merge(L, combine, carry, (t, before))
                total = t if total is None else combine(total, t)
            assert total is not None
            warp_carry[kr], rep_total[kr] = carry, total
    else:
        # The last lane position along the axis holds the total: read it from there.
        src = arith.OrIOp(arith.AndIOp(lane, L.const_i32(~(((npos - 1) << span.lane_shift)))).result,
                          L.const_i32((0 if reverse else npos - 1) << span.lane_shift)).result
        for kr, tot in warp_total.items():
            warp_carry[kr] = None
            rep_total[kr] = ([shuffle(L, v, src, gpu.ShuffleMode.IDX) for v in tot]
                             if span.lane_bits else tot)
    # Phase 3: carry = earlier repetitions, then earlier warps, then earlier lanes.
    out: list[dict[Key, ir.Value]] = [{} for _ in srcs]
    for key in lines:
        rep_carry: Carry | None = None
        for r in (reversed(range(reps)) if reverse else range(reps)):
            carry = _merge(L, combine, _merge(L, combine, rep_carry, warp_carry[key, r]),
                           lane_carry[key, r])
            for local, x in runs[key, r]:
                for i, v in enumerate(_apply(L, combine, carry, x)):
                    out[i][local] = v
            rep_carry = _merge(L, combine, rep_carry, (rep_total[key, r], True))
    for i, res in enumerate(op.results):
        L.values[res] = fragment(L, d, out[i])


# ---------------------------------------------------------------- barriers

@lowering("tile.barrier")
def _barrier(L: _FuncLowering, op: ir.Operation) -> None:
    gpu.BarrierOp()


@lowering("tile.warp_sync")
def _warp_sync(L: _FuncLowering, op: ir.Operation) -> None:
    # Lock-step wavefronts (no `warp_sync_instr`) are converged by construction.
    if L.target.has(Feature.WARP_SYNC_INSTR):
        full = (1 << L.target.warp_size) - 1
        nvvm.SyncWarpOp(arith.ConstantOp(_i32(), full - (1 << 32) if full >= 1 << 31 else full))
