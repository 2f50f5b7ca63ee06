"""Helpers in another module, called from kernels in test_helpers.py."""
import tilec as triton
import tilec.language as tl

SCALE = tl.constexpr(3)


@triton.jit
def scaled(x):
    return x * SCALE


@triton.jit
def twice_scaled(x):
    return scaled(x) + scaled(x)
