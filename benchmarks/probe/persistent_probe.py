"""Probe: the persistent example at one shape, each config timed (and, under
ncu, profiled) from whatever compiled cache TILEC_CACHE_DIR points at; used to
compare two builds of the same kernel (e.g. the flattened and the nested loop).

    TILEC_CACHE_DIR=DIR .venv/bin/python benchmarks/probe/persistent_probe.py prepare
        [--shape M,N,K]
    PYTHONPATH=$PWD TILEC_CACHE_DIR=DIR python3 benchmarks/probe/persistent_probe.py run [--once]
        [--triton] [--shape M,N,K]

`--shape` (both phases; 4096,4096,4096 by default) picks another shape, e.g.
a ragged one (M and N not multiples of the blocks: 4000,4000,4096); each
config's result is checked against torch before it is timed (a relative
error over 2e-2, 5e-2 for fp8, stops the probe).

With --triton, each config is timed alternately in tilec and in Triton's twin
(benchmarks/matmul_kernels.py `t_matmul_persistent`), three times each
(`do_bench` medians, warmup 25 ms, 200 ms), so both see the same clocks.
"""
from __future__ import annotations

import os
import sys
from typing import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))

import torch  # noqa: E402

from matmul_persistent import matmul_persistent  # noqa: E402

# The configs benchmarks/h200_matmul.py times for each dtype.
CONFIGS = {"float16": [(128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (128, 128, 64, 8, 4)],
           "float8_e4m3fn": [(128, 128, 128, 8, 4), (128, 256, 128, 8, 3),
                             (128, 128, 128, 8, 3)]}
SHAPE = (4096, 4096, 4096)


def _meta(cfg: tuple[int, ...]) -> dict[str, int]:
    bm, bn, bk, w, s = cfg
    return dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, NUM_SMS=132, num_warps=w,
                num_stages=s)


def _shape() -> tuple[int, int, int]:
    if "--shape" not in sys.argv:
        return SHAPE
    m, n, k = (int(x) for x in sys.argv[sys.argv.index("--shape") + 1].split(","))
    return m, n, k


def main() -> None:
    m, n, k = _shape()
    if sys.argv[1] == "prepare":
        a = torch.empty(16, 16, dtype=torch.float16)
        for dt in (torch.float16, torch.float8_e4m3fn):
            for cfg in CONFIGS[str(dt).split(".")[1]]:
                x = a.to(dt)
                matmul_persistent.warmup(x, x, a, m, n, k, target="sm90", **_meta(cfg))
        return
    from triton.testing import do_bench
    for dt in (torch.float16, torch.float8_e4m3fn):
        a = torch.randn(m, k, device="cuda").to(dt)
        b = torch.randn(n, k, device="cuda").to(dt)
        c = torch.empty(m, n, device="cuda", dtype=torch.float16)
        ref = (a.float() @ b.float().T)
        for cfg in CONFIGS[str(dt).split(".")[1]]:
            def go(cfg: tuple[int, ...] = cfg) -> None:
                matmul_persistent[(132,)](a, b, c, m, n, k, **_meta(cfg))
            c.fill_(float("nan"))   # a store that writes nothing fails the check below
            go()
            err = float((c.float() - ref).abs().max() / ref.abs().max())
            limit = 2e-2 if dt == torch.float16 else 5e-2
            if not err <= limit:
                raise SystemExit(f"{dt} {cfg} {(m, n, k)}: relative error {err:.2e} > {limit}")
            if "--once" in sys.argv:   # (under ncu: one launch of each, Triton's too)
                if "--triton" in sys.argv:
                    try:
                        _triton(a, b, c, m, n, k, cfg)
                    except Exception as e:
                        print(f"{dt} {cfg}: triton {type(e).__name__}: {str(e)[:80]}")
                continue
            flop = 2 * m * n * k * 1e-9
            if "--triton" not in sys.argv:
                t = do_bench(go, warmup=20, rep=100)
                print(f"{dt} {cfg}: {flop / t:.1f} TFLOP/s (rel err {err:.1e})")
                continue
            try:
                twin = _triton(a, b, c, m, n, k, cfg)
            except Exception as e:   # (Triton's own resource limits, e.g. shared memory)
                print(f"{dt} {cfg}: triton {type(e).__name__}: {str(e)[:80]}")
                continue
            ts: dict[str, list[float]] = {"tilec": [], "triton": []}
            for _ in range(3):
                for name, fn in (("tilec", go), ("triton", twin)):
                    ts[name].append(flop / do_bench(fn, warmup=25, rep=200, return_mode="median"))
            tl_, tr_ = sorted(ts["tilec"])[1], sorted(ts["triton"])[1]
            print(f"{dt} {cfg}: tilec {tl_:.1f} triton {tr_:.1f} ratio {tl_ / tr_:.3f} "
                  f"(tilec {[round(x) for x in ts['tilec']]}, triton "
                  f"{[round(x) for x in ts['triton']]})")


def _triton(a: "torch.Tensor", b: "torch.Tensor", c: "torch.Tensor", m: int, n: int, k: int,
            cfg: tuple[int, ...]) -> "Callable[[], None]":
    import triton
    sys.path.insert(0, os.path.join(HERE, ".."))
    from matmul_kernels import t_matmul_persistent
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))

    def go() -> None:
        t_matmul_persistent[(132,)](a, b, c, m, n, k, **_meta(cfg))
    go()
    return go


if __name__ == "__main__":
    main()
