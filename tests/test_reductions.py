"""Differential tests of reductions, scans and atomics through the frontend, on
the CPU, against NumPy (torch for bf16).

tl.sum/max/min/argmax/argmin over rows of 1, primes and other widths that are
not a power of two (masked tiles), 2-D reductions along either axis with
keep_dims and axis=None, ties resolved to the first index (NumPy's rule),
every float dtype and int32/int8 (sums widen to int32, like Triton);
tl.reduce and tl.associative_scan with user combine functions; tl.cumsum in
1-D and 2-D, forward and reverse; atomics under many programs, returning old
values, masked.

Each kernel is compiled once per (dtypes, constexprs, divisibility) and then
launched over many sizes, so the suite stays fast.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import tilec
import tilec.language as tl

RNG = np.random.default_rng(2024)
BLOCK = 1024
WIDTHS = (1, 7, 127, 1021)          # masked rows in a 1024-wide tile
FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("int32", "int8")
NP = {"float16": np.float16, "float32": np.float32, "float64": np.float64,
      "int32": np.int32, "int8": np.int8}


def dev(a: np.ndarray, dtype: str) -> Any:
    """`a` as the kernel's argument: a NumPy array, or a torch tensor for bf16."""
    if dtype == "bfloat16":
        return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)).to(torch.bfloat16)
    return np.ascontiguousarray(a.astype(NP[dtype]))


def host(a: Any) -> np.ndarray:
    """A kernel argument back as float64/int64 NumPy."""
    if isinstance(a, torch.Tensor):
        return a.float().numpy().astype(np.float64)
    return a.astype(np.float64) if a.dtype.kind == "f" else a.astype(np.int64)


def empty(shape: Any, dtype: str) -> Any:
    return dev(np.zeros(shape), dtype)


def extremes(dtype: str) -> tuple[Any, Any]:
    """(LO, HI): the identities of max and min, for masked-off lanes."""
    if dtype in FLOATS:
        return -float("inf"), float("inf")
    info = np.iinfo(NP[dtype])
    return int(info.min), int(info.max)


def sample(dtype: str, shape: Any, ties: bool = True) -> np.ndarray:
    """Values exact in `dtype` whose sums are exact in it too (integers of
    small magnitude, many ties), or normal values for ties=False."""
    if dtype == "int8":
        return RNG.integers(-128, 128, shape).astype(np.int8)
    if dtype == "int32":
        return RNG.integers(-(1 << 20), 1 << 20, shape).astype(np.int32) if not ties \
            else RNG.integers(-4, 5, shape).astype(np.int32)
    if not ties:
        return RNG.standard_normal(shape)
    hi = 1 if dtype == "bfloat16" else 3        # partial sums stay exact
    return RNG.integers(-hi, hi + 1, shape).astype(np.float64)


def sum_dtype(dtype: str) -> str:
    return "int32" if dtype == "int8" else dtype


# ---------------------------------------------------------------- 1-D row reductions

@tilec.kernel
def row_reduce_kernel(x_ptr, sum_ptr, max_ptr, min_ptr, amax_ptr, amin_ptr, n, stride,
                      LO: tl.constexpr, HI: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0)
    tl.store(sum_ptr + row, tl.sum(x, axis=0))
    lo = tl.where(mask, x, LO)
    hi = tl.where(mask, x, HI)
    tl.store(max_ptr + row, tl.max(lo, axis=0))
    tl.store(min_ptr + row, tl.min(hi, axis=0))
    tl.store(amax_ptr + row, tl.argmax(lo, axis=0))
    tl.store(amin_ptr + row, tl.argmin(hi, axis=0))


