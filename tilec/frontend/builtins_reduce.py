"""Code generation rules for reductions, scans, atomics and synchronization.

`tl.sum/max/min/argmax/argmin/reduce` build `tile.reduce`, `tl.cumsum/
cumprod/associative_scan` build `tile.scan`; both name a combine function
(`func.func private`) that this module emits once per (combine, types) into
the kernel's module.  Atomics build `tile.atomic_rmw` / `tile.atomic_cas`;
`tl.debug_barrier`, `tl.warp_sync`, `tl.reshape` (`tl.trans`: builtins_lang.py),
`tl.static_assert` and `tl.static_print` are here too.  Index reductions
(`tl.argmax`, `max(..., return_indices=True)`) always resolve ties to the
smallest index: Triton's `tie_break_left=True`, and one allowed answer when
it is False (Triton leaves that order unspecified).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Sequence

from mlir.dialects import arith

from tilec.dialects import tile
from tilec.frontend.builtins import (
    Rule, _constexpr_int, _mask, _pointer, _shape, minmax_builder, rule_table,
)
from tilec.frontend.parser import token_pos
from tilec.frontend.semantic import TValue, broadcast_shapes
from tilec.language import core as tl

if TYPE_CHECKING:
    from tilec.frontend.codegen import CodeGen

RULES: dict[str, Rule] = {}
rule = rule_table(RULES)

Body = Callable[["CodeGen", list[TValue]], list[TValue]]


def _block(cg: CodeGen, node: Any, x: Any, fn: str) -> TValue:
    if isinstance(x, tl.constexpr):
        x = x.value
    if not isinstance(x, TValue) or not x.is_block:
        cg.err(node, f"tl.{fn} needs a tile, got {cg.describe(x)}")
    if x.is_ptr:
        cg.err(node, f"tl.{fn} is not defined on pointers")
    return x


def _norm_axis(cg: CodeGen, node: Any, axis: Any, rank: int, fn: str) -> int:
    a = _constexpr_int(cg, node, axis, f"tl.{fn}'s axis")
    if not -rank <= a < rank:
        cg.err(node, f"axis {a} is out of range for a tile of rank {rank}")
    return a % rank


def _flatten(cg: CodeGen, node: Any, x: TValue) -> TValue:
    if len(x.shape) == 1:
        return x
    n = math.prod(x.shape)
    return TValue(tile.reshape(x.handle, (n,), loc=cg.loc, ip=cg.ip), x.elem, (n,))


# ------------------------------------------------------------------ combine functions
def _add(cg: CodeGen, v: list[TValue]) -> list[TValue]:
    return [cg.arith_op(arith.addf if v[0].dtype.is_floating() else arith.addi, v[0], v[1])]


def _mul(cg: CodeGen, v: list[TValue]) -> list[TValue]:
    return [cg.arith_op(arith.mulf if v[0].dtype.is_floating() else arith.muli, v[0], v[1])]


def _max(cg: CodeGen, v: list[TValue]) -> list[TValue]:
    return [cg.arith_op(minmax_builder(v[0].dtype, True), v[0], v[1])]


def _min(cg: CodeGen, v: list[TValue]) -> list[TValue]:
    return [cg.arith_op(minmax_builder(v[0].dtype, False), v[0], v[1])]


def _arg(is_max: bool) -> Body:
    def body(cg: CodeGen, v: list[TValue]) -> list[TValue]:
        av, ai, bv, bi = v
        better = cg.compare(">" if is_max else "<", bv, av, None)
        equal = cg.compare("==", bv, av, None)
        earlier = cg.compare("<", bi, ai, None)
        take_b = cg.binary("|", better, cg.binary("&", equal, earlier, None), None)
        at = {"loc": cg.loc, "ip": cg.ip}
        return [TValue(arith.select(take_b.handle, bv.handle, av.handle, **at), av.elem),
                TValue(arith.select(take_b.handle, bi.handle, ai.handle, **at), ai.elem)]
    return body


def combine_function(cg: CodeGen, tag: str, elems: Sequence[tl.dtype], body: Body) -> str:
    """Emit (once) `func.func private @__tilec_<tag>_<types>` and return its name."""
    name = f"__tilec_{tag}_{'_'.join(e.short for e in elems)}"
    return cg.emit_function(name, list(elems) * 2, lambda args: body(cg, args))


def _user_combine(cg: CodeGen, node: Any, fn: Any, elems: Sequence[tl.dtype]) -> str:
    if not getattr(fn, "__tilec_kernel__", False):
        cg.err(node, f"combine_fn must be a @tilec.kernel function, got {cg.describe(fn)}")
    return cg.emit_user_function(node, fn, list(elems) * 2, len(elems))


# ------------------------------------------------------------------ reduce / scan
def emit_reduce(cg: CodeGen, node: Any, xs: list[TValue], axis: int, combine: str,
                keep_dims: bool) -> list[TValue]:
    shape = xs[0].shape
    out_shape = shape[:axis] + shape[axis + 1:]
    if len(xs) > tile.MAX_COMBINE_OPERANDS:
        cg.err(node, f"reductions take at most {tile.MAX_COMBINE_OPERANDS} tiles, got {len(xs)}")
    results = tile.reduce([x.handle for x in xs], axis, combine, loc=cg.loc, ip=cg.ip)
    res = [TValue(r, x.elem, out_shape) for r, x in zip(results, xs)]
    if keep_dims:
        res = [cg.expand_dims(r, axis) if r.shape else
               cg.broadcast_to(r, (1,), node) for r in res]
    return res


def reduce_all_axes(cg: CodeGen, node: Any, xs: list[TValue], combine: str,
                    keep_dims: bool) -> list[TValue]:
    """Reduce over every axis (axis=None): one reduction per axis, innermost
    first, rather than a `tile.reshape` to 1-D, which GPU targets do not lower.
    Like every reduction, this assumes the combine is associative and
    commutative.  keep_dims gives shape [1] * rank, as Triton does."""
    rank = len(xs[0].shape)
    while len(xs[0].shape) > 1:
        xs = emit_reduce(cg, node, xs, len(xs[0].shape) - 1, combine, False)
    res = emit_reduce(cg, node, xs, 0, combine, False)
    if keep_dims:
        res = [cg.broadcast_to(r, (1,) * rank, node) for r in res]
    return res


def emit_scan(cg: CodeGen, node: Any, xs: list[TValue], axis: int, combine: str,
              reverse: bool) -> list[TValue]:
    if len(xs) > tile.MAX_COMBINE_OPERANDS:
        cg.err(node, f"scans take at most {tile.MAX_COMBINE_OPERANDS} tiles, got {len(xs)}")
    results = tile.scan([x.handle for x in xs], axis, combine, reverse, loc=cg.loc, ip=cg.ip)
    return [TValue(r, x.elem, x.shape) for r, x in zip(results, xs)]


def _prepare(cg: CodeGen, node: Any, x: Any, axis: Any, fn: str) -> tuple[TValue, int]:
    v = _block(cg, node, x, fn)
    if axis is None:
        return _flatten(cg, node, v), 0
    return v, _norm_axis(cg, node, axis, len(v.shape), fn)


def _sum_dtype(dt: tl.dtype) -> tl.dtype:
    """Triton's default: integers narrower than 32 bits accumulate in 32 bits."""
    if dt.is_int() and dt.bits < 32:
        return tl.uint32 if dt.kind == "uint" else tl.int32
    return dt


