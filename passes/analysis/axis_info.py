"""Axis info: what is provable about the integer and pointer tiles of a kernel.

For every value of a tile-level `func.func` the analysis records, per tile
dimension d (scalars have one pseudo-dimension):

* contiguity[d]: the dimension splits into runs of this many elements, aligned
  at multiples of it, and along a run the value grows by exactly 1 (by one
  element for pointers);
* constancy[d]: likewise, runs (aligned at multiples of it) of equal values;
* divisibility[d]: the largest power of two dividing the first element of every
  contiguous run along d, for all positions in the other dimensions (every
  element when contiguity[d] == 1).  In elements for integers, in BYTES for
  pointers; capped at `MAX_DIVISIBILITY`.

All three are powers of two.  The lowering passes use them to choose vector
widths (contiguity and alignment of a pointer tile) and to predicate a whole
vector with one bit of a mask (constancy of the mask).

Input: a tile-level `func.func` (laid out or not: encodings are ignored).
An op that defines a value the kernel hinted (`tl.multiple_of`,
`tl.max_contiguous`, `tl.max_constancy`: `tile.hint_*` attributes) gives it
at least what the hints assert (not a `%` wrap: `_WRAPS`).
Output: nothing is changed; `analyze` returns an `AxisInfoMap`.
Nearest upstream analogue: `mlir::dataflow::IntegerRangeAnalysis` (a forward
sparse analysis); the lattice is Triton's AxisInfo.

Values are keyed by `ir.Value` itself: in the MLIR 22 bindings `Value.__hash__`
and `__eq__` compare the underlying `mlir::Value`, so the `BlockArgument`, the
`OpResult` and an operand that refer to one SSA value are the same key.  Keys are
valid until the IR they refer to is erased.
"""
from __future__ import annotations

import math

from mlir import ir

from tilec.passes.analysis.axis_lattice import (
    MAX_DIVISIBILITY, AxisInfo, AxisInfoMap, conservative, every_div, meet, pointee_bytes,
    pow2_divisor, shape, type_bytes,
)
from tilec.passes.analysis.axis_transfer import TRANSFER, elementwise

__all__ = ["MAX_DIVISIBILITY", "AxisInfo", "AxisInfoMap", "analyze", "pointee_bytes",
           "type_bytes"]


class _Analysis:
    def __init__(self) -> None:
        self.map = AxisInfoMap()

    def info(self, v: ir.Value) -> AxisInfo:
        return self.map.get(v)

    def run_block(self, block: ir.Block) -> None:
        for op in block.operations:
            self.run_op(op.operation)

    def run_op(self, op: ir.Operation) -> None:
        if op.name == "scf.for":
            _run_for(self, op)
            return
        if op.name == "scf.if":
            _run_if(self, op)
            return
        rule = TRANSFER.get(op.name)
        infos = rule(self.map, op) if rule is not None else None
        if infos is None and op.name.split(".")[0] in ("arith", "math") and len(op.results) == 1:
            infos = [elementwise(self.map, op)]
        if infos is not None:
            for r, i in zip(op.results, infos):
                self.map.set(r, i)
        if len(op.results) == 1 and op.name not in _WRAPS and \
                any(a in op.attributes for a in _HINTS):
            self.map.set(op.results[0], _hinted(op, self.map.get(op.results[0])))
        for region in op.regions:
            for block in region.blocks:
                self.run_block(block)



# What `tl.multiple_of` / `tl.max_contiguous` / `tl.max_constancy` record on
# the op defining the hinted value (tilec/frontend/builtins_extra.py): per
# dimension, divisibility (bytes for pointers, as the lattice), contiguity,
# constancy.  Triton's contract: the kernel author asserts them.
_HINTS = ("tile.hint_multiple_of", "tile.hint_max_contiguous", "tile.hint_max_constancy")
# Hints on a wrapped index (`(start + tl.arange(0, B)) % M`, tutorial 03's
# rows, then hinted contiguous) are not taken: the wrap says the index is not
# contiguous across it, and the analysis of the remainder (contiguous runs of
# M's divisor) stands.  Trusting the hint there would widen B's loads across
# the wrap, past the end of the last row (a read out of bounds).
_WRAPS = ("arith.remsi", "arith.remui")


