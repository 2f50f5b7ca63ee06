"""CPU lowering of the debug mode's ops (dialects/tile_debug.py).

| op | CPU form |
|---|---|
| `tile.debug_trap` | nothing: the error record is already written and the launcher raises after the launch (tilec/runtime/debug.py), so the program continues with the failed access redirected to the scratch word. |
| `tile.assert` | never reaches the lowering (`tile-debug-checks` expands or erases it); a CompilerBugError if it does. |
"""
from __future__ import annotations

from mlir import ir

from tilec.passes.cpu.context import CpuRules, Lowering

RULES = CpuRules("cpu.debug")


@RULES.rule("tile.debug_trap")
def debug_trap(lw: Lowering, op: ir.Operation) -> None:
    """The CPU reports after the launch: no code."""
