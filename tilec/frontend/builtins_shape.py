"""Frontend rules for element shuffles and pointer <-> integer casts.

* `tl.join(a, b)` -> shape + [2] (a new minor dimension; scalars give [2]);
  `tl.split(a)` (last dimension 2) -> two tiles without it; `tl.interleave(a, b)`
  -> the last dimension doubled, a's and b's elements alternating;
  `tl.cat(a, b, can_reorder=False, dim=0)` -> a and b concatenated along `dim`
  (`can_reorder=True`: 1-D tiles, concatenated in order, which is one of the
  orders Triton allows); `tl.flip(x, dim=None)` -> reversed along `dim` (the
  last by default).  All are one `tile.restride` (dialects/tile_elements.py).
  `tl.split` of a [2] tile gives two scalars (as in Triton).  Tiles are at
  most 4-D: `tl.join` of 4-D tiles is an error.
* `x.to(tl.pointer_type(T))` on an integer (widened to 64 bits) is
  `tile.int_to_ptr`; on a pointer it re-types the pointer; `p.to(tl.int64)` on
  a pointer is `tile.ptr_to_int` (other integer types are converted from it).
Methods: `x.split()`, `x.reshape(shape)`, `x.flip(dim)`, `x.join(b)`,
`x.interleave(b)`.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from tilec.dialects import tile_elements as el
from tilec.frontend.builtins import MAX_RANK, Rule, _constexpr_int, rule_table
from tilec.frontend.builtins_reduce import combine_function, emit_reduce, reshape
from tilec.frontend.semantic import TValue, mlir_scalar
from tilec.frontend.values import CodeGenBase
from tilec.language import core as tl

if TYPE_CHECKING:
    from tilec.frontend.codegen import CodeGen

RULES: dict[str, Rule] = {}
rule = rule_table(RULES)
METHODS: dict[str, Rule] = {"reshape": reshape}


def _row_major(shape: tuple[int, ...]) -> list[int]:
    return [math.prod(shape[i + 1:]) for i in range(len(shape))]


def _tile(cg: CodeGen, node: Any, x: Any, fn: str, like: TValue | None = None) -> TValue:
    if isinstance(x, tl.constexpr):
        x = x.value
    if not isinstance(x, TValue):
        x = cg.to_value(x, node, like.dtype if like is not None else None)
    if x.is_ptr:
        cg.err(node, f"{fn} needs tiles of numbers, got {cg.describe(x)}")
    return x


def _pair(cg: CodeGen, node: Any, a: Any, b: Any, fn: str) -> tuple[TValue, TValue]:
    """a and b as tiles of one type and shape (scalars become [1] tiles)."""
    first = a if isinstance(a, TValue) else b if isinstance(b, TValue) else None
    x, y = _tile(cg, node, a, fn, first), _tile(cg, node, b, fn, first)
    if x.elem != y.elem:
        cg.err(node, f"{fn} needs two tiles of one type, got {x.type_str()} and {y.type_str()}")
    if x.shape != y.shape:
        shape = tuple(max(p, q) for p, q in zip(x.shape, y.shape)) if len(x.shape) == len(y.shape) \
            else (x.shape or y.shape)
        x, y = cg.broadcast_to(x, shape, node), cg.broadcast_to(y, shape, node)
    if not x.shape:
        x, y = cg.broadcast_to(x, (1,), node), cg.broadcast_to(y, (1,), node)
    return x, y


def _restride(cg: CodeGen, srcs: list[TValue], shape: tuple[int, ...], view: list[int],
              strides: list[int], offset: int = 0) -> TValue:
    h = el.restride([s.handle for s in srcs], shape, view, strides, offset, loc=cg.loc, ip=cg.ip)
    return TValue(h, srcs[0].elem, shape)


@rule("join")
def join(cg: CodeGen, node: Any, a: Any, b: Any) -> TValue:
    scalars = not (isinstance(a, TValue) and a.shape) and not (isinstance(b, TValue) and b.shape)
    x, y = _pair(cg, node, a, b, "tl.join")
    if scalars:
        return _restride(cg, [x, y], (2,), [2], [1])
    if len(x.shape) >= MAX_RANK:
        cg.err(node, f"tl.join of tiles of shape {list(x.shape)} would give a "
               f"{len(x.shape) + 1}-D tile; tiles are at most {MAX_RANK}-D")
    n = math.prod(x.shape)
    return _restride(cg, [x, y], (*x.shape, 2), [*x.shape, 2], _row_major(x.shape) + [n])


@rule("interleave")
def interleave(cg: CodeGen, node: Any, a: Any, b: Any) -> TValue:
    x, y = _pair(cg, node, a, b, "tl.interleave")
    n = math.prod(x.shape)
    shape = (*x.shape[:-1], 2 * x.shape[-1])
    return _restride(cg, [x, y], shape, [*x.shape, 2], _row_major(x.shape) + [n])


@rule("split")
def split(cg: CodeGen, node: Any, a: Any) -> tuple[TValue, TValue]:
    x = _tile(cg, node, a, "tl.split")
    if not x.shape or x.shape[-1] != 2:
        cg.err(node, f"tl.split needs a tile whose last dimension is 2, got {cg.describe(x)}")
    if len(x.shape) == 1:
        return _element(cg, node, x, 0), _element(cg, node, x, 1)
    shape = x.shape[:-1]
    strides = _row_major(x.shape)[:-1]
    lo = _restride(cg, [x], shape, list(shape), strides, 0)
    hi = _restride(cg, [x], shape, list(shape), strides, 1)
    return lo, hi


def _element(cg: CodeGen, node: Any, x: TValue, i: int) -> TValue:
    """Element `i` of the 1-D tile `x` as a scalar: a [1] tile holding it
    (`tile.restride`), reduced with a combine that keeps its first operand
    (one element: the value itself, bit for bit; replicas combine to it)."""
    one = _restride(cg, [x], (1,), [1], [1], i)
    name = combine_function(cg, "first", [x.dtype], lambda _cg, v: [v[0]])
    return emit_reduce(cg, node, [one], 0, name, False)[0]


@rule("cat")
def cat(cg: CodeGen, node: Any, input: Any, other: Any, can_reorder: Any = False,
        dim: Any = 0) -> TValue:
    x, y = _tile(cg, node, input, "tl.cat"), _tile(cg, node, other, "tl.cat")
    if x.elem != y.elem:
        cg.err(node, f"tl.cat needs two tiles of one type, got {x.type_str()} and {y.type_str()}")
    reorder = can_reorder.value if isinstance(can_reorder, tl.constexpr) else can_reorder
    if not x.shape or not y.shape:
        cg.err(node, "tl.cat needs two tiles, not scalars")
    if reorder:
        if len(x.shape) != 1 or len(y.shape) != 1:
            cg.err(node, "tl.cat with can_reorder=True needs 1-D tiles (as in Triton)")
        n = x.shape[0] + y.shape[0]
        return _restride(cg, [x, y], (n,), [n], [1])
    if x.shape != y.shape:
        cg.err(node, f"tl.cat needs tiles of one shape, got {list(x.shape)} and {list(y.shape)}")
    rank = len(x.shape)
    d = _constexpr_int(cg, node, dim, "tl.cat's dim")
    d = d + rank if d < 0 else d
    if not 0 <= d < rank:
        cg.err(node, f"tl.cat: dim {dim} is out of range for a tile of rank {rank}")
    shape = tuple(2 * s if i == d else s for i, s in enumerate(x.shape))
    rm = _row_major(x.shape)
    view = [*x.shape[:d], 2, *x.shape[d:]]
    strides = [*rm[:d], math.prod(x.shape), *rm[d:]]
    return _restride(cg, [x, y], shape, view, strides)


@rule("flip")
def flip(cg: CodeGen, node: Any, x: Any, dim: Any = None) -> TValue:
    v = _tile(cg, node, x, "tl.flip")
    if not v.shape:
        cg.err(node, "tl.flip needs a tile, not a scalar")
    rank = len(v.shape)
    d = rank - 1 if dim is None or (isinstance(dim, tl.constexpr) and dim.value is None) else \
        _constexpr_int(cg, node, dim, "tl.flip's dim")
    d = d + rank if d < 0 else d
    if not 0 <= d < rank:
        cg.err(node, f"tl.flip: dim {dim} is out of range for a tile of rank {rank}")
    strides = _row_major(v.shape)
    offset = (v.shape[d] - 1) * strides[d]
    strides[d] = -strides[d]
    return _restride(cg, [v], v.shape, list(v.shape), strides, offset)


def to_pointer(cg: CodeGenBase, node: Any, v: TValue, dst: tl.pointer_type) -> TValue:
    """`v.to(dst)` for a pointer type `dst`: an integer's value as an address."""
    if v.is_ptr:
        v = TValue(el.ptr_to_int(v.handle, loc=cg.loc, ip=cg.ip), tl.int64, v.shape)
    elif not v.dtype.is_int() or v.dtype.is_bool():
        cg.err(node, f"only integers (int64 addresses) and pointers convert to {dst!r}, "
               f"got {v.type_str()}")
    elif v.dtype.bits != 64:
        v = cg.cast(v, tl.int64 if v.dtype.is_signed() else tl.uint64, node)
    return TValue(el.int_to_ptr(v.handle, mlir_scalar(dst), loc=cg.loc, ip=cg.ip), dst, v.shape)


def from_pointer(cg: CodeGenBase, node: Any, v: TValue, dst: tl.dtype) -> TValue:
    """`p.to(dst)` for an integer type `dst`: the address (tile.ptr_to_int)."""
    if not dst.is_int() or dst.is_bool():
        cg.err(node, f"cannot convert a pointer ({v.type_str()}) to {dst!r}; "
               "pointers convert to integers (tl.int64) and other pointer types")
    addr = TValue(el.ptr_to_int(v.handle, loc=cg.loc, ip=cg.ip), tl.int64, v.shape)
    return addr if dst is tl.int64 else cg.cast(addr, dst, node)


METHODS.update({"split": split, "flip": flip, "join": join, "interleave": interleave})

__all__ = ["RULES", "METHODS", "to_pointer", "from_pointer"]
