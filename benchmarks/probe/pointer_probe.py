"""Probe: the tutorial-03 pointer matmul (benchmarks/matmul_kernels.py) at the
benchmark's shapes and configs, each config timed alternately in tilec (from
whatever compiled cache TILEC_CACHE_DIR points at) and in Triton's twin, so two
builds of tilec can be compared through their ratios to the same Triton run.

    TILEC_CACHE_DIR=DIR .venv/bin/python benchmarks/probe/pointer_probe.py prepare
    PYTHONPATH=$PWD TILEC_CACHE_DIR=DIR python3 benchmarks/probe/pointer_probe.py run
        [--shape M,N,K] [--configs a,b,c] [--once]

`--configs` picks configs by index into h200_matmul.CONFIGS; `--once` launches
each config once (checked, not timed: for ncu).

Each config's result is checked against torch before it is timed (relative
error over 2e-2 stops the probe); three alternations of `do_bench` medians
(warmup 25 ms, 100 ms), the middle one reported.
"""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

import h200_matmul as hm  # noqa: E402

SHAPES = [(127, 4096, 4096), (1024, 8192, 1024), (4096, 4096, 4000), (8192, 1024, 8192),
          (4096, 4096, 4096)]


def _picked() -> tuple[list[tuple[int, int, int]], list[tuple[int, ...]]]:
    shapes, configs = SHAPES, hm.CONFIGS
    if "--shape" in sys.argv:
        m, n, k = (int(x) for x in sys.argv[sys.argv.index("--shape") + 1].split(","))
        shapes = [(m, n, k)]
    if "--configs" in sys.argv:
        idx = sys.argv[sys.argv.index("--configs") + 1].split(",")
        configs = [hm.CONFIGS[int(i)] for i in idx]
    return shapes, configs


def main() -> None:
    import torch
    shapes, configs = _picked()
    if sys.argv[1] == "prepare":
        for m, n, k in shapes:
            for cfg in configs:
                hm.mm_tutorial.warmup(*hm._args(torch, "cpu", m, n, k, "float16", False),
                                      target="sm90", **hm._meta(cfg))
        return
    from triton.testing import do_bench
    from matmul_kernels import t_mm_tutorial
    for m, n, k in shapes:
        torch.manual_seed(m + n + k)
        args = hm._args(torch, "cuda", m, n, k, "float16", True)
        a, b, c = args[:3]
        ref = a.float() @ b.float()
        flop = 2 * m * n * k * 1e-9
        for cfg in configs:
            grid = hm._grid(m, n, cfg)

            def go(cfg: tuple[int, ...] = cfg, grid: tuple[int] = grid) -> None:
                hm.mm_tutorial[grid](*args, **hm._meta(cfg))

            def twin(cfg: tuple[int, ...] = cfg, grid: tuple[int] = grid) -> None:
                t_mm_tutorial[grid](*args, **hm._meta(cfg))
            c.fill_(float("nan"))
            go()
            err = float((c.float() - ref).abs().max() / ref.abs().max())
            if not err <= 2e-2:
                raise SystemExit(f"{cfg} {(m, n, k)}: relative error {err:.2e}")
            if "--once" in sys.argv:
                continue
            twin()
            ts: dict[str, list[float]] = {"tilec": [], "triton": []}
            for _ in range(3):
                for name, fn in (("tilec", go), ("triton", twin)):
                    ts[name].append(flop / do_bench(fn, warmup=25, rep=100,
                                                    return_mode="median"))
            a_, b_ = sorted(ts["tilec"])[1], sorted(ts["triton"])[1]
            print(f"{(m, n, k)} {cfg}: tilec {a_:.1f} triton {b_:.1f} ratio {a_ / b_:.3f}",
                  flush=True)


if __name__ == "__main__":
    main()
