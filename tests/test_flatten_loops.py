"""tile-flatten-loops (`tl.range(..., flatten=True)`): the persistent matmul
example on the CPU against torch over ragged M/N/K (K = 0, K < BLOCK_K, tiles
not divisible by the programs) and fp16/bf16/fp8; a persistent nest with a
loop-carried outer value and a per-tile inner init; the GPU pipeliner on the flattened loop (sm80/sm90/sm100 assemble).  The
rewritten loop's shape: tests/lit/tile-flatten-loops/, tests/lit/tile-pipeline/flattened.py."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest
import torch

import tilec
import tilec.language as tl

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "examples"))
from matmul_persistent import matmul_persistent  # noqa: E402


def _persistent(a: torch.Tensor, b: torch.Tensor, block: tuple[int, int, int],
                programs: int) -> torch.Tensor:
    m, k = a.shape
    n = b.shape[0]
    c = torch.full((m, n), float("nan"), dtype=torch.float16)
    bm, bn, bk = block
    tiles = tilec.cdiv(m, bm) * tilec.cdiv(n, bn)
    matmul_persistent[(max(1, min(programs, tiles)),)](
        a, b, c, m, n, k, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=2, NUM_SMS=programs)
    return c


@pytest.mark.parametrize("m,n,k,programs", [
    (64, 64, 64, 1), (100, 70, 45, 3), (33, 129, 200, 4), (70, 50, 0, 3), (40, 90, 7, 5),
    (128, 32, 96, 7), (1, 1, 1, 2), (96, 96, 33, 2)])
def test_persistent_fp16(m: int, n: int, k: int, programs: int) -> None:
    g = torch.Generator().manual_seed(m * 131 + n * 7 + k)
    a = torch.randn((m, k), generator=g).to(torch.float16)
    b = torch.randn((n, k), generator=g).to(torch.float16)
    c = _persistent(a, b, (32, 32, 32), programs)
    want = (a.double() @ b.double().T).numpy()
    np.testing.assert_allclose(c.double().numpy(), want, rtol=2e-2, atol=2e-2 * np.sqrt(max(k, 1)))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float8_e4m3fn])
@pytest.mark.parametrize("m,n,k", [(50, 40, 30), (65, 33, 0), (48, 80, 100)])
def test_persistent_dtypes(dtype: torch.dtype, m: int, n: int, k: int) -> None:
    g = torch.Generator().manual_seed(m + n + k)
    a = torch.randn((m, k), generator=g).to(dtype)
    b = torch.randn((n, k), generator=g).to(dtype)
    c = _persistent(a, b, (32, 32, 32), 3)
    want = (a.double() @ b.double().T).numpy()
    tol = 6e-2 if dtype == torch.bfloat16 else 2e-2
    np.testing.assert_allclose(c.double().numpy(), want, rtol=tol, atol=tol * np.sqrt(max(k, 1)))


@pytest.mark.parametrize("m,n,k", [(70, 50, 45), (33, 129, 0), (64, 64, 96)])
def test_persistent_f32_output(m: int, n: int, k: int) -> None:
    """The example with C_F32=True stores the f32 accumulator itself."""
    g = torch.Generator().manual_seed(m + n + k)
    a = torch.randn((m, k), generator=g).to(torch.float16)
    b = torch.randn((n, k), generator=g).to(torch.float16)
    c = torch.full((m, n), float("nan"), dtype=torch.float32)
    tiles = tilec.cdiv(m, 32) * tilec.cdiv(n, 32)
    matmul_persistent[(min(3, tiles),)](a, b, c, m, n, k, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32,
                                        GROUP_M=2, NUM_SMS=3, C_F32=True)
    want = (a.double() @ b.double().T).numpy()
    np.testing.assert_allclose(c.double().numpy(), want, rtol=1e-4, atol=1e-3 * np.sqrt(max(k, 1)))


@tilec.kernel
def _row_sums(x_ptr, out_ptr, M, K, BM: tl.constexpr, BK: tl.constexpr, NP: tl.constexpr):
    """out[r] = r + sum(x[r, :]) + (the tile's place in its program's sequence + 1):
    a per-tile inner init and an outer loop-carried count."""
    count = 0
    for t in tl.range(tl.program_id(0), tl.cdiv(M, BM), NP, flatten=True):
        rows = t * BM + tl.arange(0, BM)
        acc = rows.to(tl.float32)
        for kb in range(tl.cdiv(K, BK)):
            cols = kb * BK + tl.arange(0, BK)
            x = tl.load(x_ptr + rows[:, None] * K + cols[None, :],
                        mask=(rows[:, None] < M) & (cols[None, :] < K), other=0.0)
            acc += tl.sum(x, axis=1)
        count += 1
        tl.store(out_ptr + rows, acc + count, mask=rows < M)


@pytest.mark.parametrize("m,k,np_", [(100, 50, 3), (64, 0, 2), (33, 7, 5), (200, 64, 1)])
def test_carried_outer_value_and_per_tile_init(m: int, k: int, np_: int) -> None:
    rng = np.random.default_rng(m + k)
    x = rng.standard_normal((m, k)).astype(np.float32)
    out = np.full(m, np.nan, dtype=np.float32)
    bm = 16
    _row_sums[(np_,)](x, out, m, k, BM=bm, BK=16, NP=np_)
    rows = np.arange(m)
    want = rows + x.sum(axis=1) + (rows // bm) // np_ + 1
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("target", ["sm80", "sm90", "sm100"])
def test_gpu_flattens(target: str) -> None:
    """NVIDIA's stage list runs tile-flatten-loops: the persistent example's
    loops are one pipelined loop (rings allocated once) that assembles without
    spills, and on sm90 ptxas injects no wgmma wait (C7517: a product in flight
    on the loop's exit path made it wait in every iteration)."""
    ck = matmul_persistent.compile(
        target=target, signature="*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16",
        num_warps=8, num_stages=3,
        constexprs={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "NUM_SMS": 132})
    tiled = ck.asm["tiled"]
    assert "tile.flattened" in tiled
    if target != "sm80":   # B used as b.T: sm80's mma_sync rings take B N-major only
        assert '"tile.mma"' in tiled
    if ck.metadata.get("registers"):
        assert ck.metadata["spill_stores"] == 0
        assert "C7517" not in ck.metadata.get("ptxas_log", "")