def run_row_reduce(x: np.ndarray, dtype: str) -> dict[str, np.ndarray]:
    rows, n = x.shape
    xd = dev(x, dtype)
    outs = {"sum": empty(rows, sum_dtype(dtype)), "max": empty(rows, dtype),
            "min": empty(rows, dtype), "argmax": np.full(rows, -1, np.int32),
            "argmin": np.full(rows, -1, np.int32)}
    lo, hi = extremes(dtype)
    row_reduce_kernel[(rows,)](xd, outs["sum"], outs["max"], outs["min"], outs["argmax"],
                               outs["argmin"], n, n, LO=lo, HI=hi, BLOCK=BLOCK)
    return {k: host(v) for k, v in outs.items()}


def reference(x: np.ndarray, dtype: str, axis: int = -1) -> dict[str, np.ndarray]:
    xh = host(dev(x, dtype))          # the values the kernel sees
    return {"sum": xh.sum(axis=axis), "max": xh.max(axis=axis), "min": xh.min(axis=axis),
            "argmax": xh.argmax(axis=axis), "argmin": xh.argmin(axis=axis)}


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_row_reductions(dtype: str) -> None:
    for n in WIDTHS:
        rows = 9 if n > 1 else 3
        x = sample(dtype, (rows, n))
        if n >= 7:
            # all equal: index 0 wins (0 in 16-bit floats, whose sums of
            # 1021 equal values are not exact)
            x[0, :] = 0 if dtype in ("float16", "bfloat16") else x[0, 0]
            x[1, 2] = x[1, 5] = x[1].max()      # ties for the maximum
            x[2, 3] = x[2, 6] = x[2].min()      # ties for the minimum
        if dtype == "int8":
            x[-1, :] = -128                     # the masked-lane identity itself
        got, want = run_row_reduce(x, dtype), reference(x, dtype)
        for k in want:
            np.testing.assert_array_equal(got[k], want[k], err_msg=f"tl.{k} {dtype} n={n}")


@pytest.mark.parametrize("dtype", ("float32", "float64", "float16"))
def test_row_reductions_random(dtype: str) -> None:
    """Non-integer data: sums within rounding, max/min/arg exact."""
    eps = float(np.finfo(NP[dtype]).eps)
    for n in (127, 1021):
        x = sample(dtype, (5, n), ties=False)
        got, want = run_row_reduce(x, dtype), reference(x, dtype)
        xa = np.abs(host(dev(x, dtype))).sum(axis=1)
        assert np.all(np.abs(got["sum"] - want["sum"]) <= 16 * eps * xa), (got["sum"], want["sum"])
        for k in ("max", "min", "argmax", "argmin"):
            np.testing.assert_array_equal(got[k], want[k], err_msg=f"tl.{k} {dtype} n={n}")


def test_int8_sum_widens() -> None:
    """Triton's rule: int8 sums accumulate (and return) int32, so no wrap."""
    x = np.full((2, 1021), 127, np.int8)
    x[1] = -128
    got = run_row_reduce(x, "int8")
    assert got["sum"].tolist() == [127 * 1021, -128 * 1021]


def test_full_tile_unmasked() -> None:
    """n == BLOCK: every lane live (and n divisible by 16: its own specialization)."""
    for dtype in ("float32", "int32"):
        x = sample(dtype, (4, BLOCK))
        got, want = run_row_reduce(x, dtype), reference(x, dtype)
        for k in want:
            np.testing.assert_array_equal(got[k], want[k], err_msg=f"tl.{k} {dtype}")


# ---------------------------------------------------------------- 2-D reductions

