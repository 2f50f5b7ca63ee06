"""The layouts `tile-layout` gives matrix dots: the accumulator fragment of the
dot's instruction family, and for AMD's transposed products (C^T = B^T A^T:
attention's scores, and the P @ V whose A operand is their function) the
layout of a `tile.trans` feeding their B operand.

`dot_result_layout`: the accumulator and result layout of one `tile.dot`
(wgmma / tcgen05 / mma.sync fragments; MFMA / WMMA: `matrix_tiling.choose`,
`choose_transposed` for a result reduced along its rows, or
`register_operands.chain_tiling`'s where A is computed from another dot's
transposed result and its operand registers are that layout's).
`kmajor_trans_layouts`: a transposed product stores its B operand K-major
(targets/amd/matrix_dot.py), which the transpose of the operand's source
layout makes whole-vector stores of a chunk (and the `tile.trans` a mere
relabelling of the source's registers, passes/gpu/shape.py).

Nearest upstream analogue: Triton's `AccelerateAMDMatmul` (its chained-dot
`isTransposed` layouts) and the `ttg.memdesc_trans` of a dot operand.
"""
from __future__ import annotations

from typing import Callable

from mlir import ir

from tilec.dialects import tile
from tilec.dialects.tile import Blocked, Layout
from tilec.passes.analysis import matrix_tiling, register_operands
from tilec.passes.analysis.layouts import (
    mma_accumulator_layout, tcgen05_accumulator_layout, wgmma_accumulator_layout,
)
from tilec.targets import Target


def _shape(t: ir.Type) -> tuple[int, ...]:
    return tuple(t.shape) if isinstance(t, ir.RankedTensorType) else ()


def transposed_dot_layout(layout: Layout | None, op: ir.Operation) -> bool:
    """`layout` (the dot's result layout) is a transposed MFMA / WMMA tiling's:
    the only ones of these families in column order."""
    kind = ir.StringAttr(op.attributes["tile.mma"]).value if "tile.mma" in op.attributes \
        else None
    return kind in ("mfma", "wmma") and isinstance(layout, Blocked) and layout.order == (0, 1)


def dot_result_layout(op: ir.Operation, target: Target, num_warps: int,
                      a_layout: Layout | None = None) -> Layout | None:
    """The layout a `tile.dot` needs for its accumulator and result: the
    accumulator fragment layout of the instruction family `tile-accelerate-dot`
    chose (`tile.mma`: wgmma, tcgen05 or mma.sync), else None (any layout; the FMA
    lowering takes whatever the group gets).  `a_layout`: the layout another
    dot forces on the A operand's group (it is a function of that result)."""
    kind = ir.StringAttr(op.attributes["tile.mma"]).value if "tile.mma" in op.attributes \
        else None
    a, b = op.operands[0].type, op.operands[1].type
    if len(_shape(a)) != 2:
        return None
    (m, k), n = _shape(a), _shape(b)[1]
    if kind == "wgmma":
        return wgmma_accumulator_layout(m, n, k, target.warp_size, num_warps)
    if kind == "mma_sync":
        return mma_accumulator_layout(m, n, k, target.warp_size, num_warps)
    if kind == "tcgen05":
        return tcgen05_accumulator_layout(m, n, k, target.warp_size, num_warps)
    if kind in ("mfma", "wmma"):
        names = (matrix_tiling.operand_name(op, tile.element_type(a)),
                 str(tile.element_type(op.results[0].type)))
        bytes_ = "tile.mma_fp8" in op.attributes or "tile.fp8_decoded" in op.attributes
        if _row_reduced(op) and not bytes_:
            # Reduced along its rows (attention's scores): the transposed
            # product's layout keeps a row in one lane (Triton's transposed MFMA).
            tt = matrix_tiling.choose_transposed(target, kind, m, n, k, *names, num_warps)
            if tt is not None:
                return matrix_tiling.transpose_layout(tt.layout())
        if isinstance(a_layout, Blocked) and not bytes_:
            # A computed from another dot's result (attention's P @ V): transposed
            # too where its operand registers are that layout's (no LDS for A).
            chain = register_operands.chain_tiling(target, kind, m, n, k, *names, num_warps,
                                                   a_layout)
            if chain is not None:
                return matrix_tiling.transpose_layout(chain[0].layout())
        tiling = matrix_tiling.choose(target, kind, m, n, k, *names, num_warps)
        return tiling.layout() if tiling is not None else None
    return None


def _row_reduced(dot: ir.Operation) -> bool:
    """The dot's result reaches a `tile.reduce` along axis 1 through
    elementwise `arith` / `math` ops."""
    seen: list[ir.Operation] = []
    stack = [dot.results[0]]
    while stack and len(seen) < 64:
        for use in stack.pop().uses:
            u = use.owner.operation
            if u.name == "tile.reduce":
                if ir.IntegerAttr(u.attributes["axis"]).value == 1:
                    return True
            elif u.name.split(".")[0] in ("arith", "math") and u not in seen:
                seen.append(u)
                stack.extend(u.results)
    return False




def kmajor_rows(layout: Blocked, shape: tuple[int, ...]) -> Blocked:
    """The loaded layout of a transposed product's B operand [K, N] (stored
    K-major): up to 4 rows (k) per thread where the rows repeat anyway, so
    the K-major stores write 4 consecutive k at once (Triton's
    sizePerThread [4, 8] for attention's V); otherwise `layout`."""
    if len(shape) != 2 or layout.order != (1, 0) or layout.per_thread[0] != 1:
        return layout
    reps = shape[0] // (layout.lanes[0] * layout.warps[0])
    r = min(4, reps)
    if r < 2:
        return layout
    return Blocked((r, layout.per_thread[1]), layout.lanes, layout.warps, layout.order)


def kmajor_trans_layouts(trans_ops: list[ir.Operation], layouts: dict[ir.Value, Layout],
                         find: Callable[[ir.Value], ir.Value],
                         members: dict[ir.Value, list[ir.Value]],
                         transposed_b: set[ir.Value]) -> None:
    """Give each `tile.trans` whose result is alone in its group and is the B
    operand of transposed products only (`transposed_b`: those operands) the
    transpose of its source's layout, in `layouts` (keyed by group root)."""
    for op in trans_ops:
        res = op.results[0]
        root, src = find(res), find(op.operands[0])
        if members.get(root) != [res] or res not in transposed_b:
            continue
        if any(use.owner.operation.name != "tile.dot" for use in res.uses):
            continue
        parent = layouts.get(src)
        if isinstance(parent, Blocked) and parent.rank == 2:
            layouts[root] = matrix_tiling.transpose_layout(parent)
