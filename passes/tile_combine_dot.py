"""`tile-combine-dot`: `acc + tl.dot(a, b)` becomes `tl.dot(a, b, acc)`.

`acc += tl.dot(a, b)` reaches the IR as a dot on a zero accumulator and an add
of its result.  Computed that way the K sum starts from zero and `acc` is
added after it: one rounding more than the hardware's (and cuBLAS's) in-place
accumulation, and on tensor cores a second accumulator tile per K step plus
an elementwise add.  This pass gives the dot the add's other operand as its
accumulator, so what follows (tile-accelerate-dot, the pipeliners, the CPU
micro-kernel) sees the form `acc = tl.dot(a, b, acc)`.

Input: tile-level IR after canonicalize (a zero tile is an `arith.constant`
splat; a `tensor.splat` of a scalar constant zero is recognized too).
Rewritten: `arith.addf` / `arith.addi` (either operand order) of
  * a `tile.dot` whose accumulator is a zero splat (+0.0 exactly; -0.0 is not
    taken; integer 0) of the dot's result type,
  * whose result has no other use,
  * in the same block as the add (a dot outside a loop added to inside it
    would otherwise move into the loop),
  * and another operand of the same type as the dot's result and the add's
    (a dot with out_dtype=fp16 reaches an f32 add through a conversion, and
    is not taken),
into one `tile.dot(a, b, other)` at the add's place, carrying every attribute
of the old dot (input_precision and whatever else a dot records) and the old
dot's location (errors about the dot, e.g. an unsupported precision, keep
pointing at the `tl.dot` call).  The old add and dot are erased; the zero
constant is left to tile-dce.  Batched (3-D) dots are stacked from 2-D dots
before any add and are not rewritten.
Output invariant: no add as above remains.

Nearest upstream analogue: Triton's combine canonicalization patterns that
fold an add of a dot with a zero accumulator into the dot (float and integer
forms).
"""
from __future__ import annotations

import math

from mlir import ir

from tilec.dialects import tile
from tilec.options import CompileOptions
from tilec.passes import pipeline_support as ps
from tilec.targets import Target

NAME = "tile-combine-dot"
ADDS = ("arith.addf", "arith.addi")


def _is_zero_scalar(attr: ir.Attribute) -> bool:
    if isinstance(attr, ir.FloatAttr):
        v = ir.FloatAttr(attr).value
        return v == 0.0 and math.copysign(1.0, v) > 0
    if isinstance(attr, ir.IntegerAttr):
        return int(ir.IntegerAttr(attr).value) == 0
    return False


def is_zero_splat(v: ir.Value) -> bool:
    """Whether `v` is a tile of +0.0 (or integer 0) written as a constant splat."""
    op = ps.defining_op(v)
    if op is None:
        return False
    if op.name == "arith.constant":
        attr = op.attributes["value"]
        return (isinstance(attr, ir.DenseElementsAttr) and attr.is_splat
                and _is_zero_scalar(attr.get_splat_value()))
    if op.name == "tensor.splat":
        src = ps.defining_op(op.operands[0])
        return (src is not None and src.name == "arith.constant"
                and _is_zero_scalar(src.attributes["value"]))
    return False


def _uses(v: ir.Value) -> int:
    return len(list(v.uses))


def _foldable_dot(add: ir.Operation, dot_v: ir.Value, other: ir.Value) -> ir.Operation | None:
    """The dot defining `dot_v` when `add(dot_v, other)` may become `dot(a, b, other)`."""
    dot = ps.defining_op(dot_v)
    if dot is None or dot.name != "tile.dot" or dot.block != add.block:
        return None
    res_t = add.results[0].type
    if not (dot_v.type == res_t == other.type == dot.operands[2].type):
        return None
    if _uses(dot_v) != 1 or not is_zero_splat(dot.operands[2]):
        return None
    return dot


def _fold(add: ir.Operation) -> bool:
    """Rewrite `add` if it adds a foldable dot; whether it did."""
    lhs, rhs = add.operands[0], add.operands[1]
    for dot_v, other in ((lhs, rhs), (rhs, lhs)):
        dot = _foldable_dot(add, dot_v, other)
        if dot is None:
            continue
        a, b = dot.operands[0], dot.operands[1]
        new = tile.dot(a, b, other, loc=dot.location, ip=ir.InsertionPoint(add))
        for name in list(dot.attributes):
            new.owner.attributes[name] = dot.attributes[name]
        add.results[0].replace_all_uses_with(new)
        add.erase()
        dot.erase()
        return True
    return False


def _collect(op: ir.Operation, out: list[ir.Operation]) -> None:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                if inner.operation.name in ADDS:
                    out.append(inner.operation)
                _collect(inner.operation, out)


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    with module.context:
        adds: list[ir.Operation] = []
        _collect(module.operation, adds)
        for add in adds:
            _fold(add)
