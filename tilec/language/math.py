"""`tl.math`: Triton's math namespace; the same functions as `tl.*`."""
from __future__ import annotations

from tilec.language import (  # noqa: F401  (re-exported names)
    abs, acos, asin, atan, atan2, cdiv, ceil, cos, cosh, div_rn, erf, exp, exp2, expm1, fast_dividef, fdiv, floor, fma,
    isinf, isnan, log, log1p, log2, log10, maximum as max, minimum as min, pow, rsqrt, sigmoid,
    signbit, sin, sinh, sqrt, square, tanh, trunc, umulhi,
)
