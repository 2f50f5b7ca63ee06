"""Workgroup memory of register-operand dots is reused from one dot to the next
(convert-tile-to-gpu: passes/gpu/dot.py releases a staged dot's buffers after
the FMA loop and after the mma.sync / MFMA emitters; targets/nvidia/wgmma.py
and tcgen05.py release theirs after the wait).  Before, every mma.sync or
wgmma dot kept its operand buffers for the rest of the kernel, so a kernel of
many dots (an attention backward) summed them past sm90's 232448 bytes.

The kernels are ours, shaped like an attention backward at D = 128: a dK loop
with narrow diagonal steps (128x16 scores: the FMA dot) and 32-wide steps
(mma.sync: N or K = 32 rules out wgmma), then a dQ loop; and a straight-line
chain of 128x128x128 dots that take wgmma on sm90 (tcgen05 on sm100).
Results are stored as fp16 (their layout exchange is smaller than the dots'
staging), so the shared peak must be that of the largest single dot's
staging; ptxas must accept the PTX."""
from __future__ import annotations

from typing import Any

import pytest

import tilec as triton
import tilec.language as tl
from tilec.targets import toolchain


@triton.jit
def _dk_steps(dk, k, v, Q, DO, M, Delta, rows, start, n_steps, D: tl.constexpr,
              STEP: tl.constexpr, CAUSAL: tl.constexpr):
    offs_d = tl.arange(0, D)
    for i in range(n_steps):
        cols = start + i * STEP + tl.arange(0, STEP)
        q_t = tl.load(Q + cols[None, :] * D + offs_d[:, None])           # [D, STEP]
        s_t = tl.dot(k, q_t)                                               # [BLOCK, STEP]
        p_t = tl.math.exp2(s_t - tl.load(M + cols)[None, :])
        if CAUSAL:
            p_t = tl.where(cols[None, :] >= rows[:, None], p_t, 0.0)
        g = tl.load(DO + cols[:, None] * D + offs_d[None, :])              # [STEP, D]
        dp_t = tl.dot(v, tl.trans(g))                                      # [BLOCK, STEP]
        ds_t = (p_t * (dp_t - tl.load(Delta + cols)[None, :])).to(tl.float16)
        dk = tl.dot(ds_t, tl.trans(q_t), dk)                               # K = STEP
    return dk


@triton.jit
def backward_like(Q, K, V, DO, DQ, DK, M, Delta, N_CTX, D: tl.constexpr,
                  BLOCK: tl.constexpr, STEP: tl.constexpr, DIAG: tl.constexpr):
    pid = tl.program_id(0)
    offs_d = tl.arange(0, D)
    rows = pid * BLOCK + tl.arange(0, BLOCK)
    tile = rows[:, None] * D + offs_d[None, :]
    k = tl.load(K + tile)
    v = tl.load(V + tile)
    dk = tl.zeros([BLOCK, D], dtype=tl.float32)
    dk = _dk_steps(dk, k, v, Q, DO, M, Delta, rows, pid * BLOCK, BLOCK // DIAG, D, DIAG, True)
    start = (pid + 1) * BLOCK
    dk = _dk_steps(dk, k, v, Q, DO, M, Delta, rows, start, (N_CTX - start) // STEP, D, STEP,
                   False)
    tl.store(DK + tile, dk.to(tl.float16))
    q = tl.load(Q + tile)
    g = tl.load(DO + tile)
    m = tl.load(M + rows)[:, None]
    delta = tl.load(Delta + rows)[:, None]
    dq = tl.zeros([BLOCK, D], dtype=tl.float32)
    for j in range(0, pid * BLOCK, STEP):
        cols = j + tl.arange(0, STEP)
        k_t = tl.load(K + cols[None, :] * D + offs_d[:, None])            # [D, STEP]
        v_t = tl.load(V + cols[None, :] * D + offs_d[:, None])
        p = tl.math.exp2(tl.dot(q, k_t) - m)                               # [BLOCK, STEP]
        ds = (p * (tl.dot(g, v_t) - delta)).to(tl.float16)
        dq = tl.dot(ds, tl.trans(k_t), dq)                                 # K = STEP
    tl.store(DQ + tile, dq.to(tl.float16))


@triton.jit
def dot_chain(A, B, C, O, N: tl.constexpr):
    offs = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
    s = tl.dot(tl.load(A + offs), tl.load(B + offs))
    t = tl.dot(s.to(tl.float16), tl.load(C + offs))
    u = tl.dot(tl.load(A + offs), t.to(tl.float16))
    tl.store(O + offs, u.to(tl.float16))


def _cubin(ck: Any) -> None:
    if toolchain.find_ptxas() is None:
        pytest.skip("ptxas not found")
    assert ck.asm.get("cubin", b"")[:4] == b"\x7fELF", ck.metadata.get("cubin_error")


# The shared peak is the staging of the largest dot alone, k [128, 128] @ q_t
# [128, 32]: with 4 warps on mma.sync (rows padded by 8 elements), with 8 warps
# on the FMA loop (unpadded; 32 columns are too few for 8 warps' 8-wide
# mma.sync tiles).  Before, the dots' buffers added up: 263424 bytes with 4
# warps (over sm90's 232448), 83200 with 8.
@pytest.mark.parametrize("num_warps, peak", [(4, 2 * (128 * (128 + 8) + 128 * (32 + 8))),
                                             (8, 2 * (128 * 128 + 128 * 32))])
def test_backward_like_fits_sm90(num_warps: int, peak: int) -> None:
    sig = "*fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp16:16, *fp32:16, *fp32:16, i32:16"
    ck = backward_like.compile(target="sm90", signature=sig, num_warps=num_warps,
                               constexprs=dict(D=128, BLOCK=128, STEP=32, DIAG=16))
    assert ck.metadata["shared"] == peak
    _cubin(ck)


@pytest.mark.parametrize("target, instr", [("sm90", "wgmma.mma_async"), ("sm100", "tcgen05.mma")])
def test_async_mma_chain_reuses_staging(target: str, instr: str) -> None:
    ck = dot_chain.compile(target=target, signature="*fp16:16, *fp16:16, *fp16:16, *fp16:16",
                           constexprs=dict(N=128), num_warps=4)
    assert instr in ck.asm["ptx"]
    # One dot's swizzled A and B (32 KiB each, 1024-byte aligned) at a time;
    # before, the three dots' buffers added up (198656 bytes on sm90).
    one_dot = 2 * 128 * 128 * 2
    assert one_dot <= ck.metadata["shared"] < 2 * one_dot
    _cubin(ck)
