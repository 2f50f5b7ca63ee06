"""Code generation rules for the `tl.*` builtins, one function per builtin.

Each rule has the signature `rule(cg, node, *user_args, **user_kwargs)`;
each builtins module's `RULES` maps the builtin's name (its `__tilec_builtin__`
tag) to its rule, and `calls.BUILTIN_RULES` joins those tables.  A rule checks
its arguments and raises `TilecError` at `node` for misuse.  This module: grid
ids, `arange`, `zeros`/`full`, `load`/`store`, `where`, min/max, `cdiv` and
the elementwise math functions.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from mlir.dialects import arith
from mlir.dialects import math as math_d

from tilec.dialects import tile
from tilec.frontend.semantic import TValue, broadcast_shapes
from tilec.language import core as tl

if TYPE_CHECKING:
    from tilec.frontend.codegen import CodeGen

Rule = Callable[..., Any]


def rule_table(table: dict[str, Rule]) -> Callable[[str], Callable[[Rule], Rule]]:
    """A decorator `@rule("name")` that enters its function into `table`."""
    def rule(name: str) -> Callable[[Rule], Rule]:
        def deco(fn: Rule) -> Rule:
            table[name] = fn
            return fn
        return deco
    return rule


RULES: dict[str, Rule] = {}
rule = rule_table(RULES)


def _constexpr_int(cg: CodeGen, node: Any, v: Any, what: str) -> int:
    if isinstance(v, tl.constexpr):
        v = v.value
    if isinstance(v, TValue):
        cg.err(node, f"{what} must be a compile-time constant, but it is a runtime value; "
               "declare the parameter it comes from as `NAME: tl.constexpr`")
    if not isinstance(v, int) or isinstance(v, bool):
        cg.err(node, f"{what} must be an integer, got {cg.describe(v)}")
    return v


MAX_RANK = 4


def _shape(cg: CodeGen, node: Any, shape: Any) -> tuple[int, ...]:
    dims = shape if isinstance(shape, (tuple, list)) else (shape,)
    out = tuple(_constexpr_int(cg, node, d, "a tile dimension") for d in dims)
    for d in out:
        if d <= 0 or d & (d - 1):
            cg.err(node, f"tile dimensions must be powers of two, got {list(out)}")
    if len(out) > MAX_RANK:
        cg.err(node, f"tiles of rank {len(out)} are not supported (at most {MAX_RANK}-D)")
    return out


def _dtype(cg: CodeGen, node: Any, dt: Any) -> tl.dtype:
    if not isinstance(dt, tl.dtype):
        cg.err(node, f"expected a dtype such as tl.float32, got {cg.describe(dt)}")
    return dt


def _axis(cg: CodeGen, node: Any, axis: Any) -> int:
    a = _constexpr_int(cg, node, axis, "the axis")
    if a not in (0, 1, 2):
        cg.err(node, f"the grid has axes 0, 1 and 2; got axis {a}")
    return a


@rule("program_id")
def program_id(cg: CodeGen, node: Any, axis: Any) -> TValue:
    a = _axis(cg, node, axis)
    return TValue(tile.program_id(a, loc=cg.loc, ip=cg.ip), tl.int32)


@rule("num_programs")
def num_programs(cg: CodeGen, node: Any, axis: Any) -> TValue:
    a = _axis(cg, node, axis)
    return TValue(tile.num_programs(a, loc=cg.loc, ip=cg.ip), tl.int32)


@rule("arange")
def arange(cg: CodeGen, node: Any, start: Any, end: Any) -> TValue:
    s = _constexpr_int(cg, node, start, "tl.arange's start")
    e = _constexpr_int(cg, node, end, "tl.arange's end")
    n = e - s
    if n <= 0 or n & (n - 1):
        cg.err(node, f"tl.arange({s}, {e}) has {n} elements; the length must be a positive "
               "power of two")
    return TValue(tile.range_(s, e, loc=cg.loc, ip=cg.ip), tl.int32, (n,))


@rule("zeros")
def zeros(cg: CodeGen, node: Any, shape: Any, dtype: Any) -> TValue:
    return cg.constant(0, _dtype(cg, node, dtype), _shape(cg, node, shape))


@rule("full")
def full(cg: CodeGen, node: Any, shape: Any, value: Any, dtype: Any) -> TValue:
    dt = _dtype(cg, node, dtype)
    shp = _shape(cg, node, shape)
    if isinstance(value, tl.constexpr):
        value = value.value
    if isinstance(value, TValue):
        if value.is_block:
            cg.err(node, "tl.full needs a scalar value")
        return cg.broadcast_to(cg.cast(value, dt, node), shp, node)
    if not isinstance(value, (int, float, bool)):
        cg.err(node, f"tl.full needs a number, got {cg.describe(value)}")
    return cg.constant(value, dt, shp)


def _mask(cg: CodeGen, node: Any, mask: Any, shape: tuple[int, ...]) -> TValue | None:
    if isinstance(mask, tl.constexpr):
        mask = mask.value
    if mask is None or mask is True:
        return None
    if isinstance(mask, bool):
        mask = cg.to_value(mask, node)
    if not isinstance(mask, TValue) or mask.is_ptr:
        cg.err(node, f"a mask must be a boolean tile or scalar, got {cg.describe(mask)}")
    if not mask.dtype.is_bool():
        # Triton refuses non-boolean masks too: an int mask is almost always a
        # mistake (offsets passed as the mask) that would select silently.
        cg.err(node, f"a mask must be boolean, got {mask.type_str()}; compare it "
               "(e.g. `m != 0`) or convert it with .to(tl.int1)")
    return cg.broadcast_to(mask, shape, node)


def _pointer(cg: CodeGen, node: Any, ptr: Any, fn: str) -> TValue:
    if not isinstance(ptr, TValue) or not ptr.is_ptr:
        cg.err(node, f"{fn} needs a pointer or a tile of pointers, got {cg.describe(ptr)}")
    return ptr


_CACHE_MODIFIERS = {"tl.load": ("", ".ca", ".cg", ".cv"),
                    "tl.store": ("", ".wb", ".cg", ".cs", ".wt")}


def check_hints(cg: CodeGen, node: Any, fn: str, cache_modifier: Any, eviction_policy: Any,
                boundary_check: Any) -> None:
    """Triton's cache hints are accepted (checked, not yet used: every target
    loads and stores with its default caching); boundary_check needs a block
    pointer (builtins_blockptr.py)."""
    if cache_modifier not in _CACHE_MODIFIERS[fn]:
        cg.err(node, f"{fn}: cache_modifier must be one of "
               f"{', '.join(repr(c) for c in _CACHE_MODIFIERS[fn])}, got {cache_modifier!r}")
    if eviction_policy not in ("", "evict_first", "evict_last", "evict_normal"):
        cg.err(node, f"{fn}: eviction_policy must be '', 'evict_first' or 'evict_last', got "
               f"{eviction_policy!r}")
    if boundary_check not in ((), [], None):
        cg.err(node, f"{fn}: boundary_check needs a block pointer (tl.make_block_ptr); "
               "for a tile of pointers use a mask")


@rule("load")
def load(cg: CodeGen, node: Any, pointer: Any, mask: Any = None, other: Any = None,
         boundary_check: Any = (), padding_option: Any = "", cache_modifier: Any = "",
         eviction_policy: Any = "", volatile: Any = False) -> TValue:
    if getattr(pointer, "is_block_pointer", False):   # builtins_blockptr.BlockPointer
        check_hints(cg, node, "tl.load", cache_modifier, eviction_policy, ())
        if mask is not None or other is not None:
            cg.err(node, "tl.load of a block pointer takes boundary_check=, not mask/other")
        return pointer.load(cg, node, boundary_check, padding_option)
    check_hints(cg, node, "tl.load", cache_modifier, eviction_policy, boundary_check)
    ptr = _pointer(cg, node, pointer, "tl.load")
    shape = ptr.shape
    if isinstance(mask, TValue) and mask.shape and mask.shape != shape:
        try:
            shape = broadcast_shapes(shape, mask.shape)
        except ValueError:
            cg.err(node, f"the mask's shape {list(mask.shape)} does not match the pointers' "
                   f"shape {list(ptr.shape)}")
        ptr = cg.broadcast_to(ptr, shape, node)
    m = _mask(cg, node, mask, shape)
    assert isinstance(ptr.elem, tl.pointer_type)
    elem = ptr.elem.element_ty
    if isinstance(other, tl.constexpr):
        other = other.value
    o = None
    if other is not None:
        if m is None:
            cg.err(node, "tl.load got 'other' without a 'mask'")
        ov = cg.to_value(other, node, elem if not isinstance(other, TValue) else None)
        if ov.is_ptr:
            cg.err(node, "'other' must be a number or a tile of numbers")
        o = cg.broadcast_to(cg.cast(ov, elem, node), shape, node)
    res = tile.load(ptr.handle, m.handle if m else None, o.handle if o else None, loc=cg.loc,
                    ip=cg.ip)
    return TValue(res, elem, shape)


@rule("store")
def store(cg: CodeGen, node: Any, pointer: Any, value: Any, mask: Any = None,
          boundary_check: Any = (), cache_modifier: Any = "", eviction_policy: Any = "") -> None:
    if getattr(pointer, "is_block_pointer", False):   # builtins_blockptr.BlockPointer
        check_hints(cg, node, "tl.store", cache_modifier, eviction_policy, ())
        if mask is not None:
            cg.err(node, "tl.store to a block pointer takes boundary_check=, not a mask")
        pointer.store(cg, node, value, boundary_check)
        return None
    check_hints(cg, node, "tl.store", cache_modifier, eviction_policy, boundary_check)
    ptr = _pointer(cg, node, pointer, "tl.store")
    assert isinstance(ptr.elem, tl.pointer_type)
    elem = ptr.elem.element_ty
    val = cg.to_value(value, node, elem if not isinstance(value, TValue) else None)
    if val.is_ptr:
        cg.err(node, "storing pointers is not supported")
    shape = ptr.shape
    if val.shape != shape:
        try:
            shape = broadcast_shapes(shape, val.shape)
        except ValueError:
            cg.err(node, f"cannot store a value of shape {list(val.shape)} through pointers of "
                   f"shape {list(ptr.shape)}")
        if shape != ptr.shape:
            if len(shape) != len(ptr.shape) and ptr.shape:
                cg.err(node, f"cannot store a value of shape {list(val.shape)} through pointers "
                       f"of shape {list(ptr.shape)}")
            ptr = cg.broadcast_to(ptr, shape, node)
    val = cg.broadcast_to(cg.cast(val, elem, node), shape, node)
    m = _mask(cg, node, mask, shape)
    tile.store(ptr.handle, val.handle, m.handle if m else None, loc=cg.loc, ip=cg.ip)
    return None


@rule("where")
def where(cg: CodeGen, node: Any, condition: Any, x: Any, y: Any) -> Any:
    if isinstance(condition, tl.constexpr):
        condition = condition.value
    if not isinstance(condition, TValue):
        return x if condition else y
    if condition.is_ptr:
        cg.err(node, "tl.where's condition must be boolean")
    c = condition if condition.dtype.is_bool() else cg.cast(condition, tl.int1, node)
    if isinstance(x, TValue) and x.is_ptr or isinstance(y, TValue) and y.is_ptr:
        cg.err(node, "tl.where on pointers is not supported yet")
    xv, yv = cg.unify(x, y, node)
    try:
        shape = broadcast_shapes(broadcast_shapes(c.shape, xv.shape), yv.shape)
    except ValueError:
        cg.err(node, f"tl.where: the condition's shape {list(c.shape)} does not broadcast with "
               f"the values' shape {list(xv.shape)}")
    c, xv, yv = (cg.broadcast_to(v, shape, node) for v in (c, xv, yv))
    return TValue(arith.select(c.handle, xv.handle, yv.handle, loc=cg.loc, ip=cg.ip), xv.elem,
                  shape)


def minmax_builder(dt: tl.dtype, is_max: bool) -> Any:
    """The `arith` builder of elementwise min/max for `dt` (NaN-ignoring on floats)."""
    if dt.is_floating():
        return arith.maxnumf if is_max else arith.minnumf
    if dt.kind == "int":
        return arith.maxsi if is_max else arith.minsi
    return arith.maxui if is_max else arith.minui


def _minmax(cg: CodeGen, node: Any, x: Any, y: Any, is_max: bool) -> Any:
    if not isinstance(x, TValue) and not isinstance(y, TValue):
        return max(x, y) if is_max else min(x, y)
    xv, yv = cg.unify(x, y, node)
    return cg.arith_op(minmax_builder(xv.dtype, is_max), xv, yv)


def propagate_nans(cg: CodeGen, node: Any, res: Any, operands: tuple[Any, ...],
                   propagate_nan: Any) -> Any:
    """`res`, or NaN where an operand is NaN when `propagate_nan` is
    tl.PropagateNan.ALL (Triton's option; NONE, the default, ignores NaNs)."""
    if isinstance(propagate_nan, tl.constexpr):
        propagate_nan = propagate_nan.value
    if not propagate_nan or not isinstance(res, TValue) or not res.dtype.is_floating():
        return res
    for v in operands:
        v = cg.broadcast_to(cg.cast(cg.to_value(v, node, res.dtype), res.dtype, node),
                            res.shape, node)
        res = where(cg, node, cg.compare("!=", v, v, node), v, res)
    return res


@rule("minimum")
def minimum(cg: CodeGen, node: Any, x: Any, y: Any, propagate_nan: Any = 0) -> Any:
    return propagate_nans(cg, node, _minmax(cg, node, x, y, False), (x, y), propagate_nan)


@rule("maximum")
def maximum(cg: CodeGen, node: Any, x: Any, y: Any, propagate_nan: Any = 0) -> Any:
    return propagate_nans(cg, node, _minmax(cg, node, x, y, True), (x, y), propagate_nan)


@rule("cdiv")
def cdiv(cg: CodeGen, node: Any, x: Any, y: Any) -> Any:
    if not isinstance(x, TValue) and not isinstance(y, TValue):
        if not isinstance(x, int) or not isinstance(y, int) or y == 0:
            cg.err(node, f"tl.cdiv needs integers and a non-zero divisor, got {x!r}, {y!r}")
        return -(-x // y)
    return cg.binary("//", cg.binary("-", cg.binary("+", x, y, node), 1, node), y, node)


def _float_arg(cg: CodeGen, node: Any, x: Any, fn: str) -> TValue:
    if isinstance(x, tl.constexpr):
        x = x.value
    if not isinstance(x, TValue):
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            return cg.constant(float(x), tl.float32)
        cg.err(node, f"tl.{fn} needs a number or a tile, got {cg.describe(x)}")
    if x.is_ptr or not x.dtype.is_floating():
        cg.err(node, f"tl.{fn} needs a floating-point argument, got {x.type_str()}; convert "
               "it with .to(tl.float32)")
    return x


def _unary_math(name: str, builder: Any) -> None:
    def impl(cg: CodeGen, node: Any, x: Any) -> TValue:
        return cg.arith_op(builder, _float_arg(cg, node, x, name))
    impl.__name__ = name
    RULES[name] = impl


for _name, _builder in (("exp", math_d.exp), ("exp2", math_d.exp2), ("log", math_d.log),
                        ("log2", math_d.log2), ("sqrt", math_d.sqrt), ("rsqrt", math_d.rsqrt),
                        ("sin", math_d.sin), ("cos", math_d.cos), ("floor", math_d.floor),
                        ("ceil", math_d.ceil)):
    _unary_math(_name, _builder)


@rule("abs")
def abs_(cg: CodeGen, node: Any, x: Any) -> Any:
    if not isinstance(x, TValue):
        return abs(x)
    if x.is_ptr:
        cg.err(node, "tl.abs needs numbers, not pointers")
    if x.dtype.is_floating():
        return cg.arith_op(math_d.absf, x)
    if x.dtype.kind in ("uint", "bool"):
        return x
    return cg.arith_op(math_d.absi, x)


@rule("fma")
def fma(cg: CodeGen, node: Any, x: Any, y: Any, z: Any) -> TValue:
    xv, yv = cg.unify(x, y, node)
    xv, zv = cg.unify(xv, z, node)
    xv, yv = cg.unify(xv, yv, node)
    if not xv.dtype.is_floating():
        cg.err(node, "tl.fma needs floating-point arguments")
    return cg.arith_op(math_d.fma, xv, yv, zv)


__all__ = ["RULES", "Rule", "rule_table", "minmax_builder"]
