"""tl.sort and tl.topk (Triton's semantics) against NumPy on the CPU, 1-D and
2-D, int and float dtypes, both directions; errors; compiled for sm90 and
gfx942 (ptxas / ld.lld): they are built from tile ops only
(tilec/frontend/builtins_sort.py).  The dtype x direction x size grids are
sampled in the test command (every dtype, direction and size still runs);
TILEC_TEST_FULL=1 runs them whole (tests/sweeps.py)."""
from __future__ import annotations

import numpy as np
import pytest

import tilec as triton
import tilec.language as tl
from tilec import TilecError

from compat.gpu_check import GPU_TARGETS, assemble


@triton.jit
def sort_1d(x_ptr, z_ptr, N: tl.constexpr, DESC: tl.constexpr):
    o = tl.arange(0, N)
    tl.store(z_ptr + o, tl.sort(tl.load(x_ptr + o), descending=DESC))


@triton.jit
def sort_2d(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr, DIM: tl.constexpr,
            DESC: tl.constexpr):
    o = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + o)
    tl.store(z_ptr + o, tl.sort(x, dim=DIM, descending=DESC))


@triton.jit
def topk_2d(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(z_ptr + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :], tl.topk(x, K))


@triton.jit
def topk_1d(x_ptr, z_ptr, N: tl.constexpr, K: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(z_ptr + tl.arange(0, K), x.topk(K, dim=0))


@triton.jit
def sort_method(x_ptr, z_ptr, N: tl.constexpr):
    o = tl.arange(0, N)
    tl.store(z_ptr + o, tl.load(x_ptr + o).sort(0, True))


def _data(dt: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rs = np.random.RandomState(seed)
    if dt.startswith("float"):
        return (rs.randn(*shape) * 100).astype(dt)
    info = np.iinfo(dt)
    # small ranges give ties; full ranges the extremes
    lo, hi = (info.min, info.max) if seed % 2 else (max(info.min, -5), min(info.max, 5))
    return rs.randint(lo, hi, size=shape, dtype=np.int64).astype(dt)


DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint32", "float16", "float32", "float64"]


@pytest.mark.sample(3)
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("desc", [False, True])
@pytest.mark.parametrize("n", [1, 2, 16, 128])
def test_sort_1d(dt: str, desc: bool, n: int) -> None:
    x = _data(dt, (n,), n + len(dt))
    z = np.zeros_like(x)
    sort_1d[(1,)](x, z, n, desc)
    ref = np.sort(x)
    np.testing.assert_array_equal(z, ref[::-1] if desc else ref)


@pytest.mark.sample(2)
@pytest.mark.parametrize("dt", ["int32", "uint8", "float16", "float32"])
@pytest.mark.parametrize("desc", [False, True])
@pytest.mark.parametrize("m, n, dim", [(4, 32, 1), (8, 16, -1), (16, 8, 0), (2, 64, 0)])
def test_sort_2d(dt: str, desc: bool, m: int, n: int, dim: int) -> None:
    x = _data(dt, (m, n), m * n + dim)
    z = np.zeros_like(x)
    sort_2d[(1,)](x, z, m, n, dim, desc)
    ref = np.sort(x, axis=dim)
    np.testing.assert_array_equal(z, np.flip(ref, axis=dim) if desc else ref)


def test_sort_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    x = torch.randn(8, 64)
    z = torch.empty_like(x)
    sort_2d[(1,)](x, z, 8, 64, 1, True)
    assert torch.equal(z, torch.sort(x, dim=1, descending=True).values)


@pytest.mark.sample(2)
@pytest.mark.parametrize("dt", ["int16", "int32", "uint32", "float32", "float64"])
@pytest.mark.parametrize("n, k", [(64, 1), (64, 4), (32, 32), (128, 16), (8, 2)])
def test_topk_2d(dt: str, n: int, k: int) -> None:
    m = 4
    x = _data(dt, (m, n), n * k)
    z = np.zeros((m, k), x.dtype)
    topk_2d[(1,)](x, z, m, n, k)
    np.testing.assert_array_equal(z, np.sort(x, axis=1)[:, ::-1][:, :k])


def test_topk_1d_and_method_forms() -> None:
    torch = pytest.importorskip("torch")
    x = torch.randn(256)
    z = torch.empty(8)
    topk_1d[(1,)](x, z, 256, 8)
    assert torch.equal(z, torch.topk(x, 8).values)
    y = torch.randint(-1000, 1000, (32,), dtype=torch.int32)
    w = torch.empty_like(y)
    sort_method[(1,)](y, w, 32)
    assert torch.equal(w, torch.sort(y, descending=True).values)


def test_sort_special_floats() -> None:
    x = np.array([3.0, -0.0, np.inf, 0.0, -np.inf, -1.5, 2.0, 1e-30], np.float32)
    z = np.zeros_like(x)
    sort_1d[(1,)](x, z, 8, False)
    np.testing.assert_array_equal(z, np.sort(x))


@triton.jit
def bad_sort(x_ptr, z_ptr, N: tl.constexpr, K: tl.constexpr, WHICH: tl.constexpr):
    o = tl.arange(0, N)
    x = tl.load(x_ptr + o)
    if WHICH == 0:
        y = tl.topk(x, K)
    elif WHICH == 1:
        y = tl.sort(x, dim=1)
    else:
        y = tl.sort(x, descending=x > 0)
    tl.store(z_ptr + o, y)


@pytest.mark.parametrize("k, which, msg", [
    (3, 0, "k must be a power of two"), (64, 0, "k must be a power of two of at most 16"),
    (1, 1, "dim 1 is out of range"), (1, 2, "must be a compile-time constant"),
])
def test_sort_errors(k: int, which: int, msg: str) -> None:
    x = np.zeros(16, np.float32)
    with pytest.raises(TilecError, match=msg) as ei:
        bad_sort[(1,)](x, x, 16, k, which)
    assert "test_sort.py" in str(ei.value)


@pytest.mark.parametrize("target", GPU_TARGETS)
def test_sort_compiles_for_gpus(target: str) -> None:
    assemble(sort_2d, target, "*fp32, *fp32", {"M": 4, "N": 32, "DIM": 1, "DESC": True})
    assemble(topk_2d, target, "*i32, *i32", {"M": 4, "N": 64, "K": 8})
