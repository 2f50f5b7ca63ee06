"""A/B probe of the persistent TMA matmul (examples/matmul_persistent.py) with
and without a producer warpgroup (`WARP_SPECIALIZE=True`: tile-warp-specialize
gives the flattened loop's TMA copies to 4 extra warps), on the H200, in one
process: each round times every variant once, alternated with Triton's twin
(benchmarks/matmul_kernels.py `t_matmul_persistent`), and the report is each
variant's median over the rounds, so slow drifts of the card's clock fall on
all of them alike.

Variants: (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages, warp_specialize).  With
the producer the block has warps + 4 warps; 8 consumer warps on a 128 x 256
(or 256 x 128) tile are the cooperative shape (two consumer warpgroups, 64
(128) rows each, 128 f32 accumulators per thread under setmaxnreg 232).

    # here: compile every variant into the cache
    TILEC_CACHE_DIR=$PWD/.carry/ws10 .venv/bin/python benchmarks/probe/matmul_ws_probe.py prepare
    .venv/bin/python scripts/slim_cache.py .carry/ws10
    # on the H200 (MLIR-free runtime, cache hits only)
    PYTHONPATH=$PWD TILEC_CACHE_DIR=$PWD/.carry/ws10 python3 \
        benchmarks/probe/matmul_ws_probe.py run --json /tmp/ws.json
    PYTHONPATH=$PWD TILEC_CACHE_DIR=$PWD/.carry/ws10 compute-sanitizer --tool memcheck \
        python3 benchmarks/probe/matmul_ws_probe.py check

`check` runs every variant on ragged shapes (M, N not multiples of the
blocks, fewer tiles than programs) against torch: run it under
compute-sanitizer (memcheck, racecheck, synccheck).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
sys.path.insert(0, os.path.join(HERE, ".."))

from matmul_persistent import matmul_persistent  # noqa: E402

NUM_SMS = 132
Variant = tuple[int, int, int, int, int, bool]
# The current best configs (no producer) first, then the producer variants.
VARIANTS: dict[str, list[Variant]] = {
    "float16": [(128, 256, 64, 8, 3, False), (128, 256, 64, 8, 3, True),
                (256, 128, 64, 8, 3, True), (128, 128, 64, 8, 4, True),
                (128, 128, 64, 4, 4, True)],
    "float8_e4m3fn": [(128, 256, 128, 8, 3, False), (128, 128, 128, 8, 4, False),
                      (128, 256, 128, 8, 3, True), (256, 128, 128, 8, 3, True),
                      (128, 128, 128, 8, 4, True)],
}
# Triton's twin: its best config without (and, where it compiles, with) its
# own warp specialization.
TRITON: dict[str, list[Variant]] = {
    "float16": [(128, 256, 64, 8, 3, False), (128, 256, 64, 8, 3, True)],
    "float8_e4m3fn": [(128, 256, 128, 8, 3, False), (128, 128, 128, 8, 4, False)],
}
ROWS = [("float16", (4096, 4096, 4096)), ("float16", (8192, 8192, 8192)),
        ("float8_e4m3fn", (4096, 4096, 4096))]
# Ragged shapes for `check`: M, N off the blocks, a K that is not a multiple
# of 64, and fewer tiles than programs (127 rows: 16 tiles of 128 x 256).
CHECKS = [(4000, 4000, 4096), (127, 4096, 4096), (1000, 520, 200), (300, 136, 4096)]
ROUNDS = 5


def _meta(v: Variant) -> dict[str, Any]:
    bm, bn, bk, w, s, ws = v
    return dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, NUM_SMS=NUM_SMS,
                WARP_SPECIALIZE=ws, num_warps=w, num_stages=s)


def _shapes() -> list[tuple[str, tuple[int, int, int]]]:
    return ROWS + [(dt, s) for s in CHECKS for dt in VARIANTS]


def prepare() -> None:
    import torch
    done = 0
    c = torch.empty(16, 16, dtype=torch.float16)
    for dt, (m, n, k) in _shapes():
        x = c.to(getattr(torch, dt))
        for v in VARIANTS[dt]:
            matmul_persistent.warmup(x, x, c, m, n, k, target="sm90", **_meta(v))
            done += 1
    print(f"prepared {done} specializations")


def _inputs(torch: Any, dt: str, m: int, n: int, k: int) -> tuple[Any, Any, Any, Any]:
    g = torch.Generator(device="cuda").manual_seed(m + 7 * n + 13 * k)
    a = torch.randn(m, k, device="cuda", generator=g).to(getattr(torch, dt))
    b = torch.randn(n, k, device="cuda", generator=g).to(getattr(torch, dt))
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    return a, b, c, a.float() @ b.float().T


def _err(torch: Any, c: Any, ref: Any) -> float:
    return float((c.float() - ref).abs().max() / ref.abs().max())


def _limit(dt: str) -> float:
    return 2e-2 if dt == "float16" else 5e-2


def _tilec(a: Any, b: Any, c: Any, v: Variant) -> Callable[[], None]:
    m, k = a.shape
    n = b.shape[0]

    def go() -> None:
        matmul_persistent[(NUM_SMS,)](a, b, c, m, n, k, **_meta(v))
    return go


def _triton(a: Any, b: Any, c: Any, v: Variant) -> Callable[[], None]:
    from matmul_kernels import t_matmul_persistent
    m, k = a.shape
    n = b.shape[0]

    def go() -> None:
        t_matmul_persistent[(NUM_SMS,)](a, b, c, m, n, k, **_meta(v))
    return go


def check() -> None:
    """Every variant on CHECKS against torch (fp32): run under compute-sanitizer."""
    import torch
    worst = 0.0
    for dt, (m, n, k) in _shapes()[len(ROWS):]:
        a, b, c, ref = _inputs(torch, dt, m, n, k)
        for v in VARIANTS[dt]:
            c.fill_(float("nan"))   # a store that writes nothing fails the check
            _tilec(a, b, c, v)()
            torch.cuda.synchronize()
            err = _err(torch, c, ref)
            worst = max(worst, err)
            if not err <= _limit(dt):
                raise SystemExit(f"check {dt} {(m, n, k)} {v}: FAIL (relative error {err:.3g})")
    print(f"matmul producer-warpgroup check: all passed, worst relative error {worst:.2e}")


def run(json_path: str | None) -> None:
    import torch
    import triton
    from triton.testing import do_bench
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))
    out: list[dict[str, Any]] = []
    for dt, (m, n, k) in ROWS:
        a, b, c, ref = _inputs(torch, dt, m, n, k)
        fns: dict[str, Callable[[], None]] = {}
        for name, make, vs in (("tilec", _tilec, VARIANTS[dt]), ("triton", _triton, TRITON[dt])):
            for v in vs:
                fn = make(a, b, c, v)
                c.fill_(float("nan"))
                try:
                    fn()
                    torch.cuda.synchronize()
                except Exception as e:   # (Triton's own limits)
                    print(f"  {name} {v}: {type(e).__name__}: {str(e)[:100]}")
                    continue
                err = _err(torch, c, ref)
                if not err <= _limit(dt):
                    raise SystemExit(f"{name} {dt} {(m, n, k)} {v}: relative error {err:.3g}")
                fns[f"{name} {v}"] = fn
        times: dict[str, list[float]] = {name: [] for name in fns}
        for _ in range(ROUNDS):
            for name, fn in fns.items():
                times[name].append(float(do_bench(fn, warmup=25, rep=100, return_mode="median")))
        flop = 2 * m * n * k
        row: dict[str, Any] = {"dtype": dt, "shape": [m, n, k],
                               "ms": {x: statistics.median(t) for x, t in times.items()},
                               "spread": {x: (max(t) - min(t)) / statistics.median(t)
                                          for x, t in times.items()}}
        row["tflops"] = {x: flop / t * 1e-9 for x, t in row["ms"].items()}
        out.append(row)
        print(f"== {dt} {m}x{n}x{k}")
        for name in fns:
            print(f"  {name:42s} {row['ms'][name]:.4f} ms  {row['tflops'][name]:7.1f} TFLOP/s"
                  f"  spread {row['spread'][name]:.3f}", flush=True)
    if json_path:
        with open(json_path, "w") as fh:
            json.dump({"command": "benchmarks/probe/matmul_ws_probe.py prepare (dev machine), "
                       "run (H200)", "device": torch.cuda.get_device_name(),
                       "torch": torch.__version__, "triton": triton.__version__,
                       "rounds": ROUNDS, "rows": out}, fh, indent=1)
        _plot(out, os.path.splitext(json_path)[0] + ".png")


def _plot(rows: list[dict[str, Any]], path: str) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not available: no chart")
        return
    fig, axes = plt.subplots(len(rows), 1, figsize=(11, 2.8 * len(rows)), squeeze=False)
    for ax, row in zip(axes[:, 0], rows):
        names = list(row["tflops"])
        ax.barh(range(len(names)), [row["tflops"][x] for x in names],
                color=["C1" if x.startswith("triton") else "C2" if x.endswith("True)")
                       else "C0" for x in names])
        ax.set_yticks(range(len(names)), names, fontsize=7)
        ax.set_xlabel("TFLOP/s (median of rounds)")
        ax.set_title(f"persistent matmul {row['dtype']} {'x'.join(map(str, row['shape']))}",
                     fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["prepare", "run", "check"])
    ap.add_argument("--json")
    ns = ap.parse_args()
    if ns.phase == "prepare":
        prepare()
    elif ns.phase == "check":
        check()
    else:
        run(ns.json)
