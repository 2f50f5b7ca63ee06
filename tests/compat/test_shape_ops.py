"""Shape ops with Triton's semantics against NumPy: tl.join / tl.split /
tl.interleave / tl.cat (can_reorder and dim=) / tl.flip on 1-D and 2-D tiles
(tiles are at most 4-D: a join of 4-D tiles is an error naming the limit),
the tile methods .split/.reshape/.flip; pointer <-> integer casts
(`x.to(tl.pointer_type(T))`, tutorial 08's address table) and isinstance on
tiles and tensor descriptors; each compiled for sm90 and gfx942."""
from __future__ import annotations

import numpy as np
import pytest

import tilec as triton
import tilec.language as tl


@triton.jit
def shapes_1d(x_ptr, y_ptr, o_join, o_il, o_s0, o_s1, o_cat, o_flip, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    j = tl.join(x, y)
    tl.store(o_join + offs[:, None] * 2 + tl.arange(0, 2)[None, :], j)
    tl.store(o_il + tl.arange(0, 2 * N), tl.interleave(x, y))
    a, b = j.split()
    tl.store(o_s0 + offs, a)
    tl.store(o_s1 + offs, b)
    tl.store(o_cat + tl.arange(0, 2 * N), tl.cat(x, y, can_reorder=True))
    tl.store(o_flip + offs, tl.flip(x))


@pytest.mark.parametrize("dt", ["float32", "int8", "float16", "int64"])
def test_join_split_interleave_cat_flip_1d(dt: str) -> None:
    n = 64
    rng = np.random.default_rng(3)
    x = (rng.random(n) * 100).astype(dt)
    y = (rng.random(n) * 100).astype(dt)
    outs = [np.zeros(s, dt) for s in (2 * n, 2 * n, n, n, 2 * n, n)]
    shapes_1d[(1,)](x, y, *outs, N=n)
    both = np.stack([x, y], -1).ravel()
    for got, want in zip(outs, [both, both, x, y, np.concatenate([x, y]), x[::-1]]):
        np.testing.assert_array_equal(got, want)


@triton.jit
def shapes_2d(x_ptr, y_ptr, o_il, o_cat0, o_cat1, o_f0, o_f1, o_s, M: tl.constexpr,
              N: tl.constexpr):
    m = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + m)
    y = tl.load(y_ptr + m)
    w = tl.arange(0, M)[:, None] * (2 * N) + tl.arange(0, 2 * N)[None, :]
    tl.store(o_il + w, tl.interleave(x, y))
    tl.store(o_cat0 + tl.arange(0, 2 * M)[:, None] * N + tl.arange(0, N)[None, :],
             tl.cat(x, y, dim=0))
    tl.store(o_cat1 + w, tl.cat(x, y, dim=1))
    tl.store(o_f0 + m, tl.flip(x, 0))
    tl.store(o_f1 + m, x.flip(dim=-1))
    pairs = x.reshape([M * N // 2, 2])
    lo, hi = tl.split(pairs)
    tl.store(o_s + tl.arange(0, M * N // 2), lo - hi)


# 8 x 16: tiles as vectors; 32 x 64 and 16 x 8: the CPU keeps tiles of more
# than 128 elements in buffers (passes/cpu/tiled.py: views, memcpys, gathers).
@pytest.mark.parametrize("mm,n,dt", [(8, 16, "float32"), (32, 64, "float32"),
                                     (32, 64, "int8"), (16, 8, "float16")])
def test_interleave_cat_flip_split_2d(mm: int, n: int, dt: str) -> None:
    rng = np.random.default_rng(4)
    x = (rng.random((mm, n)) * 100).astype(dt)
    y = (rng.random((mm, n)) * 100).astype(dt)
    outs = [np.zeros(s, dt) for s in
            ((mm, 2 * n), (2 * mm, n), (mm, 2 * n), (mm, n), (mm, n), (mm * n // 2,))]
    shapes_2d[(1,)](x, y, *outs, M=mm, N=n)
    flat = x.ravel()
    want = [np.stack([x, y], -1).reshape(mm, 2 * n), np.concatenate([x, y], 0),
            np.concatenate([x, y], 1), x[::-1], x[:, ::-1], flat[0::2] - flat[1::2]]
    for got, w in zip(outs, want):
        np.testing.assert_array_equal(got, w)


@triton.jit
def join_2d(x_ptr, y_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
    j = tl.join(tl.load(x_ptr + offs), tl.load(y_ptr + offs))        # [N, N, 2]
    tl.store(o_ptr + offs[:, :, None] * 2 + tl.arange(0, 2)[None, None, :], j)
    a, b = tl.split(j)
    tl.store(x_ptr + offs, b)
    tl.store(y_ptr + offs, a)


@pytest.mark.parametrize("n", [4, 16])
def test_join_split_of_2d_tiles(n: int) -> None:
    x = np.arange(n * n, dtype=np.float32).reshape(n, n)
    y = -x - 1
    o = np.zeros((n, n, 2), np.float32)
    xs, ys = x.copy(), y.copy()
    join_2d[(1,)](xs, ys, o, N=n)
    np.testing.assert_array_equal(o, np.stack([x, y], -1))
    np.testing.assert_array_equal(xs, y)
    np.testing.assert_array_equal(ys, x)


@triton.jit
def join_4d(x_ptr):
    x = tl.zeros((2, 2, 2, 2), tl.float32)
    tl.store(x_ptr, tl.sum(tl.reshape(tl.join(x, x), (32,))))


def test_join_of_4d_tiles_is_an_error() -> None:
    with pytest.raises(triton.TilecError, match="at most 4-D"):
        join_4d[(1,)](np.zeros(1, np.float32))


@triton.jit
def cat_needs_same_shape(x_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    y = tl.load(x_ptr + tl.arange(0, 2 * N))
    tl.store(x_ptr, tl.sum(tl.cat(x, y)))


def test_cat_shape_mismatch_is_an_error() -> None:
    with pytest.raises(triton.TilecError, match="one shape"):
        cat_needs_same_shape[(1,)](np.zeros(64, np.float32), N=16)


@triton.jit
def through_addresses(addrs, out, N: tl.constexpr):
    """Tutorial 08's pattern: matrix addresses kept in an int64 array."""
    offs = tl.arange(0, N)
    src = tl.load(addrs).to(tl.pointer_type(tl.float16))
    dst = tl.load(addrs + 1).to(tl.pointer_type(tl.float16))
    tl.store(dst + offs, tl.load(src + offs) * 2)
    tl.store(out + offs, (src + offs).to(tl.int64))
    as_int = src.to(tl.pointer_type(tl.int16))  # pointer -> pointer: a re-typed address
    tl.store(out + N + offs, tl.load(as_int + offs).to(tl.int64))


def test_int_to_pointer_casts() -> None:
    torch = pytest.importorskip("torch")
    n = 32
    src = torch.arange(n, dtype=torch.float16)
    dst = torch.zeros(n, dtype=torch.float16)
    addrs = torch.tensor([src.data_ptr(), dst.data_ptr()], dtype=torch.int64)
    out = torch.zeros(2 * n, dtype=torch.int64)
    through_addresses[(1,)](addrs, out, N=n)
    assert torch.equal(dst, src * 2)
    np.testing.assert_array_equal(out[:n].numpy(), src.data_ptr() + 2 * np.arange(n))
    np.testing.assert_array_equal(out[n:].numpy(), src.view(torch.int16).numpy())


@triton.jit
def float_to_pointer(x_ptr):
    p = tl.load(x_ptr).to(tl.pointer_type(tl.float32))
    tl.store(p, 1.0)


def test_float_to_pointer_is_an_error() -> None:
    with pytest.raises(triton.TilecError, match="only integers"):
        float_to_pointer[(1,)](np.zeros(4, np.float32))


@triton.jit
def _desc_or_ptr(x, N: tl.constexpr):
    if isinstance(x, tl.tensor_descriptor):
        return x.load([0])
    else:
        return tl.load(x + tl.arange(0, N))


@triton.jit
def isinstance_kernel(x_ptr, o_ptr, N: tl.constexpr):
    d = tl.make_tensor_descriptor(x_ptr, shape=[N], strides=[1], block_shape=[N])
    v = _desc_or_ptr(d, N) + _desc_or_ptr(x_ptr, N)
    tl.static_assert(isinstance(v, tl.tensor))
    tl.store(o_ptr + tl.arange(0, N), v)


def test_isinstance_tensor_and_descriptor() -> None:
    x = np.arange(16, dtype=np.float32)
    o = np.zeros(16, np.float32)
    isinstance_kernel[(1,)](x, o, N=16)
    np.testing.assert_array_equal(o, 2 * x)


@pytest.mark.parametrize("target", ["sm90", "gfx942"])
def test_shape_ops_and_casts_assemble_for_gpus(target: str) -> None:
    from tests.compat.gpu_check import assemble
    assemble(shapes_1d, target, ",".join(["*fp32"] * 8), {"N": 64})
    assemble(shapes_2d, target, ",".join(["*fp32"] * 8), {"M": 8, "N": 16})
    assemble(through_addresses, target, "*i64,*i64", {"N": 32})
    assemble(split_pair, target, "*fp32,*fp32,fp32,fp32", {})


@triton.jit
def split_pair(x_ptr, o_ptr, s, t):
    pair = tl.load(x_ptr + tl.arange(0, 2))
    a, b = tl.split(pair)                 # two scalars, as in Triton
    tl.static_assert(len(a.shape) == 0)
    tl.store(o_ptr, b)
    tl.store(o_ptr + 1, a)
    c, d = tl.join(s, t).split()          # scalars -> [2] -> scalars
    tl.store(o_ptr + 2 + tl.arange(0, 2), tl.join(d, c))
    tl.store(o_ptr + 4 + tl.arange(0, 4), tl.where(tl.arange(0, 4) < 4, a, b))  # a broadcast


@pytest.mark.parametrize("dt", ["float32", "float16", "int8", "uint64"])
def test_split_of_a_pair_gives_scalars(dt: str) -> None:
    if dt.startswith("float"):
        x = np.array([-0.0, np.nan], dt)   # bit patterns survive the split
        s, t = 1.5, -2.25
    else:
        x = np.array([7, 100], dt)
        s, t = 3, 5
    o = np.zeros(8, dt)
    split_pair[(1,)](x, o, s, t)
    want = np.array([x[1], x[0], t, s, x[0], x[0], x[0], x[0]], dt)
    np.testing.assert_array_equal(o.view(f"u{o.itemsize}"), want.view(f"u{o.itemsize}"))
