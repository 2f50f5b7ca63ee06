"""CPU lowering of ops that make or rearrange tiles.

Tiles are flat row-major vectors `vector<prod(shape) x T>`, so:

| op | CPU form |
|---|---|
| `tile.range`       | a constant `[start, start + n)` vector (plus the chunk's start, broadcast, when strip-mining). |
| `tensor.splat`     | `vector.broadcast`. |
| `tile.expand_dims`, `tile.reshape` | nothing: row-major data is unchanged. |
| `tile.broadcast`   | one `vector.shuffle` with the broadcast index mask (`vector.broadcast` of a one-element tile). |
| `tile.trans`       | one `vector.shuffle` with the transposed index mask. |
"""
from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith, vector

from tilec.dialects import tile
from tilec.passes.cpu.context import CpuRules, Lowering, extract, gather, int_attr, shuffle2

RULES = CpuRules("cpu.shape")


@RULES.rule("tile.range")
def range_(lw: Lowering, op: ir.Operation) -> None:
    start = int_attr(op, "start")
    vt = lw.convert(op.result.type)
    count = ir.VectorType(vt).shape[0]
    attr = ir.Attribute.parse(f"dense<[{', '.join(map(str, range(start, start + count)))}]> : {vt}")
    value = arith.ConstantOp(vt, attr).result
    if lw.chunk_start is not None:
        offset = vector.BroadcastOp(vt, lw.chunk_start).result
        value = arith.AddIOp(value, offset).result
    lw.bind(op.result, value)


@RULES.rule("tensor.splat")
def splat(lw: Lowering, op: ir.Operation) -> None:
    lw.bind(op.result, vector.BroadcastOp(lw.convert(op.result.type),
                                          lw.mapped(op.operands[0])).result)


@RULES.rule("tile.expand_dims", "tile.reshape")
def same_data(lw: Lowering, op: ir.Operation) -> None:
    lw.bind(op.result, lw.mapped(op.operands[0]))  # row-major data is unchanged


@RULES.rule("tile.broadcast")
def broadcast(lw: Lowering, op: ir.Operation) -> None:
    src_shape = tile.shape_of(op.operands[0].type)
    dst_shape = tile.shape_of(op.result.type)
    src = lw.mapped(op.operands[0])
    if math.prod(src_shape) == 1:
        lw.bind(op.result, vector.BroadcastOp(lw.convert(op.result.type), extract(src, 0)).result)
        return
    src_strides = [math.prod(src_shape[d + 1:]) for d in range(len(src_shape))]
    mask = []
    for flat in range(math.prod(dst_shape)):
        idx, rem = 0, flat
        for d in range(len(dst_shape)):
            coord, rem = divmod(rem, math.prod(dst_shape[d + 1:]))
            if src_shape[d] != 1:
                idx += coord * src_strides[d]
        mask.append(idx)
    lw.bind(op.result, shuffle2(src, src, mask))


@RULES.rule("tile.trans")
def trans(lw: Lowering, op: ir.Operation) -> None:
    rows, cols = tile.shape_of(op.operands[0].type)
    # Result (cols, rows): out[j * rows + i] = in[i * cols + j].
    idx = [r * cols + c for c in range(cols) for r in range(rows)]
    lw.bind(op.result, gather(lw.mapped(op.operands[0]), idx))
