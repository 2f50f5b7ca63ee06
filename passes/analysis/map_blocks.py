"""Map blocks: a pointer tile's lane-free offset split into a tensor map's
block coordinates, and bounds written as the map's host expressions
(`tile-tma-pointers`, passes/tile_tma_pointers.py).

`split_rows` splits the offset r of `base + r + i * S + j` (rows i, columns
j, row stride S) as row0 * S + col0; `split_batch` splits col0 further as
sum_k b_k * S_k + col0' for a batched access (each S_k a product of the
kernel's integer arguments: a map [batch..., rows, columns] of rank 3 to 5);
`split_offset` writes a descriptor's per-program base offset as such batch
terms (`tile-tma-descriptors`); `host` writes a polynomial
of the kernel's integer arguments as a recipe expression (["arg", i],
["const", c], ["add"|"mul", x, y]); `pointer_base` finds the pointer
argument of a pointer's polynomial and `build` writes a polynomial as i32 /
i64 arithmetic.  The splits answer None where the split would
be a choice (a wrong split is a wrong tensor map, hence a silent wrong
answer), so the caller keeps the pointer access.

Input: polynomials of `index_poly.Evaluator`.  Only `build` changes the IR
(new arithmetic at the insertion point).
Nearest upstream analogue: none (MLIR's affine `delinearize` goes the other
way, from a linear index and known sizes).
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Callable

from mlir import ir
from mlir.dialects import arith

from tilec.dialects import tile
from tilec.passes.analysis.index_poly import Evaluator, Poly

# Batch dimensions a map may have in front of its rows and columns (a tensor
# map has rank <= 5).
MAX_BATCHES = 3
# The extent of a batched map's batch dimension: every i32 coordinate >= 0 is
# inside (the source does not bound its batch index; cuTensorMapEncodeTiled
# takes sizes up to 2^32).
BATCH_EXTENT = 2 ** 31


def int_arg(a: Any, ev: Evaluator, block: ir.Block) -> int | None:
    """The index of the kernel's integer argument that atom `a` stands for, or None."""
    v = ev.values[a[1]] if a[0] == "v" else None
    if v is None or not isinstance(v.type, ir.IntegerType):
        return None
    args = list(block.arguments)
    return args.index(v) if v in args else None


def host(p: Poly, ev: Evaluator, block: ir.Block) -> list[Any] | None:
    """`p` as a tensor-map host expression of the kernel's integer arguments."""
    out: list[Any] | None = None
    for mono, c in p.terms:
        if c.denominator != 1:
            return None
        term: list[Any] | None = None if c == 1 and mono else ["const", int(c)]
        for a in mono:
            i = int_arg(a, ev, block)
            if i is None:
                return None
            term = ["arg", i] if term is None else ["mul", term, ["arg", i]]
        assert term is not None
        out = term if out is None else ["add", out, term]
    return out or ["const", 0]


def split_rows(r: Poly, stride: Poly) -> tuple[Poly, Poly] | None:
    """(row0, col0) with r == row0 * stride + col0 and col0 free of stride's
    factors; the stride one positive term with a factor (a constant stride
    leaves rows and columns ambiguous)."""
    if len(stride.terms) != 1 or not stride.terms[0][0] or stride.terms[0][1] <= 0:
        return None
    smono, sc = stride.terms[0]
    rows, cols = [], []
    for mono, c in r.terms:
        rest = list(mono)
        if divides(smono, mono):
            for a in smono:
                rest.remove(a)
            rows.append((tuple(rest), c / sc))
        else:
            cols.append((mono, c))
    row0, col0 = Poly.of(rows), Poly.of(cols)
    return (row0, col0) if row0 * stride + col0 == r else None


def divides(m: tuple[Any, ...], n: tuple[Any, ...]) -> bool:
    """Whether monomial m divides monomial n."""
    return all(n.count(a) >= m.count(a) for a in m)


def split_batch(rest: Poly, stride: Poly, is_arg: Callable[[Any], bool]
                ) -> tuple[list[tuple[Poly, Poly]], Poly] | None:
    """([(b_k, S_k)], col0) with rest == sum_k b_k * S_k + col0, where `rest` is
    what `split_rows` left as columns: the terms of `rest` with kernel integer
    arguments grouped by exactly those arguments, S_k their product and b_k
    the rest of the group's terms (not a constant), at most `MAX_BATCHES`
    groups (a map has rank <= 5), outermost first in monomial order; col0 the
    terms free of arguments.  No S_k's monomial may divide the row stride's
    or another S_k's (the terms' split between rows and batches would be a
    choice: `pid * s * t` is a batch of stride s * t or t batches of s)."""
    groups: dict[tuple[Any, ...], list[tuple[tuple[Any, ...], Fraction]]] = {}
    cols = []
    for mono, c in rest.terms:
        args = tuple(a for a in mono if is_arg(a))
        if args:
            groups.setdefault(args, []).append((tuple(a for a in mono if not is_arg(a)), c))
        else:
            cols.append((mono, c))
    monos = sorted(groups)
    if not monos or len(monos) > MAX_BATCHES or any(divides(m, stride.terms[0][0]) for m in monos) \
            or any(m != n and divides(m, n) for m in monos for n in monos):
        return None
    batches = [(Poly.of(groups[m]), Poly.of([(m, Fraction(1))])) for m in monos]
    col0 = Poly.of(cols)
    total = col0
    for b, s in batches:
        total = total + b * s
    if any(b.const_value() is not None for b, _ in batches) or total != rest:
        return None
    return batches, col0


