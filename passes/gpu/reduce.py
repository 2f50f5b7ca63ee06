"""`convert-tile-to-gpu` rules for `tile.reduce`, and the warp-level helpers
that scans (scan.py) and atomics (atomic.py) share.

Input: `tile.reduce` at the tiled level: its operands share one
`#tile.blocked` (or slice) layout, its tile results have
`#tile.slice<axis, operand layout>` (what `tile-layout` assigns); `combine`
names a `func.func private` of scalars made of arith/math ops (no regions).
Output: upstream ops only, at the per-thread level: (a) the combine body
cloned over the elements a thread holds along `axis`, in increasing
coordinate order (a chain; pairwise levels where the combine is one exactly
associative op such as max/min, so the result bits do not change); (b) a
butterfly of `gpu.shuffle xor` over the lane-id bits that tell threads apart
along the axis (offsets largest first, width =
`target.warp_size`; 16..1 for a full warp of 32, 32..1 for 64); each operand
is shuffled (argmax: value and index); (c) when warps span the axis: one
`gpu.barrier`-separated round trip through workgroup memory
(`llvm.mlir.global` addrspace 3, one per operand per op, so reductions never
share scratch): one canonical lane per warp stores its partial, every thread
loads the partials of all warps along the axis and folds them in warp order,
so every thread holds the bit-identical result (no second barrier is needed).
Shuffle widths and offsets are validated in Python against the target's warp
size before anything is emitted (some invalid combinations abort LLVM on AMD
instead of failing; see /work/shared/STACK.md).

Nearest upstream analogue: `gpu-lower-subgroup-reduce` plus
`gpu.all_reduce` lowering (`gpu-kernel-outlining`'s AllReduceLowering), which
MLIR 22 does not run to completion for these targets; Triton's `ReduceOpToLLVM`.
"""
from __future__ import annotations

import contextlib
import itertools
import math
from typing import Iterator, Sequence, Union

from mlir import ir
from mlir.dialects import arith, gpu, llvm, scf, vector

from tilec.dialects import tile
from tilec.errors import CompilerBugError, TilecError, source_loc
from tilec.passes.analysis.layouts import Distribution, axis_span, log2, replica_masks
from tilec.passes.gpu.context import DYNAMIC_INDEX, FuncLowering, Rule, i32, is_i1, is_tile
from tilec.passes.rules import RuleSet
from tilec.targets import Feature, Target

RULES: RuleSet[Rule] = RuleSet("gpu.reduce")

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
        self.exact = _exactly_associative(body)

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


# Ops whose combine gives the same bits in any order and grouping: a thread may
# fold its elements as a balanced tree (depth log2 n instead of a chain of n
# dependent ops, which the attention forward's row max waits on before its
# first exp2).  Float add and mul are absent: regrouping them rounds otherwise.
EXACT_ASSOCIATIVE = frozenset({
    "arith.maxnumf", "arith.minnumf", "arith.maximumf", "arith.minimumf",
    "arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui",
    "arith.andi", "arith.ori", "arith.xori", "arith.addi", "arith.muli"})


def _exactly_associative(body: ir.Block) -> bool:
    """The combine is `return op(a, b)` for one op of EXACT_ASSOCIATIVE over
    the block's two arguments (either order)."""
    ops = [o.operation for o in body.operations]
    args = list(body.arguments)
    if len(ops) != 2 or len(args) != 2 or ops[0].name not in EXACT_ASSOCIATIVE:
        return False
    return (set(ops[0].operands) == set(args) and len(ops[1].operands) == 1
            and ops[1].operands[0] == ops[0].results[0])


def fold_line(combine: Combine, values: list[Tup]) -> Tup:
    """Fold a thread's elements along an axis, in increasing coordinate order:
    a chain, or pairwise levels where the combine is exactly associative."""
    if not combine.exact:
        run = values[0]
        for v in values[1:]:
            run = combine(run, v)
        return run
    while len(values) > 1:
        values = [combine(values[i], values[i + 1]) if i + 1 < len(values) else values[i]
                  for i in range(0, len(values), 2)]
    return values[0]


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


