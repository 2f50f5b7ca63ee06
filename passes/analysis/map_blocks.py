"""Map blocks: a pointer tile's lane-free offset split into a tensor map's
block coordinates, and bounds written as the map's host expressions
(`tile-tma-pointers`, passes/tile_tma_pointers.py).

`split_rows` splits the offset r of `base + r + i * S + j` (rows i, columns
j, row stride S) as row0 * S + col0; `split_batch` splits col0 further as
b0 * S_b + col0' for a batched access (S_b a product of the kernel's integer
arguments: a rank-3 map [batch, rows, columns]); `host` writes a polynomial
of the kernel's integer arguments as a recipe expression (["arg", i],
["const", c], ["add"|"mul", x, y]).  Each answers None where the split would
be a choice (a wrong split is a wrong tensor map, hence a silent wrong
answer), so the caller keeps the pointer access.

Input: polynomials of `index_poly.Evaluator`.  Nothing is changed.
Nearest upstream analogue: none (MLIR's affine `delinearize` goes the other
way, from a linear index and known sizes).
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable

from mlir import ir

from tilec.passes.analysis.index_poly import Evaluator, Poly


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
                ) -> tuple[Poly, Poly, Poly] | None:
    """(b0, S_b, col0) with rest == b0 * S_b + col0, where `rest` is what
    `split_rows` left as columns: S_b the product of kernel integer arguments
    that is exactly the arguments of every term of `rest` that has any (all
    the same, else ambiguous), b0 the rest of those terms (not a constant),
    col0 the terms free of arguments; S_b's monomial must not divide the row
    stride's (the terms' split between rows and batches would be a choice)."""
    mb: tuple[Any, ...] | None = None
    batch, cols = [], []
    for mono, c in rest.terms:
        args = tuple(a for a in mono if is_arg(a))
        if not args:
            cols.append((mono, c))
            continue
        if mb is not None and args != mb:
            return None
        mb = args
        batch.append((tuple(a for a in mono if not is_arg(a)), c))
    if mb is None or divides(mb, stride.terms[0][0]):
        return None
    b0, sb, col0 = Poly.of(batch), Poly.of([(mb, Fraction(1))]), Poly.of(cols)
    if b0.const_value() is not None or b0 * sb + col0 != rest:
        return None
    return b0, sb, col0
