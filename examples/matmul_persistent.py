"""Persistent matrix multiply through tensor descriptors, as in Triton's
persistent-matmul tutorial: C = A @ B.T with A [M, K], B [N, K], C [M, N].

The grid has one program per multiprocessor (`tilec.device_info().num_sms`;
worker threads on the CPU); each program walks the output tiles
`start_pid, start_pid + NUM_SMS, ...` (grouped by GROUP_M rows of tiles so
neighbouring programs share B tiles).  A, B and C are read and written through
`tl.make_tensor_descriptor`: blocks past the edges read as zeros and are not
stored, so ragged M, N and K need no masks.  B is given as [N, K] (K-major, the
layout of a linear layer's weight) and used through `b.T`.  The same kernel
takes fp16 or fp8 (e4m3) inputs; the accumulator is f32, C is stored as fp16
(as f32 with C_F32=True, C then an f32 tensor).

    python examples/matmul_persistent.py
"""
import numpy as np
import torch

import tilec
import tilec.language as tl


@tilec.kernel
def matmul_persistent(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                      NUM_SMS: tl.constexpr, C_F32: tl.constexpr = False):
    a_d = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1],
                                    block_shape=[BLOCK_M, BLOCK_K])
    b_d = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1],
                                    block_shape=[BLOCK_N, BLOCK_K])
    c_d = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1],
                                    block_shape=[BLOCK_M, BLOCK_N])
    start_pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    num_pid_in_group = GROUP_M * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
        group_id = tile_id // num_pid_in_group
        first_pid_m = group_id * GROUP_M
        group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + (tile_id % group_size_m)
        pid_n = (tile_id % num_pid_in_group) // group_size_m
        offs_am = pid_m * BLOCK_M
        offs_bn = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_K
            a = a_d.load([offs_am, offs_k])
            b = b_d.load([offs_bn, offs_k])
            acc = tl.dot(a, b.T, acc)
        if C_F32:
            c_d.store([offs_am, offs_bn], acc)
        else:
            c_d.store([offs_am, offs_bn], acc.to(tl.float16))


# What the test suite compiles for every target: (kernel, signature, constexprs).
SPECS = [
    (matmul_persistent, "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16",
     {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "NUM_SMS": 132}),
    (matmul_persistent, "*fp8e4nv:16,*fp8e4nv:16,*fp16:16,i32:16,i32:16,i32:16",
     {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8, "NUM_SMS": 132}),
]


def run(a: torch.Tensor, b: torch.Tensor,
        block: tuple[int, int, int] = (32, 32, 32)) -> torch.Tensor:
    """C = a @ b.T in fp16 through the persistent kernel (a: [M, K], b: [N, K])."""
    m, k = a.shape
    n = b.shape[0]
    c = torch.empty((m, n), dtype=torch.float16)
    bm, bn, bk = block
    num_sms = tilec.device_info().num_sms
    tiles = tilec.cdiv(m, bm) * tilec.cdiv(n, bn)
    matmul_persistent[(min(num_sms, tiles),)](a, b, c, m, n, k, BLOCK_M=bm, BLOCK_N=bn,
                                              BLOCK_K=bk, GROUP_M=4, NUM_SMS=num_sms)
    return c


def check(m: int, n: int, k: int, dtype: torch.dtype = torch.float16) -> None:
    g = torch.Generator().manual_seed(m * n + k)
    a = torch.randn((m, k), generator=g).to(dtype)
    b = torch.randn((n, k), generator=g).to(dtype)
    c = run(a, b)
    want = (a.double() @ b.double().T).numpy()
    np.testing.assert_allclose(c.double().numpy(), want, rtol=2e-2, atol=2e-2 * np.sqrt(k))


def main() -> None:
    check(64, 64, 64)
    check(100, 70, 45)
    check(33, 129, 200)
    check(50, 40, 30, torch.float8_e4m3fn)
    print("matmul_persistent: ok")


if __name__ == "__main__":
    main()
