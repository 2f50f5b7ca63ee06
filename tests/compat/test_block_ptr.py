"""Block pointers as Triton has them (tl.make_block_ptr / tl.advance, tl.load /
tl.store with boundary_check= and padding_option=): a loop-carried block-pointer
matmul over a non-contiguous operand against torch, padding with zero and NaN,
only the listed dimensions bounds-checked, a checked store that writes only the
inside, the user errors; sm90 and gfx942 assemble."""
from __future__ import annotations

import pytest
import torch

import tilec as triton
import tilec.language as tl
from tests.compat.gpu_check import GPU_TARGETS, assemble


@triton.jit
def bp_matmul(A, B, C, M, N, K, sam, sak, sbk, sbn, scm, scn,
              BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    a = tl.make_block_ptr(A, (M, K), (sam, sak), (pm * BM, 0), (BM, BK), (1, 0))
    b = tl.make_block_ptr(base=B, shape=(K, N), strides=(sbk, sbn), offsets=(0, pn * BN),
                          block_shape=(BK, BN), order=(0, 1))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, K, BK):
        acc += tl.dot(tl.load(a, boundary_check=(0, 1)),
                      tl.load(b, boundary_check=(1, 0), padding_option="zero"))
        a = tl.advance(a, (0, BK))
        b = tl.advance(b, [BK, 0])
    c = tl.make_block_ptr(C, (M, N), (scm, scn), (pm * BM, pn * BN), (BM, BN), (1, 0))
    tl.store(c, acc, boundary_check=(0, 1))


def test_block_ptr_matmul_loop_carried() -> None:
    torch.manual_seed(0)
    M, N, K = 37, 45, 50
    a = torch.randn(M, K)
    b = torch.randn(N, K).t()                       # strides (1, K): last stride is not 1
    c = torch.full((M, N), -7.0)
    grid = (triton.cdiv(M, 16), triton.cdiv(N, 16))
    bp_matmul[grid](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(), BM=16, BN=16, BK=16)
    torch.testing.assert_close(c, a @ b, atol=1e-4, rtol=1e-4)


@triton.jit
def bp_pad(X, Y, M, N, sx, PAD: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    p = tl.make_block_ptr(X, (M, N), (sx, 1), (tl.program_id(0) * BM, 2), (BM, BN), (1, 0))
    v = tl.load(p, boundary_check=(0, 1), padding_option=PAD)
    o = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(Y + tl.program_id(0) * BM * BN + o, v)


@pytest.mark.parametrize("pad", ["zero", "nan", ""])
def test_block_ptr_padding(pad: str) -> None:
    x = torch.arange(5 * 6, dtype=torch.float32).reshape(5, 6)
    y = torch.zeros(2, 4, 8)
    bp_pad[(2,)](x, y, 5, 6, x.stride(0), PAD=pad, BM=4, BN=8)
    fill = float("nan") if pad == "nan" else 0.0
    want = torch.full((8, 8), fill)
    want[:5, :4] = x[:, 2:]
    torch.testing.assert_close(y.reshape(8, 8), want, equal_nan=True)


@triton.jit
def bp_partial(X, Y, M, N: tl.constexpr, BM: tl.constexpr):
    # Only rows are checked: the columns are known to be inside (N == block width).
    p = tl.make_block_ptr(X, (M, N), (N, 1), (tl.program_id(0) * BM, 0), (BM, N), (1, 0))
    q = tl.make_block_ptr(Y, (M, N), (N, 1), (tl.program_id(0) * BM, 0), (BM, N), (1, 0))
    tl.store(q, tl.load(p, boundary_check=(0,)) * 2 + 1, boundary_check=[0])


def test_block_ptr_row_check_and_store_inside_only() -> None:
    x = torch.arange(6 * 8, dtype=torch.int32).reshape(6, 8)
    y = torch.full((8, 8), -1, dtype=torch.int32)   # rows 6, 7 lie outside M and stay -1
    bp_partial[(2,)](x, y, 6, N=8, BM=4)
    torch.testing.assert_close(y[:6], x * 2 + 1)
    assert (y[6:] == -1).all()


def test_block_ptr_errors() -> None:
    @triton.jit
    def masked(X, M):
        p = tl.make_block_ptr(X, (M,), (1,), (0,), (16,), (0,))
        tl.load(p, mask=tl.arange(0, 16) < M)

    @triton.jit
    def bad_dim(X, M):
        p = tl.make_block_ptr(X, (M,), (1,), (0,), (16,), (0,))
        tl.load(p, boundary_check=(1,))

    @triton.jit
    def nan_int(X, M):
        p = tl.make_block_ptr(X, (M,), (1,), (0,), (16,), (0,))
        tl.load(p, boundary_check=(0,), padding_option="nan")

    x = torch.zeros(16, dtype=torch.int32)
    for k, msg in ((masked, "not mask"), (bad_dim, "out of range"), (nan_int, "floating")):
        with pytest.raises(triton.TilecError, match=msg):
            k[(1,)](x, 16)


@pytest.mark.parametrize("target", GPU_TARGETS)
def test_block_ptr_assembles_for_gpus(target: str) -> None:
    assemble(bp_matmul, target, "*fp32,*fp32,*fp32" + ",i32" * 9,
             {"BM": 32, "BN": 32, "BK": 16})
