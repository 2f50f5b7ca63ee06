"""Axis-info transfer rules: per op, the `AxisInfo` of its results from those
of its operands (axis_info.py runs them; control flow is handled there).

`TRANSFER` maps an op name to its rule; `elementwise` covers the other
arith/math ops.  A rule reads operand facts from the `AxisInfoMap` built so far.
"""
from __future__ import annotations

import math
from typing import Callable

from mlir import ir
from mlir.dialects import arith

from tilec.passes.analysis.axis_lattice import (
    MAX_DIVISIBILITY, AxisInfo, AxisInfoMap, const_int, every_div, pointee_bytes, pow2_divisor,
    restrict_div, shape,
)

Transfer = Callable[[AxisInfoMap, ir.Operation], "list[AxisInfo] | None"]
TRANSFER: dict[str, Transfer] = {}


def _rule(*names: str) -> Callable[[Transfer], Transfer]:
    def add(fn: Transfer) -> Transfer:
        for n in names:
            TRANSFER[n] = fn
        return fn
    return add


def elementwise(a: AxisInfoMap, op: ir.Operation) -> AxisInfo:
    """Any elementwise op: runs of constant operands give constant results."""
    t = op.results[0].type
    rank = max(len(shape(t)), 1)
    const = [1] * rank if shape(t) else [1]
    if shape(t):
        const = list(shape(t))
        for o in op.operands:
            if shape(o.type) == shape(t):
                const = [math.gcd(x, y) for x, y in zip(const, a.get(o).constancy)]
            elif shape(o.type):
                const = [1] * rank
    return AxisInfo((1,) * rank, (pointee_bytes(t) or 1,) * rank, tuple(const))


def _attr_int(op: ir.Operation, name: str) -> int:
    return int(ir.IntegerAttr(op.attributes[name]).value)


@_rule("tile.range")
def _range(a: AxisInfoMap, op: ir.Operation) -> list[AxisInfo]:
    start, end = _attr_int(op, "start"), _attr_int(op, "end")
    return [AxisInfo((end - start,), (pow2_divisor(start),), (1,))]


@_rule("tensor.splat")
def _splat(a: AxisInfoMap, op: ir.Operation) -> list[AxisInfo]:
    src = a.get(op.operands[0])
    shp = shape(op.results[0].type)
    return [AxisInfo((1,) * len(shp), (src.divisibility[0],) * len(shp), shp)]


@_rule("arith.constant")
def _constant(a: AxisInfoMap, op: ir.Operation) -> list[AxisInfo]:
    t = op.results[0].type
    shp = shape(t)
    v = const_int(op.results[0])
    div = pow2_divisor(v) if v is not None else 1
    if not shp:
        return [AxisInfo((1,), (div,), (1,))]
    attr = op.attributes["value"]
    splat = isinstance(attr, ir.DenseElementsAttr) and attr.is_splat
    return [AxisInfo((1,) * len(shp), (div,) * len(shp), shp if splat else (1,) * len(shp))]


@_rule("tile.program_id", "tile.num_programs")
def _program_id(a: AxisInfoMap, op: ir.Operation) -> list[AxisInfo]:
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
        ld = restrict_div(lhs.divisibility[d], lhs.contiguity[d], c, lunit)
        rd = restrict_div(rhs.divisibility[d], rhs.contiguity[d], c, 1) * runit
        contig.append(c)
        div.append(min(math.gcd(ld, rd), MAX_DIVISIBILITY))
        const.append(math.gcd(lhs.constancy[d], rhs.constancy[d]))
    return AxisInfo(tuple(contig), tuple(div), tuple(const))


@_rule("arith.addi")
def _addi(a: AxisInfoMap, op: ir.Operation) -> list[AxisInfo]:
    lhs, rhs = (a.get(o) for o in op.operands)
    return [_add_like(lhs, rhs, sub=False, lunit=1, runit=1)]


@_rule("arith.subi")
def _subi(a: AxisInfoMap, op: ir.Operation) -> list[AxisInfo]:
    lhs, rhs = (a.get(o) for o in op.operands)
    return [_add_like(lhs, rhs, sub=True, lunit=1, runit=1)]


