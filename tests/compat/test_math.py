"""Math as Triton kernels use it (tl.*, tl.math, libdevice), on the CPU
against NumPy; min/max with NaN rules; builtin min/max on runtime values; casts."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tilec as triton
import tilec.language as tl
from tilec.language.extra.cuda import libdevice

FUNCS = {
    "tanh": (lambda x: tl.tanh(x), np.tanh),
    "erf": (lambda x: tl.erf(x), np.vectorize(math.erf)),
    "log1p": (lambda x: tl.math.log1p(x), np.log1p),
    "expm1": (lambda x: libdevice.expm1(x), np.expm1),
    "sinh": (lambda x: tl.math.sinh(x), np.sinh),
    "cosh": (lambda x: tl.math.cosh(x), np.cosh),
    "trunc": (lambda x: libdevice.trunc(x), np.trunc),
    "log10": (lambda x: tl.math.log10(x + 4.0), lambda x: np.log10(x + 4.0)),
    "pow": (lambda x: libdevice.pow(x + 4.0, 1.5), lambda x: (x + 4.0) ** 1.5),
}


@triton.jit
def unary(x_ptr, o_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if FN == "tanh":
        y = tl.tanh(x)
    elif FN == "erf":
        y = tl.erf(x)
    elif FN == "log1p":
        y = tl.math.log1p(x)
    elif FN == "expm1":
        y = libdevice.expm1(x)
    elif FN == "sinh":
        y = tl.math.sinh(x)
    elif FN == "cosh":
        y = tl.math.cosh(x)
    elif FN == "trunc":
        y = libdevice.trunc(x)
    elif FN == "log10":
        y = tl.math.log10(x + 4.0)
    else:
        y = libdevice.pow(x + 4.0, 1.5)
    tl.store(o_ptr + offs, y, mask=m)


@pytest.mark.parametrize("fn", sorted(FUNCS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary_math(fn: str, dtype: type) -> None:
    x = np.concatenate([np.linspace(-0.9, 3, 301), [1e-6, -1e-7, 0.0, 1e-3, -0.04, 0.06]]).astype(dtype)
    o = np.zeros_like(x)
    unary[(triton.cdiv(x.size, 128),)](x, o, x.size, FN=fn, BLOCK=128)
    ref = FUNCS[fn][1](x.astype(np.float64))
    tol = 2e-6 if dtype == np.float32 else 2e-7
    np.testing.assert_allclose(o, ref, rtol=tol, atol=tol)


@triton.jit
def nan_rules(x_ptr, y_ptr, a_ptr, b_ptr, c_ptr, d_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(a_ptr + offs, tl.minimum(x, y))
    tl.store(b_ptr + offs, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(c_ptr + offs, tl.clamp(x, -1.0, 1.0, propagate_nan=tl.PropagateNan.ALL))
    tl.store(d_ptr + offs, tl.where(tl.math.isnan(x) | libdevice.isinf(y), 1.0, 0.0))


def test_nan_rules() -> None:
    x = np.array([1.0, np.nan, 3.0, np.nan, -5.0, 0.5, np.inf, 2.0], np.float32)
    y = np.array([2.0, 1.0, np.nan, np.nan, -6.0, np.inf, 1.0, -np.inf], np.float32)
    a, b, c, d = (np.zeros(8, np.float32) for _ in range(4))
    nan_rules[(1,)](x, y, a, b, c, d, BLOCK=8)
    np.testing.assert_array_equal(a, np.fmin(x, y))
    np.testing.assert_array_equal(b, np.maximum(x, y))
    np.testing.assert_array_equal(c, np.clip(x, -1, 1))
    np.testing.assert_array_equal(d, (np.isnan(x) | np.isinf(y)).astype(np.float32))


@triton.jit
def builtin_minmax(x_ptr, o_ptr, n, lo, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    end = min(n, (pid + 1) * BLOCK)          # builtin min on runtime scalars
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < end)
    tl.store(o_ptr + offs, max(x, lo, 0.0), mask=offs < end)
    tl.assume(n > 0)


def test_builtin_min_max_on_runtime_values() -> None:
    x = np.linspace(-2, 2, 100).astype(np.float32)
    o = np.full(100, 9.0, np.float32)
    builtin_minmax[(2,)](x, o, 100, -0.5, BLOCK=64)
    np.testing.assert_array_equal(o, np.maximum(x, 0.0))


@triton.jit
def casts(x_ptr, a_ptr, b_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(a_ptr + offs, tl.cast(x, tl.int32))
    tl.store(b_ptr + offs, tl.cast(x, tl.int32, bitcast=True))


def test_tl_cast() -> None:
    x = np.array([1.5, -2.7, 3.0, 0.0], np.float32)
    a, b = np.zeros(4, np.int32), np.zeros(4, np.int32)
    casts[(1,)](x, a, b, BLOCK=4)
    np.testing.assert_array_equal(a, x.astype(np.int32))
    np.testing.assert_array_equal(b, x.view(np.int32))


@pytest.mark.parametrize("target", ["sm90", "gfx942"])
def test_math_compiles_for_gpus(target: str) -> None:
    for fn in ("tanh", "erf", "expm1", "pow"):
        unary.compile(target=target, signature="*fp32,*fp32,i32", constexprs={"FN": fn, "BLOCK": 128})


@triton.jit
def inverse_trig(x_ptr, y_ptr, o_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    y = tl.load(y_ptr + i)
    tl.store(o_ptr + i, libdevice.asin(x))
    tl.store(o_ptr + N + i, tl.math.acos(x))
    tl.store(o_ptr + 2 * N + i, tl.atan(y * 30.0))
    tl.store(o_ptr + 3 * N + i, libdevice.atan2(x, y))


def test_inverse_trig_within_two_ulp() -> None:
    n = 4096
    x = np.linspace(-1, 1, n).astype(np.float32)
    x[6] = 0.0
    y = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    y[:5], y[5:10] = 0.0, -0.0
    o = np.zeros(4 * n, np.float32)
    inverse_trig[(1,)](x, y, o, N=n)
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    refs = [np.arcsin(xd), np.arccos(xd), np.arctan(yd * np.float32(30.0)), np.arctan2(xd, yd)]
    for got, ref in zip(o.reshape(4, n).astype(np.float64), refs):
        ulp = np.abs(got - ref) / np.maximum(np.abs(ref) * 2.0 ** -23, 2.0 ** -149)
        assert ulp.max() <= 2.0, ulp.max()
    assert math.isnan(_asin_of(1.5))


@triton.jit
def _apply(x_ptr, o_ptr, FN: tl.constexpr):
    tl.store(o_ptr, FN(tl.load(x_ptr)))


@triton.jit
def _asin(v):
    return tl.asin(v)


def _asin_of(v: float) -> float:
    """asin through a @jit helper passed as a constexpr (out of range: NaN)."""
    x, o = np.array([v], np.float32), np.zeros(1, np.float32)
    _apply[(1,)](x, o, FN=_asin)
    return float(o[0])


@pytest.mark.parametrize("target", ["sm90", "gfx942"])
def test_inverse_trig_assembles_for_gpus(target: str) -> None:
    from tests.compat.gpu_check import assemble
    assemble(inverse_trig, target, "*fp32,*fp32,*fp32", {"N": 128})


def test_inverse_trig_float64_is_an_error() -> None:
    x = np.zeros(128, np.float64)
    with pytest.raises(triton.TilecError, match="float64 is not supported"):
        inverse_trig[(1,)](x, x, np.zeros(512, np.float64), N=128)