@tilec.kernel
def reduce_2d_kernel(x_ptr, s0_ptr, s1_ptr, mx0_ptr, mx1_ptr, am0_ptr, am1_ptr, mi1_ptr,
                     ami1_ptr, k1_ptr, all_ptr, M, N, stride, LO: tl.constexpr, HI: tl.constexpr,
                     BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    rmask = rows < M
    cmask = cols < N
    mask = rmask[:, None] & cmask[None, :]
    x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=0)
    lo = tl.where(mask, x, LO)
    tl.store(s0_ptr + cols, tl.sum(x, axis=0), mask=cmask)
    tl.store(s1_ptr + rows, tl.sum(x, axis=1), mask=rmask)
    tl.store(mx0_ptr + cols, tl.max(lo, axis=0), mask=cmask)
    tl.store(mx1_ptr + rows, tl.max(lo, axis=-1), mask=rmask)
    tl.store(am0_ptr + cols, tl.argmax(lo, axis=0), mask=cmask)
    tl.store(am1_ptr + rows, tl.argmax(lo, axis=1), mask=rmask)
    mn, imn = tl.min(tl.where(mask, x, HI), axis=1, return_indices=True)
    tl.store(mi1_ptr + rows, mn, mask=rmask)
    tl.store(ami1_ptr + rows, imn, mask=rmask)
    # keep_dims: [BM, 1] broadcasts against [BM, BN]; stored as x - rowmax
    k1 = tl.max(lo, axis=1, keep_dims=True)
    tl.store(k1_ptr + rows[:, None] * stride + cols[None, :], x - k1, mask=mask)
    # axis=None: a scalar over the whole tile; keep_dims on axis=0 gives [1, BN]
    tl.store(all_ptr, tl.sum(x))
    k0 = tl.sum(x, axis=0, keep_dims=True)
    tl.store(all_ptr + 1, tl.sum(tl.sum(k0, axis=1), axis=0))


@pytest.mark.parametrize("dtype", ("float32", "int32", "float16"))
def test_reductions_2d(dtype: str) -> None:
    bm, bn = 16, 64
    lo, hi = extremes(dtype)
    for m, n in ((1, 1), (16, 64), (5, 33), (13, 61), (1, 64), (16, 1)):
        x = sample(dtype, (m, n))
        if m > 3 and n > 3:
            x[1, 0] = x[1, 2] = x[1].max() + 1
            x[0, 3] = x[2, 3] = x[:, 3].max() + 1
        xd = dev(x, dtype)
        o = {"s0": empty(n, dtype), "s1": empty(m, dtype), "mx0": empty(n, dtype),
             "mx1": empty(m, dtype), "am0": np.zeros(n, np.int32), "am1": np.zeros(m, np.int32),
             "mi1": empty(m, dtype), "ami1": np.zeros(m, np.int32), "k1": empty((m, n), dtype),
             "all": empty(2, dtype)}
        reduce_2d_kernel[(1,)](xd, *o.values(), m, n, n, LO=lo, HI=hi, BM=bm, BN=bn)
        got = {k: host(v) for k, v in o.items()}
        xh = host(xd)
        want = {"s0": xh.sum(0), "s1": xh.sum(1), "mx0": xh.max(0), "mx1": xh.max(1),
                "am0": xh.argmax(0), "am1": xh.argmax(1), "mi1": xh.min(1),
                "ami1": xh.argmin(1), "k1": xh - xh.max(1, keepdims=True),
                "all": np.array([xh.sum(), xh.sum()])}
        for k in want:
            np.testing.assert_array_equal(got[k], want[k], err_msg=f"{k} {dtype} {m}x{n}")


@tilec.kernel
def reduce_all_kernel(x_ptr, out_ptr, y_ptr, M, N, LO: tl.constexpr, BM: tl.constexpr,
                      BN: tl.constexpr):
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * N + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    lo = tl.where(mask, x, LO)
    tl.store(out_ptr, tl.sum(x, axis=None))
    tl.store(out_ptr + 1, tl.max(lo))
    tl.store(out_ptr + 2, tl.reduce(x, None, add_combine))
    mx = tl.max(lo, keep_dims=True)                 # [1, 1], like Triton
    tl.static_assert(len(mx.shape) == 2 and mx.shape[0] == 1 and mx.shape[1] == 1)
    tl.store(y_ptr + offs, x - mx, mask=mask)


@tilec.kernel
def add_combine(a, b):
    return a + b