def shuffle(L: FuncLowering, v: ir.Value, offset: int | ir.Value, mode: gpu.ShuffleMode) -> ir.Value:
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
    if bits == 32 and (t == i32() or isinstance(t, ir.F32Type)):
        return gpu.ShuffleOp(v, off, width, mode).results[0]
    as_int = ir.IntegerType.get_signless(bits)
    x = v if isinstance(t, ir.IntegerType) else arith.BitcastOp(as_int, v).result
    if bits == 64:
        # Two 32-bit words by shift and truncation (a scalar i64 cannot be
        # bit-cast to vector<2xi32>: arith.bitcast keeps the shape).
        c32 = arith.ConstantOp(as_int, 32).result
        lo = arith.TruncIOp(i32(), x).result
        hi = arith.TruncIOp(i32(), arith.ShRUIOp(x, c32).result).result
        lo, hi = (gpu.ShuffleOp(w, off, width, mode).results[0] for w in (lo, hi))
        y = arith.OrIOp(arith.ExtUIOp(as_int, lo).result,
                        arith.ShLIOp(arith.ExtUIOp(as_int, hi).result, c32).result).result
    else:
        w = x if bits == 32 else arith.ExtUIOp(i32(), x).result
        y = gpu.ShuffleOp(w, off, width, mode).results[0]
        if bits != 32:
            y = arith.TruncIOp(as_int, y).result
    return y if isinstance(t, ir.IntegerType) else arith.BitcastOp(t, y).result


def select_all(c: ir.Value, a: Tup, b: Tup) -> Tup:
    return [arith.SelectOp(c, x, y).result for x, y in zip(a, b)]


def cmp_i32(L: FuncLowering, pred: arith.CmpIPredicate, a: ir.Value, b: int) -> ir.Value:
    return arith.CmpIOp(pred, a, L.const_i32(b)).result


def bit_field(L: FuncLowering, v: ir.Value, shift: int, bits: int) -> ir.Value:
    if shift:
        v = arith.ShRUIOp(v, L.const_i32(shift)).result
    return arith.AndIOp(v, L.const_i32((1 << bits) - 1)).result


def lane_and_warp(L: FuncLowering) -> tuple[ir.Value, ir.Value]:
    assert L.tid is not None
    ws = L.target.warp_size
    lane = arith.AndIOp(L.tid, L.const_i32(ws - 1)).result
    warp = arith.ShRUIOp(L.tid, L.const_i32(log2(ws))).result
    return lane, warp


def canonical_thread(L: FuncLowering, d: Distribution, extra_lane_mask: int = 0) -> ir.Value | None:
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
    return cmp_i32(L, arith.CmpIPredicate.eq, acc, 0)


def elements(L: FuncLowering, v: ir.Value, d: Distribution) -> dict[Key, ir.Value]:
    """A thread's fragment of `v` as scalars keyed by local coordinates."""
    out = {}
    for key, chunk in zip(d.chunk_keys, L.frag(v)):
        for i in range(d.vec_len):
            local = list(key)
            local[d.fast] += i
            out[tuple(local)] = L.extract(chunk, i)
    return out


def fragment(L: FuncLowering, d: Distribution, elems: dict[Key, ir.Value]) -> list[ir.Value]:
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
def maybe_if(cond: ir.Value | None) -> Iterator[None]:
    """Emit the body under `scf.if cond` (unconditionally for None)."""
    if cond is None:
        yield
        return
    if_op = scf.IfOp(cond, [], has_else=False)
    with ir.InsertionPoint(if_op.then_block):
        yield
        scf.YieldOp([])


def in_loop(op: ir.Operation) -> bool:
    p = op.parent
    while p is not None and p.name not in ("func.func", "gpu.func"):
        if p.name in ("scf.for", "scf.while"):
            return True
        p = p.parent
    return False


