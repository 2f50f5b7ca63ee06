"""Index polynomials: a kernel's integer index arithmetic as exact polynomials.

`tile-tma-pointers` asks of a pointer tile whether it is "base + (row0 + i) *
stride + (col0 + j)" and of a mask whether it is "col0 + j < K": questions of
symbolic equality.  This analysis answers them by evaluating integer (and
pointer) scalars and tiles as polynomials with rational coefficients over

  * opaque scalars (`("v", n)`: a kernel argument, the program id, the result
    of a division, a remainder, a minimum, a loop's induction variable: any
    scalar the arithmetic below does not see into; `n` numbers the values),
  * tile lanes (`("lane", d)`: the position along dimension d of the tile the
    polynomial describes; `tile.range(s, e)` is `s + lane 0`, `expand_dims`
    renumbers, `broadcast` keeps them),

through `arith.constant`, `addi`, `subi`, `muli`, the sign and width casts,
`tensor.splat`, `tile.range`, `tile.expand_dims`, `tile.broadcast` and
`tile.addptr` (pointers in elements: a pointer argument is an opaque scalar).
A loop-carried value that the loop advances by a loop-invariant amount d is
`init + (iv - lb) / step * d` (a constant step).  A tile remainder `x % m`
(`arith.remsi` by a scalar) evaluates as `x` and records the wrap (x, m): the
two are equal where 0 <= x < m, and the caller proves the other lanes do not
matter.  Integers are mathematical integers: a program whose 32-bit index
arithmetic overflows addresses memory it does not mean to, whatever the copy.
A zero extension (`arith.extui`) reads as its operand too: the two differ
only where the operand is negative as a signed integer, where the pointer
program indexes 2^32 elements past it; an index a mask bounds by an i32
argument is then out of bounds in both readings (the map's coordinate is
below zero), and an index only a remainder bounds has a negative origin,
tile-tma-pointers' documented semantic choice.

Input: a tile-level `func.func` (before `tile-layout`).  Nothing is changed.
Nearest upstream analogue: MLIR's affine expressions / `ValueBoundsOpInterface`
(symbolic index algebra); Triton's AxisInfo answers contiguity, not equality.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable

from mlir import ir

from tilec.dialects import tile

Atom = tuple[str, int]
Mono = tuple[Atom, ...]

_CASTS = ("arith.extsi", "arith.extui", "arith.index_cast")


@dataclass(frozen=True)
class Poly:
    """sum(coef * prod(atoms)) with `terms` sorted and no zero coefficient."""

    terms: tuple[tuple[Mono, Fraction], ...] = ()

    @staticmethod
    def of(items: Iterable[tuple[Mono, Fraction]]) -> Poly:
        acc: dict[Mono, Fraction] = {}
        for mono, c in items:
            acc[mono] = acc.get(mono, Fraction(0)) + c
        return Poly(tuple(sorted((m, c) for m, c in acc.items() if c != 0)))

    @staticmethod
    def const(c: int | Fraction) -> Poly:
        return Poly.of([((), Fraction(c))])

    @staticmethod
    def atom(a: Atom) -> Poly:
        return Poly.of([((a,), Fraction(1))])

    def __add__(self, o: Poly) -> Poly:
        return Poly.of(self.terms + o.terms)

    def __sub__(self, o: Poly) -> Poly:
        return self + o.scale(-1)

    def __mul__(self, o: Poly) -> Poly:
        return Poly.of((tuple(sorted(m1 + m2)), c1 * c2)
                       for m1, c1 in self.terms for m2, c2 in o.terms)

    def scale(self, c: int | Fraction) -> Poly:
        return Poly.of((m, k * c) for m, k in self.terms)

    def atoms(self) -> set[Atom]:
        return {a for m, _ in self.terms for a in m}

    def lanes(self) -> set[int]:
        return {a[1] for a in self.atoms() if a[0] == "lane"}

    def without_lanes(self) -> Poly:
        return Poly.of((m, c) for m, c in self.terms if all(a[0] != "lane" for a in m))

    def lane_coefficient(self, d: int) -> Poly | None:
        """The factor multiplying lane d (which must appear linearly), or None."""
        out = []
        for m, c in self.terms:
            n = m.count(("lane", d))
            if n > 1:
                return None
            if n == 1:
                rest = tuple(a for a in m if a != ("lane", d))
                if any(a[0] == "lane" for a in rest):
                    return None
                out.append((rest, c))
        return Poly.of(out)

    def const_value(self) -> Fraction | None:
        if not self.terms:
            return Fraction(0)
        if len(self.terms) == 1 and self.terms[0][0] == ():
            return self.terms[0][1]
        return None

    def renumber_lanes(self, f: dict[int, int]) -> Poly:
        return Poly.of((tuple(sorted(("lane", f[a[1]]) if a[0] == "lane" else a for a in m)), c)
                       for m, c in self.terms)


# A value's polynomial and the wraps (x, m) its remainders recorded.
Wrap = tuple[Poly, Poly]
Expr = tuple[Poly, frozenset[Wrap]]


def _producer(v: ir.Value) -> ir.Operation | None:
    owner = v.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _const_int(op: ir.Operation) -> int | None:
    attr = op.attributes["value"]
    if isinstance(attr, ir.IntegerAttr):
        return int(attr.value)
    if isinstance(attr, ir.DenseIntElementsAttr) and attr.is_splat:
        return int(ir.IntegerAttr(attr.get_splat_value()).value)
    return None


def _is_index_type(t: ir.Type) -> bool:
    if isinstance(t, ir.RankedTensorType):
        t = t.element_type
    return isinstance(t, (ir.IntegerType, ir.IndexType)) or tile.is_ptr(t)


def expand_lanes(op: ir.Operation) -> dict[int, int]:
    """Where a `tile.expand_dims` moves its operand's lanes: lane d -> d or d + 1."""
    axis = int(ir.IntegerAttr(op.attributes["axis"]).value)
    rank = len(ir.RankedTensorType(op.operands[0].type).shape)
    return {d: d + (d >= axis) for d in range(rank)}