@_rule("tile.addptr")
def _addptr(a: AxisInfoMap, op: ir.Operation) -> list[AxisInfo]:
    ptr, off = (a.get(o) for o in op.operands)
    off = _as_tile(off, op.results[0].type)
    eb = pointee_bytes(op.operands[0].type) or 1
    return [_add_like(ptr, off, sub=False, lunit=eb, runit=eb)]


@_rule("arith.muli")
def _muli(a: AxisInfoMap, op: ir.Operation) -> list[AxisInfo]:
    lhs, rhs = (a.get(o) for o in op.operands)
    cl, cr = const_int(op.operands[0]), const_int(op.operands[1])
    contig, div, const = [], [], []
    for d in range(lhs.rank):
        c = 1
        if cr == 1:
            c = lhs.contiguity[d]
        elif cl == 1:
            c = rhs.contiguity[d]
        ld = restrict_div(lhs.divisibility[d], lhs.contiguity[d], c, 1)
        rd = restrict_div(rhs.divisibility[d], rhs.contiguity[d], c, 1)
        contig.append(c)
        div.append(min(ld * rd, MAX_DIVISIBILITY))
        const.append(math.gcd(lhs.constancy[d], rhs.constancy[d]))
    return [AxisInfo(tuple(contig), tuple(div), tuple(const))]