class Scratch:
    """Per-operand workgroup-memory arrays of one op, indexed by a dynamic i32."""

    def __init__(self, L: FuncLowering, types: Sequence[ir.Type], count: int) -> None:
        self.L = L
        self.mem_types = [ir.IntegerType.get_signless(8) if is_i1(t) else t for t in types]
        self.types = list(types)
        self.bufs = [L.shared_buffer(t, count) for t in self.mem_types]

    def _ptr(self, i: int, index: ir.Value) -> ir.Value:
        buf = self.bufs[i]
        return llvm.GEPOp(buf.type, buf, [index], [DYNAMIC_INDEX], self.mem_types[i],
                          llvm.GEPNoWrapFlags.none).result

    def store(self, index: ir.Value, values: Tup) -> None:
        for i, v in enumerate(values):
            if self.mem_types[i] != self.types[i]:
                v = arith.ExtUIOp(self.mem_types[i], v).result
            llvm.StoreOp(v, self._ptr(i, index))

    def release(self) -> None:
        """The arrays are dead once every thread has read them: later
        allocations may reuse the bytes after a barrier (`shared_buffer`)."""
        for buf in reversed(self.bufs):
            self.L.release_shared(buf, synced=False)

    def load(self, index: ir.Value) -> Tup:
        out = []
        for i, t in enumerate(self.types):
            v = llvm.LoadOp(self.mem_types[i], self._ptr(i, index)).result
            out.append(v if self.mem_types[i] == t else arith.TruncIOp(t, v).result)
        return out


def position(L: FuncLowering, d: Distribution, axis: int, local: Key) -> ir.Value:
    """Row-major index, over the dimensions other than `axis`, of the element
    at `local` (an i32; the same for every element along `axis`)."""
    acc: ir.Value | None = None
    stride = 1
    for dim in reversed(range(d.rank)):
        if dim == axis or d.shape[dim] == 1:
            continue
        base = L.thread_base(d, dim)
        off = d.static_offset(dim, local[dim])
        if isinstance(base, int):
            c = L.const_i32(base + off)
        else:
            c = arith.AddIOp(base, L.const_i32(off)).result if off else base
        if stride != 1:
            c = arith.MulIOp(c, L.const_i32(stride)).result
        acc = c if acc is None else arith.AddIOp(acc, c).result
        stride *= d.shape[dim]
    return acc if acc is not None else L.const_i32(0)


def axis_lines(d: Distribution, axis: int) -> dict[Key, list[Key]]:
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


def reduce_operands(L: FuncLowering, op: ir.Operation) -> tuple[list[ir.Value], Distribution, int]:
    srcs = list(op.operands)
    if not srcs or not all(is_tile(s.type) for s in srcs):
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

@RULES.rule("tile.reduce")
def _reduce(L: FuncLowering, op: ir.Operation) -> None:
    srcs, d, axis = reduce_operands(L, op)
    combine = Combine(op)
    ops_elems = [elements(L, s, d) for s in srcs]
    # (a) in-thread
    acc: dict[Key, Tup] = {}
    for key, line in axis_lines(d, axis).items():
        acc[key] = fold_line(combine, [[e[local] for e in ops_elems] for local in line])
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


def _cross_warp_reduce(L: FuncLowering, op: ir.Operation, d: Distribution, axis: int,
                       wshift: int, W: int, lshift: int, lbits: int, acc: dict[Key, Tup],
                       combine: Combine) -> dict[Key, Tup]:
    positions = math.prod(s for i, s in enumerate(d.shape) if i != axis)
    if in_loop(op):
        gpu.BarrierOp()          # the previous iteration may still read the scratch
        L.shared_unsynced = 0    # (and released bytes this one may reuse)
    scratch = Scratch(L, [v.type for v in next(iter(acc.values()))], positions * W)
    _, warp = lane_and_warp(L)
    w = bit_field(L, warp, wshift, log2(W))
    wv = L.const_i32(W)
    writer = canonical_thread(L, d, ((1 << lbits) - 1) << lshift)
    pos = {key: position(L, d, axis, key) for key in acc}
    with maybe_if(writer):
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
    if L.target.has(Feature.SCRATCH_REUSE):
        scratch.release()
    return out


def _bind_reduce_results(L: FuncLowering, op: ir.Operation, d: Distribution, axis: int,
                         acc: dict[Key, Tup]) -> None:
    for i, r in enumerate(op.results):
        if not is_tile(r.type):
            L.values[r] = acc[(0,) * d.rank][i]
            continue
        dr = L.dist(r.type)
        if dr.blocked != d.blocked or dr.sliced_dim != axis:
            raise CompilerBugError(f"tile.reduce result layout {r.type} is not the slice of "
                                   f"its operand's layout along axis {axis}")
        L.values[r] = fragment(L, dr, {k: v[i] for k, v in acc.items()})
