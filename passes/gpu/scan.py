"""`convert-tile-to-gpu` rule for `tile.scan` (inclusive; `reverse` scans from the end).

Input: `tile.scan` at the tiled level: operands and results share one
`#tile.blocked` (or slice) layout; `combine` as for `tile.reduce` (reduce.py).
Output, per repetition of the layout along the axis: an in-thread scan, a
Hillis-Steele scan of the thread totals with `gpu.shuffle up` (`down` for
reverse) guarded by the lane position, the exclusive lane carry by one more
shuffle, warp totals through workgroup memory (one barrier for the whole op),
and the carry of earlier repetitions.  A combine has no identity, so carries
travel with an i1 "has a carry" flag and `arith.select`.

Nearest upstream analogue: none in MLIR (`gpu.subgroup_reduce` has no scan);
Triton's `ScanOpToLLVM`.
"""
from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith, gpu

from tilec.passes.analysis.layouts import axis_span
from tilec.passes.gpu.context import FuncLowering, Rule
from tilec.passes.gpu.reduce import (
    Combine, Flag, Key, Scratch, Tup, axis_lines, bit_field, canonical_thread, cmp_i32,
    elements, fragment, in_loop, lane_and_warp, maybe_if, position, reduce_operands, select_all,
    shuffle,
)
from tilec.passes.rules import RuleSet

RULES: RuleSet[Rule] = RuleSet("gpu.scan")

Carry = tuple[Tup, Flag]


def _merge(L: FuncLowering, combine: Combine, a: Carry | None, b: Carry | None) -> Carry | None:
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
        return select_all(b[1], both, a[0]), True
    if b[1] is True:
        assert isinstance(a[1], ir.Value)
        return select_all(a[1], both, b[0]), True
    assert isinstance(a[1], ir.Value) and isinstance(b[1], ir.Value)
    v = select_all(b[1], select_all(a[1], both, b[0]), a[0])
    return v, arith.OrIOp(a[1], b[1]).result


def _apply(L: FuncLowering, combine: Combine, carry: Carry | None, x: Tup) -> Tup:
    if carry is None or carry[1] is False:
        return x
    both = combine(carry[0], x)
    if carry[1] is True:
        return both
    assert isinstance(carry[1], ir.Value)
    return select_all(carry[1], both, x)


@RULES.rule("tile.scan")
def _scan(L: FuncLowering, op: ir.Operation) -> None:
    srcs, d, axis = reduce_operands(L, op)
    reverse = "reverse" in op.attributes
    combine = Combine(op)
    span = axis_span(d, axis)
    ops_elems = [elements(L, s, d) for s in srcs]
    lane, warp = lane_and_warp(L)
    npos = span.lane_positions
    lpos = bit_field(L, lane, span.lane_shift, span.lane_bits)
    up, down = gpu.ShuffleMode.UP, gpu.ShuffleMode.DOWN
    mode = down if reverse else up
    ept, reps = d.ept[axis], d.reps[axis]
    lines = axis_lines(d, axis)
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
                ok = (cmp_i32(L, arith.CmpIPredicate.uge, lpos, step) if not reverse
                      else cmp_i32(L, arith.CmpIPredicate.ult, lpos, npos - step))
                incl = select_all(ok, combine(got, incl), incl)
            if span.lane_bits:
                prev = [shuffle(L, v, 1 << span.lane_shift, mode) for v in incl]
                has = cmp_i32(L, arith.CmpIPredicate.ne, lpos, npos - 1 if reverse else 0)
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
        w = bit_field(L, warp, span.warp_shift, span.warp_bits)
        if in_loop(op):
            gpu.BarrierOp()
        last = 0 if reverse else npos - 1
        lane_ok = cmp_i32(L, arith.CmpIPredicate.eq, lpos, last)
        canon = canonical_thread(L, d)
        writer = lane_ok if canon is None else arith.AndIOp(canon, lane_ok).result
        index: dict[tuple[Key, int], ir.Value] = {}
        for key in lines:
            pos = position(L, d, axis, key)
            for r in range(reps):
                index[key, r] = arith.MulIOp(pos, L.const_i32(reps * W)).result
                if r:
                    index[key, r] = arith.AddIOp(index[key, r], L.const_i32(r * W)).result
        with maybe_if(writer):
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
                before = cmp_i32(L, arith.CmpIPredicate.ult if reverse else arith.CmpIPredicate.ugt,
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
