"""Tensor descriptors in the `tile` dialect (Triton's `tl.make_tensor_descriptor`).

A descriptor names a row-major block window over a strided global tensor:

| op | operands -> result | attributes |
|---|---|---|
| `tile.make_descriptor`  | base `!tile.ptr<T>`, shape (r x i64), strides (r x i64) -> `!tile.tensordesc<tensor<B0x..xT>>` | `operandSegmentSizes` |
| `tile.descriptor_load`  | desc, offsets (r x i32) -> `tensor<B0x..xT>` | |
| `tile.descriptor_store` | desc, value `tensor<B0x..xT>`, offsets (r x i32) -> () | |

The block shape is the descriptor type's parameter (a compile-time shape); the
tensor's shape and strides are runtime values (strides in elements, the last
one is 1: the frontend checks it).  Elements of the block outside
[0, shape) in any dimension read as 0 and are not written.  The ops stay
simple on purpose: a target pass may turn descriptor loads into TMA copies
before `tile-lower-descriptors` (passes/tile_lower_descriptors.py) rewrites
the rest into `tile.addptr` + masked `tile.load`/`tile.store`.

This module imports no other tilec module: dialects/tile.py takes IRDL_OPS
into the dialect's IRDL text and PURE_OPS into its set of pure ops.
"""
from __future__ import annotations

from typing import Sequence

from mlir import ir

IRDL_OPS = r"""  irdl.type @tensordesc {
    %0 = irdl.any
    irdl.parameters(block: %0)
  }
  irdl.operation @make_descriptor {
    %p = irdl.any
    %s = irdl.any
    %t = irdl.any
    %r = irdl.any
    irdl.operands(base: %p, shape: variadic %s, strides: variadic %t)
    irdl.results(result: %r)
  }
  irdl.operation @descriptor_load {
    %d = irdl.any
    %o = irdl.any
    %r = irdl.any
    irdl.operands(desc: %d, offsets: variadic %o)
    irdl.results(result: %r)
  }
  irdl.operation @descriptor_store {
    %d = irdl.any
    %v = irdl.any
    %o = irdl.any
    irdl.operands(desc: %d, value: %v, offsets: variadic %o)
  }
"""

PURE_OPS = frozenset({"tile.make_descriptor", "tile.descriptor_load"})

_PREFIX = "!tile.tensordesc<"


def desc_type(block: ir.Type) -> ir.Type:
    """`!tile.tensordesc<block>` for a block tensor type."""
    return ir.Type.parse(f"{_PREFIX}{block}>", block.context)


def is_desc(t: ir.Type) -> bool:
    return str(t).startswith(_PREFIX)


def block_type(t: ir.Type) -> ir.RankedTensorType:
    """The block tensor type of a `!tile.tensordesc<...>`."""
    s = str(t)
    if not is_desc(t):
        raise ValueError(f"not a tensor descriptor type: {s}")
    return ir.RankedTensorType(ir.Type.parse(s[len(_PREFIX):-1], t.context))


def _segments(*sizes: int) -> ir.Attribute:
    return ir.DenseI32ArrayAttr.get(list(sizes))


def make_descriptor(base: ir.Value, shape: Sequence[ir.Value], strides: Sequence[ir.Value],
                    block: ir.RankedTensorType, *, loc: ir.Location,
                    ip: ir.InsertionPoint | None = None) -> ir.Value:
    attrs = {"operandSegmentSizes": _segments(1, len(shape), len(strides))}
    return ir.Operation.create("tile.make_descriptor", results=[desc_type(block)],
                               operands=[base, *shape, *strides], attributes=attrs, loc=loc,
                               ip=ip).result


def descriptor_load(desc: ir.Value, offsets: Sequence[ir.Value], *, loc: ir.Location,
                    ip: ir.InsertionPoint | None = None) -> ir.Value:
    return ir.Operation.create("tile.descriptor_load", results=[block_type(desc.type)],
                               operands=[desc, *offsets], loc=loc, ip=ip).result


def descriptor_store(desc: ir.Value, value: ir.Value, offsets: Sequence[ir.Value], *,
                     loc: ir.Location, ip: ir.InsertionPoint | None = None) -> ir.Operation:
    return ir.Operation.create("tile.descriptor_store", results=[],
                               operands=[desc, value, *offsets], loc=loc, ip=ip)


def parts(make: ir.Operation) -> tuple[ir.Value, list[ir.Value], list[ir.Value]]:
    """(base, shape, strides) of a `tile.make_descriptor`."""
    ops = list(make.operands)
    rank = (len(ops) - 1) // 2
    return ops[0], ops[1:1 + rank], ops[1 + rank:]
