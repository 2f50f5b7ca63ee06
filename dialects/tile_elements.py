"""Pointer <-> integer casts and element shuffles in the `tile` dialect.

| op | operands -> result | attributes |
|---|---|---|
| `tile.int_to_ptr` | i64 scalar or tile -> `!tile.ptr<T>` of the same shape | |
| `tile.ptr_to_int` | `!tile.ptr<T>` scalar or tile -> i64 of the same shape | |
| `tile.restride`   | 1 or 2 tiles of one element type -> a tile | `view`, `strides`, `offset` |
| `tile.gather`     | src tile, i32 index tile of src's rank -> a tile of the index's shape | `axis` |
| `tile.inline_asm` | tiles of one shape (or scalars) -> tiles of that shape (or scalars) | `asm`, `constraints`, `pure`, `pack` |

`tile.int_to_ptr` is Triton's `x.to(tl.pointer_type(T))` on an integer (tutorial
08 keeps matrix addresses in an int64 array); `tile.ptr_to_int` is
`p.to(tl.int64)`.  Both are elementwise and pure.

`tile.restride` moves elements: the sources, flattened row-major and
concatenated, form one list `src`; the result, flattened row-major, is viewed
as the shape `view` (same element count, any rank), and the element at view
coordinates (v0, v1, ...) is `src[offset + sum(v_k * strides[k])]` (strides
may be negative).  It expresses `tl.join`, `tl.split`, `tl.interleave`,
`tl.cat` and `tl.flip` (tilec/frontend/builtins_shape.py builds them) with
one lowering per target: a `vector.shuffle` on the CPU, an exchange through
workgroup memory on GPUs.

`tile.gather` is `tl.gather(src, index, axis)`: the result at coordinates c
is `src` at c with coordinate `axis` replaced by `index[c]` (masked to
`src.shape[axis] - 1`, a power of two, so that a bad index reads some element
of `src` and never other memory: Triton leaves it undefined).  The index has
src's extent in every other dimension.  CPU: a gather from a stack copy of
src; GPUs: src and the index through workgroup memory.

`tile.inline_asm` is `tl.inline_asm_elementwise(asm, constraints, args, dtype,
is_pure, pack)`: the assembly runs once per `pack` elements of every operand
(their bits packed into one register when pack > 1) and writes one register
per result; `constraints` lists the results' then the operands' (LLVM inline
asm syntax: `=r,r,r`).  Elementwise for the layout; GPUs only.

This module imports no other tilec module: dialects/tile.py takes IRDL_OPS
into the dialect's IRDL text and PURE_OPS into its set of pure ops.
"""
from __future__ import annotations

import math
from typing import Sequence

from mlir import ir

IRDL_OPS = r"""  irdl.operation @inline_asm {
    %a = irdl.any
    %s = irdl.any
    %c = irdl.any
    %p = irdl.any
    %k = irdl.any
    %r = irdl.any
    irdl.attributes {"asm" = %s, "constraints" = %c, "pure" = %p, "pack" = %k}
    irdl.operands(args: variadic %a)
    irdl.results(results: variadic %r)
  }
  irdl.operation @int_to_ptr {
    %s = irdl.any
    %r = irdl.any
    irdl.operands(src: %s)
    irdl.results(result: %r)
  }
  irdl.operation @ptr_to_int {
    %s = irdl.any
    %r = irdl.any
    irdl.operands(src: %s)
    irdl.results(result: %r)
  }
  irdl.operation @restride {
    %s = irdl.any
    %v = irdl.any
    %t = irdl.any
    %o = irdl.any
    %r = irdl.any
    irdl.attributes {"view" = %v, "strides" = %t, "offset" = %o}
    irdl.operands(sources: variadic %s)
    irdl.results(result: %r)
  }
  irdl.operation @gather {
    %s = irdl.any
    %i = irdl.any
    %a = irdl.any
    %r = irdl.any
    irdl.attributes {"axis" = %a}
    irdl.operands(src: %s, index: %i)
    irdl.results(result: %r)
  }
"""

PURE_OPS = frozenset({"tile.int_to_ptr", "tile.ptr_to_int", "tile.restride", "tile.gather"})


