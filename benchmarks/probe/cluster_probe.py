"""Does a 2-CTA cluster with B multicast lift the persistent matmul under the
H200's power cap?  examples/matmul_persistent.py at num_ctas=2 (a 256 x 256
program split over two CTAs, each 128 x 256, B's 256 x K block copied once
from L2 for both: passes/tile_split_ctas.py, passes/pipeline_cluster.py)
against the same kernel at num_ctas=1 on the benchmark's best 128 x 256
configs, and Triton's TMA twin (benchmarks/matmul_kernels.py) on its own.
L2 -> SM traffic per flop drops by a third (A 16 + B 16 KiB per CTA per K
block instead of 16 + 32); the question is whether that buys clock at 690 W.

`check` runs every 2-CTA config on ragged shapes against torch first (run it
under `timeout`: a protocol bug hangs rather than fails); `run` times the
sides in alternated rounds with the SM clock and power per side.

    TILEC_CACHE_DIR=$PWD/.carry/cluster/cache .venv/bin/python benchmarks/probe/cluster_probe.py prepare
    # on the H200:
    TILEC_CACHE_DIR=.carry/cluster/cache timeout 120 python3 benchmarks/probe/cluster_probe.py check
    TILEC_CACHE_DIR=.carry/cluster/cache python3 benchmarks/probe/cluster_probe.py run [--json F]
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(ROOT, "benchmarks"), os.path.join(ROOT, "examples"), ROOT]

from h200_matmul import GROUP_M, NUM_SMS, _persistent_args  # noqa: E402
from matmul_persistent import matmul_persistent  # noqa: E402

SIZES = (8192, 4096)
# (dtype, one-CTA config, [2-CTA configs]): (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages),
# BLOCK_M the program's (each CTA takes half).
ROWS = (("float8_e4m3fn", (128, 256, 128, 8, 3), [(256, 256, 128, 8, 3), (256, 256, 128, 8, 4)]),
        ("float16", (128, 256, 64, 8, 3), [(256, 256, 64, 8, 3), (256, 256, 64, 8, 4)]))
RAGGED = ((4000, 4000, 4096), (127, 4096, 4096), (1000, 520, 200), (300, 136, 4096),
          (8192, 8192, 1024))
ROUNDS = 6


def _meta(cfg: tuple[int, ...], ctas: int) -> dict[str, int]:
    bm, bn, bk, w, s = cfg
    return dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=GROUP_M, NUM_SMS=NUM_SMS // ctas,
                num_warps=w, num_stages=s, num_ctas=ctas)


def _configs() -> list[tuple[str, tuple[int, ...], int]]:
    return [(dt, cfg, ctas) for dt, one, two in ROWS
            for cfg, ctas in [(one, 1), *((c, 2) for c in two)]]


def prepare() -> None:
    import torch
    n = 0
    for dt, cfg, ctas in _configs():
        # the integer arguments' divisibility by 16 is part of the specialization
        for m, n_, k in (RAGGED if ctas > 1 else ()) + tuple((s, s, s) for s in SIZES):
            matmul_persistent.warmup(*_persistent_args(torch, "cpu", m, n_, k, dt, False),
                                     target="sm90", **_meta(cfg, ctas))
            n += 1
    print(f"prepared {n} launches")


def _launch(pargs: tuple[Any, ...], cfg: tuple[int, ...], ctas: int) -> None:
    matmul_persistent[(NUM_SMS // ctas,)](*pargs, **_meta(cfg, ctas))


def check() -> None:
    """Every 2-CTA config on ragged shapes and the timed sizes, against torch."""
    import torch
    for dt, cfg, ctas in _configs():
        if ctas == 1:
            continue
        for m, n, k in RAGGED:
            pargs = _persistent_args(torch, "cuda", m, n, k, dt, True)
            a, b, c = pargs[:3]
            _launch(pargs, cfg, ctas)
            torch.cuda.synchronize()
            ref = a.float() @ b.float().T
            err = ((c.float() - ref).norm() / ref.norm()).item()
            ok = err < 2e-2 and not torch.isnan(c).any().item()
            print(f"check {dt} {cfg} ctas={ctas} {m}x{n}x{k}: rel err {err:.2e} "
                  f"{'ok' if ok else 'FAILED'}", flush=True)
            assert ok
    print("check: all passed")


def run(json_path: str | None) -> None:
    import torch
    import triton
    from triton.testing import do_bench
    from gpu_clock import alternated
    from matmul_kernels import t_matmul_persistent
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))
    out: dict[str, Any] = {"command": " ".join(sys.argv), "rows": []}
    for size in SIZES:
        flops = 2 * size ** 3
        for dt, one, two in ROWS:
            pargs = _persistent_args(torch, "cuda", size, size, size, dt, True)
            a, b, c = pargs[:3]
            ref = a.float() @ b.float().T
            sides: dict[str, Callable[[], None]] = {}
            for name, cfg, ctas in [("tilec", one, 1), ("triton", one, 0),
                                    *((f"tilec 2cta s{cfg[4]}", cfg, 2) for cfg in two)]:
                def go(cfg: tuple[int, ...] = cfg, ctas: int = ctas) -> None:
                    if ctas:
                        _launch(pargs, cfg, ctas)
                    else:
                        meta = _meta(cfg, 1)
                        del meta["num_ctas"]
                        t_matmul_persistent[(NUM_SMS,)](*pargs, **meta)
                c.fill_(float("nan"))
                go()
                torch.cuda.synchronize()
                err = ((c.float() - ref).norm() / ref.norm()).item()
                assert err < 2e-2, (dt, name, err)
                sides[name] = go
            row: dict[str, Any] = {"size": size, "dtype": dt,
                                   "sides": alternated(sides, ROUNDS, flops, do_bench,
                                                       f"{size} {dt:14} ")}
            out["rows"].append(row)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    if sys.argv[1:2] == ["prepare"]:
        prepare()
    elif sys.argv[1:2] == ["check"]:
        check()
    else:
        run(sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None)