@pytest.mark.parametrize("dtype", ("float32", "int32"))
def test_reduce_axis_none_2d(dtype: str) -> None:
    lo = extremes(dtype)[0]
    for m, n in ((1, 1), (3, 5), (16, 64), (11, 50)):
        x = sample(dtype, (m, n)).astype(NP[dtype])
        out = np.zeros(3, NP[dtype])
        y = np.zeros((m, n), NP[dtype])
        reduce_all_kernel[(1,)](x, out, y, m, n, LO=lo, BM=16, BN=64)
        assert out.tolist() == [x.sum(), x.max(), x.sum()], (m, n)
        np.testing.assert_array_equal(y, x - x.max())


# ---------------------------------------------------------------- tl.reduce with a user combine

@tilec.kernel
def abs_max_combine(a, b):
    return tl.maximum(tl.abs(a), tl.abs(b))


@tilec.kernel
def argmax_combine(v0, i0, v1, i1):
    take = (v1 > v0) | ((v1 == v0) & (i1 < i0))
    return tl.where(take, v1, v0), tl.where(take, i1, i0)


@tilec.kernel
def user_reduce_kernel(x_ptr, absmax_ptr, val_ptr, idx_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * n + cols, mask=mask, other=0.)
    tl.store(absmax_ptr + row, tl.reduce(x, 0, abs_max_combine))
    v, i = tl.reduce((tl.where(mask, x, -float("inf")), cols), axis=0, combine_fn=argmax_combine)
    tl.store(val_ptr + row, v)
    tl.store(idx_ptr + row, i)


def test_user_reduce() -> None:
    for n in WIDTHS:
        x = sample("float32", (6, n)).astype(np.float32)
        x[0, :] = -5.0 if n > 1 else x[0, :]           # |x| max from a negative value
        absmax, val = np.zeros(6, np.float32), np.zeros(6, np.float32)
        idx = np.full(6, -1, np.int32)
        user_reduce_kernel[(6,)](x, absmax, val, idx, n, BLOCK=BLOCK)
        np.testing.assert_array_equal(absmax, np.abs(x).max(axis=1), err_msg=f"n={n}")
        np.testing.assert_array_equal(val, x.max(axis=1), err_msg=f"n={n}")
        np.testing.assert_array_equal(idx, x.argmax(axis=1), err_msg=f"n={n}")


# ---------------------------------------------------------------- scans

@tilec.kernel
def cumsum_1d_kernel(x_ptr, fwd_ptr, rev_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * n + cols, mask=mask, other=0)
    tl.store(fwd_ptr + row * n + cols, tl.cumsum(x, axis=0), mask=mask)
    tl.store(rev_ptr + row * n + cols, tl.cumsum(x, axis=0, reverse=True), mask=mask)


def rev_cumsum(a: np.ndarray, axis: int) -> np.ndarray:
    return np.flip(np.cumsum(np.flip(a, axis), axis=axis), axis)


@pytest.mark.parametrize("dtype", ("float32", "int32", "int8"))
def test_cumsum_1d(dtype: str) -> None:
    out_dt = sum_dtype(dtype)
    for n in WIDTHS:
        x = sample(dtype, (3, n))
        fwd, rev = empty((3, n), out_dt), empty((3, n), out_dt)
        cumsum_1d_kernel[(3,)](dev(x, dtype), fwd, rev, n, BLOCK=BLOCK)
        xh = host(dev(x, dtype))
        np.testing.assert_array_equal(host(fwd), np.cumsum(xh, axis=1), err_msg=f"n={n}")
        np.testing.assert_array_equal(host(rev), rev_cumsum(xh, 1), err_msg=f"rev n={n}")


@tilec.kernel
def cumsum_2d_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * N + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    size = M * N
    tl.store(out_ptr + offs, tl.cumsum(x, axis=0), mask=mask)
    tl.store(out_ptr + size + offs, tl.cumsum(x, axis=1), mask=mask)
    tl.store(out_ptr + 2 * size + offs, tl.cumsum(x, axis=0, reverse=True), mask=mask)
    tl.store(out_ptr + 3 * size + offs, tl.cumsum(x, axis=1, reverse=True), mask=mask)


