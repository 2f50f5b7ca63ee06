"""Session 27: the kernels tile-accelerate-dot now sends to wgmma (map-block
operands with 2-byte pointer accesses): the two padded-B tutorial cases and
the batched ragged-N/K case, checked against float64."""
import sys
from pathlib import Path
sys.path[:0] = ["benchmarks", "scripts"]
import torch
import tilec
import gpu_suite
from matmul_kernels import mm_tutorial

dev = "cuda"
for dt, m, n, k, (bm, bn, bk), w, s in [(torch.float16, 300, 1000, 1024, (128, 256, 64), 8, 3),
                                        (torch.bfloat16, 129, 260, 640, (128, 128, 64), 8, 4)]:
    a = torch.randn(m, k, device=dev).to(dt)
    big = torch.randn(k, (n + 31) // 16 * 16, device=dev).to(dt)
    b = big[:, :n]
    c = torch.full((m, n), float("nan"), device=dev, dtype=torch.float16)
    mm_tutorial[(tilec.cdiv(m, bm) * tilec.cdiv(n, bn),)](
        a, b, c, m, n, k, k, 1, b.stride(0), 1, n, 1, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
        GROUP_M=8, num_warps=w, num_stages=s)
    torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=2e-2, atol=2e-2 * k ** 0.5)
    print("ok tutorial", dt, m, n, k)
kmod = gpu_suite._pointer_kernels()
f16 = torch.float16
nb, m, n, k = 3, 130, 260, 1001
pad = lambda x: (x + 31) // 16 * 16
big_a = torch.randn(nb, m + 5, pad(k), device=dev).to(f16)
big_b = torch.randn(nb, k + 3, pad(n), device=dev).to(f16)
big_c = torch.full((nb, m + 2, pad(n)), float("nan"), device=dev, dtype=f16)
a, b, c = big_a[:, :m, :k], big_b[:, :k, :n], big_c[:, :m, :n]
kmod.batched[(tilec.cdiv(m, 128), tilec.cdiv(n, 128), nb)](
    a, b, c, m, n, k, a.stride(0), a.stride(1), 1, b.stride(0), b.stride(1), 1,
    c.stride(0), c.stride(1), 1, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, A_BATCH=0,
    num_warps=8, num_stages=3)
torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=2e-2, atol=2e-2 * k ** 0.5)
assert big_c[:, m:].isnan().all() and big_c[:, :, n:].isnan().all()
print("ok batched")
