"""Issue 11, finding 6: `tl.dot` kernels with the tile shapes the GPU targets
accept (accumulators up to 256 x 256, BLOCK_K up to 128) compile for the CPU in
seconds.  Whole-tile vectors took minutes in LLVM's code generation (a
128 x 128 x 64 fp16 dot 535 s, 64 x 64 x 32 about 50 s); big tiles now live in
stack buffers and `tl.dot` is a register-blocked microkernel
(passes/cpu/tiled.py, passes/cpu/microkernel.py).  Each compile here is cold
(a fresh TILEC_CACHE_DIR) and must finish within BOUND_S."""
from __future__ import annotations

import time

import pytest

import tilec
import tilec.language as tl

BOUND_S = 5.0


@tilec.kernel
def tutorial_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                    stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr,
                    BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                    GROUP_SIZE_M: tl.constexpr, ACC: tl.constexpr):
    """Triton's tutorial-03 matmul kernel (its source, apart from the import)."""
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=ACC)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c = accumulator.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


def _sig(ab: str, c: str) -> str:
    return f"*{ab}:16,*{ab}:16,*{c}:16,i32,i32,i32,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1"


# (BM, BN, BK, input dtype, output dtype, accumulator): tutorial-03's biggest
# config first, then the largest accumulators and K steps the GPU targets take.
CONFIGS = [
    (128, 256, 64, "fp16", "fp16", tl.float32),
    (64, 64, 32, "fp16", "fp16", tl.float32),
    (128, 128, 64, "fp16", "fp16", tl.float32),
    (256, 256, 128, "fp16", "fp32", tl.float32),
    (256, 256, 64, "fp32", "fp32", tl.float32),
    (128, 256, 128, "bf16", "bf16", tl.float32),
    (256, 128, 128, "i8", "i32", tl.int32),
    (128, 256, 128, "fp8e4nv", "fp16", tl.float32),
]


@pytest.mark.parametrize("bm,bn,bk,ab,c,acc", CONFIGS,
                         ids=[f"{c[0]}x{c[1]}x{c[2]}-{c[3]}" for c in CONFIGS])
def test_big_cpu_dots_compile_quickly(bm: int, bn: int, bk: int, ab: str, c: str, acc: tl.dtype,
                                      tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    t0 = time.perf_counter()
    k = tutorial_matmul.compile(target="cpu", signature=_sig(ab, c),
                                constexprs={"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn,
                                            "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8, "ACC": acc})
    seconds = time.perf_counter() - t0
    assert k.asm["so"]
    assert seconds < BOUND_S, f"{bm}x{bn}x{bk} {ab}: {seconds:.1f} s"
