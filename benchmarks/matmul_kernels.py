"""The matmul kernels of the H200 matmul benchmark, written for tilec and (same
algorithm, same source apart from the import) for Triton.

`mm_tutorial`: Triton's tutorial-03 structure (grouped program ids, loop-carried
pointer tiles, a mask on K only, `acc = tl.dot(a, b, acc)`), for row-major A and
B of any sizes (M and N tails are handled by clamping the row/column indices
with `%`, as the tutorial does).
"""
from __future__ import annotations

import tilec
import tilec.language as tl


@tilec.kernel
def mm_tutorial(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
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
    c = acc.to(tl.float16)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


try:  # the Triton twin, for the GPU machine (prepare runs without Triton)
    import triton
    import triton.language as ttl

    @triton.jit
    def t_mm_tutorial(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                    stride_cm, stride_cn, BLOCK_M: ttl.constexpr, BLOCK_N: ttl.constexpr,
                    BLOCK_K: ttl.constexpr, GROUP_M: ttl.constexpr):
        pid = ttl.program_id(0)
        num_pid_m = ttl.cdiv(M, BLOCK_M)
        num_pid_n = ttl.cdiv(N, BLOCK_N)
        num_pid_in_group = GROUP_M * num_pid_n
        group_id = pid // num_pid_in_group
        first_pid_m = group_id * GROUP_M
        group_size_m = ttl.minimum(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
        pid_n = (pid % num_pid_in_group) // group_size_m
        offs_am = (pid_m * BLOCK_M + ttl.arange(0, BLOCK_M)) % M
        offs_bn = (pid_n * BLOCK_N + ttl.arange(0, BLOCK_N)) % N
        offs_k = ttl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
        b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
        acc = ttl.zeros((BLOCK_M, BLOCK_N), dtype=ttl.float32)
        for k in range(0, ttl.cdiv(K, BLOCK_K)):
            a = ttl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
            b = ttl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
            acc = ttl.dot(a, b, acc)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
        c = acc.to(ttl.float16)
        offs_cm = pid_m * BLOCK_M + ttl.arange(0, BLOCK_M)
        offs_cn = pid_n * BLOCK_N + ttl.arange(0, BLOCK_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        ttl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))
    @triton.jit
    def t_matmul_persistent(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: ttl.constexpr,
                            BLOCK_N: ttl.constexpr, BLOCK_K: ttl.constexpr,
                            GROUP_M: ttl.constexpr, NUM_SMS: ttl.constexpr):
        # The same algorithm as examples/matmul_persistent.py (TMA descriptors
        # built in the kernel; Triton needs `triton.set_allocator` for them).
        a_d = ttl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1],
                                         block_shape=[BLOCK_M, BLOCK_K])
        b_d = ttl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1],
                                         block_shape=[BLOCK_N, BLOCK_K])
        c_d = ttl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1],
                                         block_shape=[BLOCK_M, BLOCK_N])
        start_pid = ttl.program_id(0)
        num_pid_m = ttl.cdiv(M, BLOCK_M)
        num_pid_n = ttl.cdiv(N, BLOCK_N)
        k_tiles = ttl.cdiv(K, BLOCK_K)
        num_tiles = num_pid_m * num_pid_n
        num_pid_in_group = GROUP_M * num_pid_n
        for tile_id in ttl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
            group_id = tile_id // num_pid_in_group
            first_pid_m = group_id * GROUP_M
            group_size_m = ttl.minimum(num_pid_m - first_pid_m, GROUP_M)
            pid_m = first_pid_m + (tile_id % group_size_m)
            pid_n = (tile_id % num_pid_in_group) // group_size_m
            offs_am = pid_m * BLOCK_M
            offs_bn = pid_n * BLOCK_N
            acc = ttl.zeros((BLOCK_M, BLOCK_N), ttl.float32)
            for ki in range(k_tiles):
                offs_k = ki * BLOCK_K
                a = a_d.load([offs_am, offs_k])
                b = b_d.load([offs_bn, offs_k])
                acc = ttl.dot(a, b.T, acc)
            c_d.store([offs_am, offs_bn], acc.to(ttl.float16))
except ImportError:
    pass
