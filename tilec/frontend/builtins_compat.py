"""Code generation rules for Triton names built from other ops:
`tl.assume`, and the math functions (`tanh`, `erf`, `log1p`, `expm1`, `pow`, `asin`, `acos`, `atan`, `atan2`,
`div_rn`, `fdiv`, `isnan`, `isinf`, `signbit`, `trunc`, `umulhi` ...) that
`tl.math` and `tl.extra.cuda.libdevice` name.

Functions without a `math` dialect op every target lowers are composed from
ops that are (exp, exp2, log, abs, select, arith): the same IR on the CPU and
on every GPU, no vendor math library.  Accuracy in fp32 (measured against
NumPy in tests/compat/test_math.py): tanh and the others from exp within a
few ulp; erf by Abramowitz-Stegun 7.1.26 with a refined rational term,
absolute error below 2e-7.  fp16/bf16 inputs compute in fp32.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from mlir.dialects import math as math_d

from tilec.frontend.builtins import Rule, rule_table
from tilec.frontend.semantic import TValue
from tilec.language import core as tl

if TYPE_CHECKING:
    from tilec.frontend.codegen import CodeGen

RULES: dict[str, Rule] = {}
rule = rule_table(RULES)


def _float(cg: CodeGen, node: Any, x: Any, fn: str) -> tuple[TValue, tl.dtype]:
    """x as a float tile computed in fp32 (fp64 stays), and the result type."""
    if isinstance(x, tl.constexpr):
        x = x.value
    if not isinstance(x, TValue):
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            x = cg.constant(float(x), tl.float32)
        else:
            cg.err(node, f"tl.{fn} needs a number or a tile, got {cg.describe(x)}")
    if x.is_ptr or not x.dtype.is_floating():
        cg.err(node, f"tl.{fn} needs a floating-point argument, got {x.type_str()}; convert "
               "it with .to(tl.float32)")
    out = x.dtype
    work = x if out in (tl.float32, tl.float64) else cg.cast(x, tl.float32, node)
    return work, out


def _float_fn(name: str, body: Callable[[CodeGen, Any, TValue], TValue]) -> None:
    def impl(cg: CodeGen, node: Any, x: Any) -> TValue:
        v, out = _float(cg, node, x, name)
        return cg.cast(body(cg, node, v), out, node)
    impl.__name__ = name
    RULES[name] = impl


def _b(cg: CodeGen, node: Any) -> Callable[[str, Any, Any], Any]:
    return lambda op, a, b: cg.binary(op, a, b, node)


def _exp(cg: CodeGen, v: TValue) -> TValue:
    return cg.arith_op(math_d.exp, v)


def _tanh(cg: CodeGen, node: Any, x: TValue) -> TValue:
    # tanh|x| = (1 - e) / (1 + e) with e = exp(-2|x|) <= 1 (no overflow); for
    # |x| < 0.55 the odd series to x^9 is closer (no cancellation near 0).
    b = _b(cg, node)
    ax = cg.arith_op(math_d.absf, x)
    e = _exp(cg, b("*", ax, -2.0))
    big = b("/", b("-", 1.0, e), b("+", 1.0, e))
    x2 = b("*", x, x)
    poly = b("+", b("*", x2, 62.0 / 2835.0), -17.0 / 315.0)
    poly = b("+", b("*", x2, poly), 2.0 / 15.0)
    poly = b("+", b("*", x2, poly), -1.0 / 3.0)
    small = b("+", x, b("*", b("*", x, x2), poly))
    signed = cg.builtins["where"](cg, node, b("<", x, 0.0), b("-", 0.0, big), big)
    return cg.builtins["where"](cg, node, b("<", ax, 0.0625), small, signed)


def _erf(cg: CodeGen, node: Any, x: TValue) -> TValue:
    # erf x = 1 - t * exp(-x^2 + P(t)), t = 1 / (1 + |x| / 2) (Numerical Recipes'
    # erfc, fractional error < 1.2e-7 everywhere), with x's sign.
    b = _b(cg, node)
    ax = cg.arith_op(math_d.absf, x)
    t = b("/", 1.0, b("+", 1.0, b("*", 0.5, ax)))
    coeffs = (0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806,
              0.09678418, 0.37409196, 1.00002368, -1.26551223)
    p: Any = coeffs[0]
    for c in coeffs[1:]:
        p = b("+", b("*", p, t), c)
    erfc = b("*", t, _exp(cg, b("+", b("*", b("-", 0.0, ax), ax), p)))
    y = b("-", 1.0, erfc)
    return cg.builtins["where"](cg, node, b("<", x, 0.0), b("-", 0.0, y), y)


def _where(cg: CodeGen, node: Any, c: Any, x: Any, y: Any) -> TValue:
    out: TValue = cg.builtins["where"](cg, node, c, x, y)
    return out


def _log1p(cg: CodeGen, node: Any, x: TValue) -> TValue:
    # log(u) * x / (u - 1) with u = 1 + x corrects the rounding of 1 + x.
    b = _b(cg, node)
    u = b("+", 1.0, x)
    d = b("-", u, 1.0)
    corr = b("*", cg.arith_op(math_d.log, u), b("/", x, d))
    return cg.builtins["where"](cg, node, b("==", d, 0.0), x, corr)


def _expm1(cg: CodeGen, node: Any, x: TValue) -> TValue:
    # (u - 1) * x / log(u) with u = exp(x) (Kahan's trick).
    b = _b(cg, node)
    u = _exp(cg, x)
    um1 = b("-", u, 1.0)
    lu = cg.arith_op(math_d.log, u)
    fixed = b("*", um1, b("/", x, lu))
    near = cg.builtins["where"](cg, node, b("==", um1, -1.0), -1.0, fixed)
    return cg.builtins["where"](cg, node, b("==", u, 1.0), x,
                                cg.builtins["where"](cg, node, b("==", u, float("inf")), u, near))


for _n, _f in (("tanh", _tanh), ("erf", _erf), ("log1p", _log1p), ("expm1", _expm1)):
    _float_fn(_n, _f)
_float_fn("log10", lambda cg, node, x: cg.binary("*", cg.arith_op(math_d.log2, x),
                                                 0.30102999566398120, node))
_float_fn("trunc", lambda cg, node, x: _where(
    cg, node, cg.binary("<", x, 0.0, node), cg.arith_op(math_d.ceil, x),
    cg.arith_op(math_d.floor, x)))
_float_fn("sinh", lambda cg, node, x: cg.binary("*", cg.binary(
    "-", _exp(cg, x), _exp(cg, cg.binary("-", 0.0, x, node)), node), 0.5, node))
_float_fn("cosh", lambda cg, node, x: cg.binary("*", cg.binary(
    "+", _exp(cg, x), _exp(cg, cg.binary("-", 0.0, x, node)), node), 0.5, node))
_float_fn("square", lambda cg, node, x: cg.binary("*", x, x, node))


def _fp32_only(cg: CodeGen, node: Any, x: TValue, fn: str) -> None:
    if x.dtype is tl.float64:
        cg.err(node, f"tl.{fn} in float64 is not supported yet (its polynomial is accurate to "
               "float32 only); compute in float32")


def _atan_pos(cg: CodeGen, node: Any, t: TValue) -> TValue:
    # atan t for t >= 0 (Cephes atanf): t > tan(3pi/8) -> pi/2 - atan(1/t),
    # t > tan(pi/8) -> pi/4 + atan((t-1)/(t+1)); an odd polynomial on |z| <= 0.4142.
    b = _b(cg, node)
    big = b(">", t, 2.414213562373095)
    mid = b(">", t, 0.4142135623730950)
    z = _where(cg, node, big, b("/", -1.0, t), _where(cg, node, mid, b("/", b("-", t, 1.0),
                                                                         b("+", t, 1.0)), t))
    base = _where(cg, node, big, 1.5707963267948966, _where(cg, node, mid, 0.7853981633974483,
                                                             0.0))
    z2 = b("*", z, z)
    p = b("+", b("*", z2, 8.05374449538e-2), -1.38776856032e-1)
    p = b("+", b("*", z2, p), 1.99777106478e-1)
    p = b("+", b("*", z2, p), -3.33329491539e-1)
    return b("+", base, b("+", z, b("*", b("*", z, z2), p)))


def _atan(cg: CodeGen, node: Any, x: TValue) -> TValue:
    _fp32_only(cg, node, x, "atan")
    b = _b(cg, node)
    a = _atan_pos(cg, node, cg.arith_op(math_d.absf, x))
    return _where(cg, node, b("<", x, 0.0), b("-", 0.0, a), a)


def _asin(cg: CodeGen, node: Any, x: TValue) -> TValue:
    # asin x = atan(x / sqrt((1 - x)(1 + x))); |x| > 1 gives NaN from the sqrt.
    _fp32_only(cg, node, x, "asin")
    b = _b(cg, node)
    c = cg.arith_op(math_d.sqrt, b("*", b("-", 1.0, x), b("+", 1.0, x)))
    a = _atan_pos(cg, node, b("/", cg.arith_op(math_d.absf, x), c))
    a = _where(cg, node, b("!=", c, c), c, a)
    return _where(cg, node, b("<", x, 0.0), b("-", 0.0, a), a)


def _acos(cg: CodeGen, node: Any, x: TValue) -> TValue:
    # acos x = 2 atan(sqrt((1 - x) / (1 + x))): no cancellation near x = 1.
    _fp32_only(cg, node, x, "acos")
    b = _b(cg, node)
    r = cg.arith_op(math_d.sqrt, b("/", b("-", 1.0, x), b("+", 1.0, x)))
    a = b("*", 2.0, _atan_pos(cg, node, r))
    return _where(cg, node, b("!=", r, r), r, a)


for _n, _f in (("atan", _atan), ("asin", _asin), ("acos", _acos)):
    _float_fn(_n, _f)


@rule("atan2")
def atan2(cg: CodeGen, node: Any, y: Any, x: Any) -> TValue:
    """The angle of (x, y) in [-pi, pi], from atan of min/max of |x|, |y|."""
    yv, out = _float(cg, node, y, "atan2")
    xv = cg.cast(cg.to_value(x, node, yv.dtype if not isinstance(x, TValue) else None),
                 yv.dtype, node)
    yv, xv = cg.unify(yv, xv, node)
    _fp32_only(cg, node, yv, "atan2")
    b = _b(cg, node)
    ax, ay = cg.arith_op(math_d.absf, xv), cg.arith_op(math_d.absf, yv)
    hi, lo = cg.builtins["maximum"](cg, node, ax, ay), cg.builtins["minimum"](cg, node, ax, ay)
    a = _atan_pos(cg, node, _where(cg, node, b("==", hi, 0.0), 0.0, b("/", lo, hi)))
    a = _where(cg, node, b(">", ay, ax), b("-", 1.5707963267948966, a), a)
    a = _where(cg, node, cg.builtins["signbit"](cg, node, xv), b("-", 3.141592653589793, a), a)
    neg = cg.builtins["signbit"](cg, node, yv)
    r = _where(cg, node, neg, b("-", 0.0, a), a)
    return cg.cast(r, out, node)


@rule("pow")
def pow_(cg: CodeGen, node: Any, x: Any, y: Any) -> TValue:
    """x ** y for x > 0 (exp2(y * log2 x)); x == 0 gives 0 for y > 0, 1 for y == 0."""
    xv, out = _float(cg, node, x, "pow")
    yv = cg.cast(cg.to_value(y, node, xv.dtype if not isinstance(y, TValue) else None),
                 xv.dtype, node)
    b = _b(cg, node)
    r = cg.arith_op(math_d.exp2, b("*", yv, cg.arith_op(math_d.log2, xv)))
    r = cg.builtins["where"](cg, node, b("==", yv, 0.0), 1.0, r)
    return cg.cast(r, out, node)


@rule("div_rn")
def div_rn(cg: CodeGen, node: Any, x: Any, y: Any) -> Any:
    """x / y rounded to nearest (the IEEE division every target emits)."""
    return cg.binary("/", x, y, node)


@rule("fdiv")
def fdiv(cg: CodeGen, node: Any, x: Any, y: Any, ieee_rounding: Any = False) -> Any:
    return cg.binary("/", x, y, node)


@rule("fast_dividef")
def fast_dividef(cg: CodeGen, node: Any, x: Any, y: Any) -> Any:
    return cg.binary("/", x, y, node)


@rule("isnan")
def isnan(cg: CodeGen, node: Any, x: Any) -> TValue:
    v, _ = _float(cg, node, x, "isnan")
    return cg.compare("!=", v, v, node)


@rule("isinf")
def isinf(cg: CodeGen, node: Any, x: Any) -> TValue:
    v, _ = _float(cg, node, x, "isinf")
    return cg.compare("==", cg.arith_op(math_d.absf, v), float("inf"), node)


@rule("signbit")
def signbit(cg: CodeGen, node: Any, x: Any) -> TValue:
    v, _ = _float(cg, node, x, "signbit")
    it = tl.int64 if v.dtype is tl.float64 else tl.int32
    return cg.compare("<", cg.cast(v, it, node, bitcast=True), 0, node)


@rule("umulhi")
def umulhi(cg: CodeGen, node: Any, x: Any, y: Any) -> TValue:
    """The high 32 bits of the 64-bit product of two 32-bit integers."""
    xv, yv = cg.unify(x, y, node)
    if not xv.dtype.is_int() or xv.dtype.bits != 32:
        cg.err(node, f"tl.umulhi needs 32-bit integers, got {xv.type_str()}")
    wide = tl.uint64 if xv.dtype.kind == "uint" else tl.int64
    p = cg.binary("*", cg.cast(xv, wide, node), cg.cast(yv, wide, node), node)
    return cg.cast(cg.binary(">>", p, 32, node), xv.dtype, node)


@rule("assume")
def assume(cg: CodeGen, node: Any, cond: Any) -> None:
    """A fact the compiler may use; accepted and not used (a false compile-time
    condition is an error)."""
    if not isinstance(cond, TValue) and not cond:
        cg.err(node, "tl.assume got a condition that is false at compile time")


@rule("device_assert")
def device_assert(cg: CodeGen, node: Any, cond: Any, msg: Any = "", mask: Any = None) -> None:
    """Checked at compile time when the condition is; a run-time condition
    becomes `tile.assert`, which `tile-debug-checks` checks in debug mode and
    erases otherwise (as Triton without TRITON_DEBUG).  A non-boolean
    condition means `cond != 0`; `mask` limits the check to its true elements."""
    if isinstance(cond, tl.constexpr):
        cond = cond.value
    if isinstance(msg, tl.constexpr):
        msg = msg.value
    if not isinstance(cond, TValue):
        if not cond:
            cg.err(node, f"tl.device_assert failed at compile time: {msg}")
        return
    if cond.is_ptr:
        cg.err(node, f"tl.device_assert needs a boolean or numeric condition, got "
               f"{cond.type_str()}")
    if not cond.dtype.is_bool():
        cond = cg.compare("!=", cond, 0, node)
    if isinstance(mask, tl.constexpr):
        mask = mask.value
    if mask is not None and mask is not True:
        if not isinstance(mask, TValue) or mask.is_ptr or not mask.dtype.is_bool():
            cg.err(node, f"tl.device_assert's mask must be boolean, got {cg.describe(mask)}")
        cond = cg.binary("|", cond, cg.compare("==", mask, False, node), node)
    from tilec.dialects.tile_debug import assert_
    assert_(cond.handle, str(msg), loc=cg.location(node), ip=cg.ip)


__all__ = ["RULES"]
