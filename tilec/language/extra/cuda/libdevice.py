"""`libdevice`: Triton's names for the device math library, mapped to tilec's
functions (composed from portable ops, the same on the CPU, NVIDIA and AMD;
no vendor bitcode is linked).  Names Triton has and tilec does not are absent:
using one is a clear error at the kernel's line."""
from __future__ import annotations

from tilec.language import (  # noqa: F401  (re-exported names)
    abs as fabs, acos, asin, atan, atan2, ceil, cos, cosh, div_rn, erf, exp, exp2, expm1, fast_dividef, fdiv, floor, fma,
    isinf, isnan, log, log1p, log2, log10, maximum as fmax, minimum as fmin, pow, rsqrt,
    signbit, sin, sinh, sqrt, tanh, trunc, umulhi,
)
from tilec.language import abs as llabs, pow as powf, fdiv as fast_div  # noqa: F401
from tilec.language import isnan as isnand, isinf as isinfd  # noqa: F401
from tilec.language import rsqrt as rsqrtf, sqrt as sqrtf, exp as fast_expf  # noqa: F401
from tilec.language import tanh as fast_tanhf, log as fast_logf  # noqa: F401