def split_offset(off: Poly, is_arg: Callable[[Any], bool]) -> list[tuple[Poly, Poly]] | None:
    """[(b_k, S_k)] with off == sum_k b_k * S_k: a per-program base offset
    (`make_tensor_descriptor(O + off_z * s_z + off_h * s_h, ...)`) as the
    batch coordinates and strides of a map [batch..., rows, columns].  Terms
    are grouped by exactly their kernel integer arguments (the terms free of
    arguments are one group); S_k is the group's arguments times the gcd g of
    its coefficients, b_k the rest of its terms divided by g.  Any grouping is
    exact here (the descriptor gives rows and columns: nothing is split
    between them), so none is refused but for more than `MAX_BATCHES` groups
    or a coefficient that is not an integer."""
    groups: dict[tuple[Any, ...], list[tuple[tuple[Any, ...], Fraction]]] = {}
    for mono, c in off.terms:
        if c.denominator != 1:
            return None
        args = tuple(a for a in mono if is_arg(a))
        groups.setdefault(args, []).append((tuple(a for a in mono if not is_arg(a)), c))
    if not groups or len(groups) > MAX_BATCHES:
        return None
    out = []
    for args in sorted(groups):
        g = math.gcd(*(int(c) for _, c in groups[args]))
        out.append((Poly.of([(m, c / g) for m, c in groups[args]]),
                    Poly.of([(args, Fraction(g))])))
    return out


def nonnegative(p: Poly, ev: Evaluator, block: ir.Block, depth: int = 6) -> set[int] | None:
    """The kernel integer arguments (indices) that must be positive for `p`
    to be >= 0 on every program, or None where that is not shown: positive
    coefficients over program ids, `tile.num_programs`, loop induction
    variables from a non-negative start by a positive constant step, and
    `x % y` / `x // y` of non-negative x (the quotient by a positive constant,
    or by an integer argument, which is then returned)."""
    need: set[int] = set()
    for mono, c in p.terms:
        if c < 0:
            return None
        for a in mono:
            got = _atom_nonnegative(ev.values[a[1]], ev, block, depth)
            if got is None:
                return None
            need |= got
    return need


def _atom_nonnegative(v: ir.Value, ev: Evaluator, block: ir.Block, depth: int) -> set[int] | None:
    if depth == 0:
        return None
    owner = v.owner
    if isinstance(owner, ir.Block):   # an induction variable: lb >= 0, step > 0
        loop = owner.owner
        if loop is None or loop.name != "scf.for" or v.arg_number != 0:
            return None
        lb, step = ev.poly(loop.operands[0]), ev.poly(loop.operands[2])
        c = step.const_value() if step is not None else None
        if lb is None or c is None or c <= 0:
            return None
        return nonnegative(lb, ev, block, depth - 1)
    op = owner.operation
    if op.name in ("tile.program_id", "tile.num_programs"):
        return set()
    if op.name not in ("arith.remsi", "arith.divsi") or op.operands[0].type != v.type:
        return None
    x = ev.poly(op.operands[0])
    need = nonnegative(x, ev, block, depth - 1) if x is not None else None
    if need is None or op.name == "arith.remsi":   # x % y has x's sign
        return need
    y = ev.poly(op.operands[1])
    c = y.const_value() if y is not None else None
    if c is not None:
        return need if c > 0 else None
    arg = int_arg(y.terms[0][0][0], ev, block) \
        if y is not None and len(y.terms) == 1 and y.terms[0][1] == 1 and \
        len(y.terms[0][0]) == 1 else None
    return None if arg is None else need | {arg}


def stride_aligned(s: Poly, ev: Evaluator, divisibility: Callable[[ir.Value], int],
                   elem_bytes: int) -> bool:
    """Whether stride `s` (one term: a constant times arguments, in elements)
    is known to be a non-zero multiple of 16 bytes, `divisibility` giving
    each argument's (the axis analysis')."""
    mono, c = s.terms[0]
    div = abs(int(c)) if c.denominator == 1 else 0
    for a in mono:
        div *= divisibility(ev.values[a[1]])
    return div > 0 and (div * elem_bytes) % 16 == 0


def pointer_base(p: Poly, ev: Evaluator, block: ir.Block) -> ir.Value | None:
    """The pointer argument of the function (entry `block`) that the
    pointer polynomial `p` starts from: its one pointer atom, with
    coefficient 1 and in no other term; else None."""
    ptrs = [a for a in p.atoms() if a[0] == "v" and tile.is_ptr(ev.values[a[1]].type)]
    if len(ptrs) != 1 or (((ptrs[0],), Fraction(1)) not in p.terms):
        return None
    v = ev.values[ptrs[0][1]]
    if v not in list(block.arguments) or any(ptrs[0] in m for m, _ in p.terms if m != (ptrs[0],)):
        return None
    return v


def build(p: Poly, ev: Evaluator, ty: ir.Type) -> ir.Value:
    """`p` (integer coefficients) as `ty` arithmetic at the insertion point
    (sizes and indices are signed: atoms sign-extended or truncated)."""
    total: ir.Value | None = None
    for mono, c in p.terms:
        factors = [_cast(ev.values[a[1]], ty) for a in mono]
        if int(c) != 1 or not factors:
            factors.insert(0, arith.constant(ty, int(c)))
        v = factors[0]
        for f in factors[1:]:
            v = arith.muli(v, f)
        total = v if total is None else arith.addi(total, v)
    return total if total is not None else arith.constant(ty, 0)


def _cast(x: ir.Value, ty: ir.Type) -> ir.Value:
    if isinstance(x.type, ir.IndexType):
        return arith.index_cast(ty, x)
    w, want = ir.IntegerType(x.type).width, ir.IntegerType(ty).width
    return x if w == want else arith.trunci(ty, x) if w > want else arith.extsi(ty, x)
