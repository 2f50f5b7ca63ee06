"""CPU lowering of `tile.reduce`.

Tiles are flat row-major vectors `vector<prod(shape) x T>`; a tile of shape
(A, K, B) reduced along the K dimension is handled uniformly for every rank
and axis: a log2 tree over the axis, combine(lo half, hi half) elementwise,
the halves taken with `vector.extract_strided_slice` (each of the A slabs is
reduced on its own, so the halves are contiguous).  A 1-D reduction whose
combine is a single commutative op (combine.REDUCTION_KINDS) stops the tree at
one SIMD register (`target.vector_bytes`) and finishes with
`vector.reduction <kind>` (`fastmath<reassoc>` for float add/mul, so LLVM
keeps the tree shape).

Tree reductions combine element i with element i + K/2, so, like Triton's
reductions, they assume the combine is associative and commutative (ties in
argmax-style combines must be broken by the combine itself, e.g. by comparing
indices).  fp32/fp16 sums are summed in tree order, not sequentially: a
different rounding than a left-to-right loop (error grows with log2(n), not n).
"""
from __future__ import annotations

import math
from typing import Sequence

from mlir import ir
from mlir.dialects import arith, vector

from tilec.dialects import tile
from tilec.passes.cpu.combine import Combiner
from tilec.passes.cpu.context import (CpuRules, Lowering, concat, elem_bits, extract,
                                      from_elements, int_attr, shuffle2, slice_)

RULES = CpuRules("cpu.reduce")

_REASSOC_KINDS = {"add", "mul"}


def axis_split(shape: Sequence[int], axis: int) -> tuple[int, int, int]:
    """(outer, K, inner) element counts of a row-major shape around `axis`."""
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])


@RULES.rule("tile.reduce")
def reduce(lw: Lowering, op: ir.Operation) -> None:
    a_n, k_n, b_n = axis_split(tile.shape_of(op.operands[0].type), int_attr(op, "axis"))
    out = _reduce_axis(lw, Combiner(op), [lw.mapped(v) for v in op.operands], a_n, k_n, b_n)
    for old, new in zip(op.results, out):
        if isinstance(old.type, ir.RankedTensorType) and not isinstance(new.type, ir.VectorType):
            # Every other axis has size 1 (e.g. [1, N] along axis 1 -> [1]): the
            # slab's scalar is the result tile's only element.
            new = from_elements([new])
        lw.bind(old, new)


def _reduce_axis(lw: Lowering, comb: Combiner, vals: list[ir.Value],
                 a_n: int, k_n: int, b_n: int) -> list[ir.Value]:
    """Reduce vectors holding (a_n, k_n, b_n) row-major elements along k -> (a_n, b_n).

    Each of the a_n slabs (k_n * b_n contiguous lanes) is reduced on its own, so
    every half is a contiguous `vector.extract_strided_slice` (huge strided
    shuffles compile slowly in LLVM); the slab results are concatenated."""
    if a_n == 1:
        return reduce_slab(lw, comb, vals, k_n, b_n)
    slab = k_n * b_n
    parts = [reduce_slab(lw, comb, [slice_(v, a * slab, slab) for v in vals], k_n, b_n)
             for a in range(a_n)]
    if b_n == 1:  # one scalar per slab
        return [from_elements([p[k] for p in parts]) for k in range(len(vals))]
    return [concat([p[k] for p in parts]) for k in range(len(vals))]


def reduce_slab(lw: Lowering, comb: Combiner, vals: list[ir.Value],
                k_n: int, b_n: int) -> list[ir.Value]:
    """Reduce vectors of (k_n, b_n) row-major elements along k: vector<b_n>, or
    scalars when b_n == 1."""
    while k_n > 1:
        if comb.kind is not None and b_n == 1:
            width = elem_bits(ir.VectorType(vals[0].type).element_type)
            if k_n * width <= lw.vector_bytes * 8 or k_n & (k_n - 1):
                return [_vector_reduction(comb.kind, vals[0])]
        if k_n & (k_n - 1) == 0:
            half = k_n // 2
            lo = [slice_(v, 0, half * b_n) for v in vals]
            hi = [slice_(v, half * b_n, half * b_n) for v in vals]
            vals = comb(lo, hi)
            k_n = half
            continue
        # Not a power of two: fold the last k_n - p rows onto the first ones.
        p = 1 << (k_n.bit_length() - 1)
        extra = (k_n - p) * b_n
        folded = comb([slice_(v, 0, extra) for v in vals],
                      [slice_(v, p * b_n, extra) for v in vals])
        vals = [shuffle2(f, v, list(range(extra)) + [extra + j for j in range(extra, p * b_n)])
                for f, v in zip(folded, vals)]
        k_n = p
    if b_n == 1:
        return [extract(v, 0) for v in vals]
    return vals


def _vector_reduction(kind: str, v: ir.Value) -> ir.Value:
    et = ir.VectorType(v.type).element_type
    fastmath = None
    if isinstance(et, ir.FloatType):
        fastmath = arith.FastMathFlags.reassoc if kind in _REASSOC_KINDS else \
            arith.FastMathFlags.none
    return vector.ReductionOp(et, vector.CombiningKind[kind.upper()], v,
                              fastmath=fastmath).result