@pytest.mark.parametrize("dtype", ("float32", "int32"))
def test_cumsum_2d(dtype: str) -> None:
    for m, n in ((1, 1), (8, 32), (5, 19), (7, 32), (8, 3)):
        x = sample(dtype, (m, n)).astype(NP[dtype])
        out = np.zeros((4, m, n), NP[dtype])
        cumsum_2d_kernel[(1,)](x, out, m, n, BM=8, BN=32)
        want = [np.cumsum(x, 0), np.cumsum(x, 1), rev_cumsum(x, 0), rev_cumsum(x, 1)]
        for k, w in enumerate(want):
            np.testing.assert_array_equal(out[k], w, err_msg=f"scan {k} of {m}x{n}")


@tilec.kernel
def max_combine(a, b):
    return tl.maximum(a, b)


@tilec.kernel
def linear_combine(a0, b0, a1, b1):
    # h -> a * h + b composed left to right: first (a0, b0), then (a1, b1)
    return a0 * a1, b0 * a1 + b1


@tilec.kernel
def assoc_scan_kernel(x_ptr, a_ptr, cummax_ptr, rcummax_ptr, h_ptr, n, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + cols, mask=mask, other=0.)
    a = tl.load(a_ptr + cols, mask=mask, other=1.)
    tl.store(cummax_ptr + cols, tl.associative_scan(x, 0, max_combine), mask=mask)
    # masked-off lanes come after the row: the reverse scan must not see them
    xm = tl.where(mask, x, -float("inf"))
    tl.store(rcummax_ptr + cols, tl.associative_scan(xm, 0, max_combine, reverse=True),
             mask=mask)
    _, h = tl.associative_scan((a, x), axis=0, combine_fn=linear_combine)
    tl.store(h_ptr + cols, h, mask=mask)


def test_associative_scan() -> None:
    for n in (1, 7, 127, 1000):
        x = RNG.standard_normal(n).astype(np.float32)
        a = RNG.uniform(0.5, 1.0, n).astype(np.float32)
        cm, rcm, h = (np.zeros(n, np.float32) for _ in range(3))
        assoc_scan_kernel[(1,)](x, a, cm, rcm, h, n, BLOCK=BLOCK)
        np.testing.assert_array_equal(cm, np.maximum.accumulate(x))
        np.testing.assert_array_equal(rcm, np.maximum.accumulate(x[::-1])[::-1])
        want = np.zeros(n)
        acc = 0.0
        for i in range(n):                     # h_i = a_i * h_{i-1} + x_i, h_{-1} = 0
            acc = float(a[i]) * acc + float(x[i])
            want[i] = acc
        np.testing.assert_allclose(h, want, rtol=1e-4, atol=1e-4, err_msg=f"n={n}")


# ---------------------------------------------------------------- atomics

