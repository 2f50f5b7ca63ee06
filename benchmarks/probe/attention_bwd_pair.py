"""A/B probe of the attention backward on one row of benchmarks/h200_attention.py:
tilec's and Triton's backward (examples/attention.py, the same source) for
every backward config, alternated over rounds in one process (medians), so a
drift of the card's clock falls on both alike.  The full benchmark times
each compiler's configs in a block of their own.

    # here: the row's specializations (forward configs and both backward configs)
    TILEC_CACHE_DIR=$PWD/.carry/bwd .venv/bin/python benchmarks/probe/attention_bwd_pair.py prepare
    # on the H200
    PYTHONPATH=$PWD TILEC_CACHE_DIR=$PWD/.carry/bwd python3 \
        benchmarks/probe/attention_bwd_pair.py run --json /tmp/bwd.json

Row: ROW below, (Z, H, N, D, dtype, causal); TILEC_PROBE_ROUNDS rounds (5).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import h200_attention as bench  # noqa: E402

ROW = (4, 32, 4096, 128, "bfloat16", False)
ROUNDS = int(os.environ.get("TILEC_PROBE_ROUNDS", "5"))


def prepare() -> None:
    z, h, n, d, dt, _ = ROW
    bench.SHAPES, bench.DTYPES, bench.CHECKS = [(z, h, n, d)], (dt,), []
    bench.prepare()


def run(json_path: str | None) -> None:
    import torch
    import triton
    from triton.testing import do_bench
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))
    z, h, n, d, dt, causal = ROW
    q, k, v, do = bench._inputs(torch, (z, h, n, d), dt, "cuda", True)
    scale = 1 / math.sqrt(d)
    ref = bench._reference(torch, q, k, v, do, causal, scale)
    flops = 2.5 * 4 * z * h * n * n * d * (0.5 if causal else 1.0)
    fc = bench.FWD_CONFIGS[d][0]
    fns: dict[str, Any] = {}
    for name, mod in (("tilec", bench.tl_attn), ("triton", bench._triton_module())):
        for bc in bench.BWD_CONFIGS[d]:
            e = bench._check_impl(torch, mod, q, k, v, do, causal, scale, ref, fc, bc)
            if max(e.values()) > 2e-2:
                raise SystemExit(f"{name} {bc}: wrong {e}")
            o, lse = mod._launch_fwd(q, k, v, causal, scale, fc)
            fns[f"{name} {bc}"] = (lambda mod=mod, o=o, lse=lse, bc=bc: mod._launch_bwd(
                q, k, v, o, lse, do, causal, scale, bc))
    times: dict[str, list[float]] = {key: [] for key in fns}
    for _ in range(ROUNDS):
        for key, fn in fns.items():
            times[key].append(float(do_bench(fn, warmup=10, rep=60, return_mode="median")))
    rows = {key: {"ms": statistics.median(ts), "tflops": flops / statistics.median(ts) * 1e-9,
                  "rounds_ms": ts} for key, ts in times.items()}
    best = {name: max(r["tflops"] for key, r in rows.items() if key.startswith(name))
            for name in ("tilec", "triton")}
    for key, r in rows.items():
        print(f"  {key:48s} {r['ms']:.4f} ms  {r['tflops']:6.1f} TFLOP/s", flush=True)
    print(f"best: tilec {best['tilec']:.1f} vs Triton {best['triton']:.1f} "
          f"({best['tilec'] / best['triton']:.3f}x)")
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"row": ROW, "rounds": ROUNDS, "forward_config": fc, "variants": rows,
                       "best": best, "tilec_vs_triton": best["tilec"] / best["triton"]},
                      f, indent=1)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["prepare", "run"])
    ap.add_argument("--json")
    ns = ap.parse_args()
    prepare() if ns.phase == "prepare" else run(ns.json)