def inside(v: ir.Value, region_op: ir.Operation) -> bool:
    """Whether `v` is defined inside `region_op`'s regions."""
    owner = v.owner
    op = owner.owner if isinstance(owner, ir.Block) else owner.operation
    while op is not None:
        if op == region_op:
            return True
        parent = op.parent
        op = parent.operation if parent is not None else None
    return False


class Evaluator:
    """Polynomials of one function's values (memoized).  `ids` numbers the
    opaque scalars; `values[n]` is the value of atom ("v", n)."""

    def __init__(self, opaque: dict[ir.Value, Poly] | None = None,
                 ids: dict[ir.Value, int] | None = None,
                 values: list[ir.Value] | None = None) -> None:
        self.ids: dict[ir.Value, int] = ids if ids is not None else {}
        self.values: list[ir.Value] = values if values is not None else []
        self.memo: dict[ir.Value, Expr | None] = {
            v: (p, frozenset()) for v, p in (opaque or {}).items()}

    def atom_of(self, v: ir.Value) -> Poly:
        if v not in self.ids:
            self.ids[v] = len(self.values)
            self.values.append(v)
        return Poly.atom(("v", self.ids[v]))

    def expr(self, v: ir.Value) -> Expr | None:
        if v not in self.memo:
            self.memo[v] = None   # a cycle reads as unknown
            self.memo[v] = self._expr(v)
        return self.memo[v]

    def poly(self, v: ir.Value) -> Poly | None:
        """`v`'s polynomial when no remainder went into it."""
        e = self.expr(v)
        return e[0] if e is not None and not e[1] else None

    def _expr(self, v: ir.Value) -> Expr | None:
        if not _is_index_type(v.type):
            return None
        scalar = not isinstance(v.type, ir.RankedTensorType)
        op = _producer(v)
        if op is None:
            return self._block_arg(v, scalar)
        name = op.name
        if name == "arith.constant":
            c = _const_int(op)
            return None if c is None else (Poly.const(c), frozenset())
        if name in _CASTS or name in ("tensor.splat", "tile.broadcast"):
            return self.expr(op.operands[0])
        if name == "tile.range":
            start = int(ir.IntegerAttr(op.attributes["start"]).value)
            return Poly.const(start) + Poly.atom(("lane", 0)), frozenset()
        if name == "tile.expand_dims":
            inner = self.expr(op.operands[0])
            if inner is None:
                return None
            f = expand_lanes(op)
            return inner[0].renumber_lanes(f), frozenset(
                (x.renumber_lanes(f), m) for x, m in inner[1])
        if name in ("arith.addi", "arith.subi", "arith.muli", "tile.addptr"):
            x, y = self.expr(op.operands[0]), self.expr(op.operands[1])
            if x is None or y is None:
                return None
            p = x[0] * y[0] if name == "arith.muli" else \
                x[0] - y[0] if name == "arith.subi" else x[0] + y[0]
            if name == "arith.muli" and (x[1] and (y[1] or y[0].lanes())
                                         or y[1] and x[0].lanes()):
                return None   # a wrapped index scales only by a lane-free factor
            return p, x[1] | y[1]
        if name == "arith.remsi" and not scalar:
            x, m = self.expr(op.operands[0]), self.expr(op.operands[1])
            if x is None or m is None or m[1] or m[0].lanes() or x[1]:
                return None
            return x[0], frozenset({(x[0], m[0])})
        return (self.atom_of(v), frozenset()) if scalar else None

    def _block_arg(self, v: ir.Value, scalar: bool) -> Expr | None:
        parent = v.owner.owner
        if parent is not None and parent.name == "scf.for" and v.arg_number > 0:
            return _carried(self, parent.operation, v.arg_number - 1, v)
        return (self.atom_of(v), frozenset()) if scalar else None


def _carried(ev: Evaluator, loop: ir.Operation, k: int, arg: ir.Value) -> Expr | None:
    """Iteration argument k of `loop` when the loop adds a loop-invariant d to
    it each iteration: init + (iv - lb) / step * d; else an opaque scalar
    (a scalar) or unknown (a tile)."""
    opaque = None if isinstance(arg.type, ir.RankedTensorType) else (ev.atom_of(arg),
                                                                     frozenset[Wrap]())
    lb, _, step = (loop.operands[i] for i in range(3))
    init = loop.operands[3 + k]
    body = arg.owner
    yielded = body.operations[len(body.operations) - 1].operands[k]
    sub = Evaluator({arg: Poly.atom(("carried", 0))}, ev.ids, ev.values)
    y = sub.expr(yielded)
    c = ev.expr(step)
    p0, lbp = ev.expr(init), ev.expr(lb)
    if y is None or c is None or p0 is None or lbp is None or y[1] or lbp[1]:
        return opaque
    step_c = c[0].const_value()
    d = y[0] - Poly.atom(("carried", 0))
    if not step_c or step_c <= 0 or ("carried", 0) in d.atoms():
        return opaque
    if any(a[0] == "v" and inside(ev.values[a[1]], loop) for a in d.atoms()):
        return opaque
    iv = loop.regions[0].blocks[0].arguments[0]
    iters = (ev.atom_of(iv) - lbp[0]).scale(Fraction(1) / step_c)
    return p0[0] + iters * d, p0[1]