@tilec.kernel
def count_kernel(counts_ptr, fcounts_ptr, tickets_ptr, n, NUM_BINS: tl.constexpr,
                 BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    bins = offs % NUM_BINS
    tl.atomic_add(counts_ptr + bins, 1, mask=mask)
    tl.atomic_add(fcounts_ptr + bins, 1.0, mask=mask)
    # a scalar atomic per program: its old value is a unique ticket
    ticket = tl.atomic_add(counts_ptr + NUM_BINS, 1)
    tl.store(tickets_ptr + pid, ticket)


def test_atomic_add_counts_many_programs() -> None:
    bins = 5
    for n in (1, 1000, 100_003):
        block = 128
        programs = tilec.cdiv(n, block)
        counts = np.zeros(bins + 1, np.int32)
        fcounts = np.zeros(bins, np.float32)
        tickets = np.full(programs, -1, np.int32)
        count_kernel[(programs,)](counts, fcounts, tickets, n, NUM_BINS=bins, BLOCK=block)
        want = np.bincount(np.arange(n) % bins, minlength=bins)
        np.testing.assert_array_equal(counts[:bins], want)
        np.testing.assert_array_equal(fcounts, want.astype(np.float32))
        assert counts[bins] == programs
        assert sorted(tickets.tolist()) == list(range(programs))


@tilec.kernel
def atomic_old_kernel(add_ptr, max_ptr, min_ptr, xchg_ptr, cas_ptr, val_ptr, cmp_ptr, old_ptr,
                      n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(val_ptr + offs, mask=mask, other=0)
    c = tl.load(cmp_ptr + offs, mask=mask, other=0)
    tl.store(old_ptr + offs, tl.atomic_add(add_ptr + offs, v, mask=mask), mask=mask)
    tl.store(old_ptr + n + offs, tl.atomic_max(max_ptr + offs, v, mask=mask), mask=mask)
    tl.store(old_ptr + 2 * n + offs, tl.atomic_min(min_ptr + offs, v, mask=mask), mask=mask)
    tl.store(old_ptr + 3 * n + offs, tl.atomic_xchg(xchg_ptr + offs, v, mask=mask), mask=mask)
    tl.store(old_ptr + 4 * n + offs, tl.atomic_cas(cas_ptr + offs, c, v), mask=mask)


@pytest.mark.parametrize("dtype", ("int32", "float32"))
def test_atomics_return_old_values(dtype: str) -> None:
    for n in (1, 7, 1021):
        block = 256
        nbuf = tilec.cdiv(n, block) * block      # the CAS is unmasked: pad its buffer
        init = sample(dtype, nbuf).astype(NP[dtype])
        val = sample(dtype, n).astype(NP[dtype])
        cmp = np.where(RNG.random(nbuf) < 0.5, init, init + 1).astype(NP[dtype])
        bufs = [init.copy() for _ in range(5)]
        old = np.zeros((5, n), NP[dtype])
        atomic_old_kernel[(tilec.cdiv(n, block),)](*bufs, val, cmp, old, n, BLOCK=block)
        i0 = init[:n]
        for k in range(5):
            np.testing.assert_array_equal(old[k], i0, err_msg=f"old values, op {k}, n={n}")
        np.testing.assert_array_equal(bufs[0][:n], i0 + val)
        np.testing.assert_array_equal(bufs[1][:n], np.maximum(i0, val))
        np.testing.assert_array_equal(bufs[2][:n], np.minimum(i0, val))
        np.testing.assert_array_equal(bufs[3][:n], val)
        np.testing.assert_array_equal(bufs[4][:n], np.where(cmp[:n] == i0, val, i0))
        for k in range(4):                       # masked-off lanes left alone
            np.testing.assert_array_equal(bufs[k][n:], init[n:], err_msg=f"op {k} masked")


@tilec.kernel
def atomic_contended_kernel(x_ptr, max_ptr, min_ptr, owner_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.atomic_max(max_ptr + tl.zeros([BLOCK], dtype=tl.int32), x, mask=mask)
    tl.atomic_min(min_ptr, x, mask=mask)
    # only the first program to arrive claims the slot
    tl.atomic_cas(owner_ptr, -1, pid)


def test_atomics_contended() -> None:
    for n in (3, 5000):
        x = RNG.integers(-10**6, 10**6, n).astype(np.int32)
        mx = np.array([np.iinfo(np.int32).min], np.int32)
        mn = np.array([np.iinfo(np.int32).max], np.int32)
        owner = np.array([-1], np.int32)
        programs = tilec.cdiv(n, 64)
        atomic_contended_kernel[(programs,)](x, mx, mn, owner, n, BLOCK=64)
        assert mx[0] == x.max() and mn[0] == x.min()
        assert 0 <= owner[0] < programs
