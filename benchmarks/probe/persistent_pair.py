"""tilec's persistent matmul (examples/matmul_persistent.py) and Triton's twin
(benchmarks/matmul_kernels.py) launched once each per dtype at 4096^3, and
Triton's tutorial-03 kernel at 1024x8192x1024: for ncu side by side and for
Triton's PTX/TTGIR (TRITON_CACHE_DIR).  Needs the tilec cache of
`benchmarks/h200_matmul.py prepare` (TILEC_CACHE_DIR).

    ncu --section SpeedOfLight --section WarpStateStats --section SchedulerStats \\
        -k regex:matmul_persistent -c 4 python3 benchmarks/probe/persistent_pair.py
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(ROOT, "benchmarks"), os.path.join(ROOT, "examples"), ROOT]

import torch  # noqa: E402
import triton  # noqa: E402
from matmul_kernels import t_matmul_persistent, t_mm_tutorial  # noqa: E402
from matmul_persistent import matmul_persistent  # noqa: E402

triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                             device="cuda"))
m = n = k = 4096
for dt, (bm, bn, bk, w, s) in (("float16", (128, 256, 64, 8, 3)),
                               ("float8_e4m3fn", (128, 256, 128, 8, 3))):
    t = getattr(torch, dt)
    a = torch.randn(m, k, device="cuda").to(t)
    b = torch.randn(n, k, device="cuda").to(t)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    meta = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, NUM_SMS=132, num_warps=w,
                num_stages=s)
    matmul_persistent[(132,)](a, b, c, m, n, k, **meta)
    t_matmul_persistent[(132,)](a, b, c, m, n, k, **meta)
    torch.cuda.synchronize()
a = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
b = torch.randn(1024, 8192, device="cuda", dtype=torch.float16)
c = torch.empty(1024, 8192, device="cuda", dtype=torch.float16)
t_mm_tutorial[(8 * 64,)](a, b, c, 1024, 8192, 1024, 1024, 1, 8192, 1, 8192, 1, BLOCK_M=128,
                         BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3)
torch.cuda.synchronize()
print("done")
