"""Kernels that LLVM's x86 back end once miscompiled on this machine, and the
feature choices that avoid them (targets/cpu/backend.py AVOID_FEATURES)."""
import numpy as np

import tilec
import tilec.language as tl
from targets.cpu.backend import AVOID_FEATURES, host_cpu


@tilec.kernel
def _add_rows_int64(x_ptr, y_ptr, out_ptr, COLS: tl.constexpr, ROWS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    at = rows.to(tl.int64)[:, None] * COLS + tl.arange(0, COLS)[None, :]
    tl.store(out_ptr + at, tl.load(x_ptr + at) + tl.load(y_ptr + at))


@tilec.kernel
def _row_dot_int64(x_ptr, y_ptr, out_ptr, COLS: tl.constexpr, ROWS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    at = rows.to(tl.int64)[:, None] * COLS + tl.arange(0, COLS)[None, :]
    x = tl.load(x_ptr + at).to(tl.float32)
    y = tl.load(y_ptr + at).to(tl.float32)
    tl.store(out_ptr + rows, tl.sum(x * y, 1))


def test_avoided_features_are_off() -> None:
    _, features = host_cpu()
    for name in AVOID_FEATURES:
        assert f"+{name}" not in features.split(",")


def test_int64_row_offsets_of_a_2d_tile() -> None:
    # Rows 1.. of an 8x8 fp16 tile read row 0's address with avx512vl on.
    rng = np.random.default_rng(0)
    for rows, cols in ((8, 8), (16, 8), (8, 16), (64, 64)):
        x = rng.standard_normal((2 * rows, cols)).astype(np.float16)
        y = rng.standard_normal((2 * rows, cols)).astype(np.float16)
        out = np.zeros_like(x)
        _add_rows_int64[(2,)](x, y, out, COLS=cols, ROWS=rows)
        np.testing.assert_array_equal(out, x + y)
        got = np.zeros(2 * rows, np.float32)
        _row_dot_int64[(2,)](x, y, got, COLS=cols, ROWS=rows)
        want = (x.astype(np.float32) * y.astype(np.float32)).sum(1)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@tilec.kernel
def _bf16_wrapped_rows(b_ptr, c_ptr, N, K, stride_bk, BLOCK_N: tl.constexpr,
                       BLOCK_K: tl.constexpr):
    # `arange % N` with N a multiple of 16: 16-lane contiguous chunks, each a
    # masked load (and, for the copy back, a masked store) of bf16 lanes.
    offs_bn = tl.arange(0, BLOCK_N) % N
    offs_k = tl.arange(0, BLOCK_K)
    b = tl.load(b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :],
                mask=offs_k[:, None] < K, other=1.5)
    at = offs_k[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    tl.store(c_ptr + at, b, mask=offs_k[:, None] < K)


def test_masked_bf16_chunks_load_and_store() -> None:
    # LLVM 22's x86 back end aborted ("Cannot select: v16bf16 masked_load") on
    # a host with AVX512-BF16; bf16 lanes now move as their i16 bits
    # (passes/cpu/memory.py).  Triton's tutorial matmul in bf16 with N = 128
    # hit it.
    import torch
    b = torch.randn(64, 160).to(torch.bfloat16)
    for block_n, n in ((16, 112), (32, 48), (64, 112), (128, 96)):
        c = torch.full((64, block_n), 7.0, dtype=torch.bfloat16)
        _bf16_wrapped_rows[(1,)](b, c, n, 30, 160, BLOCK_N=block_n, BLOCK_K=64)
        cols = torch.arange(block_n) % n
        assert torch.equal(c[:30].view(torch.int16), b[:30, cols].view(torch.int16))
        assert (c[30:] == 7.0).all()
