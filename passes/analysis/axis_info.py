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
from dataclasses import dataclass
from typing import Callable, Iterable

from mlir import ir

from tilec.dialects import tile

MAX_DIVISIBILITY = 1 << 16


@dataclass(frozen=True)
class AxisInfo:
    contiguity: tuple[int, ...]
    divisibility: tuple[int, ...]
    constancy: tuple[int, ...]

    @property
    def rank(self) -> int:
        return len(self.contiguity)


def pow2_divisor(v: int) -> int:
    """The largest power of two dividing `v` (`MAX_DIVISIBILITY` for 0)."""
    if v == 0:
        return MAX_DIVISIBILITY
    return min(v & -v, MAX_DIVISIBILITY)


def shape(t: ir.Type) -> tuple[int, ...]:
    return tuple(t.shape) if isinstance(t, ir.RankedTensorType) else ()


def scalar_type(t: ir.Type) -> ir.Type:
    return t.element_type if isinstance(t, ir.RankedTensorType) else t


def type_bytes(t: ir.Type) -> int:
    """Storage size of a scalar element type in bytes (i1 counts as 1)."""
    if isinstance(t, (ir.IntegerType, ir.FloatType)):
        return max(1, t.width // 8)
    if tile.is_ptr(t):
        return 8
    raise ValueError(f"no byte size for {t}")


def pointee_bytes(t: ir.Type) -> int | None:
    """Element size of `!tile.ptr<T>` (or a tile of them), None for other types."""
    s = scalar_type(t)
    return type_bytes(tile.pointee(s)) if tile.is_ptr(s) else None


def conservative(t: ir.Type) -> AxisInfo:
    """What is known about a value of type `t` without looking at its producer."""
    rank = max(len(shape(t)), 1)
    div = pointee_bytes(t) or 1
    return AxisInfo((1,) * rank, (div,) * rank, (1,) * rank)


class AxisInfoMap:
    """The analysis result: `get(value)` never fails (unknown -> conservative)."""

    def __init__(self) -> None:
        self._info: dict[ir.Value, AxisInfo] = {}

    def get(self, value: ir.Value) -> AxisInfo:
        info = self._info.get(value)
        return info if info is not None else conservative(value.type)

    def set(self, value: ir.Value, info: AxisInfo) -> None:
        self._info[value] = info

    def __contains__(self, value: ir.Value) -> bool:
        return value in self._info

    def __len__(self) -> int:
        return len(self._info)


# ---------------------------------------------------------------- lattice helpers

def _restrict_div(div: int, contig: int, new_contig: int, unit: int) -> int:
    """Divisibility of run starts after runs of `contig` are cut to `new_contig`:
    the new starts are old starts plus multiples of new_contig * unit."""
    if new_contig >= contig:
        return div
    return math.gcd(div, new_contig * unit)


def _every_div(info: AxisInfo, unit: int) -> int:
    """A power of two dividing every element (not only run starts)."""
    return min(_restrict_div(v, c, 1, unit) for v, c in zip(info.divisibility, info.contiguity))


def _const_int(value: ir.Value) -> int | None:
    """The integer a scalar or splat-tile constant holds, if `value` is one."""
    owner = value.owner
    if not isinstance(owner, ir.OpView) and not isinstance(owner, ir.Operation):
        return None
    op = owner.operation if isinstance(owner, ir.OpView) else owner
    if op.name != "arith.constant":
        return None
    attr = op.attributes["value"]
    if isinstance(attr, ir.IntegerAttr):
        return int(attr.value)
    if isinstance(attr, ir.DenseIntElementsAttr) and attr.is_splat:
        return int(attr.get_splat_value().value)
    return None


# ---------------------------------------------------------------- transfer rules

Rule = Callable[["_Analysis", ir.Operation], "list[AxisInfo] | None"]
_RULES: dict[str, Rule] = {}


def _rule(*names: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for n in names:
            _RULES[n] = fn
        return fn
    return register


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
        rule = _RULES.get(op.name)
        infos = rule(self, op) if rule is not None else None
        if infos is None and op.name.split(".")[0] in ("arith", "math") and len(op.results) == 1:
            infos = [_elementwise(self, op)]
        if infos is not None:
            for r, i in zip(op.results, infos):
                self.map.set(r, i)
        for region in op.regions:
            for block in region.blocks:
                self.run_block(block)


def _elementwise(a: _Analysis, op: ir.Operation) -> AxisInfo:
    """Any elementwise op: runs of constant operands give constant results."""
    t = op.results[0].type
    rank = max(len(shape(t)), 1)
    const = [1] * rank if shape(t) else [1]
    if shape(t):
        const = list(shape(t))
        for o in op.operands:
            if shape(o.type) == shape(t):
                const = [math.gcd(x, y) for x, y in zip(const, a.info(o).constancy)]
            elif shape(o.type):
                const = [1] * rank
    return AxisInfo((1,) * rank, (pointee_bytes(t) or 1,) * rank, tuple(const))


def _attr_int(op: ir.Operation, name: str) -> int:
    return int(ir.IntegerAttr(op.attributes[name]).value)


@_rule("tile.range")
def _range(a: _Analysis, op: ir.Operation) -> list[AxisInfo]:
    start, end = _attr_int(op, "start"), _attr_int(op, "end")
    return [AxisInfo((end - start,), (pow2_divisor(start),), (1,))]


@_rule("tensor.splat")
def _splat(a: _Analysis, op: ir.Operation) -> list[AxisInfo]:
    src = a.info(op.operands[0])
    shp = shape(op.results[0].type)
    return [AxisInfo((1,) * len(shp), (src.divisibility[0],) * len(shp), shp)]


@_rule("arith.constant")
def _constant(a: _Analysis, op: ir.Operation) -> list[AxisInfo]:
    t = op.results[0].type
    shp = shape(t)
    v = _const_int(op.results[0])
    div = pow2_divisor(v) if v is not None else 1
    if not shp:
        return [AxisInfo((1,), (div,), (1,))]
    attr = op.attributes["value"]
    splat = isinstance(attr, ir.DenseElementsAttr) and attr.is_splat
    return [AxisInfo((1,) * len(shp), (div,) * len(shp), shp if splat else (1,) * len(shp))]


@_rule("tile.program_id", "tile.num_programs")
def _program_id(a: _Analysis, op: ir.Operation) -> list[AxisInfo]:
    return [AxisInfo((1,), (1,), (1,))]


def _as_tile(info: AxisInfo, result: ir.Type) -> AxisInfo:
    """A scalar's info seen as the splat to `result`'s shape (tiles unchanged)."""
    shp = shape(result)
    if not shp or info.rank == len(shp):
        return info
    return AxisInfo((1,) * len(shp), (info.divisibility[0],) * len(shp), shp)


def _add_like(lhs: AxisInfo, rhs: AxisInfo, *, sub: bool, lunit: int, runit: int) -> AxisInfo:
    """lhs + rhs * runit (elementwise) where lhs is in units of `lunit`."""
    contig: list[int] = []
    div: list[int] = []
    const: list[int] = []
    for d in range(lhs.rank):
        c = math.gcd(lhs.contiguity[d], rhs.constancy[d])
        if not sub:
            c = max(c, math.gcd(lhs.constancy[d], rhs.contiguity[d]))
        ld = _restrict_div(lhs.divisibility[d], lhs.contiguity[d], c, lunit)
        rd = _restrict_div(rhs.divisibility[d], rhs.contiguity[d], c, 1) * runit
        contig.append(c)
        div.append(min(math.gcd(ld, rd), MAX_DIVISIBILITY))
        const.append(math.gcd(lhs.constancy[d], rhs.constancy[d]))
    return AxisInfo(tuple(contig), tuple(div), tuple(const))


@_rule("arith.addi")
def _addi(a: _Analysis, op: ir.Operation) -> list[AxisInfo]:
    lhs, rhs = (a.info(o) for o in op.operands)
    return [_add_like(lhs, rhs, sub=False, lunit=1, runit=1)]


@_rule("arith.subi")
def _subi(a: _Analysis, op: ir.Operation) -> list[AxisInfo]:
    lhs, rhs = (a.info(o) for o in op.operands)
    return [_add_like(lhs, rhs, sub=True, lunit=1, runit=1)]


@_rule("tile.addptr")
def _addptr(a: _Analysis, op: ir.Operation) -> list[AxisInfo]:
    ptr, off = (a.info(o) for o in op.operands)
    off = _as_tile(off, op.results[0].type)
    eb = pointee_bytes(op.operands[0].type) or 1
    return [_add_like(ptr, off, sub=False, lunit=eb, runit=eb)]


@_rule("arith.muli")
def _muli(a: _Analysis, op: ir.Operation) -> list[AxisInfo]:
    lhs, rhs = (a.info(o) for o in op.operands)
    cl, cr = _const_int(op.operands[0]), _const_int(op.operands[1])
    contig, div, const = [], [], []
    for d in range(lhs.rank):
        c = 1
        if cr == 1:
            c = lhs.contiguity[d]
        elif cl == 1:
            c = rhs.contiguity[d]
        ld = _restrict_div(lhs.divisibility[d], lhs.contiguity[d], c, 1)
        rd = _restrict_div(rhs.divisibility[d], rhs.contiguity[d], c, 1)
        contig.append(c)
        div.append(min(ld * rd, MAX_DIVISIBILITY))
        const.append(math.gcd(lhs.constancy[d], rhs.constancy[d]))
    return [AxisInfo(tuple(contig), tuple(div), tuple(const))]


@_rule("arith.divsi", "arith.divui")
def _div(a: _Analysis, op: ir.Operation) -> list[AxisInfo]:
    lhs, rhs = (a.info(o) for o in op.operands)
    p = _const_int(op.operands[1])
    rank = lhs.rank
    const = [math.gcd(x, y) for x, y in zip(lhs.constancy, rhs.constancy)]
    div = [1] * rank
    if p is not None and p > 0 and p & (p - 1) == 0:
        for d in range(rank):
            if lhs.contiguity[d] > 1 and lhs.divisibility[d] % p == 0:
                # A run starting at a multiple of p gives p equal quotients.
                const[d] = max(const[d], math.gcd(lhs.contiguity[d], p))
            every = _restrict_div(lhs.divisibility[d], lhs.contiguity[d], 1, 1)
            div[d] = max(1, every // p) if every < MAX_DIVISIBILITY else every
    return [AxisInfo((1,) * rank, tuple(div), tuple(const))]


@_rule("arith.remsi", "arith.remui")
def _rem(a: _Analysis, op: ir.Operation) -> list[AxisInfo]:
    lhs, rhs = (a.info(o) for o in op.operands)
    p = _const_int(op.operands[1])
    rank = lhs.rank
    const = tuple(math.gcd(x, y) for x, y in zip(lhs.constancy, rhs.constancy))
    if p is None and rank and all(rc >= lc for rc, lc in zip(rhs.constancy, lhs.contiguity)):
        # x % n with n uniform over each run of x and divisible by D: a run of x
        # that starts at a multiple of D' = min(div(x), D) and is at most D'
        # long cannot contain a multiple of n, so x % n stays contiguous there.
        contig, div = [], []
        for d in range(rank):
            dd = min(lhs.divisibility[d], rhs.divisibility[d])
            contig.append(min(lhs.contiguity[d], dd))
            div.append(dd)
        return [AxisInfo(tuple(contig), tuple(div), const)]
    if p is None or p <= 0 or p & (p - 1):
        return [AxisInfo((1,) * rank, (1,) * rank, const)]
    contig, div = [], []
    for d in range(rank):
        c = lhs.contiguity[d]
        if c > 1 and lhs.divisibility[d] % p == 0:
            # Runs start at multiples of p: x % p restarts at 0 every p elements.
            nc = math.gcd(c, p)
            contig.append(nc)
            div.append(pow2_divisor(0) if nc == p else nc)
        else:
            every = _restrict_div(lhs.divisibility[d], c, 1, 1)
            contig.append(1)
            div.append(MAX_DIVISIBILITY if every >= p else every)
    return [AxisInfo(tuple(contig), tuple(div), const)]


@_rule("arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.index_castui",
       "tile.convert_layout")
def _pass_through(a: _Analysis, op: ir.Operation) -> list[AxisInfo]:
    return [a.info(op.operands[0])]


_LOWER_BOUND_PREDS = {2, 5, 6, 9}   # slt, sge, ult, uge: flip at x == n
_UPPER_BOUND_PREDS = {3, 4, 7, 8}   # sle, sgt, ule, ugt: n < x flips at x == n


@_rule("arith.cmpi")
def _cmpi(a: _Analysis, op: ir.Operation) -> list[AxisInfo]:
    lhs, rhs = (a.info(o) for o in op.operands)
    pred = int(ir.IntegerAttr(op.attributes["predicate"]).value)
    const = []
    for d in range(lhs.rank):
        k = math.gcd(lhs.constancy[d], rhs.constancy[d])
        # A contiguous run compared with a constant run: the result can only
        # flip where x == n, which is a multiple of gcd(div(x), div(n)).
        if pred in _LOWER_BOUND_PREDS and lhs.contiguity[d] > 1:
            k = max(k, math.gcd(math.gcd(lhs.contiguity[d], rhs.constancy[d]),
                                math.gcd(lhs.divisibility[d], rhs.divisibility[d])))
        if pred in _UPPER_BOUND_PREDS and rhs.contiguity[d] > 1:
            k = max(k, math.gcd(math.gcd(rhs.contiguity[d], lhs.constancy[d]),
                                math.gcd(lhs.divisibility[d], rhs.divisibility[d])))
        const.append(k)
    rank = lhs.rank
    return [AxisInfo((1,) * rank, (1,) * rank, tuple(const))]


@_rule("arith.andi", "arith.ori", "arith.xori")
def _bitwise(a: _Analysis, op: ir.Operation) -> list[AxisInfo]:
    lhs, rhs = (a.info(o) for o in op.operands)
    const = tuple(math.gcd(x, y) for x, y in zip(lhs.constancy, rhs.constancy))
    div = [1] * lhs.rank
    if op.name == "arith.andi":
        # x & y keeps every low zero bit of either operand.
        div = [max(_every_div(lhs, 1), _every_div(rhs, 1))] * lhs.rank
    return [AxisInfo((1,) * lhs.rank, tuple(div), const)]


@_rule("arith.select")
def _select(a: _Analysis, op: ir.Operation) -> list[AxisInfo]:
    cond, x, y = (a.info(o) for o in op.operands)
    t = op.results[0].type
    unit = pointee_bytes(t) or 1
    rank = x.rank
    if not shape(op.operands[0].type) and shape(t):
        cond = AxisInfo((1,) * rank, (1,) * rank, shape(t))
    contig, div, const = [], [], []
    for d in range(rank):
        c = min(math.gcd(x.contiguity[d], cond.constancy[d]),
                math.gcd(y.contiguity[d], cond.constancy[d]))
        contig.append(c)
        div.append(math.gcd(_restrict_div(x.divisibility[d], x.contiguity[d], c, unit),
                            _restrict_div(y.divisibility[d], y.contiguity[d], c, unit)))
        const.append(math.gcd(cond.constancy[d], math.gcd(x.constancy[d], y.constancy[d])))
    return [AxisInfo(tuple(contig), tuple(div), tuple(const))]


@_rule("tile.expand_dims")
def _expand_dims(a: _Analysis, op: ir.Operation) -> list[AxisInfo]:
    src = a.info(op.operands[0])
    axis = _attr_int(op, "axis")
    unit = pointee_bytes(op.operands[0].type) or 1
    every = _every_div(src, unit)
    contig, div, const = list(src.contiguity), list(src.divisibility), list(src.constancy)
    contig.insert(axis, 1)
    div.insert(axis, every)
    const.insert(axis, 1)
    return [AxisInfo(tuple(contig), tuple(div), tuple(const))]


@_rule("tile.broadcast")
def _broadcast(a: _Analysis, op: ir.Operation) -> list[AxisInfo]:
    src = a.info(op.operands[0])
    s_shape, r_shape = shape(op.operands[0].type), shape(op.results[0].type)
    contig, div, const = list(src.contiguity), list(src.divisibility), list(src.constancy)
    for d, (s, r) in enumerate(zip(s_shape, r_shape)):
        if s == 1 and r != 1:
            contig[d], const[d] = 1, r
    return [AxisInfo(tuple(contig), tuple(div), tuple(const))]


def meet(x: AxisInfo, y: AxisInfo, unit: int) -> AxisInfo:
    """What holds for a value that is either `x` or `y` (`unit`: bytes per
    element for pointers, 1 for integers)."""
    contig, div = [], []
    for d in range(x.rank):
        c = math.gcd(x.contiguity[d], y.contiguity[d])
        contig.append(c)
        div.append(math.gcd(_restrict_div(x.divisibility[d], x.contiguity[d], c, unit),
                            _restrict_div(y.divisibility[d], y.contiguity[d], c, unit)))
    const = tuple(math.gcd(p, q) for p, q in zip(x.constancy, y.constancy))
    return AxisInfo(tuple(contig), tuple(div), const)


def _terminator(block: ir.Block) -> ir.Operation:
    return list(block.operations)[-1].operation


_MAX_ITERATIONS = 32


def _run_for(a: _Analysis, op: ir.Operation) -> None:
    """Iteration arguments: the fixed point of (init meet yielded), reached by
    iterating from the initial values (the lattice only descends).  The
    induction variable is lb + k * step."""
    body = op.regions[0].blocks[0]
    lb, step = a.info(op.operands[0]), a.info(op.operands[2])
    d = math.gcd(_every_div(lb, 1), _every_div(step, 1))
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


def analyze_all(ops: Iterable[ir.Operation]) -> dict[str, AxisInfoMap]:
    """`analyze` for several kernels, keyed by symbol name."""
    return {ir.StringAttr(op.attributes["sym_name"]).value: analyze(op) for op in ops}
