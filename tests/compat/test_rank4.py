"""Tiles of rank 3 and 4 on the CPU target, the way Triton's test_core uses
them: creation (`tl.zeros`, `tl.full`, `tl.arange` expanded with `[:, None,
None, None]`), elementwise math, reductions along each axis (keep_dims),
`tl.reshape`, `x.permute(...)` of every kind (a 3-D / 4-D permutation is one
`tile.restride`), loads and stores through pointer tiles and 4-D block
pointers, and `Z[None, None, :]` on a scalar pointer (a ':' past the last
dimension is ignored, as in Triton).  Checked against NumPy.  Every kernel
here is also compiled for sm90 and gfx942 (ptxas / ld.lld; not run on a GPU)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import tilec as triton
import tilec.language as tl

from tests.compat.sampling import sample


@triton.jit
def permute4_kernel(In, Out, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, D: tl.constexpr,
                    p0: tl.constexpr, p1: tl.constexpr, p2: tl.constexpr, p3: tl.constexpr):
    src = tl.make_block_ptr(base=In, shape=(A, B, C, D), strides=(B * C * D, C * D, D, 1),
                            offsets=(0, 0, 0, 0), block_shape=(A, B, C, D), order=(3, 2, 1, 0))
    S = (A, B, C, D)
    dst = tl.make_block_ptr(base=Out, shape=(S[p0], S[p1], S[p2], S[p3]),
                            strides=(S[p1] * S[p2] * S[p3], S[p2] * S[p3], S[p3], 1),
                            offsets=(0, 0, 0, 0), block_shape=(S[p0], S[p1], S[p2], S[p3]),
                            order=(3, 2, 1, 0))
    tl.store(dst, tl.load(src).permute((p0, p1, p2, p3)))


PERMS = list(itertools.permutations(range(4)))


@pytest.mark.parametrize("shape", [(2, 2, 8, 64), (4, 4, 4, 4)])
@pytest.mark.parametrize("perm", sample(PERMS, 5))
@pytest.mark.parametrize("dt", ["int32", "int8"])
def test_permute_4d(shape: tuple[int, ...], perm: tuple[int, ...], dt: str) -> None:
    x = np.arange(int(np.prod(shape))).astype(dt).reshape(shape)
    ref = np.ascontiguousarray(np.transpose(x, perm))
    out = np.zeros_like(ref)
    permute4_kernel[(1,)](x, out, *shape, *perm)
    np.testing.assert_array_equal(out, ref)


@triton.jit
def permute3_kernel(X, Y, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr,
                    p0: tl.constexpr, p1: tl.constexpr, p2: tl.constexpr):
    a = tl.arange(0, A)[:, None, None]
    b = tl.arange(0, B)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    x = tl.load(X + a * B * C + b * C + c)
    y = tl.permute(x, p0, p1, p2)
    S = (A, B, C)
    o0 = tl.arange(0, S[p0])[:, None, None]
    o1 = tl.arange(0, S[p1])[None, :, None]
    o2 = tl.arange(0, S[p2])[None, None, :]
    tl.store(Y + o0 * S[p1] * S[p2] + o1 * S[p2] + o2, y)


@pytest.mark.parametrize("perm", list(itertools.permutations(range(3))))
def test_permute_3d(perm: tuple[int, ...]) -> None:
    shape = (2, 8, 4)
    x = np.random.RandomState(1).randn(*shape).astype(np.float32)
    ref = np.ascontiguousarray(np.transpose(x, perm))
    out = np.zeros_like(ref)
    permute3_kernel[(1,)](x, out, *shape, *perm)
    np.testing.assert_array_equal(out, ref)


@triton.jit
def math4_kernel(X, Y, Z, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, D: tl.constexpr,
                 AX: tl.constexpr, R: tl.constexpr):
    a = tl.arange(0, A)[:, None, None, None]
    b = tl.arange(0, B)[None, :, None, None]
    c = tl.arange(0, C)[None, None, :, None]
    d = tl.arange(0, D)[None, None, None, :]
    offs = a * (B * C * D) + b * (C * D) + c * D + d
    x = tl.load(X + offs)
    two = tl.zeros((A, B, C, D), dtype=tl.float32) + tl.full((A, B, C, D), 2.0, tl.float32)
    y = tl.exp(x) * two + tl.where(x > 0, x, -x)
    tl.store(Y + offs, y, mask=offs < A * B * C * D - 1)
    s = tl.sum(y, axis=AX, keep_dims=True) + tl.max(y, axis=AX, keep_dims=True)
    tl.store(Z + tl.arange(0, R), tl.reshape(s, (R, )))


@pytest.mark.parametrize("axis", [0, 1, 2, 3])
def test_math_and_reduce_4d(axis: int) -> None:
    shape = (2, 4, 8, 16)
    x = np.random.RandomState(axis).randn(*shape).astype(np.float32)
    y = np.full_like(x, -7.0)
    r = x.size // shape[axis]
    z = np.zeros(r, np.float32)
    math4_kernel[(1,)](x, y, z, *shape, axis, r)
    ey = np.exp(x) * 2 + np.abs(x)
    np.testing.assert_allclose(y.reshape(-1)[:-1], ey.reshape(-1)[:-1], rtol=1e-6, atol=1e-6)
    assert y.reshape(-1)[-1] == -7.0                       # masked off
    ez = ey.sum(axis, keepdims=True) + ey.max(axis, keepdims=True)
    np.testing.assert_allclose(z, ez.reshape(-1), rtol=1e-5, atol=1e-5)


@triton.jit
def keep_all_kernel(X, Z, M: tl.constexpr, N: tl.constexpr):
    x = tl.load(X + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    z = tl.sum(x, axis=None, keep_dims=True)
    tl.store(Z[None, None, :], z)        # a [1, 1] pointer tile: ':' past the rank is ignored


def test_index_past_rank() -> None:
    x = np.random.RandomState(0).randn(8, 16).astype(np.float32)
    z = np.zeros(1, np.float32)
    keep_all_kernel[(1,)](x, z, 8, 16)
    np.testing.assert_allclose(z[0], x.sum(), rtol=1e-5)


def test_rank5_is_an_error() -> None:
    @triton.jit
    def k(X):
        tl.store(X + tl.zeros((2, 2, 2, 2, 2), dtype=tl.int32), 1)

    with pytest.raises(triton.TilecError, match="at most 4-D"):
        k[(1,)](np.zeros(1, np.int32))


@triton.jit
def reduce3_kernel(X, Y, Z, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr,
                   AX: tl.constexpr):
    """test_core's 3-D reduce: a [A, B, C] tile summed along AX, the 2-D result
    stored through 2-D pointers; then max of that along its last axis."""
    a = tl.arange(0, A)[:, None, None]
    b = tl.arange(0, B)[None, :, None]
    c = tl.arange(0, C)[None, None, :]
    x = tl.load(X + a * B * C + b * C + c)
    s = tl.sum(x, axis=AX)
    S = (A, B, C)
    P: tl.constexpr = S[0] if AX != 0 else S[1]
    Q: tl.constexpr = S[2] if AX != 2 else S[1]
    tl.store(Y + tl.arange(0, P)[:, None] * Q + tl.arange(0, Q)[None, :], s)
    tl.store(Z + tl.arange(0, P), tl.max(s, axis=1))


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_reduce_3d_to_2d(axis: int) -> None:
    shape = (2, 8, 16)
    x = np.random.RandomState(axis).randn(*shape).astype(np.float32)
    want = x.sum(axis)
    y = np.zeros_like(want)
    z = np.zeros(want.shape[0], np.float32)
    reduce3_kernel[(1,)](x, y, z, *shape, axis)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(z, y.max(1), rtol=0, atol=0)


@pytest.mark.parametrize("target", ["sm90", "gfx942"])
def test_rank3_and_rank4_assemble_for_gpus(target: str) -> None:
    """What compiles on GPUs (ptxas / ld.lld; not run on one here): 3-D and 4-D
    elementwise math, masked 4-D stores through pointer tiles, keep_dims
    reductions along each 4-D axis, 3-D permute, 4-D -> 1-D reshape, and 3-D
    reductions to 2-D results (tile-layout converts the reduce result to a
    blocked layout of its own) reduced again, and the [1, 1] pointer tile of
    `Z[None, None, :]`.  4-D block pointers: test_block_ptr_4d_assembles_for_gpus."""
    from tests.compat.gpu_check import assemble
    for perm in itertools.permutations(range(3)):
        assemble(permute3_kernel, target, "*fp32,*fp32",
                 dict(A=2, B=8, C=4, p0=perm[0], p1=perm[1], p2=perm[2]))
    assemble(keep_all_kernel, target, "*fp32,*fp32", dict(M=8, N=16))
    for ax, size in enumerate((2, 4, 8, 16)):
        assemble(math4_kernel, target, "*fp32,*fp32,*fp32",
                 dict(A=2, B=4, C=8, D=16, AX=ax, R=1024 // size))
    for ax in range(3):
        assemble(reduce3_kernel, target, "*fp32,*fp32,*fp32", dict(A=2, B=8, C=16, AX=ax))


BLOCK_PTR_4D = [(shape, perm, dt) for shape in [(2, 2, 8, 64), (4, 4, 4, 4)] for perm in PERMS
                for dt in ["int32", "int8"]]


@pytest.mark.parametrize("target", ["sm90", "gfx942"])
@pytest.mark.parametrize("shape,perm,dt", sample(BLOCK_PTR_4D, 12))
def test_block_ptr_4d_assembles_for_gpus(target: str, shape: tuple[int, ...],
                                         perm: tuple[int, ...], dt: str) -> None:
    """permute4_kernel's 4-D block pointers for GPUs (ptxas / ld.lld; not run on
    one here): tile-lower-descriptors builds each dimension's index tile as a
    chain of expand_dims through 3-D, which tile-layout folds into one reshape
    (passes/tile_layout_chains.py)."""
    from tests.compat.gpu_check import assemble
    ty = {"int32": "*i32", "int8": "*i8"}[dt]
    assemble(permute4_kernel, target, f"{ty},{ty}",
             dict(zip("ABCD", shape), **dict(zip(("p0", "p1", "p2", "p3"), perm))))