def _keep(cg: CodeGen, node: Any, keep_dims: Any) -> bool:
    if isinstance(keep_dims, TValue):
        cg.err(node, "keep_dims must be a compile-time constant")
    return bool(keep_dims)


@rule("sum")
def sum_(cg: CodeGen, node: Any, input: Any, axis: Any = None, keep_dims: Any = False,
         dtype: Any = None) -> TValue:
    x = _block(cg, node, input, "sum")
    dt = dtype if isinstance(dtype, tl.dtype) else _sum_dtype(x.dtype)
    x = cg.cast(x, dt, node)
    name = combine_function(cg, "sum", [dt], _add)
    if axis is None:
        return reduce_all_axes(cg, node, [x], name, _keep(cg, node, keep_dims))[0]
    a = _norm_axis(cg, node, axis, len(x.shape), "sum")
    return emit_reduce(cg, node, [x], a, name, _keep(cg, node, keep_dims))[0]


def _min_max(cg: CodeGen, node: Any, input: Any, axis: Any, keep_dims: Any, return_indices: Any,
             is_max: bool) -> Any:
    fn = "max" if is_max else "min"
    if return_indices:
        if axis is None:
            cg.err(node, f"tl.{fn}(..., return_indices=True) needs an axis")
        vals = _arg_reduce(cg, node, input, axis, keep_dims, is_max, both=True)
        return tuple(vals)
    x = _block(cg, node, input, fn)
    name = combine_function(cg, fn, [x.dtype], _max if is_max else _min)
    if axis is None:
        return reduce_all_axes(cg, node, [x], name, _keep(cg, node, keep_dims))[0]
    a = _norm_axis(cg, node, axis, len(x.shape), fn)
    return emit_reduce(cg, node, [x], a, name, _keep(cg, node, keep_dims))[0]


