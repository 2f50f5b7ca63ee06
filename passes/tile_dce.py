"""tile-dce: erase unused side-effect-free `tile` ops.

IRDL-defined ops carry no traits, so upstream canonicalize/cse treat them as
having side effects and keep them even when unused.  This pass erases the pure
ones (`tile.PURE_OPS`) whose results are unused, and the upstream `arith`,
`math` and `tensor` ops (side-effect free, no regions) that only they used
(canonicalize ran before and kept them: a dead huge constant tile would
become a CPU stack buffer), iterating to a fixed point, recursing into regions.

Input invariants: any module.  Output invariants: no unused pure tile op.
Nearest upstream analogue: the dead-code part of `canonicalize`.
"""
from __future__ import annotations

from mlir import ir

from tilec.dialects import tile
from tilec.options import CompileOptions
from tilec.targets import Target

NAME = "tile-dce"


def _collect(op: ir.Operation, out: list[ir.Operation]) -> None:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                out.append(inner.operation)
                _collect(inner.operation, out)


def pure(op: ir.Operation) -> bool:
    return op.name in tile.PURE_OPS or (op.name.startswith(("arith.", "math.", "tensor."))
                                        and not len(op.regions))


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    changed = True
    while changed:
        changed = False
        ops: list[ir.Operation] = []
        _collect(module.operation, ops)
        for op in reversed(ops):
            if pure(op) and all(len(list(r.uses)) == 0 for r in op.results):
                op.erase()
                changed = True
