"""CPU lowering of elementwise `arith`/`math` ops.

* Every `arith`/`math` op without a rule of its own is copied with vector types
  (`Lowering.copy`): it acts lane by lane on the flat row-major vectors.
* `arith.constant` of a tile: a splat vector constant.
* `arith.truncf` with `roundingmode = toward_zero` (`fp_downcast_rounding="rtz"`):
  the arith sequence of passes/float_rounding.py, bit for bit.
* Integer division and remainder get a guarded divisor (x86 traps on division
  by zero and on INT_MIN / -1, GPUs do not), so a masked-off lane can never
  kill the process: the divisor is replaced by 1 where it would trap.
* Transcendentals: LLVM turns `llvm.exp.v1024f32` & co. into one libm call per
  lane (slow to compile, slow to run); these rules expand the ops on f32
  vectors into plain `arith` ops that LLVM vectorizes.  f16/bf16 vectors are
  computed in f32 and rounded back.  Scalars and f64 keep the libm call
  (`convert-math-to-llvm`).

| op | f32 algorithm (measured error vs float64 in tests/test_cpu_math.py) |
|---|---|
| `math.exp`  | clamp x to [-110, 89]; n = round(x*log2 e) (by adding 1.5*2^23); r = x - n*ln2 (Cody-Waite, two fma); e^r = 1 + r + r^2*P(r), P of degree 5 (SLEEF expf); 2^n as two exponent-bit factors 2^(n>>1) * 2^(n-(n>>1)), so overflow rounds to +inf and underflow to denormals / 0; NaN passes through the clamp and every op (no fix-up select). |
| `math.exp2` | the same with n = round(x), r = x - n (exact), 2^r = Q(r) of degree 6 (SLEEF exp2f); clamp [-160, 128]. |
| `math.log`  | denormals scaled by 2^23; m, k with x = m*2^k, m in [sqrt(1/2), sqrt(2)) by integer arithmetic on the bits; f = m - 1, s = f/(2+f), log1p(f) = f - f^2/2 + s*(f^2/2 + R(s^2)) (FreeBSD logf); + k*ln2 (hi/lo).  x < 0 or NaN -> NaN, 0 -> -inf, +inf -> +inf. |
| `math.log2` | the same log1p(f), then k + log1p(f)*log2 e (exact for powers of two). |
"""
from __future__ import annotations

import struct
from typing import Callable

from mlir import ir
from mlir.dialects import arith
from mlir.dialects import math as mlir_math

from tilec.errors import CompilerBugError
from tilec.passes import float_rounding
from tilec.passes.cpu.context import NAME, CpuRules, Lowering, elem_of, int_t, like, splat

RULES = CpuRules("cpu.math")

# ---------------------------------------------------------------- elementwise


def _op_names(module: object, prefix: str) -> set[str]:
    """The names of every op the builders of `module` (an upstream dialect) define."""
    names = (getattr(c, "OPERATION_NAME", "") for c in vars(module).values()
             if isinstance(c, type) and issubclass(c, ir.OpView))
    return {n for n in names if n.startswith(prefix)}


_TRANSCENDENTAL = ("math.exp", "math.exp2", "math.log", "math.log2")
# op -> (its builder, whether it is signed)
_INT_DIV = {"arith.divsi": (arith.DivSIOp, True), "arith.remsi": (arith.RemSIOp, True),
            "arith.divui": (arith.DivUIOp, False), "arith.remui": (arith.RemUIOp, False)}
_ELEMENTWISE = sorted((_op_names(arith, "arith.") | _op_names(mlir_math, "math."))
                      - {"arith.constant", "arith.truncf", *_INT_DIV, *_TRANSCENDENTAL})


@RULES.rule(*_ELEMENTWISE)
def elementwise(lw: Lowering, op: ir.Operation) -> None:
    lw.copy(op)


@RULES.rule("arith.truncf")
def truncf(lw: Lowering, op: ir.Operation) -> None:
    """To nearest: copied; toward zero: built from arith ops (passes/float_rounding.py:
    LLVM's constrained fptrunc would still round to nearest on x86)."""
    mode = float_rounding.rounding_mode(op)
    if mode is None or mode == 0:
        lw.copy(op)
        return
    if mode != float_rounding.TOWARD_ZERO:
        raise CompilerBugError(f"{NAME}: arith.truncf rounding mode {mode}")
    lw.bind(op.result, float_rounding.truncf_toward_zero(lw.mapped(op.operands[0]),
                                                         lw.convert(op.result.type)))


@RULES.rule("arith.constant")
def constant(lw: Lowering, op: ir.Operation) -> None:
    t = op.result.type
    attr = op.attributes["value"]
    if isinstance(t, ir.RankedTensorType):
        dense = ir.DenseElementsAttr(attr)
        if not dense.is_splat:
            raise CompilerBugError(f"{NAME}: non-splat tile constants")
        lw.bind(op.result, splat(lw.convert(t), dense.get_splat_value()))
        return
    lw.bind(op.result, arith.ConstantOp(t, attr).result)