def _hinted(op: ir.Operation, info: AxisInfo) -> AxisInfo:
    """`info` raised to what the op's hints assert (each a power of two: the
    largest dividing the hinted value; runs no longer than the dimension)."""
    dims = shape(op.results[0].type) or (1,)
    fields = [list(info.divisibility), list(info.contiguity), list(info.constancy)]
    for field, name in zip(fields, _HINTS):
        if name not in op.attributes:
            continue
        for d, v in enumerate(list(ir.DenseI32ArrayAttr(op.attributes[name]))[:len(field)]):
            bound = MAX_DIVISIBILITY if field is fields[0] else dims[d]
            field[d] = max(field[d], min(pow2_divisor(v), bound))
    return AxisInfo(tuple(fields[1]), tuple(fields[0]), tuple(fields[2]))


def _terminator(block: ir.Block) -> ir.Operation:
    return list(block.operations)[-1].operation


_MAX_ITERATIONS = 32


def _run_for(a: _Analysis, op: ir.Operation) -> None:
    """Iteration arguments: the fixed point of (init meet yielded), reached by
    iterating from the initial values (the lattice only descends).  The
    induction variable is lb + k * step."""
    body = op.regions[0].blocks[0]
    lb, step = a.info(op.operands[0]), a.info(op.operands[2])
    d = math.gcd(every_div(lb, 1), every_div(step, 1))
    a.map.set(body.arguments[0], AxisInfo((1,), (d,), (1,)))
    carried = list(body.arguments)[1:]
    units = [pointee_bytes(v.type) or 1 for v in carried]
    state = [a.info(v) for v in list(op.operands)[3:]]
    for _ in range(_MAX_ITERATIONS):
        for arg, info in zip(carried, state):
            a.map.set(arg, info)
        a.run_block(body)
        yielded = [a.info(v) for v in _terminator(body).operands]
        new = [meet(s, y, u) for s, y, u in zip(state, yielded, units)]
        if new == state:
            break
        state = new
    else:
        state = [conservative(v.type) for v in carried]
        for arg, info in zip(carried, state):
            a.map.set(arg, info)
        a.run_block(body)
    for r, info in zip(op.results, state):
        a.map.set(r, info)


def _run_if(a: _Analysis, op: ir.Operation) -> None:
    """Results: the meet of what the two branches yield."""
    yielded: list[list[AxisInfo]] = []
    for region in op.regions:
        for block in region.blocks:
            a.run_block(block)
            yielded.append([a.info(v) for v in _terminator(block).operands])
    if len(yielded) != 2:
        return
    for r, x, y in zip(op.results, *yielded):
        a.map.set(r, meet(x, y, pointee_bytes(r.type) or 1))


def _func_args(a: _Analysis, func_op: ir.Operation) -> None:
    block = func_op.regions[0].blocks[0]
    arg_attrs: list[ir.Attribute] = []
    if "arg_attrs" in func_op.attributes:
        arg_attrs = list(ir.ArrayAttr(func_op.attributes["arg_attrs"]))
    for i, arg in enumerate(block.arguments):
        div = pointee_bytes(arg.type) or 1
        if i < len(arg_attrs):
            attrs = ir.DictAttr(arg_attrs[i])
            if "tile.divisibility" in attrs:
                div = pow2_divisor(int(ir.IntegerAttr(attrs["tile.divisibility"]).value))
        rank = max(len(shape(arg.type)), 1)
        a.map.set(arg, AxisInfo((1,) * rank, (div,) * rank, (1,) * rank))


def analyze(func_op: ir.Operation) -> AxisInfoMap:
    """Run the analysis over one kernel (`func.func` or `gpu.func`-shaped op)."""
    op = func_op.operation if isinstance(func_op, ir.OpView) else func_op
    a = _Analysis()
    _func_args(a, op)
    for block in op.regions[0].blocks:
        a.run_block(block)
    return a.map