@rule("max")
def max_(cg: CodeGen, node: Any, input: Any, axis: Any = None, return_indices: Any = False,
         return_indices_tie_break_left: Any = True, keep_dims: Any = False) -> Any:
    return _min_max(cg, node, input, axis, keep_dims, return_indices, True)


@rule("min")
def min_(cg: CodeGen, node: Any, input: Any, axis: Any = None, return_indices: Any = False,
         return_indices_tie_break_left: Any = True, keep_dims: Any = False) -> Any:
    return _min_max(cg, node, input, axis, keep_dims, return_indices, False)


def _arg_reduce(cg: CodeGen, node: Any, input: Any, axis: Any, keep_dims: Any, is_max: bool,
                both: bool = False) -> list[TValue]:
    fn = "argmax" if is_max else "argmin"
    x, a = _prepare(cg, node, input, axis, fn)
    idx = TValue(tile.range_(0, x.shape[a], loc=cg.loc, ip=cg.ip), tl.int32, (x.shape[a],))
    for d in range(len(x.shape)):
        if d != a:
            idx = cg.expand_dims(idx, d)
    idx = cg.broadcast_to(idx, x.shape, node)
    name = combine_function(cg, fn, [x.dtype, tl.int32], _arg(is_max))
    vals = emit_reduce(cg, node, [x, idx], a, name, _keep(cg, node, keep_dims))
    return vals if both else vals[1:]


@rule("argmax")
def argmax(cg: CodeGen, node: Any, input: Any, axis: Any, tie_break_left: Any = True,
           keep_dims: Any = False) -> TValue:
    return _arg_reduce(cg, node, input, axis, keep_dims, True)[0]


@rule("argmin")
def argmin(cg: CodeGen, node: Any, input: Any, axis: Any, tie_break_left: Any = True,
           keep_dims: Any = False) -> TValue:
    return _arg_reduce(cg, node, input, axis, keep_dims, False)[0]


def _tiles(cg: CodeGen, node: Any, input: Any, fn: str) -> list[TValue]:
    items = list(input) if isinstance(input, (tuple, list)) else [input]
    xs = [_block(cg, node, x, fn) for x in items]
    if any(x.shape != xs[0].shape for x in xs):
        cg.err(node, f"tl.{fn} needs tiles of one shape, got "
               f"{', '.join(str(list(x.shape)) for x in xs)}")
    return xs


@rule("reduce")
def reduce(cg: CodeGen, node: Any, input: Any, axis: Any, combine_fn: Any,
           keep_dims: Any = False) -> Any:
    xs = _tiles(cg, node, input, "reduce")
    name = _user_combine(cg, node, combine_fn, [x.dtype for x in xs])
    if axis is None:
        res = reduce_all_axes(cg, node, xs, name, _keep(cg, node, keep_dims))
    else:
        a = _norm_axis(cg, node, axis, len(xs[0].shape), "reduce")
        res = emit_reduce(cg, node, xs, a, name, _keep(cg, node, keep_dims))
    return tuple(res) if isinstance(input, (tuple, list)) else res[0]


def _scan_builtin(tag: str, body: Body, widen: bool) -> Callable[..., TValue]:
    def impl(cg: CodeGen, node: Any, input: Any, axis: Any = 0, reverse: Any = False) -> TValue:
        x = _block(cg, node, input, tag)
        a = _norm_axis(cg, node, axis, len(x.shape), tag)
        if widen:
            x = cg.cast(x, _sum_dtype(x.dtype), node)
        name = combine_function(cg, tag, [x.dtype], body)
        return emit_scan(cg, node, [x], a, name, bool(reverse))[0]
    impl.__name__ = tag
    return impl


RULES["cumsum"] = _scan_builtin("cumsum", _add, True)
RULES["cumprod"] = _scan_builtin("cumprod", _mul, True)


@rule("associative_scan")
def associative_scan(cg: CodeGen, node: Any, input: Any, axis: Any, combine_fn: Any,
                     reverse: Any = False) -> Any:
    xs = _tiles(cg, node, input, "associative_scan")
    a = _norm_axis(cg, node, axis, len(xs[0].shape), "associative_scan")
    name = _user_combine(cg, node, combine_fn, [x.dtype for x in xs])
    res = emit_scan(cg, node, xs, a, name, bool(reverse))
    return tuple(res) if isinstance(input, (tuple, list)) else res[0]


