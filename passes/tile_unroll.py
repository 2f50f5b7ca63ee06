"""`tile-unroll`: loops with `tile.loop_unroll_factor = N` (N > 1) unrolled N times.

`tl.range(..., loop_unroll_factor=N)` is Triton's hint (GPU targets; the CPU
back end unrolls its own chunk loops and ignores it).  Pipelined loops keep it:
the pipeliners copy it to the loops they build.

Tried and not the default: the attention forward's loop with an early product
(passes/tile_pipeline_early.py; D = 128, 8 warps, producer warpgroup) copies the
product round the back edge, 64 moves per thread and iteration of its 556
instructions.  Unrolled twice, the PTX alternates two register sets with no
copy, but ptxas 13.0 then serializes the wgmmas for lack of registers (C7512)
and spills 380 bytes (1,264 without the producer), so `loop_unroll_factor` stays
the user's choice.

Input: tiled IR (after tile-pipeline, tile-warp-specialize and tile-pingpong, so
the pipelined loop is unrolled as it will run).  A loop qualifies when its step
is a positive constant; any other keeps its body, with `tile.unroll_note`.
Output: upstream MLIR's `loopUnrollByFactor` (the transform dialect's
`transform.loop.unroll`): a loop over whole groups of N iterations, each N
bodies with the induction variable advanced by the step, then a loop over the
remaining 0 .. N-1 iterations.  The upper bound is first raised to the lower
one where it is smaller (the upstream trip count divides `ub - lb` unsigned).
Attributes are copied to both loops; the factor is removed from them.
Every op keeps its location (the clones carry the original's).

Nearest upstream analogue: `mlir::loopUnrollByFactor` itself (this pass picks the
loops and makes their bounds safe for it); Triton's `loop_unroll_factor`
lowering (LLVM's unroller with `llvm.loop.unroll.count`), which cannot unroll
loops with convergent barriers at a runtime trip count.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith
from mlir.dialects.transform import interpreter

from tilec.options import CompileOptions
from tilec.passes import pipeline_support as ps
from tilec.targets import Target

NAME = "tile-unroll"

FACTOR = "tile.loop_unroll_factor"
_MARK = "tile.unroll_now"


def _script(factor: int) -> ir.Module:
    return ir.Module.parse(f"""
module attributes {{transform.with_named_sequence}} {{
  transform.named_sequence @__transform_main(%root: !transform.any_op {{transform.readonly}}) {{
    %l = transform.structured.match ops{{["scf.for"]}} attributes {{{_MARK}}} in %root
      : (!transform.any_op) -> !transform.op<"scf.for">
    transform.loop.unroll %l {{factor = {factor}}} : !transform.op<"scf.for">
    transform.yield
  }}
}}""")


def _factor(loop: ir.Operation) -> int:
    if FACTOR not in loop.attributes:
        return 1
    return int(ir.IntegerAttr(loop.attributes[FACTOR]).value)


def _unroll(module: ir.Module, loop: ir.Operation, factor: int) -> None:
    lb, ub, step = list(loop.operands)[:3]
    with loop.location, ir.InsertionPoint(loop):
        safe = arith.MaxSIOp(lb, ub).result
    loop.operands[1] = safe
    loop.attributes[_MARK] = ir.UnitAttr.get()
    script = _script(factor)
    interpreter.apply_named_sequence(module.operation, script.body.operations[0], script)

    def clear(op: ir.Operation) -> ir.WalkResult:
        if _MARK in op.attributes:
            del op.attributes[_MARK]
            del op.attributes[FACTOR]
        return ir.WalkResult.ADVANCE

    module.operation.walk(clear)


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    with module.context:
        todo: list[tuple[ir.Operation, int]] = []
        for func in list(module.body.operations):
            if func.operation.name != "func.func":
                continue
            for loop in ps.loops(func.operation):
                factor = _factor(loop)
                if factor <= 1:
                    if FACTOR in loop.attributes:
                        del loop.attributes[FACTOR]
                    continue
                step = ps.const_int(loop.operands[2])
                if step is None or step <= 0:
                    loop.attributes["tile.unroll_note"] = ir.StringAttr.get(
                        "unrolled only with a positive constant step")
                    continue
                todo.append((loop, factor))
        for loop, factor in todo:   # innermost first (ps.loops)
            _unroll(module, loop, factor)
