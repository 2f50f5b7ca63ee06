"""`@jit` helper functions called from kernels (inlined), name resolution
(module globals, closure cells, tl.constexpr globals), early returns, kernels
made by exec, and errors inside helpers."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import tilec as triton
import tilec.language as tl
import compat_helper_mod as helper_mod

HERE = str(pathlib.Path(__file__).resolve())
OFFSET = tl.constexpr(5.0)


@triton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


@triton.jit
def pair(x, y, K: tl.constexpr = 2):
    return x * K, y + 1


@triton.jit
def pick(x, t):
    if t > 0:
        return x * 2.0
    return x - 1.0


@triton.jit
def with_tuple(t):
    a, b = t
    return (a + b, a - b)


@triton.jit
def k_helpers(x_ptr, o_ptr, n, t, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= n:
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    a, b = pair(leaky_relu(x), x)
    c = pair(a, b, K=3)[0] + pick(b, t) + OFFSET
    s, d = with_tuple((c, x))
    tl.store(o_ptr + offs, s + d + helper_mod.twice_scaled(x), mask=m)


@pytest.mark.parametrize("t", [1, -1])
def test_helpers_inline(t: int) -> None:
    n = 300
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    o = np.zeros(n, np.float32)
    k_helpers[(triton.cdiv(n, 128) + 1,)](x, o, n, t, BLOCK=128)
    lr = np.where(x >= 0, x, np.float32(0.01) * x)
    c = lr * 2 * 3 + ((x + 1) * 2 if t > 0 else (x + 1) - 1) + 5
    np.testing.assert_allclose(o, 2 * c + 6 * x, rtol=1e-5, atol=1e-5)


def make_closure_kernel(factor: float):
    import tilec.language as tlx
    width = 8

    @triton.jit
    def k(o_ptr):
        offs = tlx.arange(0, width)
        tlx.store(o_ptr + offs, tlx.full((width,), factor, tlx.float32) + offs)
    return k


def test_closure_names_and_their_values_in_the_key() -> None:
    o = np.zeros(8, np.float32)
    make_closure_kernel(2.0)[(1,)](o)
    np.testing.assert_array_equal(o, 2.0 + np.arange(8))
    make_closure_kernel(7.0)[(1,)](o)
    np.testing.assert_array_equal(o, 7.0 + np.arange(8))


def test_helper_source_is_in_the_cache_key() -> None:
    @triton.jit
    def k(o_ptr):
        tl.store(o_ptr, helper_mod.scaled(1.0))
    before = k.source_hash()
    k2 = triton.jit(k.fn)
    assert k2.source_hash() == before
    assert helper_mod.scaled.own_source_hash() != helper_mod.twice_scaled.own_source_hash()


SRC = '''
def gen(x_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs) * MUL)
'''


def test_exec_kernel_with_src() -> None:
    ns: dict = {"tl": tl, "MUL": 3}
    exec(SRC, ns)
    k = triton.jit(ns["gen"], src=SRC)
    x, o = np.ones(8, np.float32), np.zeros(8, np.float32)
    k[(1,)](x, o, BLOCK=8)
    np.testing.assert_array_equal(o, 3.0)
    k.src = SRC.replace("* MUL", "* MUL + 1")
    k[(1,)](x, o, BLOCK=8)
    np.testing.assert_array_equal(o, 4.0)


def test_exec_kernel_without_src_is_a_clear_error() -> None:
    ns: dict = {"tl": tl, "MUL": 3}
    exec(SRC, ns)
    k = triton.jit(ns["gen"])
    with pytest.raises(triton.TilecError, match="src="):
        k[(1,)](np.ones(8, np.float32), np.zeros(8, np.float32), BLOCK=8)


@triton.jit
def bad_helper(x):
    return x + undefined_name  # noqa: F821  # <- bad


@triton.jit
def recursive(x):
    return recursive(x)  # <- rec


@triton.jit
def k_errors(x_ptr, MODE: tl.constexpr):
    x = tl.load(x_ptr)
    if MODE == 0:
        x = bad_helper(x)  # <- call
    else:
        x = recursive(x)
    tl.store(x_ptr, x)


def _line(marker: str) -> int:
    return next(i for i, ln in enumerate(open(HERE), 1) if f"# <- {marker}" in ln)


def test_error_inside_helper_names_helper_line_and_call_site() -> None:
    with pytest.raises(triton.TilecError) as e:
        k_errors[(1,)](np.ones(1, np.float32), MODE=0)
    assert e.value.loc is not None and e.value.loc.line == _line("bad")
    assert f"called at {HERE}:{_line('call')}" in str(e.value)
    assert "undefined_name" in str(e.value)


def test_recursion_is_an_error() -> None:
    with pytest.raises(triton.TilecError, match="recursi") as e:
        k_errors[(1,)](np.ones(1, np.float32), MODE=1)
    assert e.value.loc is not None and e.value.loc.line == _line("rec")


@triton.jit
def k_loop_return(x_ptr):
    for i in range(4):
        if i == 2:
            return
    tl.store(x_ptr, 1.0)


def test_return_in_loop_is_an_error() -> None:
    with pytest.raises(triton.TilecError, match="inside a loop"):
        k_loop_return[(1,)](np.ones(1, np.float32))
