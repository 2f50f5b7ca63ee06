"""Run-to-run determinism of tilec's TMA-pipelined kernels on the H200: each
kernel (no atomics, so deterministic) runs REPEATS times on the same inputs and
every result is compared bit for bit with the first; a difference is a race.

Kernels: the attention forward (examples/attention.py) at the benchmark's
configs, its backward (the dK/dV and dQ kernels), and the persistent matmul
(examples/matmul_persistent.py), at the benchmark's sizes.

    # here
    TILEC_CACHE_DIR=$PWD/.carry/race .venv/bin/python benchmarks/probe/race_probe.py prepare
    # on the GPU machine
    PYTHONPATH=$PWD TILEC_CACHE_DIR=$PWD/.carry/race python3 benchmarks/probe/race_probe.py run
"""
from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples"))

import attention as tl_attn  # noqa: E402
import matmul_persistent as tl_mm  # noqa: E402

SHAPE = (4, 32, 4096, 128)
FWD = [(128, 64, 8, 2), (128, 64, 8, 3), (128, 64, 8, 4), (128, 128, 8, 3)]
BWD = [((64, 128, 8), (128, 64, 8), 2), ((64, 128, 8), (128, 64, 8), 3)]
MM = [(128, 256, 64, 8, 3), (128, 128, 64, 8, 4)]
MM_SIZE = 4096
REPEATS = int(os.environ.get("REPEATS", "50"))


def _tensors(torch, dev: str, real: bool):
    z, h, n, d = SHAPE
    if not real:
        return [torch.empty((1, 1, 16, d), dtype=torch.float16) for _ in range(4)]
    g = torch.Generator(device=dev).manual_seed(7)
    return [torch.randn(SHAPE, generator=g, device=dev).to(torch.float16) for _ in range(4)]


def prepare() -> None:
    import torch
    z, h, n, d = SHAPE
    q, k, v, do = _tensors(torch, "cpu", False)
    lse = torch.empty(16, dtype=torch.float32)
    for bm, bn, w, s in FWD:
        tl_attn._attn_fwd.warmup(q, k, v, q, lse, 0.1, z, h, n, HEAD_DIM=d, BLOCK_M=bm,
                                 BLOCK_N=bn, CAUSAL=False, num_warps=w, num_stages=s,
                                 target="sm90")
    for (bm1, bn1, w1), (bm2, bn2, w2), s in BWD:
        tl_attn._attn_bwd_dkdv.warmup(q, k, v, q, q, k, lse, lse, 0.1, z * h * n, n, HEAD_DIM=d,
                                      BLOCK_M=bm1, BLOCK_N=bn1, CAUSAL=False, num_warps=w1,
                                      num_stages=s, target="sm90")
        tl_attn._attn_bwd_dq.warmup(q, k, v, q, q, lse, lse, 0.1, z * h * n, n, HEAD_DIM=d,
                                    BLOCK_M=bm2, BLOCK_N=bn2, CAUSAL=False, num_warps=w2,
                                    num_stages=s, target="sm90")
    tl_attn._attn_bwd_preprocess.warmup(q, q, lse, z * h * n, HEAD_DIM=d, BLOCK_M=64,
                                        target="sm90")
    a = torch.empty((16, 16), dtype=torch.float16)
    for bm, bn, bk, w, s in MM:
        tl_mm.matmul_persistent.warmup(a, a, a, MM_SIZE, MM_SIZE, MM_SIZE, BLOCK_M=bm,
                                       BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, NUM_SMS=132,
                                       num_warps=w, num_stages=s, target="sm90")
    print("prepared")


def _count(torch, fn) -> int:
    first = [t.clone() for t in fn()]
    bad = 0
    for _ in range(REPEATS - 1):
        out = fn()
        if any(not torch.equal(x, y) for x, y in zip(first, out)):
            bad += 1
    torch.cuda.synchronize()
    return bad


def run() -> None:
    import torch
    q, k, v, do = _tensors(torch, "cuda", True)
    scale = 1 / SHAPE[3] ** 0.5
    res = {}
    for fc in FWD:
        res[f"fwd {fc}"] = _count(torch, lambda: tl_attn._launch_fwd(q, k, v, False, scale, fc))
        print(json.dumps({f"fwd {fc}": res[f"fwd {fc}"]}), flush=True)
    o, lse = tl_attn._launch_fwd(q, k, v, False, scale, FWD[0])
    for bc in BWD:
        res[f"bwd {bc}"] = _count(torch, lambda: tl_attn._launch_bwd(q, k, v, o, lse, do, False,
                                                                     scale, bc))
        print(json.dumps({f"bwd {bc}": res[f"bwd {bc}"]}), flush=True)
    g = torch.Generator(device="cuda").manual_seed(3)
    a = torch.randn((MM_SIZE, MM_SIZE), generator=g, device="cuda").to(torch.float16)
    b = torch.randn((MM_SIZE, MM_SIZE), generator=g, device="cuda").to(torch.float16)
    c = torch.empty((MM_SIZE, MM_SIZE), device="cuda", dtype=torch.float16)
    for bm, bn, bk, w, s in MM:
        def mm() -> list:
            tl_mm.matmul_persistent[(132,)](a, b, c, MM_SIZE, MM_SIZE, MM_SIZE, BLOCK_M=bm,
                                            BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, NUM_SMS=132,
                                            num_warps=w, num_stages=s)
            return [c]
        res[f"mm {(bm, bn, bk, w, s)}"] = _count(torch, mm)
        print(json.dumps({f"mm {(bm, bn, bk, w, s)}": res[f"mm {(bm, bn, bk, w, s)}"]}),
              flush=True)
    print(json.dumps({"repeats": REPEATS, "runs_differing_from_the_first": res}))


if __name__ == "__main__":
    {"prepare": prepare, "run": run}[sys.argv[1]]()