@_rule("arith.divsi", "arith.divui")
def _div(a: AxisInfoMap, op: ir.Operation) -> list[AxisInfo]:
    lhs, rhs = (a.get(o) for o in op.operands)
    p = const_int(op.operands[1])
    rank = lhs.rank
    const = [math.gcd(x, y) for x, y in zip(lhs.constancy, rhs.constancy)]
    div = [1] * rank
    if p is not None and p > 0 and p & (p - 1) == 0:
        for d in range(rank):
            if lhs.contiguity[d] > 1 and lhs.divisibility[d] % p == 0:
                # A run starting at a multiple of p gives p equal quotients.
                const[d] = max(const[d], math.gcd(lhs.contiguity[d], p))
            every = restrict_div(lhs.divisibility[d], lhs.contiguity[d], 1, 1)
            div[d] = max(1, every // p) if every < MAX_DIVISIBILITY else every
    return [AxisInfo((1,) * rank, tuple(div), tuple(const))]


@_rule("arith.remsi", "arith.remui")
def _rem(a: AxisInfoMap, op: ir.Operation) -> list[AxisInfo]:
    lhs, rhs = (a.get(o) for o in op.operands)
    p = const_int(op.operands[1])
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
            every = restrict_div(lhs.divisibility[d], c, 1, 1)
            contig.append(1)
            div.append(MAX_DIVISIBILITY if every >= p else every)
    return [AxisInfo(tuple(contig), tuple(div), const)]


@_rule("arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.index_castui",
       "tile.convert_layout")
def _pass_through(a: AxisInfoMap, op: ir.Operation) -> list[AxisInfo]:
    return [a.get(op.operands[0])]


_P = arith.CmpIPredicate
_LOWER_BOUND_PREDS = {_P.slt, _P.sge, _P.ult, _P.uge}   # flip at x == n
_UPPER_BOUND_PREDS = {_P.sle, _P.sgt, _P.ule, _P.ugt}   # n < x flips at x == n


def _successor_div(a: AxisInfoMap, v: ir.Value, depth: int = 4) -> int:
    """A divisor of n + 1 for a splat scalar n: m's divisibility where n is
    `m - 1` (`m + -1`), through sums and differences whose other terms'
    divisibility it meets (`K - 1 - k * BLOCK_K`); else 1.  (`x <= K - 1`
    flips at x == K.)"""
    while not isinstance(v.owner, ir.Block) and shape(v.type) and v.owner.operation.name in (
            "tensor.splat", "tile.broadcast", "tile.expand_dims", "arith.extsi", "arith.extui"):
        v = v.owner.operation.operands[0]
    if depth == 0 or shape(v.type) or isinstance(v.owner, ir.Block):
        return 1
    op = v.owner.operation
    if op.name not in ("arith.subi", "arith.addi"):
        return 1
    x, y = op.operands
    if const_int(y) == (1 if op.name == "arith.subi" else -1):
        return a.get(x).divisibility[0]
    best = math.gcd(_successor_div(a, x, depth - 1), a.get(y).divisibility[0])
    if op.name == "arith.addi":
        best = max(best, math.gcd(_successor_div(a, y, depth - 1), a.get(x).divisibility[0]))
    return best


@_rule("arith.cmpi")
def _cmpi(a: AxisInfoMap, op: ir.Operation) -> list[AxisInfo]:
    lhs, rhs = (a.get(o) for o in op.operands)
    pred = _P(int(ir.IntegerAttr(op.attributes["predicate"]).value))
    const = []
    for d in range(lhs.rank):
        k = math.gcd(lhs.constancy[d], rhs.constancy[d])
        # A contiguous run compared with a constant run: the result can only
        # flip where x == n, which is a multiple of gcd(div(x), div(n)) ...
        if pred in _LOWER_BOUND_PREDS and lhs.contiguity[d] > 1:
            k = max(k, math.gcd(math.gcd(lhs.contiguity[d], rhs.constancy[d]),
                                math.gcd(lhs.divisibility[d], rhs.divisibility[d])))
        if pred in _UPPER_BOUND_PREDS and rhs.contiguity[d] > 1:
            k = max(k, math.gcd(math.gcd(rhs.contiguity[d], lhs.constancy[d]),
                                math.gcd(lhs.divisibility[d], rhs.divisibility[d])))
        # ... or, for x <= n, x > n (n >= x, n < x), where x == n + 1.
        for x, n, preds in ((lhs, op.operands[1], _UPPER_BOUND_PREDS),
                            (rhs, op.operands[0], _LOWER_BOUND_PREDS)):
            if pred in preds and x.contiguity[d] > 1:
                other = a.get(n)
                k = max(k, math.gcd(math.gcd(x.contiguity[d], other.constancy[d]),
                                    math.gcd(x.divisibility[d], _successor_div(a, n))))
        const.append(k)
    rank = lhs.rank
    return [AxisInfo((1,) * rank, (1,) * rank, tuple(const))]


@_rule("arith.andi", "arith.ori", "arith.xori")
def _bitwise(a: AxisInfoMap, op: ir.Operation) -> list[AxisInfo]:
    lhs, rhs = (a.get(o) for o in op.operands)
    const = tuple(math.gcd(x, y) for x, y in zip(lhs.constancy, rhs.constancy))
    div = [1] * lhs.rank
    if op.name == "arith.andi":
        # x & y keeps every low zero bit of either operand.
        div = [max(every_div(lhs, 1), every_div(rhs, 1))] * lhs.rank
    return [AxisInfo((1,) * lhs.rank, tuple(div), const)]


@_rule("arith.select")
def _select(a: AxisInfoMap, op: ir.Operation) -> list[AxisInfo]:
    cond, x, y = (a.get(o) for o in op.operands)
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
        div.append(math.gcd(restrict_div(x.divisibility[d], x.contiguity[d], c, unit),
                            restrict_div(y.divisibility[d], y.contiguity[d], c, unit)))
        const.append(math.gcd(cond.constancy[d], math.gcd(x.constancy[d], y.constancy[d])))
    return [AxisInfo(tuple(contig), tuple(div), tuple(const))]


@_rule("tile.expand_dims")
def _expand_dims(a: AxisInfoMap, op: ir.Operation) -> list[AxisInfo]:
    src = a.get(op.operands[0])
    axis = _attr_int(op, "axis")
    unit = pointee_bytes(op.operands[0].type) or 1
    every = every_div(src, unit)
    contig, div, const = list(src.contiguity), list(src.divisibility), list(src.constancy)
    contig.insert(axis, 1)
    div.insert(axis, every)
    const.insert(axis, 1)
    return [AxisInfo(tuple(contig), tuple(div), tuple(const))]


@_rule("tile.broadcast")
def _broadcast(a: AxisInfoMap, op: ir.Operation) -> list[AxisInfo]:
    src = a.get(op.operands[0])
    s_shape, r_shape = shape(op.operands[0].type), shape(op.results[0].type)
    contig, div, const = list(src.contiguity), list(src.divisibility), list(src.constancy)
    for d, (s, r) in enumerate(zip(s_shape, r_shape)):
        if s == 1 and r != 1:
            contig[d], const[d] = 1, r
    return [AxisInfo(tuple(contig), tuple(div), tuple(const))]