def _same_shape(like: ir.Type, element: ir.Type) -> ir.Type:
    if isinstance(like, ir.RankedTensorType):
        return ir.RankedTensorType.get(list(ir.RankedTensorType(like).shape), element)
    return element


def int_to_ptr(value: ir.Value, ptr: ir.Type, *, loc: ir.Location,
               ip: ir.InsertionPoint | None = None) -> ir.Value:
    """`value` (i64, scalar or tile) as pointers of type `ptr` (a `!tile.ptr<T>`)."""
    return ir.Operation.create("tile.int_to_ptr", results=[_same_shape(value.type, ptr)],
                               operands=[value], loc=loc, ip=ip).result


def ptr_to_int(value: ir.Value, *, loc: ir.Location,
               ip: ir.InsertionPoint | None = None) -> ir.Value:
    """The addresses of `value` (pointers, scalar or tile) as i64."""
    i64 = ir.IntegerType.get_signless(64)
    return ir.Operation.create("tile.ptr_to_int", results=[_same_shape(value.type, i64)],
                               operands=[value], loc=loc, ip=ip).result


def _i64_array(xs: Sequence[int]) -> ir.Attribute:
    return ir.DenseI64ArrayAttr.get([int(x) for x in xs])


def restride(sources: Sequence[ir.Value], shape: Sequence[int], view: Sequence[int],
             strides: Sequence[int], offset: int, *, loc: ir.Location,
             ip: ir.InsertionPoint | None = None) -> ir.Value:
    """A tile of `shape` whose elements are picked from `sources` (see the module doc)."""
    elem = ir.RankedTensorType(sources[0].type).element_type
    if math.prod(view) != math.prod(shape) or len(view) != len(strides):
        raise ValueError(f"restride: view {list(view)} / strides {list(strides)} do not fit "
                         f"the shape {list(shape)}")
    attrs = {"view": _i64_array(view), "strides": _i64_array(strides),
             "offset": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(offset))}
    return ir.Operation.create("tile.restride",
                               results=[ir.RankedTensorType.get(list(shape), elem)],
                               operands=list(sources), attributes=attrs, loc=loc, ip=ip).result


def gather(src: ir.Value, index: ir.Value, axis: int, *, loc: ir.Location,
           ip: ir.InsertionPoint | None = None) -> ir.Value:
    """`tl.gather(src, index, axis)` (see the module doc); `index` is i32."""
    elem = ir.RankedTensorType(src.type).element_type
    shape = list(ir.RankedTensorType(index.type).shape)
    attrs = {"axis": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), int(axis))}
    return ir.Operation.create("tile.gather", results=[ir.RankedTensorType.get(shape, elem)],
                               operands=[src, index], attributes=attrs, loc=loc, ip=ip).result


def gather_axis(op: ir.Operation) -> int:
    return ir.IntegerAttr(op.attributes["axis"]).value


def restride_params(op: ir.Operation) -> tuple[list[int], list[int], int]:
    """(view, strides, offset) of a `tile.restride`."""
    view = list(ir.DenseI64ArrayAttr(op.attributes["view"]))
    strides = list(ir.DenseI64ArrayAttr(op.attributes["strides"]))
    return view, strides, ir.IntegerAttr(op.attributes["offset"]).value


def source_index(view: Sequence[int], strides: Sequence[int], offset: int, flat: int) -> int:
    """The index into the concatenated sources of result element `flat` (row-major)."""
    idx, rem = offset, flat
    for d in range(len(view)):
        coord, rem = divmod(rem, math.prod(view[d + 1:]))
        idx += coord * strides[d]
    return idx


def inline_asm(args: Sequence[ir.Value], results: Sequence[ir.Type], asm: str, constraints: str,
               pure: bool, pack: int, *, loc: ir.Location,
               ip: ir.InsertionPoint | None = None) -> list[ir.Value]:
    """`tl.inline_asm_elementwise`'s op (results in order)."""
    i32 = ir.IntegerType.get_signless(32)
    attrs = {"asm": ir.StringAttr.get(asm), "constraints": ir.StringAttr.get(constraints),
             "pure": ir.BoolAttr.get(pure), "pack": ir.IntegerAttr.get(i32, pack)}
    op = ir.Operation.create("tile.inline_asm", results=list(results), operands=list(args),
                             attributes=attrs, loc=loc, ip=ip)
    return list(op.results)
