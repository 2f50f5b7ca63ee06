"""Matrix multiply on the H200: tilec's tl.dot (mma.sync on the tensor cores,
operands staged through workgroup memory, no pipelining) next to Triton (the
same blocked algorithm; wgmma with a pipelined K loop) and torch.matmul
(cuBLAS), fp16 inputs, fp32 accumulation, M = N = K = 4096.

    # here (compiler installed)
    TILEC_CACHE_DIR=$PWD/.carry/tilec-cache .venv/bin/python benchmarks/h200_matmul.py prepare
    # on the GPU machine
    PYTHONPATH=$PWD TILEC_CACHE_DIR=$PWD/.carry/tilec-cache python3 benchmarks/h200_matmul.py run --json $OUT/matmul.json

Checked against torch in float64 before timing; times are medians of
`triton.testing.do_bench`; TFLOP/s = 2*M*N*K / time.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import tilec  # noqa: E402
from matmul import matmul  # noqa: E402

SIZE = 4096
CONFIGS = [tilec.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}, num_warps=w)
           for bm, bn, bk, w in ((64, 64, 32, 4), (64, 64, 16, 4), (128, 64, 32, 4),
                                 (128, 128, 32, 8), (128, 128, 64, 8), (64, 128, 32, 4),
                                 (128, 128, 128, 8), (128, 256, 64, 8), (256, 128, 64, 8),
                                 (128, 128, 64, 4))]
tuned = tilec.autotune(CONFIGS, key=["M", "N", "K"], cache_results=False)(matmul)


def _args(torch: Any, dev: str) -> tuple[Any, ...]:
    a = torch.randn(SIZE, SIZE, device=dev, dtype=torch.float16)
    b = torch.randn(SIZE, SIZE, device=dev, dtype=torch.float16)
    c = torch.empty(SIZE, SIZE, device=dev, dtype=torch.float16)
    return (a, b, c, SIZE, SIZE, SIZE, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
            c.stride(0), c.stride(1))


def prepare() -> None:
    import torch
    tuned.warmup(*_args(torch, "cpu"), target="sm90")
    print(f"prepared {len(CONFIGS)} matmul configs")


def run(json_path: str | None) -> None:
    import torch
    import triton
    import triton.language as ttl
    from triton.testing import do_bench

    @triton.jit
    def t_matmul(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                 BLOCK_M: ttl.constexpr, BLOCK_N: ttl.constexpr, BLOCK_K: ttl.constexpr):
        rm = ttl.program_id(0) * BLOCK_M + ttl.arange(0, BLOCK_M)
        rn = ttl.program_id(1) * BLOCK_N + ttl.arange(0, BLOCK_N)
        rk = ttl.arange(0, BLOCK_K)
        acc = ttl.zeros((BLOCK_M, BLOCK_N), ttl.float32)
        for k in range(0, K, BLOCK_K):
            a = ttl.load(a_ptr + rm[:, None] * sam + (k + rk)[None, :] * sak,
                         mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
            b = ttl.load(b_ptr + (k + rk)[:, None] * sbk + rn[None, :] * sbn,
                         mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc = ttl.dot(a, b, acc)
        ttl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(ttl.float16),
                  mask=(rm[:, None] < M) & (rn[None, :] < N))

    torch.manual_seed(0)
    args = _args(torch, "cuda")
    a, b, c = args[:3]
    flops = 2 * SIZE ** 3
    grid = lambda meta: (tilec.cdiv(SIZE, meta["BLOCK_M"]), tilec.cdiv(SIZE, meta["BLOCK_N"]))  # noqa: E731
    tuned[grid](*args)
    ref = (a.float() @ b.float())
    err = ((c.float() - ref).norm() / ref.norm()).item()
    assert err < 1e-2, f"tilec matmul relative error {err}"
    t_tilec = do_bench(lambda: tuned[grid](*args), warmup=100, rep=500, return_mode="median")
    tgrid = (SIZE // 128, SIZE // 128)
    c2 = torch.empty_like(c)
    t_matmul[tgrid](a, b, c2, SIZE, SIZE, SIZE, a.stride(0), a.stride(1), b.stride(0),
                    b.stride(1), c2.stride(0), c2.stride(1), BLOCK_M=128, BLOCK_N=128,
                    BLOCK_K=64, num_warps=8, num_stages=3)
    assert ((c2.float() - ref).norm() / ref.norm()).item() < 1e-2
    t_triton = do_bench(lambda: t_matmul[tgrid](a, b, c2, SIZE, SIZE, SIZE, a.stride(0),
                                                a.stride(1), b.stride(0), b.stride(1),
                                                c2.stride(0), c2.stride(1), BLOCK_M=128,
                                                BLOCK_N=128, BLOCK_K=64, num_warps=8,
                                                num_stages=3),
                        warmup=100, rep=500, return_mode="median")
    t_torch = do_bench(lambda: torch.matmul(a, b), warmup=100, rep=500, return_mode="median")
    row = {"kernel": "matmul fp16 -> fp32 acc", "shape": [SIZE, SIZE, SIZE], "unit": "TFLOP/s",
           "tilec": round(flops / t_tilec / 1e9, 1), "triton": round(flops / t_triton / 1e9, 1),
           "torch": round(flops / t_torch / 1e9, 1),
           "tilec_config": str(tuned.best_config), "tilec_rel_error": err}
    row["ratio_vs_triton"] = round(row["tilec"] / row["triton"], 3)
    print(json.dumps(row, indent=1))
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"command": "benchmarks/h200_matmul.py run", "device":
                       torch.cuda.get_device_name(), "rows": [row],
                       "timings_ms": {k: v for k, v in next(iter(tuned.timings.values())).items()}},
                      f, indent=1)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["prepare", "run"])
    ap.add_argument("--json")
    ns = ap.parse_args()
    prepare() if ns.phase == "prepare" else run(ns.json)
