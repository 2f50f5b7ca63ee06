"""Reductions and scans as Triton kernels write them: tl.sum/max/min/argmax/
argmin over each axis of 2-D tiles (keep_dims), tl.reduce with a @jit combine
function, tl.cumsum/cumprod (reverse) and tl.associative_scan, per dtype,
against NumPy."""
from __future__ import annotations

import numpy as np
import pytest

import tilec as triton
import tilec.language as tl
from tests.compat.sampling import sample


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def reduce2d(x_ptr, o_ptr, OP: tl.constexpr, AXIS: tl.constexpr, M: tl.constexpr,
             N: tl.constexpr):
    r = tl.arange(0, M)[:, None]
    c = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + r * N + c)
    if OP == "sum":
        y = tl.sum(x, axis=AXIS, keep_dims=True)
    elif OP == "max":
        y = tl.max(x, axis=AXIS, keep_dims=True)
    elif OP == "min":
        y = tl.min(x, axis=AXIS, keep_dims=True)
    elif OP == "argmax":
        y = tl.argmax(x, axis=AXIS, keep_dims=True)
    elif OP == "argmin":
        y = tl.argmin(x, axis=AXIS, keep_dims=True)
    else:
        y = tl.reduce(x, AXIS, _add, keep_dims=True)
    if AXIS == 0:
        tl.store(o_ptr + c, y)
    else:
        tl.store(o_ptr + r, y)


NP = {"sum": np.sum, "max": np.max, "min": np.min, "argmax": np.argmax, "argmin": np.argmin,
      "reduce": np.sum}
CASES = [(op, axis, dt) for op in NP for axis in (0, 1)
         for dt in ("int32", "int64", "float32", "float64")]


@pytest.mark.parametrize("op,axis,dt", sample(CASES, 3))
def test_reduce_2d(op: str, axis: int, dt: str) -> None:
    m, n = 16, 32
    x = np.random.default_rng(len(op) + axis).permutation(m * n).reshape(m, n).astype(dt)
    out_dt = "int32" if op.startswith("arg") else dt
    o = np.zeros(n if axis == 0 else m, out_dt)
    reduce2d[(1,)](x, o, OP=op, AXIS=axis, M=m, N=n)
    ref = NP[op](x.astype(np.float64) if not op.startswith("arg") else x, axis=axis)
    np.testing.assert_allclose(o, ref.astype(out_dt), rtol=1e-6)


@triton.jit
def scan1d(x_ptr, o_ptr, OP: tl.constexpr, REV: tl.constexpr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    if OP == "cumsum":
        y = tl.cumsum(x, 0, reverse=REV)
    elif OP == "cumprod":
        y = tl.cumprod(x, 0, reverse=REV)
    else:
        y = tl.associative_scan(x, 0, _add, reverse=REV)
    tl.store(o_ptr + i, y)


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "scan"])
@pytest.mark.parametrize("rev", [False, True])
@pytest.mark.parametrize("dt", ["int32", "float32"])
def test_scan(op: str, rev: bool, dt: str) -> None:
    n = 64
    x = np.where(np.arange(n) % 8 == 3, 2, 1).astype(dt) if op == "cumprod" else \
        np.arange(n).astype(dt) - 20
    o = np.zeros(n, dt)
    scan1d[(1,)](x, o, OP=op, REV=rev, N=n)
    xs = x[::-1] if rev else x
    ref = np.cumprod(xs.astype(np.float64)) if op == "cumprod" else np.cumsum(xs.astype(np.float64))
    ref = ref[::-1] if rev else ref
    np.testing.assert_allclose(o, ref.astype(dt), rtol=1e-6)
