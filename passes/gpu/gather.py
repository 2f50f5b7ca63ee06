"""`convert-tile-to-gpu` rule for `tile.gather` (`tl.gather`, dialects/tile_elements.py).

Every thread stores its elements of the source at their row-major positions in
a workgroup-memory array (and, when the index tile is not laid out like the
result, its index elements in a second one), a barrier, then each thread
computes, for each of its result elements, the source position
`(index & (n - 1)) * stride[axis] + sum(coord[d] * stride[d], d != axis)`
(n = the source's extent along `axis`, a power of two: a bad index reads some
element of the source, never other memory) and reads it; a barrier after the
reads lets later exchanges reuse the memory (it is released).  The same exchange as
`tile.restride` (passes/gpu/elements.py) with a data-dependent position.

Nearest upstream analogue: Triton's `GatherOpConversion` (its fallback path
through shared memory; Triton also has a warp-shuffle path for layouts that
keep the gather axis inside a warp).
"""
from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith, gpu, llvm

from tilec.dialects import tile
from tilec.dialects import tile_elements as el
from tilec.passes.gpu.context import (
    FuncLowering, Rule, i32, is_i1, linear_index, result, shared_element, store_row_major,
)
from tilec.passes.rules import RuleSet

RULES: RuleSet[Rule] = RuleSet("gpu.gather")


def _coordinate(L: FuncLowering, flat: ir.Value, shape: tuple[int, ...], d: int,
                n: int) -> ir.Value:
    """Coordinate `d` of the row-major positions `flat` (a vector of n i32) in `shape`."""
    inner = math.prod(shape[d + 1:])
    coord = flat if inner == 1 else arith.DivUIOp(flat, L.splat(L.const_i32(inner), n)).result
    if d > 0:
        coord = arith.RemUIOp(coord, L.splat(L.const_i32(shape[d]), n)).result
    return coord


@RULES.rule("tile.gather")
def _gather(L: FuncLowering, op: ir.Operation) -> None:
    src, index = op.operands[0], op.operands[1]
    res = result(op)
    axis = el.gather_axis(op)
    src_shape, out_shape = tuple(src.type.shape), tuple(res.type.shape)
    elem = L.scalar_type(res.type.element_type)
    mem_t = ir.IntegerType.get_signless(8) if is_i1(elem) else elem
    same = tile.layout_of(index.type) == tile.layout_of(res.type)
    buf = L.shared_buffer(mem_t, math.prod(src_shape))
    ibuf = None if same else L.shared_buffer(i32(), math.prod(out_shape))
    gpu.BarrierOp()
    store_row_major(L, src, buf, mem_t)
    if ibuf is not None:
        store_row_major(L, index, ibuf, i32())
    gpu.BarrierOp()
    dd = L.dist(res.type)
    n = dd.vec_len
    rm = [math.prod(src_shape[d + 1:]) for d in range(len(src_shape))]
    own = L.frag(index) if same else None
    out = []
    for c, flat in enumerate(linear_index(L, dd)):
        if own is not None:
            idx = own[c]
        else:
            assert ibuf is not None
            idx = L.concat([llvm.LoadOp(i32(), shared_element(L, ibuf, L.extract(flat, i), i32()))
                            .result for i in range(n)]) if n > 1 else \
                L.splat(llvm.LoadOp(i32(), shared_element(L, ibuf, L.extract(flat, 0), i32()))
                        .result, 1)
        pos = arith.AndIOp(idx, L.splat(L.const_i32(src_shape[axis] - 1), n)).result
        if rm[axis] != 1:
            pos = arith.MulIOp(pos, L.splat(L.const_i32(rm[axis]), n)).result
        for d in range(len(out_shape)):
            if d == axis or out_shape[d] == 1:
                continue
            coord = _coordinate(L, flat, out_shape, d, n)
            if rm[d] != 1:
                coord = arith.MulIOp(coord, L.splat(L.const_i32(rm[d]), n)).result
            pos = arith.AddIOp(pos, coord).result
        elems = []
        for i in range(n):
            v = llvm.LoadOp(mem_t, shared_element(L, buf, L.extract(pos, i), mem_t)).result
            elems.append(arith.TruncIOp(elem, v).result if mem_t != elem else v)
        out.append(L.concat(elems) if len(elems) > 1 else L.splat(elems[0], 1))
    gpu.BarrierOp()
    if ibuf is not None:
        L.release_shared(ibuf)
    L.release_shared(buf)
    L.values[res] = out
