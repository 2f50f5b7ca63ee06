"""Module-level kernels and process workers for tests that spawn processes.

A spawned process imports this module by name (it is on `sys.path` through the
parent), so its kernels and workers must live at module level here.
"""
from __future__ import annotations

import os
import traceback
from typing import Any

import numpy as np

import tilec
import tilec.language as tl


@tilec.kernel
def scale_add(x_ptr, o_ptr, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) * a + 1.0, mask=m)


def compile_and_run(cache_dir: str, start: Any, results: Any) -> None:
    """Wait for `start`, then launch `scale_add` (compiling it) and report."""
    try:
        os.environ["TILEC_CACHE_DIR"] = cache_dir
        import tilec.driver
        calls = []
        real = tilec.driver.compile_kernel

        def counting(*args: Any, **kwargs: Any) -> Any:
            calls.append(1)
            return real(*args, **kwargs)

        tilec.driver.compile_kernel = counting  # type: ignore[assignment]
        n = 1000
        x = np.arange(n, dtype=np.float32)
        out = np.zeros(n, np.float32)
        start.wait(120)
        scale_add[(tilec.cdiv(n, 128),)](x, out, 2.0, n, BLOCK=128)
        ok = bool((out == x * 2 + 1).all())
        results.put(("ok" if ok else "wrong result", len(calls)))
    except BaseException:
        results.put(("error: " + traceback.format_exc(), -1))


@tilec.kernel
def row_sum_2d(x_ptr, o_ptr, n_rows, n_cols, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    m = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=m, other=0.0)
    tl.store(o_ptr + rows, tl.sum(x, axis=1), mask=rows < n_rows)


def _golden() -> list[tuple[str, Any, Any, dict[str, Any], int]]:
    """Test kernels whose machine code is kept in tests/golden/machine/ besides the examples'."""
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "matmul.py"
    spec = importlib.util.spec_from_file_location("tilec_golden_matmul", path)
    assert spec is not None and spec.loader is not None
    mm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mm)
    big = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}
    ppath = path.parent / "matmul_persistent.py"
    pspec = importlib.util.spec_from_file_location("tilec_golden_persistent", ppath)
    assert pspec is not None and pspec.loader is not None
    pm = importlib.util.module_from_spec(pspec)
    pspec.loader.exec_module(pm)
    tma = {**big, "GROUP_M": 8, "NUM_SMS": 132}   # 128-byte rows: TMA copies on sm90
    return [
        ("test-scale_add", scale_add, "*fp32:16,*fp32:16,fp32,i32", {"BLOCK": 512}, 4),
        ("test-row_sum_2d", row_sum_2d, "*fp32:16,*fp32:16,i32,i32:16", {"BLOCK_M": 8, "BLOCK_N": 256}, 4),
        ("test-matmul_fp16_128x128x64_w8", mm.matmul, mm.SIG.format(t="fp16"), big, 8),
        ("test-matmul_persistent_fp16_128x128x64_w8", pm.matmul_persistent,
         "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16", tma, 8),
    ]


GOLDEN = _golden()


@tilec.kernel
def mm_clamped(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
               stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
               BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """Triton's tutorial-03 matmul (benchmarks/matmul_kernels.py) with A's
    ragged rows clamped by `tl.minimum` instead of wrapped by `% M`: A's tile
    is not a tensor-map block (tile-tma-pointers leaves it), so sm90 and sm100
    copy both operands with cp.async (a ring is filled one way).  The C store
    is a block."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = tl.minimum(pid_m * BLOCK_M + tl.arange(0, BLOCK_M), M - 1)
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, acc.to(tl.float16), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))
