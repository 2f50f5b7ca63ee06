"""Big 2-D tiles on the CPU (passes/cpu/tiled.py: tiles of more than BIG
elements in stack buffers, ops as chunk loops) against NumPy: broadcasts,
transposes, loop-carried tiles (in place, swapped, kept), tiles yielded by an
`scf.if`, booleans, and ops that fall back to whole vectors (reductions)."""
from __future__ import annotations

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.passes.cpu import tiled


@tilec.kernel
def loops(x_ptr, y_ptr, out_ptr, n, R: tl.constexpr, C: tl.constexpr, CASE: tl.constexpr):
    r = tl.arange(0, R)
    c = tl.arange(0, C)
    offs = r[:, None] * C + c[None, :]
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if CASE == 0:      # swap two carried tiles each step
        a, b = x, y
        for i in range(n):
            a, b = b, a + 1.0
        tl.store(out_ptr + offs, a * 10.0 + b)
    elif CASE == 1:    # a carried tile read after the in-place candidate
        acc = x
        for i in range(n):
            old = acc
            acc = acc * 2.0
            acc = acc + old
        tl.store(out_ptr + offs, acc)
    elif CASE == 2:    # scf.if yielding big tiles, an init used after the loop
        acc = x
        for i in range(n):
            if i % 2 == 0:
                acc = acc + y
            else:
                acc = acc - 0.5 * y
        tl.store(out_ptr + offs, acc + x)
    else:              # broadcasts of columns, rows and scalars, a boolean tile
        col = tl.load(x_ptr + r)[:, None]
        row = tl.load(y_ptr + c)[None, :]
        m = (x > col) | (y < row)
        tl.store(out_ptr + offs, tl.where(m, x + row, y - col) + n)


def _numpy_loops(x: np.ndarray, y: np.ndarray, n: int, case: int) -> np.ndarray:
    if case == 0:
        a, b = x, y
        for _ in range(n):
            a, b = b, a + 1.0
        return a * 10.0 + b
    if case == 1:
        return x * 3.0 ** n
    if case == 2:
        acc = x.copy()
        for i in range(n):
            acc = acc + y if i % 2 == 0 else acc - 0.5 * y
        return acc + x
    r, c = x.shape
    col = x.reshape(-1)[:r][:, None]
    row = y.reshape(-1)[:c][None, :]
    return np.where((x > col) | (y < row), x + row, y - col) + n


@pytest.mark.sample(2)        # the test command: each case on two of the shapes
@pytest.mark.parametrize("shape", [(16, 64), (64, 16), (8, 128), (128, 2)])
@pytest.mark.parametrize("case", [0, 1, 2, 3])
def test_loop_carried_and_broadcast_big_tiles(shape: tuple[int, int], case: int) -> None:
    assert shape[0] * shape[1] > tiled.BIG
    rng = np.random.default_rng(case)
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.standard_normal(shape).astype(np.float32)
    out = np.full(shape, np.nan, np.float32)
    loops[(1,)](x, y, out, 5, R=shape[0], C=shape[1], CASE=case)
    np.testing.assert_allclose(out, _numpy_loops(x, y, 5, case), rtol=1e-6, atol=1e-5)


@tilec.kernel
def reduce_trans(x_ptr, s0_ptr, s1_ptr, t_ptr, M, N, R: tl.constexpr, C: tl.constexpr):
    r = tl.arange(0, R)
    c = tl.arange(0, C)
    mask = (r[:, None] < M) & (c[None, :] < N)
    x = tl.load(x_ptr + r[:, None] * N + c[None, :], mask=mask, other=0.0)
    tl.store(s0_ptr + c, tl.sum(x, axis=0), mask=c < N)
    tl.store(s1_ptr + r, tl.max(x, axis=1), mask=r < M)
    xt = tl.trans(x)
    tl.store(t_ptr + c[:, None] * M + r[None, :], xt, mask=(c[:, None] < N) & (r[None, :] < M))


@pytest.mark.parametrize("m,n", [(30, 50), (64, 64), (17, 9)])
def test_reductions_and_transposes_of_big_tiles(m: int, n: int) -> None:
    x = np.random.default_rng(m * n).standard_normal((m, n)).astype(np.float32)
    s0 = np.full(n, np.nan, np.float32)
    s1 = np.full(m, np.nan, np.float32)
    t = np.full((n, m), np.nan, np.float32)
    reduce_trans[(1,)](x, s0, s1, t, m, n, R=64, C=64)
    np.testing.assert_allclose(s0, x.sum(axis=0), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(s1, x.max(axis=1))
    np.testing.assert_array_equal(t, x.T)


@tilec.kernel
def bools_and_ints(x_ptr, flags_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + offs)
    big = x > 3
    tl.store(flags_ptr + offs, big)
    tl.store(out_ptr + offs, tl.where(big, x // 2, -x) % 7, mask=x != 0)


def test_boolean_and_integer_big_tiles() -> None:
    x = np.random.default_rng(3).integers(-9, 10, (32, 32)).astype(np.int32)
    flags = np.zeros((32, 32), np.bool_)
    out = np.full((32, 32), 99, np.int32)
    bools_and_ints[(1,)](x, flags, out, R=32, C=32)
    np.testing.assert_array_equal(flags, x > 3)
    q = np.where(x > 3, np.trunc(x / 2).astype(np.int32), -x)
    want = np.where(x != 0, np.fmod(q, 7), 99)
    np.testing.assert_array_equal(out, want)


def test_big_tile_kernels_keep_loops_rolled_and_buffers() -> None:
    k = loops.compile(target="cpu", signature="*fp32,*fp32,*fp32,i32",
                      constexprs={"R": 64, "C": 64, "CASE": 3})
    cpu = k.asm["cpu"]
    assert "llvm.alloca" in cpu and "vector<4096x" not in cpu
    assert "tilec.cpu_rolled_loops" in cpu
