"""Probe: the persistent example at one shape, each config timed (and, under
ncu, profiled) from whatever compiled cache TILEC_CACHE_DIR points at; used to
compare two builds of the same kernel (e.g. the flattened and the nested loop).

    TILEC_CACHE_DIR=DIR .venv/bin/python benchmarks/probe/persistent_probe.py prepare
    PYTHONPATH=$PWD TILEC_CACHE_DIR=DIR python3 benchmarks/probe/persistent_probe.py run [--once]
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))

import torch  # noqa: E402

from matmul_persistent import matmul_persistent  # noqa: E402

CONFIGS = [(128, 128, 64, 8, 4), (128, 256, 64, 8, 3)]
SHAPE = (4096, 4096, 4096)


def _meta(cfg: tuple[int, ...]) -> dict[str, int]:
    bm, bn, bk, w, s = cfg
    return dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, NUM_SMS=132, num_warps=w,
                num_stages=s)


def main() -> None:
    m, n, k = SHAPE
    if sys.argv[1] == "prepare":
        a = torch.empty(16, 16, dtype=torch.float16)
        for cfg in CONFIGS:
            for dt in (torch.float16, torch.float8_e4m3fn):
                x = a.to(dt)
                matmul_persistent.warmup(x, x, a, m, n, k, target="sm90", **_meta(cfg))
        return
    from triton.testing import do_bench
    for dt in (torch.float16, torch.float8_e4m3fn):
        a = torch.randn(m, k, device="cuda").to(dt)
        b = torch.randn(n, k, device="cuda").to(dt)
        c = torch.empty(m, n, device="cuda", dtype=torch.float16)
        ref = (a.float() @ b.float().T)
        for cfg in CONFIGS:
            def go(cfg: tuple[int, ...] = cfg) -> None:
                matmul_persistent[(132,)](a, b, c, m, n, k, **_meta(cfg))
            go()
            err = float((c.float() - ref).abs().max() / ref.abs().max())
            if "--once" in sys.argv:
                continue
            t = do_bench(go, warmup=20, rep=100)
            print(f"{dt} {cfg}: {2 * m * n * k / t * 1e-9:.1f} TFLOP/s (rel err {err:.1e})")


if __name__ == "__main__":
    main()