# ------------------------------------------------------------------ atomics
def _atomic_operands(cg: CodeGen, node: Any, pointer: Any, val: Any, mask: Any,
                     fn: str) -> tuple[TValue, TValue, TValue | None, tl.dtype]:
    ptr = _pointer(cg, node, pointer, fn)
    assert isinstance(ptr.elem, tl.pointer_type)
    elem = ptr.elem.element_ty
    v = cg.to_value(val, node, elem if not isinstance(val, TValue) else None)
    if v.is_ptr:
        cg.err(node, f"{fn} needs numbers, not pointers")
    try:
        shape = broadcast_shapes(ptr.shape, v.shape)
    except ValueError:
        cg.err(node, f"{fn}: values of shape {list(v.shape)} do not match the pointers' shape "
               f"{list(ptr.shape)}")
    ptr = cg.broadcast_to(ptr, shape, node)
    v = cg.broadcast_to(cg.cast(v, elem, node), shape, node)
    return ptr, v, _mask(cg, node, mask, shape), elem


def _atomic(fn: str, kinds: Callable[[tl.dtype], str | None]) -> None:
    def impl(cg: CodeGen, node: Any, pointer: Any, val: Any, mask: Any = None, sem: Any = None,
             scope: Any = None) -> TValue:
        ptr, v, m, elem = _atomic_operands(cg, node, pointer, val, mask, f"tl.{fn}")
        kind = kinds(elem)
        if kind is None:
            cg.err(node, f"tl.{fn} does not support {elem!r}")
        old = tile.atomic_rmw(kind, ptr.handle, v.handle, m.handle if m is not None else None,
                              loc=cg.loc, ip=cg.ip)
        return TValue(old, elem, ptr.shape)
    impl.__name__ = fn
    RULES[fn] = impl


_atomic("atomic_add", lambda d: "fadd" if d.is_floating() else ("add" if not d.is_bool() else None))
_atomic("atomic_max", lambda d: "fmax" if d.is_floating() else
        ("max" if d.kind == "int" else "umax" if d.kind == "uint" else None))
_atomic("atomic_min", lambda d: "fmin" if d.is_floating() else
        ("min" if d.kind == "int" else "umin" if d.kind == "uint" else None))
_atomic("atomic_xchg", lambda d: "xchg")


@rule("atomic_cas")
def atomic_cas(cg: CodeGen, node: Any, pointer: Any, cmp: Any, val: Any, sem: Any = None,
               scope: Any = None) -> TValue:
    ptr, v, _, elem = _atomic_operands(cg, node, pointer, val, None, "tl.atomic_cas")
    c = cg.broadcast_to(cg.cast(cg.to_value(cmp, node, elem if not isinstance(cmp, TValue) else None),
                                elem, node), ptr.shape, node)
    return TValue(tile.atomic_cas(ptr.handle, c.handle, v.handle, loc=cg.loc, ip=cg.ip), elem,
                  ptr.shape)


# ------------------------------------------------------------------ sync and shapes
@rule("debug_barrier")
def debug_barrier(cg: CodeGen, node: Any) -> None:
    tile.barrier(loc=cg.loc, ip=cg.ip)


@rule("warp_sync")
def warp_sync(cg: CodeGen, node: Any) -> None:
    tile.warp_sync(loc=cg.loc, ip=cg.ip)


@rule("reshape")
def reshape(cg: CodeGen, node: Any, input: Any, *shape: Any, can_reorder: Any = False) -> TValue:
    x = _block(cg, node, input, "reshape")
    if len(shape) == 1 and isinstance(shape[0], tl.constexpr):
        shape = (shape[0].value,)
    shp = _shape(cg, node, shape[0] if len(shape) == 1 else shape)
    if math.prod(shp) != math.prod(x.shape):
        cg.err(node, f"cannot reshape a tile of shape {list(x.shape)} to {list(shp)}")
    if shp == x.shape:
        return x
    return TValue(tile.reshape(x.handle, shp, loc=cg.loc, ip=cg.ip), x.elem, shp)


@rule("static_assert")
def static_assert(cg: CodeGen, node: Any, cond: Any, msg: Any = "") -> None:
    if isinstance(cond, tl.constexpr):
        cond = cond.value
    if isinstance(cond, TValue):
        cg.err(node, "tl.static_assert needs a compile-time condition")
    if not cond:
        cg.err(node, f"static assertion failed{': ' + str(msg) if msg else ''}")


@rule("static_print")
def static_print(cg: CodeGen, node: Any, *values: Any) -> None:
    parts = [v.type_str() if isinstance(v, TValue) else repr(v) if not isinstance(v, str) else v
             for v in values]
    print(f"{cg.src.loc(*token_pos(node))}: {' '.join(parts)}")
