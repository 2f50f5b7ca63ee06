"""Spin locks with tl.atomic_cas / tl.atomic_xchg (tutorial 05's layer-norm
backward pattern) on the CPU: the lock is taken once per test of the while
condition (the condition used to run once more before the loop, taking the
lock and then spinning on it forever)."""
from __future__ import annotations

import numpy as np
import pytest

import tilec as triton
import tilec.language as tl


@triton.jit
def locked_accumulate(x_ptr, o_ptr, lock_ptr, count_ptr, GROUP: tl.constexpr,
                      BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    g = pid % GROUP
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + pid * BLOCK + offs)
    lock = lock_ptr + g
    count_p = count_ptr + g
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    count = tl.load(count_p)
    if count == 0:
        tl.atomic_xchg(count_p, 1)
    else:
        x += tl.load(o_ptr + g * BLOCK + offs)
    tl.store(o_ptr + g * BLOCK + offs, x)
    tl.debug_barrier()
    tl.atomic_xchg(lock, 0)


@pytest.mark.parametrize("programs,group", [(64, 4), (7, 1), (33, 8)])
def test_spin_lock_accumulation(programs: int, group: int) -> None:
    B = 16
    x = np.random.default_rng(programs).standard_normal((programs, B)).astype(np.float32)
    o = np.zeros((group, B), np.float32)
    lock, count = np.zeros(group, np.int32), np.zeros(group, np.int32)
    locked_accumulate[(programs,)](x, o, lock, count, GROUP=group, BLOCK=B)
    ref = np.zeros((group, B), np.float64)
    for p in range(programs):
        ref[p % group] += x[p]
    np.testing.assert_allclose(o, ref, rtol=1e-5, atol=1e-5)
    assert (lock == 0).all() and (count == 1).all()


@triton.jit
def side_effect_condition(c_ptr, n):
    i = 0
    while tl.atomic_add(c_ptr, 1) < n:
        i += 1
    tl.store(c_ptr + 1, i)


def test_while_condition_runs_once_per_iteration() -> None:
    c = np.zeros(2, np.int32)
    side_effect_condition[(1,)](c, 5)
    assert c.tolist() == [6, 5]
