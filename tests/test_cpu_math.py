"""Accuracy of the CPU target's vectorized exp/exp2/log/log2 (passes/cpu/math.py).

Kernels go through the frontend (`@tilec.kernel` with tl.exp & co.) and the
CPU target; results are compared with NumPy in float64 over a dense sweep plus
edge cases (+-0, tiny, denormals, overflow/underflow limits, +-inf, nan).  The
error is counted in ulps of the correctly rounded float32 result; the maximum
is printed (`pytest -s`) and bounded.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import tilec
import tilec.language as tl

BLOCK = 1024


@tilec.kernel
def exp_kernel(y_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.exp(tl.load(x_ptr + offs, mask=m)), mask=m)


@tilec.kernel
def exp2_kernel(y_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.exp2(tl.load(x_ptr + offs, mask=m)), mask=m)


@tilec.kernel
def log_kernel(y_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.log(tl.load(x_ptr + offs, mask=m)), mask=m)


@tilec.kernel
def log2_kernel(y_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.log2(tl.load(x_ptr + offs, mask=m)), mask=m)


KERNELS: dict[str, tuple[Any, Callable[[np.ndarray], np.ndarray]]] = {
    "exp": (exp_kernel, np.exp), "exp2": (exp2_kernel, np.exp2),
    "log": (log_kernel, np.log), "log2": (log2_kernel, np.log2),
}

EDGES = np.array([0.0, -0.0, 1e-30, -1e-30, 1e-40, -1e-40, 1.4e-45, -1.4e-45, 1.0, -1.0,
                  88.7, 88.72, 88.7228, 88.73, 89.0, -87.3, -88.7, -103.9, -104.0, -110.0,
                  100.0, -100.0, 127.99, 128.0, -126.0, -149.0, -149.5, -150.0, -151.0,
                  3.4e38, -3.4e38, np.inf, -np.inf, np.nan, 2.0, 0.5, 1024.0,
                  1.1754944e-38, 1.1754942e-38], dtype=np.float32)


def sweep(name: str) -> np.ndarray:
    rng = np.random.default_rng(1)
    if name.startswith("exp"):
        lo, hi = (-104.0, 89.0) if name == "exp" else (-151.0, 128.5)
        dense = np.linspace(lo, hi, 1 << 20, dtype=np.float32)
        near0 = rng.uniform(-1, 1, 1 << 16).astype(np.float32)
    else:
        # every binade, denormals included, plus dense around 1
        dense = np.exp2(rng.uniform(-149, 128, 1 << 20)).astype(np.float32)
        near0 = rng.uniform(0.5, 2.0, 1 << 16).astype(np.float32)
    return np.concatenate([EDGES, dense, near0, -dense[: 1 << 12]])


def run(kernel: Any, x: np.ndarray) -> np.ndarray:
    n = x.size
    pad = (-n) % BLOCK
    xp = np.concatenate([x, np.zeros(pad, x.dtype)])
    y = np.full_like(xp, np.nan)
    kernel[(xp.size // BLOCK,)](y, xp, n, BLOCK=BLOCK)
    return y[:n]


def ulp_errors(y: np.ndarray, ref64: np.ndarray, dtype: Any) -> np.ndarray:
    """|y - ref| in ulps of the correctly rounded result (specials must match exactly)."""
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = ref64.astype(dtype)
    special = ~np.isfinite(rounded)
    np.testing.assert_array_equal(y[special], rounded[special])
    with np.errstate(invalid="ignore"):
        ok = ~special & np.isfinite(y)
    assert ok.sum() == (~special).sum(), "finite reference but non-finite result"
    err = np.abs(y[ok].astype(np.float64) - ref64[ok])
    return err / np.spacing(np.abs(rounded[ok])).astype(np.float64)


@pytest.mark.parametrize("name,bound", [("exp", 2.0), ("exp2", 2.0), ("log", 2.0),
                                        ("log2", 2.0)])
def test_f32_accuracy(name: str, bound: float) -> None:
    kernel, ref_fn = KERNELS[name]
    x = sweep(name)
    y = run(kernel, x)
    with np.errstate(all="ignore"):
        ref = ref_fn(x.astype(np.float64))
    ulps = ulp_errors(y, ref, np.float32)
    worst = int(np.argmax(ulps))
    print(f"\n{name} f32: max {ulps.max():.3f} ulp, mean {ulps.mean():.4f} ulp "
          f"over {x.size} inputs")
    assert ulps.max() <= bound, f"{name}: {ulps[worst]} ulp"


def test_exp_edges_exact() -> None:
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 89.0, 1000.0, -1000.0, -110.0],
                 np.float32)
    y = run(exp_kernel, x)
    np.testing.assert_array_equal(y, [1, 1, np.inf, 0, np.nan, np.inf, np.inf, 0, 0])
    # denormal results are produced (not flushed to zero)
    d = run(exp_kernel, np.array([-100.0, -103.0], np.float32))
    assert 0 < d[0] < 1.2e-38 and 0 < d[1] < 1.2e-38
    lg = run(log_kernel, np.array([0.0, -0.0, -1.0, np.inf, -np.inf, np.nan, 1.0, 1e-45],
                                  np.float32))
    np.testing.assert_array_equal(lg[:7], [-np.inf, -np.inf, np.nan, np.inf, np.nan, np.nan, 0])
    np.testing.assert_allclose(lg[7], np.log(np.float64(np.float32(1e-45))), rtol=1e-6)
    powers = np.exp2(np.arange(-149, 128)).astype(np.float32)
    np.testing.assert_array_equal(run(log2_kernel, powers), np.arange(-149, 128))
    np.testing.assert_array_equal(run(exp2_kernel, np.arange(-149, 128).astype(np.float32)),
                                  powers)


@pytest.mark.parametrize("name", ["exp", "exp2", "log", "log2"])
def test_f16_via_f32(name: str) -> None:
    kernel, ref_fn = KERNELS[name]
    if name.startswith("exp"):
        x = np.linspace(-20, 11, 20000).astype(np.float16)
    else:
        x = np.exp2(np.linspace(-24, 15.9, 20000)).astype(np.float16)
    x = np.concatenate([x, np.array([0, np.inf, -np.inf, np.nan], np.float16)])
    y = run(kernel, x)
    with np.errstate(all="ignore"):
        ref = ref_fn(x.astype(np.float64))
    ulps = ulp_errors(y, ref, np.float16)
    print(f"\n{name} f16: max {ulps.max():.3f} ulp")
    assert ulps.max() <= 1.0


def test_f64_still_libm() -> None:
    x = np.linspace(-700, 700, 4096)
    y = run(exp_kernel, x)
    np.testing.assert_allclose(y, np.exp(x), rtol=1e-15)


def test_no_libm_calls_for_f32_vectors() -> None:
    ck = exp_kernel.compile(target="cpu", signature="*fp32:16,*fp32:16,i32",
                            constexprs={"BLOCK": BLOCK})
    assert "math.exp" not in ck.asm["cpu"]
    assert "expf" not in ck.asm["asm"]
    assert "zmm" in ck.asm["asm"] or "ymm" in ck.asm["asm"]


# ---------------------------------------------------------------- staged row kernels
# 1-D kernels with reductions are strip-mined stage by stage (passes/cpu/rows.py).

@tilec.kernel
def softmax_rows(y_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * n_cols + offs, num / tl.sum(num, axis=0), mask=mask)


@tilec.kernel
def store_then_reduce(y_ptr, z_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    # y may alias x: the second stage must see x as loaded before the store.
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0)
    tl.store(y_ptr + row * n_cols + offs, x * 2.0, mask=mask)
    big = tl.exp(x) > 1.0           # a boolean crossing stages (buffered as bytes)
    s = tl.sum(x, axis=0)
    tl.store(z_ptr + row * n_cols + offs, tl.where(big, x - s, 0.0), mask=mask)


@tilec.kernel
def int_max_rows(out_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-2147483648)
    tl.store(out_ptr + row * n_cols + offs, x - tl.max(x, axis=0), mask=mask)


def softmax_ref(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        e = np.exp(x64 - x64.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("block,n", [(1024, 1024), (1024, 1000), (256, 65), (4096, 4096)])
def test_staged_softmax(block: int, n: int) -> None:
    rng = np.random.default_rng(block + n)
    x = (rng.standard_normal((9, n)) * 10).astype(np.float32)
    x[3, 5] = np.inf                    # a row with +inf -> nan (as torch/NumPy)
    x[4, :] = -np.inf                   # all -inf -> nan
    x[5, 7] = np.nan
    x[6, :] = 1e-40                     # denormals: uniform
    y = np.full_like(x, 7.0)
    softmax_rows[(x.shape[0],)](y, x, n, BLOCK=block)
    np.testing.assert_allclose(y, softmax_ref(x).astype(np.float32), rtol=2e-6, atol=1e-12)
    inplace = x.copy()
    softmax_rows[(x.shape[0],)](inplace, inplace, n, BLOCK=block)
    np.testing.assert_array_equal(inplace, y)
    ck = softmax_rows.compile(target="cpu", signature="*fp32:16,*fp32:16,i32",
                              constexprs={"BLOCK": block})
    assert "llvm.alloca" in ck.asm["cpu"] and "scf.for" in ck.asm["cpu"]


def test_stores_non_temporal_only_in_elementwise_kernels() -> None:
    # Row kernels store plainly (non-temporal stores measured slower there, and
    # at 4-byte alignment they become 8-byte movnti's); purely elementwise
    # strip-mined kernels stream their output with non-temporal hints.
    rows = softmax_rows.compile(target="cpu", signature="*fp32:16,*fp32:16,i32",
                                constexprs={"BLOCK": 1024})
    assert "nontemporal" not in rows.asm["cpu"] and "movnt" not in rows.asm["asm"]
    elementwise = exp_kernel.compile(target="cpu", signature="*fp32:16,*fp32:16,i32",
                                     constexprs={"BLOCK": BLOCK})
    assert "nontemporal" in elementwise.asm["cpu"] and "movnt" in elementwise.asm["asm"]


def test_staged_store_before_reload_aliasing() -> None:
    rng = np.random.default_rng(3)
    n, block = 300, 512
    x = rng.standard_normal((5, n)).astype(np.float32)
    orig = x.copy()
    z = np.empty_like(x)
    store_then_reduce[(5,)](x, z, x, n, BLOCK=block)   # y aliases x
    np.testing.assert_array_equal(x, orig * 2)
    s = orig.sum(axis=1, keepdims=True, dtype=np.float32)
    np.testing.assert_allclose(z, np.where(np.exp(orig) > 1, orig - s, 0), rtol=1e-5, atol=1e-5)


def test_staged_int_max_identity() -> None:
    rng = np.random.default_rng(4)
    n = 200
    x = rng.integers(-2 ** 31, -2 ** 31 + 1000, (6, n)).astype(np.int32)
    out = np.empty_like(x)
    int_max_rows[(6,)](out, x, n, BLOCK=256)
    np.testing.assert_array_equal(out, x - x.max(axis=1, keepdims=True))
