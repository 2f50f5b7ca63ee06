"""The attention backward's two kernels (dK/dV and dQ, examples/attention.py)
launched once each per compiler, dtype and backward configuration, for
Nsight Compute to compare at its locked clock: which kernel of the D = 128
backward is behind Triton's build of the same source, and by how much.
Prints each compiler's registers and spills of every kernel (Triton's from
its compiled kernels, tilec's from the cache's metadata) and the launch order.

    # here
    TILEC_CACHE_DIR=$PWD/.carry/bwdncu .venv/bin/python benchmarks/probe/attention_bwd_ncu.py prepare
    # on the H200
    ncu --metrics gpc__cycles_elapsed.max,smsp__inst_executed.sum,\\
sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed \\
        -k regex:"_attn_bwd_(dkdv|dq)" --csv python3 benchmarks/probe/attention_bwd_ncu.py run > after.csv
    # here: one JSON (and a PNG, with matplotlib) of one or more such reports
    .venv/bin/python benchmarks/probe/attention_bwd_ncu.py summarize before.csv after.csv \\
        --json out.json [--png out.png]

Shape: (4, 32, 4096, 128), non-causal, fp16 and bf16; the configs are
h200_attention.BWD_CONFIGS[128].
"""
from __future__ import annotations

import math
import os
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import h200_attention as bench  # noqa: E402

SHAPE = (4, 32, 4096, 128)
DTYPES = ("float16", "bfloat16")
FWD = (128, 64, 8, 2, True)   # only to produce o and lse


def prepare() -> None:
    z, h, n, d = SHAPE
    bench.SHAPES, bench.DTYPES, bench.CHECKS = [SHAPE], DTYPES, []
    bench.FWD_CONFIGS = {d: [FWD]}
    bench.prepare()


def _launch(mod: Any, q: Any, k: Any, v: Any, o: Any, lse: Any, do: Any, scale: float,
            cfg: Any) -> Any:
    """The dK/dV and dQ kernels of `mod._launch_bwd`, with delta computed once."""
    import torch
    z, h, n, d = q.shape
    (bm1, bn1, w1), (bm2, bn2, w2), stages = cfg
    delta = (o.float() * do.float()).sum(-1).contiguous()
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    a1 = (q, k, v, do, dk, dv, lse, delta, scale, z * h * n, n)
    m1 = dict(HEAD_DIM=d, BLOCK_M=bm1, BLOCK_N=bn1, CAUSAL=False, num_warps=w1,
              num_stages=stages)
    a2 = (q, k, v, do, dq, lse, delta, scale, z * h * n, n)
    m2 = dict(HEAD_DIM=d, BLOCK_M=bm2, BLOCK_N=bn2, CAUSAL=False, num_warps=w2,
              num_stages=stages)
    g1, g2 = (n // bn1, z * h), (n // bm2, z * h)
    k1 = mod._attn_bwd_dkdv.warmup(*a1, grid=g1, **m1)
    k2 = mod._attn_bwd_dq.warmup(*a2, grid=g2, **m2)
    mod._attn_bwd_dkdv[g1](*a1, **m1)
    mod._attn_bwd_dq[g2](*a2, **m2)
    torch.cuda.synchronize()
    return k1, k2


def _regs(k: Any) -> str:
    return f"regs {getattr(k, 'n_regs', '?')} spills {getattr(k, 'n_spills', '?')}"


def run() -> None:
    import torch
    import triton
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))
    z, h, n, d = SHAPE
    scale = 1 / math.sqrt(d)
    order = []
    tri = bench._triton_module()
    for dt in DTYPES:
        q, k, v, do = bench._inputs(torch, SHAPE, dt, "cuda", True)
        o, lse = bench.tl_attn._launch_fwd(q, k, v, False, scale, FWD)
        for name, mod in (("tilec", bench.tl_attn), ("triton", tri)):
            for cfg in bench.BWD_CONFIGS[d]:
                k1, k2 = _launch(mod, q, k, v, o, lse, do, scale, cfg)
                for kern, which in ((k1, "dkdv"), (k2, "dq")):
                    label = f"{name} {dt} stages={cfg[2]} {which}"
                    order.append(label)
                    print(f"launch {len(order)}: {label}: {_regs(kern)}", flush=True)


def _report(path: str) -> list[dict[str, Any]]:
    """The launches of one `ncu --csv` report of `run`, labelled by its
    "launch N: ..." lines, with their metrics."""
    import csv
    labels, rows = [], []
    with open(path) as f:
        lines = f.read().splitlines()
    for line in lines:
        if line.startswith("launch "):
            label, regs = line.split(": ", 1)[1].rsplit(": ", 1)
            labels.append((label, regs))
    table = [r for r in csv.reader(l for l in lines if l.startswith('"'))]
    head, body = table[0], table[1:]
    by_id: dict[str, dict[str, float]] = {}
    for r in body:
        rec = dict(zip(head, r))
        by_id.setdefault(rec["ID"], {})[rec["Metric Name"]] = float(
            rec["Metric Value"].replace(",", ""))
    for (label, regs), (_, metrics) in zip(labels, sorted(by_id.items(),
                                                          key=lambda kv: int(kv[0]))):
        rows.append({"launch": label, "ptxas": regs, **metrics})
    return rows


def summarize(paths: list[str], json_path: str, png: str | None) -> None:
    import json
    reports = {os.path.basename(p): _report(p) for p in paths}
    out: dict[str, Any] = {"shape": SHAPE, "configs": bench.BWD_CONFIGS[128],
                           "reports": reports, "backward_cycles": {}}
    for name, rows in reports.items():
        for r in rows:
            who, dt, st, _ = r["launch"].split()
            key = f"{name} {who} {dt} {st}"
            out["backward_cycles"][key] = out["backward_cycles"].get(key, 0) + \
                r["gpc__cycles_elapsed.max"]
    for key, cyc in out["backward_cycles"].items():
        print(f"{key:60s} {cyc:12,.0f} cycles (dK/dV + dQ)")
    with open(json_path, "w") as f:
        json.dump(out, f, indent=1)
    if png:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        keys = list(out["backward_cycles"])
        fig, ax = plt.subplots(figsize=(10, 0.35 * len(keys) + 1))
        ax.barh(range(len(keys)), [out["backward_cycles"][k] / 1e6 for k in keys])
        ax.set_yticks(range(len(keys)), keys, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("dK/dV + dQ kernels, million cycles at ncu's locked clock (lower is better)")
        ax.set_title("attention backward (4,32,4096,128), non-causal")
        fig.tight_layout()
        fig.savefig(png, dpi=120)


if __name__ == "__main__":
    if sys.argv[1:2] == ["summarize"]:
        import argparse
        ap = argparse.ArgumentParser()
        ap.add_argument("paths", nargs="+")
        ap.add_argument("--json", required=True)
        ap.add_argument("--png")
        a = ap.parse_args(sys.argv[2:])
        summarize(a.paths, a.json, a.png)
    else:
        {"prepare": prepare}.get(sys.argv[1] if sys.argv[1:] else "", run)()
