"""CPU lowering of pointer <-> integer casts and element shuffles
(dialects/tile_elements.py).

| op | CPU form |
|---|---|
| `tile.int_to_ptr` | `llvm.inttoptr` on an i64 or a vector of i64. |
| `tile.ptr_to_int` | `llvm.ptrtoint`. |
| `tile.restride`   | one `vector.shuffle` of the (flat, row-major) sources with the index mask the op's view/strides/offset give. |
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import llvm

from tilec.dialects import tile
from tilec.dialects import tile_elements as el
from tilec.passes.cpu.context import CpuRules, Lowering, gather, shuffle2

RULES = CpuRules("cpu.elements")


@RULES.rule("tile.int_to_ptr")
def int_to_ptr(lw: Lowering, op: ir.Operation) -> None:
    lw.bind(op.result, llvm.IntToPtrOp(lw.convert(op.result.type),
                                       lw.mapped(op.operands[0])).result)


@RULES.rule("tile.ptr_to_int")
def ptr_to_int(lw: Lowering, op: ir.Operation) -> None:
    lw.bind(op.result, llvm.PtrToIntOp(lw.convert(op.result.type),
                                       lw.mapped(op.operands[0])).result)


@RULES.rule("tile.restride")
def restride(lw: Lowering, op: ir.Operation) -> None:
    view, strides, offset = el.restride_params(op)
    n = 1
    for s in tile.shape_of(op.result.type):
        n *= s
    idx = [el.source_index(view, strides, offset, f) for f in range(n)]
    srcs = [lw.mapped(v) for v in op.operands]
    lw.bind(op.result, gather(srcs[0], idx) if len(srcs) == 1 else shuffle2(srcs[0], srcs[1], idx))
