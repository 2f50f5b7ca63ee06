"""`convert-tile-to-gpu` rules for the debug mode's `tile.debug_trap`
(dialects/tile_debug.py; made by passes/tile_debug_checks.py).

  * generic: nothing more (AMD): the error record in device memory says what
    failed, and the host raises a located `TilecError` from it after the
    launch (tilec/runtime/debug.py), as on the CPU.
  * `Feature.DEVICE_PRINTF` (NVIDIA's `vprintf`): thread 0 of the program also
    prints `tilec debug: <message> at file:line:col, program (x, y, z),
    element offset N` through `gpu.printf`.
No trap: measured on the H200, a trapping kernel loses its printf buffer and
ends the CUDA context, so neither the message nor the record reached the user;
the failed access itself is already masked off (or sent to the record's spare
word), so the kernel runs to its end without touching memory out of bounds.

The op is reached by the threads of one program together (its condition is a
reduction over the program's tile), so the print happens once per failing
program.

Nearest upstream analogue: Triton's `tl.device_assert` lowering
(`__assertfail` on NVIDIA, `abort` on AMD).
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, gpu, scf

from tilec.errors import source_loc
from tilec.passes.gpu.context import FuncLowering, Rule
from tilec.passes.rules import RuleSet
from tilec.targets import Feature

RULES: RuleSet[Rule] = RuleSet("gpu.debug")


@RULES.rule("tile.debug_trap")
def _record_only(L: FuncLowering, op: ir.Operation) -> None:
    """The record is written; the host reports it."""


@RULES.rule("tile.debug_trap", feature=Feature.DEVICE_PRINTF)
def _print(L: FuncLowering, op: ir.Operation) -> None:
    message = ir.StringAttr(op.attributes["message"]).value.replace("%", "%%")
    loc = source_loc(op.location)
    where = f" at {loc}" if loc else ""
    fmt = (f"tilec debug: {message}{where}, program (%d, %d, %d), element offset %lld\n")
    tid = gpu.thread_id(gpu.Dimension.x)
    first = arith.cmpi(arith.CmpIPredicate.eq, tid, arith.constant(ir.IndexType.get(), 0))
    if_op = scf.IfOp(first, [], has_else=False)
    with ir.InsertionPoint(if_op.then_block):
        gpu.printf(fmt, *[L.get(v) for v in op.operands])
        scf.YieldOp([])
