"""Tensor-core matmul checks on a real NVIDIA GPU: every (kernel, config, shape)
against torch in float32, with fresh random inputs and a NaN-poisoned output,
then a quick median time (not the benchmark: benchmarks/h200_matmul.py is).

    TILEC_CACHE_DIR=$PWD/.carry/tilec-cache .venv/bin/python scripts/gpu_mma_check.py prepare
    PYTHONPATH=$PWD TILEC_CACHE_DIR=$PWD/.carry/tilec-cache python3 scripts/gpu_mma_check.py run

The last line is 'N passed, N failed'.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import tilec  # noqa: E402
from matmul_kernels import mm_tutorial  # noqa: E402

# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)
CONFIGS = [(128, 128, 64, 8, 1), (128, 256, 64, 8, 1), (64, 128, 64, 4, 1),
           (128, 128, 64, 4, 1), (64, 64, 32, 4, 1),
           (128, 128, 64, 8, 3), (128, 256, 64, 8, 3), (128, 256, 64, 8, 4),
           (128, 128, 64, 4, 4), (64, 128, 64, 4, 2), (128, 128, 128, 8, 3),
           (128, 256, 64, 8, 5),
           # 8 warps and >= 4 slots: the lagged refill (passes/tile_pipeline.py)
           (128, 128, 64, 8, 4), (128, 128, 64, 8, 5),
           # BLOCK_K=32 is no whole 128-byte swizzle atom: mma.sync, pipelined
           # through padded cp.async rings (the sm80 path, run on the H200)
           (128, 128, 32, 4, 3), (64, 64, 32, 4, 3), (128, 256, 32, 8, 4)]
SHAPES = [(4096, 4096, 4096), (4096, 4096, 4000), (127, 4096, 4096), (1000, 520, 1000),
          (8192, 1024, 8192)]
DTYPES = ["float16", "bfloat16"]
# Override for bisecting: CHECK_CASES="bm,bn,bk,w,s:m,n,k;..." (float16 only).
_ENV = os.environ.get("CHECK_CASES")


def _args(torch: Any, dev: str, m: int, n: int, k: int, dtype: Any) -> tuple[Any, ...]:
    a = torch.randn(m, k, device=dev).to(dtype)
    b = torch.randn(k, n, device=dev).to(dtype)
    c = torch.full((m, n), float("nan"), device=dev, dtype=torch.float16)
    return (a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
            c.stride(0), c.stride(1))


def _grid(m: int, n: int, bm: int, bn: int) -> tuple[int]:
    return (tilec.cdiv(m, bm) * tilec.cdiv(n, bn),)


def _cases() -> list[tuple[tuple[int, ...], tuple[int, int, int], str]]:
    if _ENV:
        cases = []
        for item in _ENV.split(";"):
            c, sh = item.split(":")
            m, n, k = (int(x) for x in sh.split(","))
            cases.append((tuple(int(x) for x in c.split(",")), (m, n, k), "float16"))
        return cases
    out = []
    for cfg in CONFIGS:
        for shape in SHAPES[:1] if cfg[4] == 1 and cfg != CONFIGS[0] else SHAPES:
            for dt in DTYPES if shape == SHAPES[0] else DTYPES[:1]:
                out.append((cfg, shape, dt))
    return out


def prepare() -> None:
    import torch
    for (bm, bn, bk, w, s), (m, n, k), dt in _cases():
        # Small stand-in arrays with the real sizes and strides (the
        # specialization depends on those ints, not on the arrays' extents).
        args = _args(torch, "cpu", 16, 16, 16, getattr(torch, dt))[:3] + (m, n, k, k, 1, n, 1,
                                                                          n, 1)
        mm_tutorial.warmup(*args, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                           num_warps=w, num_stages=s, target="sm90")
    print(f"prepared {len(_cases())} cases")


def run(only: str | None = None, timing: bool = True) -> None:
    import torch
    from triton.testing import do_bench
    passed = failed = 0
    rows = []
    for (bm, bn, bk, w, s), (m, n, k), dt in _cases():
        torch.manual_seed(m + n + k + bm + s)
        args = _args(torch, "cuda", m, n, k, getattr(torch, dt))
        a, b, c = args[:3]
        grid = _grid(m, n, bm, bn)
        name = f"{dt} {m}x{n}x{k} BM{bm} BN{bn} BK{bk} w{w} s{s}"
        if only is not None and only not in name:
            continue
        try:
            mm_tutorial[grid](*args, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
                              num_warps=w, num_stages=s)
            torch.cuda.synchronize()
            ref = a.float() @ b.float()
            err = ((c.float() - ref).norm() / ref.norm()).item()
            ok = err < 1e-2 and not torch.isnan(c).any().item()
        except Exception as e:  # noqa: BLE001 - report and go on
            print(f"FAIL {name}: {type(e).__name__}: {e}")
            failed += 1
            continue
        if not timing:
            print(f"{'ok  ' if ok else 'FAIL'} {name}: rel err {err:.2e}", flush=True)
            passed += ok
            failed += not ok
            continue
        t = do_bench(lambda: mm_tutorial[grid](*args, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                               GROUP_M=8, num_warps=w, num_stages=s),
                     warmup=25, rep=100, return_mode="median")
        tf = 2 * m * n * k / t / 1e9
        rows.append((name, err, tf))
        ttf = ""
        if s > 1 and dt == "float16":
            from matmul_kernels import t_mm_tutorial
            try:
                tt = do_bench(lambda: t_mm_tutorial[grid](*args, BLOCK_M=bm, BLOCK_N=bn,
                                                          BLOCK_K=bk, GROUP_M=8, num_warps=w,
                                                          num_stages=s),
                              warmup=25, rep=100, return_mode="median")
                ttf = f", triton {2 * m * n * k / tt / 1e9:.1f}"
            except Exception as e:  # noqa: BLE001 - e.g. Triton's OutOfResources
                ttf = f", triton: {type(e).__name__}"
        print(f"{'ok  ' if ok else 'FAIL'} {name}: rel err {err:.2e}, {tf:.1f} TFLOP/s{ttf}",
              flush=True)
        passed += ok
        failed += not ok
    print(f"{passed} passed, {failed} failed")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["prepare", "run"])
    ap.add_argument("--only", help="run the cases whose name contains this")
    ap.add_argument("--no-timing", action="store_true")
    ns = ap.parse_args()
    prepare() if ns.phase == "prepare" else run(ns.only, not ns.no_timing)
