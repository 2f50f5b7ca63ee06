"""Differential tests of the tilec language on the CPU, against NumPy (and torch for bf16).

Every kernel here is compiled once per (dtypes, constexprs) specialization and
then launched over many sizes (1, primes, sizes around and far from the
block), so the suite stays fast while covering ragged edges.
"""
from __future__ import annotations

import math
import mmap
from typing import Any

import numpy as np
import pytest
import torch

import tilec
import tilec.language as tl

SIZES = (1, 7, 127, 128, 1000, 4099)
INT_DTYPES = (np.int8, np.int16, np.int32, np.int64, np.uint8)
FLOAT_DTYPES = (np.float16, np.float32, np.float64)
RNG = np.random.default_rng(1234)


def grid_for(n: int, block: int) -> tuple[int]:
    return (tilec.cdiv(n, block),)


def c_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Integer division truncating toward zero (C, Triton), exact for every width."""
    r = np.fmod(x, y)
    return ((x - r) // y).astype(x.dtype)


def rand_int(dt: Any, n: int, lo: int | None = None, hi: int | None = None) -> np.ndarray:
    info = np.iinfo(dt)
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    return RNG.integers(lo, hi, n, endpoint=True, dtype=dt)


def rand_float(dt: Any, n: int, scale: float = 10.0) -> np.ndarray:
    return (RNG.standard_normal(n) * scale).astype(dt)


def tol(dt: Any) -> dict[str, float]:
    """assert_allclose tolerances for one rounding step (or a few) in `dt`."""
    return {np.float16: dict(rtol=2e-3, atol=1e-3), np.float32: dict(rtol=2e-6, atol=1e-6),
            np.float64: dict(rtol=1e-13, atol=1e-13)}[dt]


# ---------------------------------------------------------------- integer operators

INT_OPS = ("+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>", "min", "max", "neg", "~", "abs")
CMP_OPS = ("<", "<=", ">", ">=", "==", "!=")


@tilec.kernel
def int_ops_kernel(x_ptr, y_ptr, s_ptr, o_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1)
    y = tl.load(y_ptr + offs, mask=m, other=1)
    s = tl.load(s_ptr + offs, mask=m, other=0)
    o = o_ptr + offs
    tl.store(o, x + y, mask=m)
    tl.store(o + n, x - y, mask=m)
    tl.store(o + 2 * n, x * y, mask=m)
    tl.store(o + 3 * n, x // y, mask=m)
    tl.store(o + 4 * n, x % y, mask=m)
    tl.store(o + 5 * n, x & y, mask=m)
    tl.store(o + 6 * n, x | y, mask=m)
    tl.store(o + 7 * n, x ^ y, mask=m)
    tl.store(o + 8 * n, x << s, mask=m)
    tl.store(o + 9 * n, x >> s, mask=m)
    tl.store(o + 10 * n, tl.minimum(x, y), mask=m)
    tl.store(o + 11 * n, tl.maximum(x, y), mask=m)
    tl.store(o + 12 * n, -x, mask=m)
    tl.store(o + 13 * n, ~x, mask=m)
    tl.store(o + 14 * n, tl.abs(x), mask=m)
    c = c_ptr + offs
    tl.store(c, x < y, mask=m)
    tl.store(c + n, x <= y, mask=m)
    tl.store(c + 2 * n, x > y, mask=m)
    tl.store(c + 3 * n, x >= y, mask=m)
    tl.store(c + 4 * n, x == y, mask=m)
    tl.store(c + 5 * n, x != y, mask=m)


def int_reference(x: np.ndarray, y: np.ndarray, s: np.ndarray) -> tuple[list[np.ndarray],
                                                                         list[np.ndarray]]:
    with np.errstate(all="ignore"):
        ops = [x + y, x - y, x * y, c_div(x, y), np.fmod(x, y), x & y, x | y, x ^ y,
               x << s, x >> s, np.minimum(x, y), np.maximum(x, y), -x, ~x, np.abs(x)]
    cmps = [x < y, x <= y, x > y, x >= y, x == y, x != y]
    return [a.astype(x.dtype) for a in ops], cmps


@pytest.mark.parametrize("block", [128, 1024])
@pytest.mark.parametrize("dt", INT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_int_operators(dt: Any, block: int) -> None:
    bits = np.iinfo(dt).bits
    for n in SIZES:
        x, y = rand_int(dt, n), rand_int(dt, n)
        y[y == 0] = 1
        if np.iinfo(dt).min < 0:
            y[(x == np.iinfo(dt).min) & (y == -1)] = 1  # INT_MIN // -1 overflows
        x[: min(n, 4)] = np.array([0, -7, 7, -1], dtype=np.int64)[: min(n, 4)].astype(dt)
        s = rand_int(dt, n, 0, bits - 1)
        o = np.zeros((len(INT_OPS), n), dt)
        c = np.zeros((len(CMP_OPS), n), np.bool_)
        int_ops_kernel[grid_for(n, block)](x, y, s, o, c, n, BLOCK=block)
        ops, cmps = int_reference(x, y, s)
        for name, got, want in zip(INT_OPS, o, ops):
            np.testing.assert_array_equal(got, want, err_msg=f"{name} on {np.dtype(dt)} n={n}")
        for name, got, want in zip(CMP_OPS, c, cmps):
            np.testing.assert_array_equal(got, want, err_msg=f"{name} on {np.dtype(dt)} n={n}")


def test_int_division_truncates_toward_zero() -> None:
    x = np.array([7, -7, 7, -7, 0, 1, -1, 5], np.int32)
    y = np.array([2, 2, -2, -2, 3, -5, 5, 5], np.int32)
    n = len(x)
    o = np.zeros((len(INT_OPS), n), np.int32)
    c = np.zeros((len(CMP_OPS), n), np.bool_)
    int_ops_kernel[(1,)](x, y, np.zeros(n, np.int32), o, c, n, BLOCK=128)
    assert o[3].tolist() == [3, -3, -3, 3, 0, 0, 0, 1]
    assert o[4].tolist() == [1, -1, 1, -1, 0, 1, -1, 0]


# ---------------------------------------------------------------- float operators

FLOAT_OPS = ("+", "-", "*", "/", "%", "min", "max", "neg")


@tilec.kernel
def float_ops_kernel(x_ptr, y_ptr, o_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = tl.load(y_ptr + offs, mask=m, other=1.0)
    o = o_ptr + offs
    tl.store(o, x + y, mask=m)
    tl.store(o + n, x - y, mask=m)
    tl.store(o + 2 * n, x * y, mask=m)
    tl.store(o + 3 * n, x / y, mask=m)
    tl.store(o + 4 * n, x % y, mask=m)
    tl.store(o + 5 * n, tl.minimum(x, y), mask=m)
    tl.store(o + 6 * n, tl.maximum(x, y), mask=m)
    tl.store(o + 7 * n, -x, mask=m)
    c = c_ptr + offs
    tl.store(c, x < y, mask=m)
    tl.store(c + n, x <= y, mask=m)
    tl.store(c + 2 * n, x > y, mask=m)
    tl.store(c + 3 * n, x >= y, mask=m)
    tl.store(c + 4 * n, x == y, mask=m)
    tl.store(c + 5 * n, x != y, mask=m)


def with_specials(x: np.ndarray, y: np.ndarray) -> None:
    """Put NaN, +-inf, -0.0 and equal pairs at the front (in place)."""
    specials = [(np.nan, 1.0), (1.0, np.nan), (np.inf, 2.0), (-np.inf, 3.0), (-0.0, 0.0),
                (2.5, 2.5), (np.nan, np.nan)]
    for i, (a, b) in enumerate(specials[: len(x)]):
        x[i], y[i] = a, b


@pytest.mark.parametrize("block", [128, 1024])
@pytest.mark.parametrize("dt", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_float_operators(dt: Any, block: int) -> None:
    for n in SIZES:
        x, y = rand_float(dt, n), rand_float(dt, n)
        with_specials(x, y)
        # fp16 / and % compute in fp32 (Triton): the result is fp32.
        o = np.zeros((len(FLOAT_OPS), n), dt)
        c = np.zeros((len(CMP_OPS), n), np.bool_)
        float_ops_kernel[grid_for(n, block)](x, y, o, c, n, BLOCK=block)
        wide = np.float32 if dt is np.float16 else dt
        with np.errstate(all="ignore"):
            xw, yw = x.astype(wide), y.astype(wide)
            want = [x + y, x - y, x * y, (xw / yw).astype(dt), np.fmod(xw, yw).astype(dt),
                    np.fmin(x, y), np.fmax(x, y), -x]
        for name, got, w in zip(FLOAT_OPS, o, want):
            np.testing.assert_allclose(got, w, equal_nan=True, err_msg=f"{name} n={n}", **tol(dt))
            if name in ("min", "max"):
                continue  # minnum/maxnum may return either zero of (-0.0, +0.0)
            # -0.0 and +0.0 compare equal above; check signs of zeros too
            np.testing.assert_array_equal(np.signbit(got[np.isfinite(w) & (w == 0)]),
                                          np.signbit(w[np.isfinite(w) & (w == 0)]))
        cmps = [x < y, x <= y, x > y, x >= y, x == y, x != y]
        for name, got, w in zip(CMP_OPS, c, cmps):
            np.testing.assert_array_equal(got, w, err_msg=f"{name} on {np.dtype(dt)} n={n}")


# ---------------------------------------------------------------- math functions

MATH_FNS = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "sin", "cos", "floor", "ceil",
            "fma")


@tilec.kernel
def math_kernel(x_ptr, p_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.5)
    p = tl.load(p_ptr + offs, mask=m, other=0.5)   # positive
    o = o_ptr + offs
    tl.store(o, tl.exp(x), mask=m)
    tl.store(o + n, tl.exp2(x), mask=m)
    tl.store(o + 2 * n, tl.log(p), mask=m)
    tl.store(o + 3 * n, tl.log2(p), mask=m)
    tl.store(o + 4 * n, tl.sqrt(p), mask=m)
    tl.store(o + 5 * n, tl.rsqrt(p), mask=m)
    tl.store(o + 6 * n, tl.abs(x), mask=m)
    tl.store(o + 7 * n, tl.sin(x), mask=m)
    tl.store(o + 8 * n, tl.cos(x), mask=m)
    tl.store(o + 9 * n, tl.floor(x), mask=m)
    tl.store(o + 10 * n, tl.ceil(x), mask=m)
    tl.store(o + 11 * n, tl.fma(x, p, x), mask=m)


def math_reference(x: np.ndarray, p: np.ndarray) -> list[np.ndarray]:
    xd, pd = x.astype(np.float64), p.astype(np.float64)
    return [np.exp(xd), np.exp2(xd), np.log(pd), np.log2(pd), np.sqrt(pd), 1 / np.sqrt(pd),
            np.abs(xd), np.sin(xd), np.cos(xd), np.floor(xd), np.ceil(xd), xd * pd + xd]


MATH_TOL = {np.float16: dict(rtol=2e-3, atol=2e-3), np.float32: dict(rtol=1e-5, atol=1e-6),
            np.float64: dict(rtol=1e-12, atol=1e-12)}


@pytest.mark.parametrize("dt", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_math_functions(dt: Any) -> None:
    for n in SIZES:
        x = RNG.uniform(-6, 6, n).astype(dt)
        p = RNG.uniform(0.01, 100, n).astype(dt)
        o = np.zeros((len(MATH_FNS), n), dt)
        math_kernel[grid_for(n, 128)](x, p, o, n, BLOCK=128)
        for name, got, want in zip(MATH_FNS, o, math_reference(x, p)):
            np.testing.assert_allclose(got.astype(np.float64), want.astype(dt).astype(np.float64),
                                       err_msg=f"tl.{name} on {np.dtype(dt)} n={n}",
                                       **MATH_TOL[dt])


# ---------------------------------------------------------------- bfloat16 (through torch)

def bf16(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16)


@pytest.mark.parametrize("block", [128, 1024])
def test_bfloat16_operators(block: int) -> None:
    for n in SIZES:
        x, y = bf16(rand_float(np.float32, n)), bf16(rand_float(np.float32, n))
        o = torch.zeros((len(FLOAT_OPS), n), dtype=torch.bfloat16)
        c = torch.zeros((len(CMP_OPS), n), dtype=torch.bool)
        float_ops_kernel[grid_for(n, block)](x, y, o, c, n, BLOCK=block)
        xf, yf = x.float(), y.float()
        want = [x + y, x - y, x * y, (xf / yf).bfloat16(), torch.fmod(xf, yf).bfloat16(),
                torch.fmin(x, y), torch.fmax(x, y), -x]
        for name, got, w in zip(FLOAT_OPS, o, want):
            torch.testing.assert_close(got, w, rtol=1e-2, atol=1e-2, msg=f"bf16 {name} n={n}")
        for name, got, w in zip(CMP_OPS, c, [x < y, x <= y, x > y, x >= y, x == y, x != y]):
            assert torch.equal(got, w), f"bf16 {name} n={n}"


def test_bfloat16_math() -> None:
    for n in SIZES:
        x = bf16(RNG.uniform(-6, 6, n))
        p = bf16(RNG.uniform(0.01, 100, n))
        o = torch.zeros((len(MATH_FNS), n), dtype=torch.bfloat16)
        math_kernel[grid_for(n, 128)](x, p, o, n, BLOCK=128)
        want = math_reference(x.float().numpy(), p.float().numpy())
        for name, got, w in zip(MATH_FNS, o, want):
            np.testing.assert_allclose(got.float().numpy(), bf16(w).float().numpy(),
                                       rtol=1e-2, atol=1e-2, err_msg=f"tl.{name} on bf16 n={n}")


# ---------------------------------------------------------------- int1 (bool)

BOOL_OPS = ("&", "|", "^", "~", "==", "!=", "where", "not-and")


@tilec.kernel
def bool_ops_kernel(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=False)
    y = tl.load(y_ptr + offs, mask=m)
    o = o_ptr + offs
    tl.store(o, x & y, mask=m)
    tl.store(o + n, x | y, mask=m)
    tl.store(o + 2 * n, x ^ y, mask=m)
    tl.store(o + 3 * n, ~x, mask=m)
    tl.store(o + 4 * n, x == y, mask=m)
    tl.store(o + 5 * n, x != y, mask=m)
    tl.store(o + 6 * n, tl.where(x, y, False), mask=m)
    tl.store(o + 7 * n, ~x & y, mask=m)


@pytest.mark.parametrize("block", [128, 1024])
def test_bool_operators(block: int) -> None:
    for n in SIZES:
        x = RNG.integers(0, 2, n).astype(np.bool_)
        y = RNG.integers(0, 2, n).astype(np.bool_)
        o = np.zeros((len(BOOL_OPS), n), np.bool_)
        bool_ops_kernel[grid_for(n, block)](x, y, o, n, BLOCK=block)
        want = [x & y, x | y, x ^ y, ~x, x == y, x != y, np.where(x, y, False), ~x & y]
        for name, got, w in zip(BOOL_OPS, o, want):
            np.testing.assert_array_equal(got, w, err_msg=f"{name} on bool n={n}")
        # stored bools are 0 or 1 bytes, nothing else
        assert set(np.unique(o.view(np.uint8)).tolist()) <= {0, 1}


@tilec.kernel
def bool_copy_kernel(x_ptr, o_ptr, s_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, ~tl.load(x_ptr + offs))           # no mask: whole vectors
    tl.store(s_ptr + tl.program_id(0), tl.load(x_ptr + tl.program_id(0) * BLOCK))  # scalars


def test_bool_unmasked_vectors_and_scalars_are_bytes() -> None:
    x = RNG.integers(0, 2, 512).astype(np.bool_)
    o = np.zeros(512, np.bool_)
    s = np.zeros(4, np.bool_)
    bool_copy_kernel[(4,)](x, o, s, BLOCK=128)
    np.testing.assert_array_equal(o, ~x)
    np.testing.assert_array_equal(s, x[::128])
    assert set(np.unique(o.view(np.uint8)).tolist()) <= {0, 1}


# ---------------------------------------------------------------- casts

CAST_DSTS = ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64",
             "uint8", "int1")


@tilec.kernel
def cast_kernel(x_ptr, f16, b16, f32, f64, i8, i16, i32, i64, u8, b1, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(f16 + offs, x.to(tl.float16), mask=m)
    tl.store(b16 + offs, x.to(tl.bfloat16), mask=m)
    tl.store(f32 + offs, x.to(tl.float32), mask=m)
    tl.store(f64 + offs, x.to(tl.float64), mask=m)
    tl.store(i8 + offs, x.to(tl.int8), mask=m)
    tl.store(i16 + offs, x.to(tl.int16), mask=m)
    tl.store(i32 + offs, x.to(tl.int32), mask=m)
    tl.store(i64 + offs, x.to(tl.int64), mask=m)
    tl.store(u8 + offs, x.to(tl.uint8), mask=m)
    tl.store(b1 + offs, x.to(tl.int1), mask=m)


TORCH_OF = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
            "float64": torch.float64, "int8": torch.int8, "int16": torch.int16,
            "int32": torch.int32, "int64": torch.int64, "uint8": torch.uint8, "int1": torch.bool}


def cast_source(src: str, n: int) -> torch.Tensor:
    if src in ("float16", "bfloat16", "float32", "float64"):
        # in range for every destination (uint8 is checked on non-negative values only)
        x = torch.from_numpy(RNG.uniform(-120, 120, n)).to(TORCH_OF[src])
        x[: min(n, 6)] = torch.tensor([0.0, -0.0, 0.5, -0.75, 1.0, 99.99])[: min(n, 6)].to(x.dtype)
        return x
    if src == "int1":
        return torch.from_numpy(RNG.integers(0, 2, n).astype(np.bool_))
    dt = np.dtype(src)
    return torch.from_numpy(rand_int(dt, n))


@pytest.mark.parametrize("src", list(TORCH_OF), ids=str)
def test_casts(src: str) -> None:
    for n in (1, 127, 1000):
        x = cast_source(src, n)
        outs = {d: torch.zeros(n, dtype=TORCH_OF[d]) for d in CAST_DSTS}
        cast_kernel[grid_for(n, 128)](x, *outs.values(), n, BLOCK=128)
        for d, got in outs.items():
            if x.dtype.is_floating_point and not TORCH_OF[d].is_floating_point \
                    and TORCH_OF[d] is not torch.bool:
                # float -> int truncates toward zero (in range only)
                keep = x > -1 if d == "uint8" else torch.ones(n, dtype=torch.bool)
                want = torch.trunc(x.double())[keep].to(TORCH_OF[d])
                got = got[keep]
            elif x.dtype is torch.bfloat16 and d == "float16" or \
                    x.dtype is torch.float16 and d == "bfloat16":
                want = x.float().to(TORCH_OF[d])      # through fp32, exactly
            else:
                want = x.to(TORCH_OF[d])              # torch: ints wrap, bool is != 0
            assert torch.equal(got, want), f"{src} -> {d} (n={n}): {got[:8]} != {want[:8]}"


@tilec.kernel
def round_trip_kernel(x_ptr, h_ptr, b_ptr, bits_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(h_ptr + offs, x.to(tl.float16).to(tl.float32), mask=m)
    tl.store(b_ptr + offs, x.to(tl.bfloat16).to(tl.float32), mask=m)
    tl.store(bits_ptr + offs, x.to(tl.int32, bitcast=True), mask=m)


def test_fp16_bf16_round_trips_and_bitcast() -> None:
    n = 4099
    x = (RNG.standard_normal(n) * 1000).astype(np.float32)
    x[:4] = [65504.0, 1e-8, 3.140625, -2.0 ** -14]
    h, b = np.zeros(n, np.float32), np.zeros(n, np.float32)
    bits = np.zeros(n, np.int32)
    round_trip_kernel[grid_for(n, 1024)](x, h, b, bits, n, BLOCK=1024)
    np.testing.assert_array_equal(h, x.astype(np.float16).astype(np.float32))
    np.testing.assert_array_equal(b, torch.from_numpy(x).bfloat16().float().numpy())
    np.testing.assert_array_equal(bits, x.view(np.int32))


def test_fp64_to_bf16_rounds_once() -> None:
    # 1 + 2**-8 + 2**-30 is just above a bf16 tie; rounding to fp32 first would
    # land exactly on the tie and then round down to 1.0.
    x = np.array([1 + 2.0 ** -8 + 2.0 ** -30, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8,
                  -(1 + 2.0 ** -8 + 2.0 ** -40), 3.0e38, 1e300, -1e300, 0.0, np.inf, np.nan])
    x = np.concatenate([x, RNG.standard_normal(117) * 10.0 ** RNG.integers(-30, 30, 117)])
    n = len(x)
    outs = {d: torch.zeros(n, dtype=TORCH_OF[d]) for d in CAST_DSTS}
    cast_kernel[grid_for(n, 128)](x, *outs.values(), n, BLOCK=128)
    got = outs["bfloat16"].double().numpy()
    # reference: round the significand to 8 bits, to nearest even, in exact fp64 arithmetic
    with np.errstate(all="ignore"):
        m, e = np.frexp(x)
        want = np.ldexp(np.rint(m * 256), e - 8)
    too_big = np.abs(want) > float(torch.finfo(torch.bfloat16).max)
    want[too_big] = np.inf * np.sign(x[too_big])
    want[~np.isfinite(x)] = x[~np.isfinite(x)]
    np.testing.assert_array_equal(got, want)
    assert got[0] == 1 + 2.0 ** -7 and got[1] == 1.0 and got[2] == 1 + 2 * 2.0 ** -7


# ---------------------------------------------------------------- promotion

@tilec.kernel
def promote_kernel(a_ptr, b_ptr, o_ptr, n, EXPECT: tl.constexpr, OP: tl.constexpr,
                   BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs, mask=m)
    if OP == "+":
        r = a + b
    elif OP == "*":
        r = a * b
    elif OP == "/":
        r = a / b
    elif OP == "%":
        r = a % b
    elif OP == "+1":
        r = a + 1
    elif OP == "1+":
        r = 1 + a
    elif OP == "*2.5":
        r = a * 2.5
    elif OP == "-100":
        r = a - 100
    elif OP == "where":
        r = tl.where(a > 0, a, b)
    else:
        r = tl.minimum(a, b)
    assert r.dtype == EXPECT, "unexpected result type"
    tl.store(o_ptr + offs, r, mask=m)


PROMOTIONS = [
    # (a dtype, b dtype, op, expected tl dtype)
    ("float16", "float32", "+", tl.float32),
    ("float32", "float16", "*", tl.float32),
    ("float16", "float16", "+", tl.float16),
    ("float16", "float16", "/", tl.float32),
    ("float16", "float16", "%", tl.float32),
    ("bfloat16", "float16", "+", tl.float16),
    ("bfloat16", "bfloat16", "+", tl.bfloat16),
    ("bfloat16", "float32", "+", tl.float32),
    ("float32", "float64", "+", tl.float64),
    ("int32", "float16", "+", tl.float16),
    ("int8", "int16", "+", tl.int16),
    ("int32", "int64", "*", tl.int64),
    ("uint8", "int8", "+", tl.uint8),
    ("uint8", "int32", "+", tl.int32),
    ("int32", "int32", "/", tl.float32),
    ("int8", "int8", "+1", tl.int8),
    ("int8", "int8", "1+", tl.int8),
    ("uint8", "uint8", "+1", tl.uint8),
    ("float16", "float16", "*2.5", tl.float16),
    ("bfloat16", "bfloat16", "*2.5", tl.bfloat16),
    ("int32", "int32", "*2.5", tl.float32),
    ("int8", "int8", "-100", tl.int8),
    ("uint8", "uint8", "-100", tl.uint8),
    ("float16", "float32", "where", tl.float32),
    ("int16", "int64", "min", tl.int64),
]


@pytest.mark.parametrize("a_dt,b_dt,op,expect", PROMOTIONS,
                         ids=[f"{a}{op}{b}" for a, b, op, _ in PROMOTIONS])
def test_promotion(a_dt: str, b_dt: str, op: str, expect: tl.dtype) -> None:
    n = 300
    a = torch.from_numpy(RNG.uniform(-100, 100, n)).to(TORCH_OF[a_dt])
    b = torch.from_numpy(RNG.uniform(1, 100, n)).to(TORCH_OF[b_dt])
    out = torch.zeros(n, dtype=TORCH_OF[expect.name])
    promote_kernel[grid_for(n, 128)](a, b, out, n, EXPECT=expect, OP=op, BLOCK=128)
    # the value too: computed in the expected type, from operands converted exactly
    at, bt = a.to(out.dtype), b.to(out.dtype)
    if op in ("/", "%") and not out.dtype.is_floating_point:
        raise AssertionError("unreachable")
    want = {"+": lambda: at + bt, "*": lambda: at * bt, "/": lambda: at / bt,
            "%": lambda: torch.fmod(at, bt), "+1": lambda: at + 1, "1+": lambda: 1 + at,
            "*2.5": lambda: at * 2.5, "-100": lambda: at - 100,
            "where": lambda: torch.where(at > 0, at, bt), "min": lambda: torch.minimum(at, bt)}[op]()
    if op == "-100" and a_dt == "uint8":
        want = (a.to(torch.int32) - 100).to(torch.uint8)  # computed in uint8: wraps
    if out.dtype.is_floating_point:
        torch.testing.assert_close(out, want.to(out.dtype), rtol=1e-2, atol=1e-2)
    else:
        assert torch.equal(out, want.to(out.dtype))


def test_promotion_fp16_plus_fp32_is_exact_in_fp32() -> None:
    # 1 + 2**-20 is not representable in fp16: the fp32 result keeps it.
    n = 128
    a = np.ones(n, np.float16)
    b = np.full(n, 2.0 ** -20, np.float32)
    out = np.zeros(n, np.float32)
    promote_kernel[(1,)](a, b, out, n, EXPECT=tl.float32, OP="+", BLOCK=128)
    assert (out == np.float32(1 + 2.0 ** -20)).all()


def test_promotion_in_ir() -> None:
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp32", "o_ptr": "*fp32", "n": "i32"}
    text = promote_kernel.ir(signature=sig, constexprs={"EXPECT": tl.float32, "OP": "+",
                                                       "BLOCK": 64})
    assert "arith.extf" in text and "arith.addf" in text
    assert [ln for ln in text.splitlines() if "arith.addf" in ln][0].endswith("tensor<64xf32>")
    sig = {"a_ptr": "*i8", "b_ptr": "*i8", "o_ptr": "*i8", "n": "i32"}
    text = promote_kernel.ir(signature=sig, constexprs={"EXPECT": tl.int8, "OP": "+1",
                                                       "BLOCK": 64})
    assert [ln for ln in text.splitlines() if "arith.addi" in ln][-1].endswith("tensor<64xi8>")


# ---------------------------------------------------------------- literals, full, zeros, where

@tilec.kernel
def literals_kernel(x_ptr, o_ptr, v, n, BLOCK: tl.constexpr, SCALE: tl.constexpr = 2,
                    FLAG: tl.constexpr = True):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=float("nan"))
    o = o_ptr + offs
    tl.store(o, tl.where(x > 0, x, float("inf")), mask=m)
    tl.store(o + n, tl.where(x != x, float("-inf"), x * SCALE), mask=m)
    tl.store(o + 2 * n, tl.full((BLOCK,), v, tl.float32) + tl.zeros((BLOCK,), tl.float32), mask=m)
    tl.store(o + 3 * n, tl.full((BLOCK,), float("nan"), tl.float32), mask=m)
    if FLAG:
        tl.store(o + 4 * n, tl.where(m, 1.5, 0.0) + True, mask=m)
    else:
        tl.store(o + 4 * n, tl.zeros((BLOCK,), tl.float32) - 1, mask=m)
    tl.store(o + 5 * n, tl.maximum(x, float("-inf")), mask=m)   # maxnum: NaN ignored
    tl.store(o + 6 * n, 1e30 * 1e10 + x * 0, mask=m)             # constexpr folding in Python


def test_literals_full_zeros_where() -> None:
    for n in SIZES:
        x = rand_float(np.float32, n)
        x[: min(n, 2)] = np.nan
        o = np.zeros((7, n), np.float32)
        literals_kernel[grid_for(n, 128)](x, o, 3.25, n, BLOCK=128)
        np.testing.assert_array_equal(o[0], np.where(x > 0, x, np.inf))
        np.testing.assert_array_equal(o[1], np.where(np.isnan(x), -np.inf, x * 2))
        np.testing.assert_array_equal(o[2], np.full(n, 3.25, np.float32))
        assert np.isnan(o[3]).all()
        np.testing.assert_array_equal(o[4], np.full(n, 2.5, np.float32))
        np.testing.assert_array_equal(o[5], np.where(np.isnan(x), -np.inf, x))
        want6 = np.float32(np.inf) + x * 0   # 1e40 overflows fp32: inf (NaN where x is NaN)
        np.testing.assert_array_equal(o[6], want6)
    n = 100
    x = rand_float(np.float32, n)
    o = np.zeros((7, n), np.float32)
    literals_kernel[(1,)](x, o, 1.0, n, BLOCK=128, SCALE=-3, FLAG=False)
    np.testing.assert_array_equal(o[1], x * -3)
    np.testing.assert_array_equal(o[4], np.full(n, -1.0, np.float32))
    literals_kernel[(1,)](x, o, 1.0, n, 128, 0.5, False)   # constexprs positionally
    np.testing.assert_array_equal(o[1], x * 0.5)


@tilec.kernel
def full_kernel(o_ptr, i_ptr, b_ptr, v, k, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.full((BLOCK,), v, tl.float16))
    tl.store(i_ptr + offs, tl.full((BLOCK,), k, tl.int8) + tl.zeros((BLOCK,), tl.int8))
    tl.store(b_ptr + offs, tl.full((BLOCK,), k, tl.int1) | tl.zeros((BLOCK,), tl.int1))


def test_full_runtime_values_and_types() -> None:
    o, i, b = np.zeros(64, np.float16), np.zeros(64, np.int8), np.zeros(64, np.bool_)
    full_kernel[(1,)](o, i, b, 0.1, 300, BLOCK=64)
    assert (o == np.float16(0.1)).all()
    assert (i == np.int8(300 - 256)).all()
    assert b.all()
    full_kernel[(1,)](o, i, b, -2.0, 0, BLOCK=64)
    assert (o == -2).all() and (i == 0).all() and not b.any()


# ---------------------------------------------------------------- scalars and pointers

@tilec.kernel
def scalar_kernel(x_ptr, o_ptr, i, n, BLOCK: tl.constexpr):
    first = tl.load(x_ptr)                  # scalar pointer
    at_i = tl.load(x_ptr + i)               # scalar pointer + runtime int
    last = tl.load(x_ptr + n - 1)
    tl.store(o_ptr, first + at_i)           # scalar store
    tl.store(o_ptr + 1, last)
    p = x_ptr + 2
    p += 1
    tl.store(o_ptr + 2, tl.load(p - 1))     # pointer - int
    q = o_ptr + tl.arange(0, BLOCK) + 3     # scalar pointer + tile
    tl.store(q, tl.load(x_ptr + tl.arange(0, BLOCK)) * 2)
    tl.store(o_ptr + 2 + BLOCK + 1, tl.load(x_ptr + 1, mask=i > 0, other=-1.0))
    tl.store(o_ptr + 2 + BLOCK + 2, 7, mask=n > 1000)   # masked-off scalar store
    r = 1 + x_ptr
    tl.store(o_ptr + BLOCK + 5 + tl.program_id(0), tl.load(r))


def test_scalar_loads_and_stores() -> None:
    x = rand_float(np.float64, 50)
    o = np.zeros(16 + 6, np.float64)
    scalar_kernel[(1,)](x, o, 5, 50, BLOCK=16)
    assert o[0] == x[0] + x[5] and o[1] == x[49] and o[2] == x[2]
    np.testing.assert_array_equal(o[3:19], x[:16] * 2)
    assert o[19] == x[1] and o[20] == 0 and o[21] == x[1]
    scalar_kernel[(1,)](x, o, 0, 50, BLOCK=16)
    assert o[0] == 2 * x[0] and o[19] == -1.0


@tilec.kernel
def program_ids_kernel(o_ptr, BLOCK: tl.constexpr):
    p0, p1, p2 = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    n0, n1, n2 = tl.num_programs(0), tl.num_programs(1), tl.num_programs(2)
    lin = (p2 * n1 + p1) * n0 + p0
    offs = lin * 8 + tl.arange(0, 8)
    vals = tl.where(tl.arange(0, 8) == 0, p0, tl.where(tl.arange(0, 8) == 1, p1,
                    tl.where(tl.arange(0, 8) == 2, p2, tl.where(tl.arange(0, 8) == 3, n0,
                             tl.where(tl.arange(0, 8) == 4, n1, n2)))))
    tl.store(o_ptr + offs, vals, mask=tl.arange(0, 8) < 6)


@pytest.mark.parametrize("grid", [(5,), (3, 4), (2, 3, 5), 7])
def test_program_id_and_num_programs(grid: Any) -> None:
    g = (grid,) if isinstance(grid, int) else grid
    g3 = tuple(g) + (1,) * (3 - len(g))
    total = math.prod(g3)
    o = np.full((total, 8), -1, np.int32)
    program_ids_kernel[grid](o, BLOCK=8)
    want = np.full((total, 8), -1, np.int32)
    for p2 in range(g3[2]):
        for p1 in range(g3[1]):
            for p0 in range(g3[0]):
                want[(p2 * g3[1] + p1) * g3[0] + p0, :6] = [p0, p1, p2, *g3]
    np.testing.assert_array_equal(o, want)


def test_grid_lambda_sees_arguments() -> None:
    seen = {}

    def grid(meta: dict[str, Any]) -> tuple[int]:
        seen.update(meta)
        return (tilec.cdiv(meta["n"], meta["BLOCK"]),)

    n = 1000
    x = rand_float(np.float32, n)
    o = np.zeros((7, n), np.float32)
    literals_kernel[grid](x, o, 3.0, n, BLOCK=128)
    assert seen["n"] == n and seen["BLOCK"] == 128 and seen["SCALE"] == 2
    np.testing.assert_array_equal(o[2], np.full(n, 3.0, np.float32))


# ---------------------------------------------------------------- 2-D tiles

@tilec.kernel
def copy2d_kernel(a_ptr, o_ptr, M, N, sam, san, som, son, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    a = tl.load(a_ptr + rows[:, None] * sam + cols[None, :] * san, mask=mask, other=0.0)
    tl.store(o_ptr + rows[:, None] * som + cols[None, :] * son, a * 2 + 1, mask=mask)


@pytest.mark.parametrize("shape", [(1, 1), (7, 5), (33, 17), (64, 32), (100, 3)])
def test_2d_strided_view(shape: tuple[int, int]) -> None:
    big = rand_float(np.float32, (2 * shape[0] + 1) * (shape[1] + 1)).reshape(
        2 * shape[0] + 1, shape[1] + 1)
    a = big[::2, 1:][: shape[0]]                      # a strided, offset view
    assert a.shape == shape and (not a.flags.c_contiguous or shape == (1, 1))
    o = np.zeros(shape, np.float32)
    sa = [s // a.itemsize for s in a.strides]
    so = [s // o.itemsize for s in o.strides]
    for bm, bn in ((16, 8), (4, 32)):
        o[:] = 0
        grid = (tilec.cdiv(shape[0], bm), tilec.cdiv(shape[1], bn))
        copy2d_kernel[grid](a, o, shape[0], shape[1], *sa, *so, BM=bm, BN=bn)
        np.testing.assert_array_equal(o, a * 2 + 1)
    # transpose through strides: read a's columns as rows
    ot = np.zeros(shape[::-1], np.float32)
    grid = (tilec.cdiv(shape[1], 16), tilec.cdiv(shape[0], 8))
    copy2d_kernel[grid](a, ot, shape[1], shape[0], sa[1], sa[0], shape[0], 1, BM=16, BN=8)
    np.testing.assert_array_equal(ot, a.T * 2 + 1)


@tilec.kernel
def outer_kernel(x_ptr, y_ptr, s_ptr, p_ptr, c_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    i = tl.arange(0, BM)
    j = tl.arange(0, BN)
    x = tl.load(x_ptr + i, mask=i < M, other=0)
    y = tl.load(y_ptr + j, mask=j < N, other=0)
    offs = i[:, None] * N + j[None, :]
    m = (i[:, None] < M) & (j[None, :] < N)
    tl.store(s_ptr + offs, x[:, None] + y[None, :], mask=m)
    tl.store(p_ptr + offs, x[:, None] * y, mask=m)              # rank-2 with rank-1
    col = tl.where(j[None, :] == 0, x[:, None], -1)             # broadcast in where
    tl.store(c_ptr + offs, col + tl.zeros((BM, BN), tl.int32), mask=m)


@pytest.mark.parametrize("M,N", [(1, 1), (5, 7), (16, 16), (13, 32)])
def test_2d_broadcast_outer(M: int, N: int) -> None:
    x = rand_int(np.int32, M, -1000, 1000)
    y = rand_int(np.int32, N, -1000, 1000)
    s, p, c = (np.zeros((M, N), np.int32) for _ in range(3))
    outer_kernel[(1,)](x, y, s, p, c, M, N, BM=16, BN=32)
    np.testing.assert_array_equal(s, x[:, None] + y[None, :])
    np.testing.assert_array_equal(p, x[:, None] * y[None, :])
    np.testing.assert_array_equal(c, np.where(np.arange(N)[None, :] == 0, x[:, None], -1))


@tilec.kernel
def row_bias_kernel(a_ptr, b_ptr, o_ptr, M, N, stride, BN: tl.constexpr):
    row = tl.program_id(0)
    for start in range(0, N, BN):
        cols = start + tl.arange(0, BN)
        m = cols < N
        v = tl.load(a_ptr + row * stride + cols, mask=m) + tl.load(b_ptr + row)
        tl.store(o_ptr + row * N + cols, v, mask=m)


def test_2d_grid_row_programs() -> None:
    M, N = 37, 1001
    a = rand_float(np.float64, M * (N + 3)).reshape(M, N + 3)[:, :N]
    b = rand_float(np.float64, M)
    o = np.zeros((M, N), np.float64)
    row_bias_kernel[(M,)](a, b, o, M, N, N + 3, BN=256)
    np.testing.assert_array_equal(o, a + b[:, None])


# ---------------------------------------------------------------- torch tensors

def test_torch_tensors_and_views() -> None:
    M, N = 40, 30
    big = torch.randn(2 * M, N + 2, dtype=torch.float32)
    a = big[::2, 2:]                                     # non-contiguous view, offset
    assert not a.is_contiguous()
    o = torch.zeros(N, M, dtype=torch.float32).t()      # a transposed output
    grid = (tilec.cdiv(M, 16), tilec.cdiv(N, 16))
    copy2d_kernel[grid](a, o, M, N, *a.stride(), *o.stride(), BM=16, BN=16)
    torch.testing.assert_close(o, a * 2 + 1, rtol=0, atol=0)
    # 1-D views of a bigger tensor, bf16 and fp16 through the same kernel
    for dt in (torch.float16, torch.bfloat16, torch.float64):
        x = torch.randn(300, dtype=dt)[10:]
        y = torch.zeros(290, dtype=dt)
        o2 = torch.zeros(8, 290, dtype=dt)
        literals_kernel[grid_for(290, 128)](x, o2, 0.5, 290, BLOCK=128)
        torch.testing.assert_close(o2[1], x * 2, rtol=0, atol=0)
        del y


# ---------------------------------------------------------------- loops

@tilec.kernel
def chunk_sum_kernel(x_ptr, o_ptr, cnt_ptr, n, chunk, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    base = pid * chunk
    acc = tl.zeros((BLOCK,), tl.float64)       # loop-carried tile
    count = 0                                   # loop-carried scalar (from a literal)
    for start in range(0, chunk, BLOCK):        # runtime bound
        offs = base + start + tl.arange(0, BLOCK)
        m = (offs < n) & (start + tl.arange(0, BLOCK) < chunk)
        acc += tl.load(x_ptr + offs, mask=m, other=0.0)
        count += 1
    total = acc
    for k in range(4):                          # constexpr bound, nothing carried but total
        total = total * 1.0
    tl.store(o_ptr + pid * BLOCK + tl.arange(0, BLOCK), total)
    tl.store(cnt_ptr + pid, count)


@pytest.mark.parametrize("n,chunk", [(1, 1), (1000, 100), (4099, 1024), (4099, 333), (0, 7)])
def test_loop_per_program_sum(n: int, chunk: int) -> None:
    x = rand_float(np.float64, max(n, 1))
    programs = max(tilec.cdiv(n, chunk), 1)
    o = np.zeros((programs, 64), np.float64)
    cnt = np.zeros(programs, np.int32)
    chunk_sum_kernel[(programs,)](x, o, cnt, n, chunk, BLOCK=64)
    sums = o.sum(axis=1)
    for p in range(programs):
        np.testing.assert_allclose(sums[p], x[p * chunk: min(n, (p + 1) * chunk)].sum(),
                                   rtol=1e-12, atol=1e-12)
    assert (cnt == tilec.cdiv(chunk, 64)).all()


@tilec.kernel
def range_kernel(o_ptr, a, b, START: tl.constexpr, STOP: tl.constexpr, STEP: tl.constexpr,
                 RUNTIME: tl.constexpr):
    k = 0
    if RUNTIME:
        for i in range(a, b, STEP):
            tl.store(o_ptr + 1 + k, i)
            k += 1
    else:
        for i in range(START, STOP, STEP):
            tl.store(o_ptr + 1 + k, i)
            k += 1
    tl.store(o_ptr, k)


@pytest.mark.parametrize("start,stop,step", [(0, 10, 1), (3, 17, 4), (10, 0, -1), (10, -3, -3),
                                             (5, 5, 1), (5, 5, -2), (0, 5, -1), (7, 0, -7),
                                             (-4, 9, 5)])
def test_range_bounds_and_negative_steps(start: int, stop: int, step: int) -> None:
    want = list(range(start, stop, step))
    for runtime in (False, True):
        o = np.full(40, -99, np.int32)
        range_kernel[(1,)](o, start, stop, START=start, STOP=stop, STEP=step, RUNTIME=runtime)
        assert o[0] == len(want) and o[1:1 + len(want)].tolist() == want, (runtime, o[:12])


@tilec.kernel
def loop_types_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    best = tl.full((BLOCK,), float("-inf"), tl.float32)
    total = 0.0
    idx = tl.zeros((BLOCK,), tl.int32) - 1
    big = n.to(tl.int64) * 0
    for i in range(0, n):
        v = tl.load(x_ptr + i * BLOCK + offs)
        idx = tl.where(v > best, i, idx)
        best = tl.maximum(best, v)
        total = total + tl.load(x_ptr + i * BLOCK)
        big += i
    tl.store(o_ptr + offs, best)
    tl.store(o_ptr + BLOCK + offs, idx.to(tl.float32))
    tl.store(o_ptr + 2 * BLOCK, total)
    tl.store(o_ptr + 2 * BLOCK + 1, big.to(tl.float32))


def test_loop_carried_tiles_and_scalars() -> None:
    n, block = 23, 32
    x = rand_float(np.float32, n * block).reshape(n, block)
    o = np.zeros(3 * block, np.float32)
    loop_types_kernel[(1,)](x, o, n, BLOCK=block)
    np.testing.assert_array_equal(o[:block], x.max(axis=0))
    np.testing.assert_array_equal(o[block:2 * block], x.argmax(axis=0).astype(np.float32))
    np.testing.assert_allclose(o[2 * block], x[:, 0].sum(), rtol=1e-5)
    assert o[2 * block + 1] == sum(range(n))


# ---------------------------------------------------------------- if / else

@tilec.kernel
def if_kernel(x_ptr, o_ptr, t, u, MODE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if t > 0:                          # runtime condition, results of several types
        y = x * 2
        s = 1.0
        w = x
    else:
        y = x - 1
        s = 2.5
        w = x
    if t > 10:
        if u == 0:                     # nested
            z = y + 100
        elif u == 1:
            z = y + 200
        else:
            z = y + 300
    else:
        z = y
    if MODE == 1:                      # static if: only one branch is compiled
        z = z + 0.5
    elif MODE == 2:
        z = z + undefined_name_never_compiled  # noqa: F821
    r = z if t != 3 else -z            # conditional expression on a runtime scalar
    tl.store(o_ptr + offs, r + s)
    if not (t < 0 or u > 5):
        tl.store(o_ptr + BLOCK + offs, w)
    tl.store(o_ptr + 2 * BLOCK, s)


@pytest.mark.parametrize("t,u", [(1, 0), (-5, 0), (11, 0), (11, 1), (11, 7), (3, 0), (0, 9)])
def test_if_else(t: int, u: int) -> None:
    block = 16
    x = rand_float(np.float32, block)
    for mode in (0, 1):
        o = np.zeros(2 * block + 1, np.float32)
        if_kernel[(1,)](x, o, t, u, MODE=mode, BLOCK=block)
        y = x * 2 if t > 0 else x - 1
        s = 1 if t > 0 else 2.5
        z = (y + {0: 100, 1: 200}.get(u, 300)) if t > 10 else y
        if mode == 1:
            z = z + np.float32(0.5)
        r = z if t != 3 else -z
        np.testing.assert_allclose(o[:block], r + np.float32(s), rtol=1e-6)
        np.testing.assert_array_equal(o[block:2 * block], x if not (t < 0 or u > 5) else 0)
        assert o[2 * block] == s


# ---------------------------------------------------------------- 64-bit offsets

@tilec.kernel
def far_kernel(x_ptr, o_ptr, base, stride, BLOCK: tl.constexpr):
    offs = base + tl.arange(0, BLOCK)                   # base is an int64 argument
    v = tl.load(x_ptr + offs)
    tl.store(o_ptr + tl.arange(0, BLOCK), v + 1)
    row = tl.program_id(0).to(tl.int64) * stride        # offsets computed in int64
    tl.store(x_ptr + row + BLOCK + tl.arange(0, BLOCK), v * 3)


def test_int64_offsets_beyond_2gb() -> None:
    # 2 GiB of address space, but only the pages touched below take memory.
    size = 2 ** 31 + 4096
    flags = mmap.MAP_PRIVATE | getattr(mmap, "MAP_ANONYMOUS", 0x20) | \
        getattr(mmap, "MAP_NORESERVE", 0)
    mem = mmap.mmap(-1, size, flags=flags)
    x = np.frombuffer(mem, np.int8)
    base = 2 ** 31 + 100                               # past what an int32 offset reaches
    x[base:base + 64] = np.arange(64, dtype=np.int8)
    o = np.zeros(64, np.int8)
    far_kernel[(3,)](x, o, base, base // 2, BLOCK=64)
    np.testing.assert_array_equal(o, np.arange(64) + 1)
    for pid in range(3):
        start = pid * (base // 2) + 64
        np.testing.assert_array_equal(x[start:start + 64], np.arange(64, dtype=np.int8) * 3)


@tilec.kernel
def half_scalars_kernel(o_ptr, a: "fp16", b: "bf16", c, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.where(offs == 0, a.to(tl.float32),
                                    tl.where(offs == 1, b.to(tl.float32), c + a)))


@pytest.mark.parametrize("a,b", [(1.5, 3.140625), (0.1, 0.1), (65504.0, 1e38),
                                 (float("inf"), float("-inf")), (-2.0 ** -24, -3e38)])
def test_fp16_bf16_scalar_arguments(a: float, b: float) -> None:
    o = np.zeros(4, np.float32)
    half_scalars_kernel[(1,)](o, a, b, 1.0, BLOCK=4)
    assert o[0] == np.float32(np.float16(a))
    assert o[1] == torch.tensor(b).bfloat16().float().item()
    assert o[2] == np.float32(np.float16(a)) + 1


# ---------------------------------------------------------------- augmented assignment, mixed types

@tilec.kernel
def augassign_kernel(x_ptr, o_ptr, f_ptr, k, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    a = x
    a += k
    b = x
    b -= 3
    c = x
    c *= -2
    d = x
    d //= 3
    e = x
    e %= 5
    f = x
    f &= 6
    f |= 1
    f ^= 3
    g = x
    g <<= 2
    h = x
    h >>= 1
    o = o_ptr + offs
    tl.store(o, a)
    tl.store(o + BLOCK, b)
    tl.store(o + 2 * BLOCK, c)
    tl.store(o + 3 * BLOCK, d)
    tl.store(o + 4 * BLOCK, e)
    tl.store(o + 5 * BLOCK, f)
    tl.store(o + 6 * BLOCK, g)
    tl.store(o + 7 * BLOCK, h)
    tl.store(o + 8 * BLOCK, +x)
    y = x.to(tl.float32)
    y /= 4
    y += 0.5
    y -= x
    y *= 2.0
    fo = f_ptr + offs
    tl.store(fo, y)
    tl.store(fo + BLOCK, (x < 2.5) | (x >= 7.0))          # int tile vs float literals
    tl.store(fo + 2 * BLOCK, x.to(tl.float16) < y)          # fp16 vs fp32 tiles
    tl.store(fo + 3 * BLOCK, tl.where(x > k, x, y))         # int and float tiles: fp32


def test_augmented_assignment_and_mixed_types() -> None:
    block = 32
    x = np.arange(-16, 16, dtype=np.int32)
    o = np.zeros((9, block), np.int32)
    f = np.zeros((4, block), np.float32)
    augassign_kernel[(1,)](x, o, f, 3, BLOCK=block)
    np.testing.assert_array_equal(o, [x + 3, x - 3, x * -2, c_div(x, np.int32(3)),
                                      np.fmod(x, 5), ((x & 6) | 1) ^ 3, x << 2, x >> 1, x])
    y = ((x / 4 + 0.5) - x) * 2
    np.testing.assert_array_equal(f[0], y.astype(np.float32))
    np.testing.assert_array_equal(f[1], ((x < 2.5) | (x >= 7)).astype(np.float32))
    np.testing.assert_array_equal(f[2], (x.astype(np.float16) < y).astype(np.float32))
    np.testing.assert_array_equal(f[3], np.where(x > 3, x, y).astype(np.float32))


@tilec.kernel
def nested_loops_kernel(a_ptr, o_ptr, M, N, stride, step, BN: tl.constexpr):
    total = tl.zeros((BN,), tl.float64)
    rows = 0
    for i in range(0, M, step):                          # runtime step
        acc = tl.zeros((BN,), tl.float64)
        for j in range(0, N, BN):
            cols = j + tl.arange(0, BN)
            acc += tl.load(a_ptr + i * stride + cols, mask=cols < N, other=0.0)
        if i % 2 == 0:
            total += acc
        else:
            total -= acc
        rows += 1
    tl.store(o_ptr + tl.arange(0, BN), total)
    tl.store(o_ptr + BN, rows.to(tl.float64))


@pytest.mark.parametrize("step", [1, 2, 5])
def test_nested_loops_runtime_step(step: int) -> None:
    M, N, BN = 13, 100, 32
    a = rand_float(np.float64, M * 128).reshape(M, 128)
    o = np.zeros(BN + 1, np.float64)
    nested_loops_kernel[(1,)](a, o, M, N, 128, step, BN=BN)
    want = sum((1 if i % 2 == 0 else -1) * a[i, :N].sum() for i in range(0, M, step))
    np.testing.assert_allclose(o[:BN].sum(), want, rtol=1e-12, atol=1e-12)
    assert o[BN] == len(range(0, M, step))


# ---------------------------------------------------------------- pointer arithmetic patterns

@tilec.kernel
def offsets_kernel(x_ptr, o_ptr, a, b, n, E: tl.constexpr, B: tl.constexpr):
    p = tl.program_id(0)
    i = tl.arange(0, B)
    if E == "p*B+i":
        offs = p * B + i
    elif E == "a*p+i":
        offs = a * p + i
    elif E == "2*(p*B+i)":
        offs = (p * B + i) * 2
    elif E == "i//2":
        offs = i // 2
    elif E == "i%16+a":
        offs = i % 16 + a
    elif E == "split":
        offs = (i // 4) * 4 + i % 4 + b
    elif E == "i*a":
        offs = i * a
    elif E == "(p*B+i)%a":
        offs = (p * B + i) % a
    elif E == "64-i":
        offs = 64 - i
    else:
        offs = tl.where(i < 8, i, i + a)
    m = (offs >= 0) & (offs < n)
    tl.store(o_ptr + p * B + i, tl.load(x_ptr + offs, mask=m, other=-1.0))
    tl.store(x_ptr + n + 64 + offs, tl.load(x_ptr + offs, mask=m) + 1000.0, mask=m)


OFFSET_PATTERNS = {
    "p*B+i": lambda p, i, a, b: p * 64 + i, "a*p+i": lambda p, i, a, b: a * p + i,
    "2*(p*B+i)": lambda p, i, a, b: (p * 64 + i) * 2, "i//2": lambda p, i, a, b: i // 2,
    "i%16+a": lambda p, i, a, b: i % 16 + a, "split": lambda p, i, a, b: i + b,
    "i*a": lambda p, i, a, b: i * a, "(p*B+i)%a": lambda p, i, a, b: (p * 64 + i) % a,
    "64-i": lambda p, i, a, b: 64 - i, "where": lambda p, i, a, b: np.where(i < 8, i, i + a),
}


@pytest.mark.parametrize("expr", list(OFFSET_PATTERNS))
def test_pointer_offset_patterns(expr: str) -> None:
    """Loads and stores through offsets that are contiguous, strided, repeated or
    reversed, with pointers and ints that are or are not 16-aligned."""
    n = 3000
    for a, b, shift in ((16, 32, 0), (17, 5, 1)):
        buf = np.zeros(3 * n + 200, np.float32)
        x = buf[shift:]                         # shift 1: a pointer that is not 16-aligned
        x[:n] = np.arange(n)
        o = np.zeros(4 * 64, np.float32)
        offsets_kernel[(4,)](x, o, a, b, n, E=expr, B=64)
        offs = np.concatenate([OFFSET_PATTERNS[expr](p, np.arange(64), a, b) for p in range(4)])
        ok = (offs >= 0) & (offs < n)
        np.testing.assert_array_equal(o, np.where(ok, offs, -1))
        stored = np.zeros(n, np.float32)
        stored[offs[ok]] = offs[ok] + 1000
        np.testing.assert_array_equal(x[n + 64:2 * n + 64], stored)


def test_every_builtin_has_a_rule() -> None:
    """Each tl.* builtin has a code generation rule and each rule a builtin;
    tl.range / tl.static_range are the loops' (control_flow.py)."""
    from tilec.frontend.calls import BUILTIN_RULES
    assert set(BUILTIN_RULES) == tl.BUILTINS - {"range", "static_range"}
