"""Loads and stores with masks, `other=`, strides and scalar pointers; control
flow (if/elif on runtime scalars, for with runtime and static bounds, while,
break-free early exits through helpers); constexpr branches and tl.static_range
unrolling; 2-D masked tiles against NumPy."""
from __future__ import annotations

import numpy as np
import pytest

import tilec as triton
import tilec.language as tl


@triton.jit
def masked_copy_2d(x_ptr, o_ptr, M, N, sxm, sxn, som, OTHER: tl.constexpr, BM: tl.constexpr,
                   BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    m = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * sxm + rn[None, :] * sxn, mask=m, other=OTHER)
    tl.store(o_ptr + rm[:, None] * som + rn[None, :], x + 1, mask=rm[:, None] < M)


@pytest.mark.parametrize("dt", ["float32", "int16", "float16"])
def test_masked_2d_with_strides_and_other(dt: str) -> None:
    m, n = 37, 45
    base = np.arange(m * n * 2).reshape(m, 2 * n).astype(dt)
    x = base[:, ::2]  # a strided view
    bn = 16
    o = np.full((m, triton.cdiv(n, bn) * bn), -9, dt)
    masked_copy_2d[(triton.cdiv(m, 16), triton.cdiv(n, bn))](
        x, o, m, n, x.strides[0] // x.itemsize, x.strides[1] // x.itemsize, o.shape[1],
        OTHER=-3, BM=16, BN=bn)
    ref = np.full_like(o, -2)
    ref[:, :n] = x.astype(np.float64) + 1
    np.testing.assert_array_equal(o, ref)


@triton.jit
def control(o_ptr, n, k, FLAG: tl.constexpr, UNROLL: tl.constexpr):
    acc = 0
    for i in range(n):
        if i % 3 == 0:
            acc += i
        elif i % 3 == 1:
            acc -= 1
        else:
            acc = acc * 2 % 1000
    j = 0
    while j * j < k:
        j += 1
    s = 0.0
    for u in tl.static_range(UNROLL):
        s += u * 0.5
    if FLAG:
        acc += 100000
    tl.store(o_ptr, acc)
    tl.store(o_ptr + 1, j)
    tl.store(o_ptr + 2, s.to(tl.int32))


def _control_ref(n: int, k: int, flag: bool, unroll: int) -> list[int]:
    acc = 0
    for i in range(n):
        if i % 3 == 0:
            acc += i
        elif i % 3 == 1:
            acc -= 1
        else:
            acc = int(np.fmod(acc * 2, 1000))  # % truncates toward zero (C, Triton)
    j = 0
    while j * j < k:
        j += 1
    return [acc + (100000 if flag else 0), j, int(sum(u * 0.5 for u in range(unroll)))]


@pytest.mark.parametrize("n,k,flag,unroll", [(0, 0, False, 1), (17, 50, True, 4),
                                             (100, 1000, False, 7)])
def test_control_flow(n: int, k: int, flag: bool, unroll: int) -> None:
    o = np.zeros(3, np.int32)
    control[(1,)](o, n, k, FLAG=flag, UNROLL=unroll)
    assert o.tolist() == _control_ref(n, k, flag, unroll)


@triton.jit
def _clamp_row(x, LIMIT: tl.constexpr):
    if LIMIT > 0:
        return tl.minimum(x, LIMIT)
    return x


@triton.jit
def constexpr_kernel(x_ptr, o_ptr, LIMIT: tl.constexpr, DT: tl.constexpr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    tl.static_assert(N % 8 == 0)
    y = _clamp_row(x, LIMIT).to(DT)
    tl.store(o_ptr + i, y)


@pytest.mark.parametrize("limit", [0, 5])
def test_constexprs_select_code(limit: int) -> None:
    x = np.arange(16, dtype=np.int32)
    o = np.zeros(16, np.float32)
    constexpr_kernel[(1,)](x, o, LIMIT=limit, DT=tl.float32, N=16)
    np.testing.assert_array_equal(o, np.minimum(x, limit) if limit else x)
