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

Block pointers (Triton's `tl.make_block_ptr` / `tl.advance`) use the same ops:
the frontend keeps the offsets itself and passes them to each access.  Their
strides are arbitrary (the last one need not be 1), and an access may carry
`boundary` (a `DenseI32ArrayAttr` of the dimensions to bounds-check; absent:
all of them, as for descriptors; empty: none, the access is unmasked) and
`padding` (`"zero"`, the default, or `"nan"`: what a checked element outside
the tensor reads as).

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


def _access_attrs(boundary: Sequence[int] | None, padding: str) -> dict[str, ir.Attribute]:
    attrs: dict[str, ir.Attribute] = {}
    if boundary is not None:
        attrs["boundary"] = ir.DenseI32ArrayAttr.get(list(boundary))
    if padding != "zero":
        attrs["padding"] = ir.StringAttr.get(padding)
    return attrs


def descriptor_load(desc: ir.Value, offsets: Sequence[ir.Value], *, loc: ir.Location,
                    ip: ir.InsertionPoint | None = None, boundary: Sequence[int] | None = None,
                    padding: str = "zero") -> ir.Value:
    return ir.Operation.create("tile.descriptor_load", results=[block_type(desc.type)],
                               operands=[desc, *offsets], attributes=_access_attrs(boundary, padding),
                               loc=loc, ip=ip).result


def descriptor_store(desc: ir.Value, value: ir.Value, offsets: Sequence[ir.Value], *,
                     loc: ir.Location, ip: ir.InsertionPoint | None = None,
                     boundary: Sequence[int] | None = None) -> ir.Operation:
    return ir.Operation.create("tile.descriptor_store", results=[],
                               operands=[desc, value, *offsets],
                               attributes=_access_attrs(boundary, "zero"), loc=loc, ip=ip)


def checked_dims(op: ir.Operation, rank: int) -> list[int]:
    """The dimensions an access bounds-checks (all unless it says otherwise)."""
    if "boundary" not in op.attributes:
        return list(range(rank))
    return list(ir.DenseI32ArrayAttr(op.attributes["boundary"]))


def padding(op: ir.Operation) -> str:
    """What a checked element outside the tensor reads as: "zero" or "nan"."""
    if "padding" not in op.attributes:
        return "zero"
    return ir.StringAttr(op.attributes["padding"]).value


def parts(make: ir.Operation) -> tuple[ir.Value, list[ir.Value], list[ir.Value]]:
    """(base, shape, strides) of a `tile.make_descriptor`."""
    ops = list(make.operands)
    rank = (len(ops) - 1) // 2
    return ops[0], ops[1:1 + rank], ops[1 + rank:]
