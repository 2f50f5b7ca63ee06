"""Printing from kernels in the `tile` dialect.

| op | operands -> result | attributes |
|---|---|---|
| `tile.print` | nothing, or one scalar or tile -> () | `prefix` (str), `formats` (the operand's printf conversion), `operand` (its position among the call's values, or -1 when it is the only one) |

`tile.print` is one value of `tl.device_print(prefix, *args)` (and of
`print(...)` in kernel code; a call makes one op per value, in order, or one
op without operands when there are none): every element is printed on its own line as
`pid (x, y, z) idx (i, j) PREFIX VALUE` (Triton's GPU format; `idx ()` for a
scalar; with several values `(operand k) ` comes before the value).  The
frontend picks each operand's printf conversion (`%i`, `%u`, `%lli`, `%llu`,
`%f`, or a zero-padded hex form) from its dtype, since signedness is not in the
IR's integer types.  The op has side effects (tile-dce keeps it).

Lowerings: the CPU calls the C library's `printf` (passes/cpu/debug.py), NVIDIA
`vprintf` through `gpu.printf` (passes/gpu/debug.py, `Feature.DEVICE_PRINTF`);
other targets reject it at compile time.

This module imports no other tilec module: dialects/tile.py takes IRDL_OPS
into the dialect's IRDL text.
"""
from __future__ import annotations

from typing import Sequence

from mlir import ir

IRDL_OPS = r"""  irdl.operation @print {
    %v = irdl.any
    %p = irdl.any
    %f = irdl.any
    %k = irdl.any
    irdl.attributes {"prefix" = %p, "formats" = %f, "operand" = %k}
    irdl.operands(values: variadic %v)
  }
"""


def print_(values: Sequence[ir.Value], prefix: str, formats: Sequence[str], operand: int = -1,
           *, loc: ir.Location, ip: ir.InsertionPoint | None = None) -> ir.Operation:
    """Print every element of `values` (none or one; see the module doc)."""
    attrs = {"prefix": ir.StringAttr.get(prefix),
             "formats": ir.ArrayAttr.get([ir.StringAttr.get(f) for f in formats]),
             "operand": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), operand)}
    return ir.Operation.create("tile.print", results=[], operands=list(values),
                               attributes=attrs, loc=loc, ip=ip)


def print_params(op: ir.Operation) -> tuple[str, list[str], int | None]:
    """(prefix, formats, operand position or None) of a `tile.print`."""
    prefix = ir.StringAttr(op.attributes["prefix"]).value
    k = ir.IntegerAttr(op.attributes["operand"]).value
    return (prefix, [ir.StringAttr(f).value for f in ir.ArrayAttr(op.attributes["formats"])],
            None if k < 0 else k)


def line_format(prefix: str, fmt: str, rank: int, operand: int | None) -> str:
    """The printf format of one printed element: pid (3 x %i), `rank` index
    coordinates (%i), the prefix, `(operand k) ` when there are several, the
    value's conversion (`fmt`, empty for a call without values)."""
    idx = ", ".join(["%i"] * rank)
    which = "" if operand is None else f"(operand {operand}) "
    return f"pid (%i, %i, %i) idx ({idx}){prefix.replace('%', '%%')}{which}{fmt}\n"
