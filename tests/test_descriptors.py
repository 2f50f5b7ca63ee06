"""Tensor descriptors (`tl.make_tensor_descriptor`, `desc.load`, `desc.store`) on the
CPU against NumPy: ragged shapes, strided rows, offsets outside the tensor
(reads give 0, stores are dropped), 1-D descriptors; GPU compilation; misuse."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest
import torch

import tilec
import tilec.language as tl

THIS_FILE = str(pathlib.Path(__file__).resolve())


@tilec.kernel
def scale2d(x_ptr, y_ptr, M, N, sx, sy, om, on, BM: tl.constexpr, BN: tl.constexpr):
    xd = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[sx, 1], block_shape=[BM, BN])
    yd = tl.make_tensor_descriptor(y_ptr, [M, N], [sy, 1], [BM, BN])
    pm = tl.program_id(0) * BM + om
    pn = tl.program_id(1) * BN + on
    yd.store([pm, pn], xd.load([pm, pn]) * 2 + 1)


@tilec.kernel
def window(x_ptr, out_ptr, M, N, om, on, BM: tl.constexpr, BN: tl.constexpr):
    """out (BM x BN, dense) = the block of x at (om, on), zeros outside x."""
    xd = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [BM, BN])
    od = tl.make_tensor_descriptor(out_ptr, [BM, BN], [BN, 1], [BM, BN])
    od.store([0, 0], xd.load([om, on]))


@tilec.kernel
def copy1d(x_ptr, y_ptr, n, off, B: tl.constexpr):
    xd = tl.make_tensor_descriptor(x_ptr, [n], [1], [B])
    yd = tl.make_tensor_descriptor(y_ptr, [n], [1], [B])
    o = tl.program_id(0) * B + off
    yd.store([o], xd.load([o]) + 0.5)


@pytest.mark.parametrize("m,n", [(1, 1), (37, 21), (64, 32), (100, 3)])
def test_descriptor_round_trip_on_ragged_shapes(m: int, n: int) -> None:
    rng = np.random.default_rng(m * n)
    base = rng.standard_normal((m, n + 5)).astype(np.float32)
    x = base[:, 2:2 + n]                      # rows strided by n + 5
    y = np.full((m, n + 3), np.nan, np.float32)
    bm, bn = 16, 8
    scale2d[(tilec.cdiv(m, bm), tilec.cdiv(n, bn))](x, y, m, n, x.strides[0] // 4,
                                                     y.strides[0] // 4, 0, 0, BM=bm, BN=bn)
    np.testing.assert_array_equal(y[:, :n], x * 2 + 1)
    assert np.isnan(y[:, n:]).all(), "stores past the last column must be dropped"


def test_offsets_outside_the_tensor_read_zero_and_drop_stores() -> None:
    m, n = 20, 12
    x = torch.arange(m * n, dtype=torch.float16).reshape(m, n)
    for om, on in [(-3, -5), (15, 9), (-16, 0), (20, 12), (7, -8)]:
        out = torch.full((16, 8), -1.0, dtype=torch.float16)
        window[(1,)](x, out, m, n, om, on, BM=16, BN=8)
        want = torch.zeros((16, 8), dtype=torch.float16)
        rows = [r for r in range(16) if 0 <= om + r < m]
        cols = [c for c in range(8) if 0 <= on + c < n]
        for r in rows:
            for c in cols:
                want[r, c] = x[om + r, on + c]
        assert torch.equal(out, want), (om, on)
    # Shifted grids: every element is written exactly once, the rest dropped.
    y = torch.full((m, n), float("nan"))
    xf = x.float()
    scale2d[(tilec.cdiv(m, 16) + 1, tilec.cdiv(n, 8) + 1)](xf, y, m, n, n, n, -5, -3, BM=16, BN=8)
    assert torch.equal(y, xf * 2 + 1)


@pytest.mark.parametrize("n,off", [(1, 0), (100, 0), (100, -7), (33, 5)])
def test_one_dimensional_descriptor(n: int, off: int) -> None:
    x = np.arange(n, dtype=np.float32)
    y = np.full(n, np.nan, np.float32)
    copy1d[(tilec.cdiv(n, 32) + 1,)](x, y, n, off, B=32)
    covered = np.zeros(n, bool)
    for p in range(tilec.cdiv(n, 32) + 1):
        lo, hi = max(p * 32 + off, 0), min(p * 32 + off + 32, n)
        covered[lo:hi] = True
    np.testing.assert_array_equal(y[covered], x[covered] + 0.5)
    assert np.isnan(y[~covered]).all()


@pytest.mark.parametrize("target", ["sm80", "sm90", "sm100", "gfx942", "gfx1100"])
def test_descriptors_compile_for_gpus(target: str) -> None:
    ck = scale2d.compile(target=target, signature="*fp16:16,*fp16:16,i32,i32,i32:16,i32:16,i32,i32",
                         constexprs={"BM": 64, "BN": 64})
    assert ck.asm.get("cubin") or ck.asm.get("hsaco")
    assert "descriptor" not in ck.asm["tiled"]


def test_aligned_descriptor_accesses_are_vector_loads_on_sm90() -> None:
    ck = window.compile(target="sm90", signature="*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16",
                        constexprs={"BM": 64, "BN": 64})
    assert "ld.global.v4.b32" in ck.asm["ptx"] and "st.global.v4.b32" in ck.asm["ptx"]


@tilec.kernel
def bad_desc(x_ptr, n, s, CASE: tl.constexpr, B: tl.constexpr):
    if CASE == 0:
        d = tl.make_tensor_descriptor(x_ptr, [n, n], [s, 1], [n, 16])  # <- 0
    elif CASE == 1:
        d = tl.make_tensor_descriptor(x_ptr, [n, n], [n, s], [B, B])  # <- 1
    elif CASE == 2:
        d = tl.make_tensor_descriptor(x_ptr, [n, n], [n, 2], [B, B])  # <- 2
    elif CASE == 3:
        d = tl.make_tensor_descriptor(x_ptr, [n], [1], [B, B])  # <- 3
    elif CASE == 4:
        d = tl.make_tensor_descriptor(n, [n], [1], [B])  # <- 4
    else:
        d = tl.make_tensor_descriptor(x_ptr, [n, n], [n, 1], [B, B])
        v = d.load([0])  # <- 5
    tl.store(x_ptr, 1.0)


@pytest.mark.parametrize("case,text", [
    (0, "must be a compile-time constant"), (1, "last stride of a tensor descriptor must be "
                                                "the constant 1"),
    (2, "last stride of a tensor descriptor must be the constant 1"),
    (3, "shape has 1 entries; the block shape has 2"), (4, "needs a pointer as its base"),
    (5, "the offsets has 1 entries; the block shape has 2"),
])
def test_descriptor_misuse_points_at_the_line(case: int, text: str) -> None:
    with pytest.raises(tilec.TilecError) as e:
        bad_desc.compile(target="cpu", signature="*fp32,i32,i32",
                         constexprs={"CASE": case, "B": 16})
    err = e.value
    assert err.loc is not None and pathlib.Path(err.loc.file).resolve() == pathlib.Path(THIS_FILE)
    assert f"<- {case}" in str(err) and text in str(err), str(err)


@tilec.kernel
def last_stride_arg(x_ptr, M, N, sm, sn, B: tl.constexpr):
    d = tl.make_tensor_descriptor(x_ptr, [M, N], [sm, sn], [B, B])
    d.store([0, 0], d.load([0, 0]) + 1.0)


def test_a_stride_argument_equal_to_one_is_the_constant_one() -> None:
    """An int argument specialized to 1 (Triton's equal_to_1) is the constant 1,
    so it may be the last stride; a general int argument may not."""
    x = np.zeros((4, 4), np.float32)
    last_stride_arg[(1,)](x, 4, 4, 4, 1, B=4)
    np.testing.assert_array_equal(x, np.ones((4, 4), np.float32))
    with pytest.raises(tilec.TilecError, match="must be the constant 1"):
        last_stride_arg.compile(target="cpu", signature="*fp32,i32,i32,i32,i32",
                                constexprs={"B": 4})
