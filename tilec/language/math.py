"""`tl.math`: Triton's math namespace; the same functions as `tl.*`."""
from __future__ import annotations

from tilec.language import (  # noqa: F401  (re-exported names)
    abs, cdiv, ceil, cos, exp, exp2, floor, fma, log, log2, maximum as max, minimum as min,
    rsqrt, sigmoid, sin, sqrt,
)