def _guarded_divisor(lw: Lowering, op: ir.Operation, signed: bool) -> ir.Value:
    a, b = lw.mapped(op.operands[0]), lw.mapped(op.operands[1])
    t = b.type
    et = elem_of(t)
    width = ir.IntegerType(et).width

    def const(v: int) -> ir.Value:
        attr = ir.IntegerAttr.get(et, v)
        if isinstance(t, ir.VectorType):
            return splat(t, attr)
        return arith.ConstantOp(t, attr).result

    def eq(x: ir.Value, y: ir.Value) -> ir.Value:
        return arith.CmpIOp(arith.CmpIPredicate.eq, x, y).result

    bad = eq(b, const(0))
    if signed:
        # INT_MIN / -1 overflows (and traps on x86) too.
        min_v = -(1 << (width - 1)) if width > 1 else -1
        ovf = arith.AndIOp(eq(a, const(min_v)), eq(b, const(-1))).result
        bad = arith.OrIOp(bad, ovf).result
    return arith.SelectOp(bad, const(1), b).result


@RULES.rule(*_INT_DIV)
def int_div(lw: Lowering, op: ir.Operation) -> None:
    build, signed = _INT_DIV[op.name]
    b = _guarded_divisor(lw, op, signed)
    lw.bind(op.result, build(lw.mapped(op.operands[0]), b).result)


# ---------------------------------------------------------------- transcendentals

def _f32_bits(v: float) -> int:
    return int(struct.unpack("<i", struct.pack("<f", v))[0])


_P = arith.CmpFPredicate


