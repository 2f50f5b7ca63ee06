"""More of Triton's `tl.*` names: math composed from other ops, `tl.cast`,
`tl.assume`, `tl.device_assert`, `tl.PropagateNan` (stubs as in __init__: the
frontend's rules, tilec/frontend/builtins_compat.py, generate their IR)."""
from __future__ import annotations

from typing import Any, Callable


def _stub(name: str, doc: str) -> Callable[..., Any]:
    def outside_kernel(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"tl.{name} can only be called inside a @tilec.kernel function")
    outside_kernel.__name__ = name
    outside_kernel.__doc__ = doc
    outside_kernel.__tilec_builtin__ = name  # type: ignore[attr-defined]
    return outside_kernel


class PropagateNan:
    """Whether tl.minimum / tl.maximum / tl.clamp give NaN when an operand is NaN."""

    NONE = 0
    ALL = 0xFFFF


tanh = _stub("tanh", "Hyperbolic tangent, elementwise.")
erf = _stub("erf", "The error function, elementwise.")
log1p = _stub("log1p", "log(1 + x), accurate for small x.")
expm1 = _stub("expm1", "exp(x) - 1, accurate for small x.")
log10 = _stub("log10", "Base-10 logarithm.")
trunc = _stub("trunc", "Round toward zero.")
sinh = _stub("sinh", "Hyperbolic sine.")
cosh = _stub("cosh", "Hyperbolic cosine.")
square = _stub("square", "x * x.")
asin = _stub("asin", "Arc sine (float32).")
acos = _stub("acos", "Arc cosine (float32).")
atan = _stub("atan", "Arc tangent (float32).")
atan2 = _stub("atan2", "atan2(y, x): the angle of the point (x, y) (float32).")
pow = _stub("pow", "x ** y for x > 0 (exp2(y * log2(x))).")
div_rn = _stub("div_rn", "x / y rounded to nearest.")
fdiv = _stub("fdiv", "x / y.")
fast_dividef = _stub("fast_dividef", "x / y.")
isnan = _stub("isnan", "True where x is NaN.")
isinf = _stub("isinf", "True where x is +-inf.")
signbit = _stub("signbit", "True where x's sign bit is set.")
umulhi = _stub("umulhi", "The high 32 bits of the product of two 32-bit integers.")
cast = _stub("cast", "input.to(dtype) (fp_downcast_rounding='rtne' only, bitcast=).")
assume = _stub("assume", "A fact the compiler may use (accepted, not used).")
join = _stub("join", "a and b joined in a new minor dimension of size 2.")
split = _stub("split", "The two halves of a tile whose last dimension is 2.")
interleave = _stub("interleave", "a's and b's elements alternating along the last dimension.")
cat = _stub("cat", "Two tiles concatenated along `dim` (can_reorder=True: 1-D, in order).")
flip = _stub("flip", "The tile reversed along `dim` (default: the last).")
histogram = _stub("histogram", "int32 counts of the values 0 .. num_bins - 1 in a 1-D integer tile.")
sort = _stub("sort", "The tile sorted along `dim` (default: the last; a power-of-two size).")
topk = _stub("topk", "The k largest elements along `dim` (default: the last), largest first.")
gather = _stub("gather", "src read along `axis` at `index` (the result has the index's shape).")
device_print = _stub("device_print", "Print `prefix` and every element of the values at run time.")
inline_asm_elementwise = _stub(
    "inline_asm_elementwise", "Run `asm` once per `pack` elements of the arguments "
    "(GPU targets; constraints in LLVM inline-asm syntax).")
device_assert = _stub("device_assert", "Checked when the condition is a compile-time value.")

NAMES = ("tanh", "erf", "log1p", "expm1", "log10", "trunc", "sinh", "cosh", "square", "pow",
         "div_rn", "fdiv", "fast_dividef", "isnan", "isinf", "signbit", "umulhi", "cast",
         "assume", "device_assert", "PropagateNan", "join", "split", "interleave", "cat", "flip", "histogram", "sort", "topk", "gather", "device_print", "inline_asm_elementwise", "asin", "acos", "atan", "atan2")
