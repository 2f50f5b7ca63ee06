"""CPU lowering of program ids, structured control flow and synchronisation.

| op | CPU form |
|---|---|
| `tile.program_id`, `tile.num_programs` | the body function's pid / grid-size arguments (divided by n along x in a kernel split over n CTAs: `cluster_ids`). |
| `tile.cta_rank` | pid_x % n. |
| `scf.for`, `scf.while`, `scf.if` | the same op on converted types, its regions lowered in place. |
| `scf.yield`, `scf.condition`, `func.return` | the same terminator on the converted values. |
| `tile.barrier`, `tile.warp_sync` | nothing: on the CPU one program instance is one thread that computes the whole tile in program order, so there is no other thread of the program to wait for or reconverge, and memory a program wrote is visible to its later loads. |
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, func, scf

from tilec.passes.cpu.context import CpuRules, Lowering, int_attr

RULES = CpuRules("cpu.control_flow")


def cluster_ids(lw: Lowering, fn: ir.Operation) -> None:
    """A kernel split over clusters of n CTAs (tile-split-ctas, `num_ctas=2`):
    the runtime runs n program instances along x per program, so program id
    x is pid_x / n, the grid's x is g_x / n, and `tile.cta_rank` is pid_x % n
    (the halves of a program run one after the other: the CPU checks the
    split itself)."""
    if "tile.num_ctas" not in fn.attributes:
        return
    n = arith.ConstantOp(ir.IntegerType.get_signless(32), int_attr(fn, "tile.num_ctas")).result
    lw.cta_rank = arith.RemUIOp(lw.pids[0], n).result
    lw.pids = [arith.DivUIOp(lw.pids[0], n).result, *lw.pids[1:]]
    lw.nprogs = [arith.DivUIOp(lw.nprogs[0], n).result, *lw.nprogs[1:]]


@RULES.rule("tile.cta_rank")
def cta_rank(lw: Lowering, op: ir.Operation) -> None:
    assert lw.cta_rank is not None
    lw.bind(op.result, lw.cta_rank)


@RULES.rule("tile.program_id")
def program_id(lw: Lowering, op: ir.Operation) -> None:
    lw.bind(op.result, lw.pids[int_attr(op, "axis")])


@RULES.rule("tile.num_programs")
def num_programs(lw: Lowering, op: ir.Operation) -> None:
    lw.bind(op.result, lw.nprogs[int_attr(op, "axis")])


def _lower_region(lw: Lowering, old: ir.Block, new: ir.Block) -> None:
    lw.bind_all(list(old.arguments), list(new.arguments))
    with ir.InsertionPoint(new):
        lw.lower_block(old)


@RULES.rule("scf.for")
def for_(lw: Lowering, op: ir.Operation) -> None:
    lb, ub, step, *inits = (lw.mapped(v) for v in op.operands)
    new = scf.ForOp(lb, ub, step, inits)
    _lower_region(lw, op.regions[0].blocks[0], new.body)
    lw.bind_all(list(op.results), list(new.results))


@RULES.rule("scf.while")
def while_(lw: Lowering, op: ir.Operation) -> None:
    new = scf.WhileOp([lw.convert(r.type) for r in op.results],
                      [lw.mapped(v) for v in op.operands])
    for old_region, region in zip(op.regions, new.regions):
        old_block = old_region.blocks[0]
        block = region.blocks.append(*[lw.convert(a.type) for a in old_block.arguments])
        _lower_region(lw, old_block, block)
    lw.bind_all(list(op.results), list(new.results))


@RULES.rule("scf.if")
def if_(lw: Lowering, op: ir.Operation) -> None:
    has_else = len(op.regions[1].blocks) > 0
    new = scf.IfOp(lw.mapped(op.operands[0]), [lw.convert(r.type) for r in op.results],
                   has_else=has_else)
    _lower_region(lw, op.regions[0].blocks[0], new.then_block)
    if has_else:
        _lower_region(lw, op.regions[1].blocks[0], new.else_block)
    lw.bind_all(list(op.results), list(new.results))


@RULES.rule("scf.yield")
def yield_(lw: Lowering, op: ir.Operation) -> None:
    scf.YieldOp([lw.mapped(v) for v in op.operands])


@RULES.rule("scf.condition")
def condition(lw: Lowering, op: ir.Operation) -> None:
    cond, *args = (lw.mapped(v) for v in op.operands)
    scf.ConditionOp(cond, args)


@RULES.rule("func.return")
def return_(lw: Lowering, op: ir.Operation) -> None:
    func.ReturnOp([lw.mapped(v) for v in op.operands])


@RULES.rule("tile.barrier", "tile.warp_sync")
def no_op_sync(lw: Lowering, op: ir.Operation) -> None:
    return None
