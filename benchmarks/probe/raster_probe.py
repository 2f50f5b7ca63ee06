"""Is the 8192^3 rate bound by DRAM traffic under the power cap?  The
persistent matmul rows (tilec's examples/matmul_persistent.py and Triton's TMA
twin, benchmarks/matmul_kernels.py) at 8192^3 in fp8 e4m3 and fp16, each with
GROUP_M 8 (the benchmark's), 16 and 32: a larger group keeps more of B's
column blocks in L2 between row blocks (4096^3 fits in L2 and runs ~300 MHz
faster at the same 690 W).  Every side is timed in alternated rounds (ABC
CBA ...), with the card's SM clock and power per side (gpu_clock.ClockLog),
and checked against torch first.  Both compilers get the same GROUP_M, so a
gain is the kernel's, not the compiler's: what it tells is whether the rows'
cause is DRAM energy.  tilec also runs each GROUP_M with 4 ring slots
(`tilec s4`: the C tile then stored in column passes, passes/pipeline_tma.py
fit_store; Triton's kernel does not fit 4 at 128x256): whether the copies'
lead of 2 slots (~1.4 us at 1.5 GHz) is too short where B comes from DRAM.

    TILEC_CACHE_DIR=$PWD/.carry/raster/cache .venv/bin/python benchmarks/probe/raster_probe.py prepare
    # on the H200 (ncu beside it: --metrics dram__bytes.sum,lts__t_bytes.sum):
    TILEC_CACHE_DIR=$PWD/.carry/raster/cache python3 benchmarks/probe/raster_probe.py run [--json F]
    ncu --metrics dram__bytes.sum,lts__t_bytes.sum -k regex:matmul_persistent \
        python3 benchmarks/probe/raster_probe.py once   # each side once more, untimed
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(ROOT, "benchmarks"), os.path.join(ROOT, "examples"), ROOT]

from h200_matmul import NUM_SMS, _persistent_args  # noqa: E402
from matmul_persistent import matmul_persistent  # noqa: E402

SIZE = 8192
# (dtype, BLOCK_M, BLOCK_N, BLOCK_K, warps, stages): the benchmark's best configs.
ROWS = (("float8_e4m3fn", (128, 256, 128, 8, 3)), ("float16", (128, 256, 64, 8, 3)))
GROUPS = (8, 16, 32)
DEEP = 4   # tilec's extra sides: the same config with this many ring slots
ROUNDS = 8


def _meta(cfg: tuple[int, ...], group: int, stages: int = 0) -> dict[str, int]:
    bm, bn, bk, w, s = cfg
    return dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=group, NUM_SMS=NUM_SMS,
                num_warps=w, num_stages=stages or s)


def prepare() -> None:
    import torch
    for dt, cfg in ROWS:
        for g in GROUPS:
            for stages in (0, DEEP):
                matmul_persistent.warmup(*_persistent_args(torch, "cpu", SIZE, SIZE, SIZE, dt,
                                                           False),
                                         target="sm90", **_meta(cfg, g, stages))
    print(f"prepared {len(ROWS) * len(GROUPS) * 2} specializations")


def run(json_path: str | None, once: bool = False) -> None:
    """Every side checked against torch, then timed in alternated rounds; with
    `once` (`raster_probe.py once`, for ncu) each side launched once more,
    untimed: ncu -k regex:matmul_persistent sees the sides in order."""
    import torch
    import triton
    from triton.testing import do_bench
    from gpu_clock import alternated
    from matmul_kernels import t_matmul_persistent
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))
    flops = 2 * SIZE ** 3
    out: dict[str, Any] = {"command": " ".join(sys.argv), "rows": []}
    for dt, cfg in ROWS:
        pargs = _persistent_args(torch, "cuda", SIZE, SIZE, SIZE, dt, True)
        a, b, c = pargs[:3]
        ref = (a.float() @ b.float().T)
        sides: dict[str, Callable[[], None]] = {}
        for g in GROUPS:
            for name, kern, stages in (("tilec", matmul_persistent, 0),
                                       ("triton", t_matmul_persistent, 0),
                                       (f"tilec s{DEEP}", matmul_persistent, DEEP)):
                def go(kern: Any = kern, g: int = g, stages: int = stages) -> None:
                    kern[(NUM_SMS,)](*pargs, **_meta(cfg, g, stages))
                c.fill_(float("nan"))
                go()
                torch.cuda.synchronize()
                err = ((c.float() - ref).norm() / ref.norm()).item()
                assert err < 2e-2, (dt, name, g, err)
                sides[f"{name} G{g}"] = go
        if once:
            for s in sides:
                print(f"{dt} {s}", flush=True)
                sides[s]()
            torch.cuda.synchronize()
            continue
        row: dict[str, Any] = {"dtype": dt, "config": list(cfg),
                               "sides": alternated(sides, ROUNDS, flops, do_bench, f"{dt:14} ")}
        out["rows"].append(row)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    if sys.argv[1:2] == ["prepare"]:
        prepare()
    else:
        run(sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None,
            once=sys.argv[1:2] == ["once"])
