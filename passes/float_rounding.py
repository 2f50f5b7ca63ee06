"""Float truncation toward zero (`tl.cast(x, dt, fp_downcast_rounding="rtz")`)
built from `arith` ops, bit for bit the IEEE result on every target.

The frontend marks such a cast as `arith.truncf` with `roundingmode =
toward_zero` (MLIR's own attribute).  LLVM would turn that into a constrained
`fptrunc`, whose rounding argument only tells the compiler which mode is
*assumed* to be set: x86 and AMDGPU would still round to nearest.  So the CPU
lowering (passes/cpu/math.py) and the GPU lowering on targets without a
rounding conversion instruction (passes/gpu/elements.py) build it here:

    r = truncf(x)                      (to nearest even: one correct rounding)
    away = |extf(r)| > |x|             (r is the neighbour farther from zero)
    rtz = bitcast(bits(r) - away)      (the neighbour toward zero)

r is one of the two destination values that bracket x, so when it is the one
farther from zero, the other one is the next smaller magnitude, whose bits
are one less (sign-magnitude encodings order magnitudes like integers,
subnormals included).  An overflow to infinity becomes the largest finite
value, infinities stay (|inf| > inf is false), NaN stays NaN (every compare
with NaN is false), and a tiny negative x becomes -0.0.  From f64 to f16/bf16
the result is toward zero in f32 first, then in the destination: truncation
composes (every f16/bf16 value is an f32 value), unlike rounding to nearest.

Works on scalars and vectors alike.  Nearest upstream analogue: none (Triton
uses `cvt.rz` on NVIDIA; LLVM's `llvm.fptrunc.round` is AMDGPU-only).
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith
from mlir.dialects import math as mlir_math

TOWARD_ZERO = 3      # arith::RoundingMode::toward_zero (MLIR's enum value)


def rounding_mode(op: ir.Operation) -> int | None:
    """The `roundingmode` of an `arith.truncf` (None when it has none)."""
    if "roundingmode" not in op.attributes:
        return None
    return int(ir.IntegerAttr(op.attributes["roundingmode"]).value)


def _like(t: ir.Type, elem: ir.Type) -> ir.Type:
    """`elem`, or a vector of it shaped like `t`."""
    if isinstance(t, ir.VectorType):
        return ir.VectorType.get(ir.VectorType(t).shape, elem)
    return elem


def _elem(t: ir.Type) -> ir.Type:
    return ir.VectorType(t).element_type if isinstance(t, ir.VectorType) else t


def _width(t: ir.Type) -> int:
    return int(ir.FloatType(_elem(t)).width)


def _one_step(x: ir.Value, dst: ir.Type) -> ir.Value:
    r = arith.TruncFOp(dst, x).result
    back = arith.ExtFOp(x.type, r).result
    away = arith.CmpFOp(arith.CmpFPredicate.OGT, mlir_math.AbsFOp(back).result,
                        mlir_math.AbsFOp(x).result).result
    bits_t = _like(dst, ir.IntegerType.get_signless(_width(dst)))
    bits = arith.BitcastOp(bits_t, r).result
    bits = arith.SubIOp(bits, arith.ExtUIOp(bits_t, away).result).result
    return arith.BitcastOp(dst, bits).result


def truncf_toward_zero(x: ir.Value, dst: ir.Type) -> ir.Value:
    """`x` (a float scalar or vector) truncated toward zero to `dst`."""
    if _width(x.type) == 64 and _width(dst) == 16:
        x = _one_step(x, _like(dst, ir.F32Type.get()))
    return _one_step(x, dst)
