"""Run-time checks of the debug mode in the `tile` dialect.

| op | operands -> result | attributes |
|---|---|---|
| `tile.assert`     | i1 scalar or tile -> () | `message` (str) |
| `tile.debug_trap` | i32 pid0, pid1, pid2, i64 offset -> () | `message` (str) |

`tile.assert` is what the frontend makes of `tl.device_assert(cond, msg)` with
a condition known only at run time: every element of `cond` must be true.  It
lives only until `tile-debug-checks` (passes/tile_debug_checks.py), which
expands it into a check in debug mode and erases it otherwise.

`tile.debug_trap` is the end of a failed check, executed by a program once it
found a violation (after the error record is written): GPUs print `message`
with the program id and the offset and trap (the lowering of each target
picks how); the CPU continues (its launcher raises after the launch).

This module imports no other tilec module: dialects/tile.py takes IRDL_OPS
into the dialect's IRDL text.
"""
from __future__ import annotations

from mlir import ir

IRDL_OPS = r"""  irdl.operation @assert {
    %c = irdl.any
    %m = irdl.any
    irdl.attributes {"message" = %m}
    irdl.operands(cond: %c)
  }
  irdl.operation @debug_trap {
    %i32 = irdl.is i32
    %i64 = irdl.is i64
    %m = irdl.any
    irdl.attributes {"message" = %m}
    irdl.operands(pid0: %i32, pid1: %i32, pid2: %i32, offset: %i64)
  }
"""


def assert_(cond: ir.Value, message: str, *, loc: ir.Location,
            ip: ir.InsertionPoint | None = None) -> ir.Operation:
    """`tl.device_assert(cond, message)` for a run-time `cond` (i1, scalar or tile)."""
    return ir.Operation.create("tile.assert", results=[], operands=[cond],
                               attributes={"message": ir.StringAttr.get(message)}, loc=loc, ip=ip)


def debug_trap(pids: list[ir.Value], offset: ir.Value, message: str, *, loc: ir.Location,
               ip: ir.InsertionPoint | None = None) -> ir.Operation:
    """The end of a failed check: `pids` (3 x i32) and `offset` (i64) for the message."""
    return ir.Operation.create("tile.debug_trap", results=[], operands=[*pids, offset],
                               attributes={"message": ir.StringAttr.get(message)}, loc=loc, ip=ip)
