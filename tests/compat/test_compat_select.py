"""tl.histogram (up to 2048 bins; an unused tile over the size limit beside it
is no error), batched (3-D) tl.dot and triton.reinterpret with Triton's
semantics against NumPy on the CPU; histogram and the 3-D dots compiled for
sm90 and gfx942 (ptxas / ld.lld; not run on a GPU: the batched dot is one
2-D dot per batch, picked and stacked through `tile.restride`)."""
from __future__ import annotations

import numpy as np
import pytest

import tilec as triton
import tilec.language as tl


@triton.jit
def histogram_kernel(x_ptr, m_ptr, z_ptr, zm_ptr, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M))
    keep = tl.load(m_ptr + tl.arange(0, M)) != 0
    tl.store(z_ptr + tl.arange(0, N), tl.histogram(x, N))
    tl.store(zm_ptr + tl.arange(0, N), tl.histogram(x, N, mask=keep))


# (1024, 1024) and (256, 2048): many chunks of bins (a loop over them; unrolled,
# their tiles overflowed a CPU thread's stack: a segfault).
@pytest.mark.parametrize("m, n", [(8, 2), (256, 16), (1024, 128), (64, 512), (1024, 1024),
                                  (256, 2048)])
def test_histogram(m: int, n: int) -> None:
    rs = np.random.RandomState(m + n)
    x = rs.randint(-2, n + 2, m).astype(np.int32)   # values outside [0, n) are not counted
    keep = rs.randint(0, 2, m).astype(np.int8)
    z = np.zeros(n, np.int32)
    zm = np.zeros(n, np.int32)
    histogram_kernel[(1,)](x, keep, z, zm, M=m, N=n)
    np.testing.assert_array_equal(z, np.bincount(x[(x >= 0) & (x < n)], minlength=n)[:n])
    sel = (x >= 0) & (x < n) & (keep != 0)
    np.testing.assert_array_equal(zm, np.bincount(x[sel], minlength=n)[:n])


@triton.jit
def histogram_beside_big_tile(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    z = tl.histogram(tl.load(x_ptr + tl.arange(0, M)), N)
    biased = z + tl.full([M, N], 1, dtype=tl.int32)   # unused: erased, so not over the limit
    tl.store(z_ptr + tl.arange(0, N), z)


@triton.jit
def big_tile_used(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    z = tl.histogram(tl.load(x_ptr + tl.arange(0, M)), N)
    biased = z + tl.full([M, N], 1, dtype=tl.int32)
    tl.store(z_ptr + tl.arange(0, N), tl.sum(biased, 0))


def test_unused_big_tile_is_not_an_error() -> None:
    # test_core's histogram case: a dead [256, 512] tile (131072 elements).
    x = np.random.RandomState(0).randint(0, 512, 256).astype(np.int32)
    z = np.zeros(512, np.int32)
    histogram_beside_big_tile[(1,)](x, z, M=256, N=512)
    np.testing.assert_array_equal(z, np.bincount(x, minlength=512))
    with pytest.raises(triton.TilecError, match="131072 elements .256x512. exceeds the cpu limit"):
        big_tile_used[(1,)](x, z, M=256, N=512)


@triton.jit
def dot3d_kernel(q_ptr, k_ptr, c_ptr, o_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                 K: tl.constexpr, OUT: tl.constexpr):
    b = tl.arange(0, B)[:, None, None]
    q = tl.load(q_ptr + b * M * K + tl.arange(0, M)[None, :, None] * K + tl.arange(0, K)[None, None, :])
    k = tl.load(k_ptr + b * K * N + tl.arange(0, K)[None, :, None] * N + tl.arange(0, N)[None, None, :])
    o_offs = b * M * N + tl.arange(0, M)[None, :, None] * N + tl.arange(0, N)[None, None, :]
    acc = tl.load(c_ptr + o_offs).to(tl.float32)
    if OUT == tl.int32:
        tl.store(o_ptr + o_offs, tl.dot(q, k, out_dtype=tl.int8))  # Triton: int dots give int32
    else:
        tl.store(o_ptr + o_offs, tl.dot(q, k, acc=acc))


@pytest.mark.parametrize("dt", ["float32", "float16", "int8"])
def test_batched_dot(dt: str) -> None:
    B, M, N, K = 4, 16, 8, 32
    rs = np.random.RandomState(3)
    q = (rs.randn(B, M, K) * 4).astype(dt)
    k = (rs.randn(B, K, N) * 4).astype(dt)
    c = rs.randn(B, M, N).astype(np.float32)
    out = np.zeros((B, M, N), np.int32 if dt == "int8" else np.float32)
    dot3d_kernel[(1,)](q, k, c, out, B, M, N, K, tl.int32 if dt == "int8" else tl.float32)
    ref = np.matmul(q.astype(np.float64), k.astype(np.float64))
    if dt == "int8":
        np.testing.assert_array_equal(out, ref.astype(np.int32))
    else:
        np.testing.assert_allclose(out, ref + c, rtol=1e-4, atol=1e-3)


def test_dot3d_batch_mismatch_is_an_error() -> None:
    @triton.jit
    def bad(x_ptr):
        r = tl.arange(0, 16)
        a = tl.load(x_ptr + tl.arange(0, 2)[:, None, None] * 256 + r[None, :, None] * 16 + r[None, None, :])
        b = tl.load(x_ptr + tl.arange(0, 4)[:, None, None] * 256 + r[None, :, None] * 16 + r[None, None, :])
        c = tl.dot(a, b)
    with pytest.raises(triton.TilecError, match="2-D tiles"):
        bad[(1,)](np.zeros(1024, np.float32))


@triton.jit
def through_uint(x_ptr, o_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.static_assert(x.dtype == tl.uint32)
    tl.store(o_ptr + tl.arange(0, N), x >> 28)


def test_reinterpret() -> None:
    torch = pytest.importorskip("torch")
    a = torch.tensor([-1, 1, -(2 ** 31), 7], dtype=torch.int32)
    o = torch.zeros(4, dtype=torch.int32)
    w = triton.reinterpret(a, tl.uint32)
    assert w.base is a and w.dtype is tl.uint32 and triton.reinterpret(w, tl.int32) is a
    through_uint[(1,)](w, triton.reinterpret(o, tl.uint32), N=4)
    assert o.tolist() == [15, 0, 8, 0]   # logical shifts: the data were read as uint32


@pytest.mark.parametrize("target", ["sm90", "gfx942"])
def test_select_ops_assemble_for_gpus(target: str) -> None:
    from tests.compat.gpu_check import assemble
    assemble(histogram_kernel, target, "*i32,*i8,*i32,*i32", {"M": 256, "N": 16})
    assemble(histogram_kernel, target, "*i32,*i8,*i32,*i32", {"M": 256, "N": 256})  # a loop
    for dt, out in (("fp32", "fp32"), ("fp16", "fp32"), ("i8", "i32")):
        assemble(dot3d_kernel, target, f"*{dt},*{dt},*fp32,*{out}",
                 dict(B=4, M=16, N=8, K=32, OUT=tl.int32 if dt == "i8" else tl.float32))
