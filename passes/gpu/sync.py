"""`convert-tile-to-gpu` rules for `tile.barrier` and `tile.warp_sync`.

  * `tile.barrier` -> `gpu.barrier` (every thread of the program), marked
    `tilec.ordered`: a barrier the program asked for (`tl.debug_barrier`) or
    a pass placed may order global memory too, so the end-of-kernel cleanup
    (barriers.py `drop_trailing`) keeps it.
  * `tile.warp_sync` -> nothing: lock-step wavefronts are converged by
    construction.  Targets whose lanes may diverge (`Feature.WARP_SYNC_INSTR`)
    have their own rule (targets/nvidia/rules.py: `bar.warp.sync`).

Nearest upstream analogue: `gpu.barrier`; `nvvm.bar.warp.sync`.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import gpu

from tilec.passes.gpu.barriers import ORDERED
from tilec.passes.gpu.context import FuncLowering, Rule
from tilec.passes.rules import RuleSet

RULES: RuleSet[Rule] = RuleSet("gpu.sync")


@RULES.rule("tile.barrier")
def _barrier(L: FuncLowering, op: ir.Operation) -> None:
    gpu.BarrierOp().operation.attributes[ORDERED] = ir.UnitAttr.get()


@RULES.rule("tile.warp_sync")
def _warp_sync(L: FuncLowering, op: ir.Operation) -> None:
    """Lock-step lanes: nothing to do."""