class _V:
    """Builds arith ops on vectors of one shape (f32 and i32 lanes)."""

    def __init__(self, n: int) -> None:
        self.f32, self.i32 = ir.F32Type.get(), int_t(32)
        self.f = ir.VectorType.get([n], self.f32)
        self.i = ir.VectorType.get([n], self.i32)

    def cf(self, v: float) -> ir.Value:
        return splat(self.f, ir.FloatAttr.get(self.f32, v))

    def ci(self, v: int) -> ir.Value:
        return splat(self.i, ir.IntegerAttr.get(self.i32, v))

    def add(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return arith.AddFOp(a, b).result

    def sub(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return arith.SubFOp(a, b).result

    def mul(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return arith.MulFOp(a, b).result

    def div(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return arith.DivFOp(a, b).result

    def fma(self, a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
        return mlir_math.FmaOp(a, b, c).result

    def cmpf(self, pred: arith.CmpFPredicate, a: ir.Value, b: ir.Value) -> ir.Value:
        return arith.CmpFOp(pred, a, b).result

    def sel(self, c: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
        return arith.SelectOp(c, a, b).result

    def bits(self, a: ir.Value) -> ir.Value:
        return arith.BitcastOp(self.i, a).result

    def flt(self, a: ir.Value) -> ir.Value:
        return arith.BitcastOp(self.f, a).result

    def iadd(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return arith.AddIOp(a, b).result

    def isub(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return arith.SubIOp(a, b).result

    def poly(self, x: ir.Value, coeffs: list[float]) -> ir.Value:
        """Horner: coeffs from the highest degree down."""
        acc = self.cf(coeffs[0])
        for c in coeffs[1:]:
            acc = self.fma(acc, x, self.cf(c))
        return acc

    def clamp(self, x: ir.Value, lo: float, hi: float) -> ir.Value:
        """Clamp keeping NaN (compare + select: no NaN fix-up code)."""
        x = self.sel(self.cmpf(_P.OLT, x, self.cf(lo)), self.cf(lo), x)
        return self.sel(self.cmpf(_P.OGT, x, self.cf(hi)), self.cf(hi), x)

    def round_int(self, t: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(round-to-nearest-even of t as f32, as i32) for |t| < 2^22, by adding
        1.5 * 2^23 (no fptosi: NaN lanes stay defined, their value is replaced later)."""
        magic = 12582912.0
        kf = self.add(t, self.cf(magic))
        n_i = self.isub(self.bits(kf), self.ci(_f32_bits(magic)))
        return self.sub(kf, self.cf(magic)), n_i

    def ldexp(self, p: ir.Value, n: ir.Value) -> ir.Value:
        """p * 2^n for n in [-252, 254] with p near 1: two exact power-of-two factors,
        so the only rounding is the final one (denormal results are correctly rounded)."""
        half = arith.ShRSIOp(n, self.ci(1)).result
        rest = self.isub(n, half)

        def pow2(k: ir.Value) -> ir.Value:
            e = self.iadd(k, self.ci(127))
            return self.flt(arith.ShLIOp(e, self.ci(23)).result)
        return self.mul(self.mul(p, pow2(half)), pow2(rest))


# SLEEF expf: e^r = 1 + r + r^2 * P(r), |r| <= ln2/2.
_EXP_P = [0.000198527617612853646278381, 0.00139304355252534151077271,
          0.00833336077630519866943359, 0.0416664853692054748535156,
          0.166666671633720397949219, 0.5]
_LN2_HI, _LN2_LO = 0.693145751953125, 1.428606765330187045e-06
_LOG2E = 1.4426950408889634
# SLEEF exp2f: 2^r for |r| <= 1/2.
_EXP2_P = [0.1535920892e-3, 0.1339262701e-2, 0.9618384764e-2, 0.5550347269e-1,
           0.2402264476e+0, 0.6931471825e+0, 1.0]
# FreeBSD logf: R(z) = z*(Lg1 + z^2*Lg3) + z^2*(Lg2 + z^2*Lg4)
_LG1, _LG2, _LG3, _LG4 = 0.66666662693, 0.40000972152, 0.28498786688, 0.24279078841
_LOG_LN2_HI, _LOG_LN2_LO = 6.9313812256e-01, 9.0580006145e-06


def _exp_f32(v: _V, x: ir.Value) -> ir.Value:
    xc = v.clamp(x, -110.0, 89.0)
    nf, ni = v.round_int(v.mul(xc, v.cf(_LOG2E)))
    r = v.fma(nf, v.cf(-_LN2_HI), xc)
    r = v.fma(nf, v.cf(-_LN2_LO), r)
    p = v.poly(r, _EXP_P)
    p = v.fma(v.mul(r, r), p, v.add(r, v.cf(1.0)))
    # NaN survives the clamp (compare + select) and every later op: no fix-up.
    return v.ldexp(p, ni)


def _exp2_f32(v: _V, x: ir.Value) -> ir.Value:
    xc = v.clamp(x, -160.0, 128.0)
    nf, ni = v.round_int(xc)
    r = v.sub(xc, nf)
    return v.ldexp(v.poly(r, _EXP2_P), ni)


def _log1p_parts(v: _V, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(k as f32, log1p(f)) with x = (1 + f) * 2^k, 1 + f in [sqrt(1/2), sqrt(2))."""
    tiny = v.cmpf(_P.OLT, x, v.cf(1.1754943508222875e-38))  # denormals (and <= 0: fixed later)
    xs = v.sel(tiny, v.mul(x, v.cf(8388608.0)), x)
    adj = v.sel(tiny, v.ci(-23), v.ci(0))
    ix = v.isub(v.bits(xs), v.ci(0x3F3504F3))
    k = v.iadd(arith.ShRSIOp(ix, v.ci(23)).result, adj)
    m = v.flt(v.iadd(arith.AndIOp(ix, v.ci(0x7FFFFF)).result, v.ci(0x3F3504F3)))
    f = v.sub(m, v.cf(1.0))
    s = v.div(f, v.add(f, v.cf(2.0)))
    z = v.mul(s, s)
    w = v.mul(z, z)
    t1 = v.mul(w, v.fma(w, v.cf(_LG4), v.cf(_LG2)))
    t2 = v.mul(z, v.fma(w, v.cf(_LG3), v.cf(_LG1)))
    hfsq = v.mul(v.mul(f, f), v.cf(0.5))
    lp = v.add(v.sub(v.mul(s, v.add(hfsq, v.add(t2, t1))), hfsq), f)
    kf = arith.SIToFPOp(v.f, k).result
    return kf, lp


def _log_specials(v: _V, x: ir.Value, res: ir.Value) -> ir.Value:
    inf = float("inf")
    res = v.sel(v.cmpf(_P.OEQ, x, v.cf(inf)), v.cf(inf), res)
    res = v.sel(v.cmpf(_P.OEQ, x, v.cf(0.0)), v.cf(-inf), res)
    return v.sel(v.cmpf(_P.ULT, x, v.cf(0.0)), v.cf(float("nan")), res)


def _log_f32(v: _V, x: ir.Value) -> ir.Value:
    kf, lp = _log1p_parts(v, x)
    res = v.fma(kf, v.cf(_LOG_LN2_HI), v.fma(kf, v.cf(_LOG_LN2_LO), lp))
    return _log_specials(v, x, res)


def _log2_f32(v: _V, x: ir.Value) -> ir.Value:
    kf, lp = _log1p_parts(v, x)
    return _log_specials(v, x, v.fma(lp, v.cf(_LOG2E), kf))


_F32_IMPL: dict[str, Callable[[_V, ir.Value], ir.Value]] = {
    "math.exp": _exp_f32, "math.exp2": _exp2_f32, "math.log": _log_f32, "math.log2": _log2_f32,
}


@RULES.rule(*_TRANSCENDENTAL)
def transcendental(lw: Lowering, op: ir.Operation) -> None:
    x = lw.mapped(op.operands[0])
    t = x.type
    et = elem_of(t)
    if not isinstance(t, ir.VectorType) or not isinstance(et, (ir.F32Type, ir.F16Type,
                                                                ir.BF16Type)):
        lw.copy(op)  # scalars and f64: one libm call per value
        return
    v = _V(ir.VectorType(t).shape[0])
    impl = _F32_IMPL[op.name]
    if isinstance(et, ir.F32Type):
        lw.bind(op.result, impl(v, x))
        return
    wide = arith.ExtFOp(like(t, v.f32), x).result
    lw.bind(op.result, arith.TruncFOp(t, impl(v, wide)).result)
