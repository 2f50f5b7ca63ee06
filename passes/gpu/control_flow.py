"""`convert-tile-to-gpu` rules for structured control flow and the kernel's return.

Input: `scf.for`/`scf.if`/`scf.while`/`scf.condition`/`scf.yield` whose
carried values may be tiles, and `func.return` (a kernel returns nothing).
Output: the same `scf` ops carrying the flattened per-thread form of every
value (a tile contributes one value per fragment chunk, in chunk order);
`func.return` -> `gpu.return`.  The `scf.if {tile.warp_roles}` of
tile-warp-specialize is the target's `hook.warp-roles`.

Nearest upstream analogue: the structural type conversion of
`populateSCFStructuralTypeConversions` (one-to-many, as in 1:N conversion).
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import gpu, scf

from tilec.errors import TilecError, source_loc
from tilec.passes.gpu.context import FuncLowering, Rule
from tilec.passes.rules import RuleSet

RULES: RuleSet[Rule] = RuleSet("gpu.control_flow")


@RULES.rule("scf.for")
def _for(L: FuncLowering, op: ir.Operation) -> None:
    lb, ub, step = (L.get(v) for v in list(op.operands)[:3])
    inits = L.flat(list(op.operands)[3:])
    new = scf.ForOp(lb, ub, step, inits)
    old_body = op.regions[0].blocks[0]
    L.values[old_body.arguments[0]] = new.induction_variable
    L.bind_flat(list(old_body.arguments)[1:], list(new.inner_iter_args))
    L.lower_block(old_body, new.body)
    L.bind_flat(list(op.results), list(new.results))


@RULES.rule("scf.if")
def _if(L: FuncLowering, op: ir.Operation) -> None:
    if "tile.warp_roles" in op.attributes:   # tile-warp-specialize's split: the target's
        L.hook("hook.warp-roles")(L, op)
        return
    types: list[ir.Type] = []
    for r in op.results:
        types.extend(L.frag_types(r.type))
    has_else = len(op.regions[1].blocks) > 0
    new = scf.IfOp(L.get(op.operands[0]), types, has_else=has_else)
    L.lower_block(op.regions[0].blocks[0], new.then_block)
    if has_else:
        L.lower_block(op.regions[1].blocks[0], new.else_block)
    L.bind_flat(list(op.results), list(new.results))


@RULES.rule("scf.while")
def _while(L: FuncLowering, op: ir.Operation) -> None:
    inits = L.flat(list(op.operands))
    types: list[ir.Type] = []
    for r in op.results:
        types.extend(L.frag_types(r.type))
    new = scf.WhileOp(types, inits)
    for old_region, region, arg_types in ((op.regions[0], new.before, [v.type for v in inits]),
                                          (op.regions[1], new.after, types)):
        old_block = old_region.blocks[0]
        block = region.blocks.append(*arg_types)
        L.bind_flat(list(old_block.arguments), list(block.arguments))
        L.lower_block(old_block, block)
    L.bind_flat(list(op.results), list(new.results))


@RULES.rule("scf.condition")
def _condition(L: FuncLowering, op: ir.Operation) -> None:
    scf.ConditionOp(L.get(op.operands[0]), L.flat(list(op.operands)[1:]))


@RULES.rule("scf.yield")
def _yield(L: FuncLowering, op: ir.Operation) -> None:
    scf.YieldOp(L.flat(list(op.operands)))


@RULES.rule("func.return")
def _return(L: FuncLowering, op: ir.Operation) -> None:
    if len(op.operands):
        raise TilecError("kernels cannot return values", source_loc(op.location))
    gpu.ReturnOp([])
