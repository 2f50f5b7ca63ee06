"""H200 benchmark suite: tilec vs Triton vs PyTorch, side by side in one run.

Two phases, because the compiler (MLIR) cannot travel to the GPU machine:

    # here (compiler installed): compile every specialization into a cache
    TILEC_CACHE_DIR=.carry/tilec-cache .venv/bin/python benchmarks/h200.py prepare
    # on the GPU machine (no compiler): launch from that cache and measure
    TILEC_CACHE_DIR=.carry/tilec-cache python3 benchmarks/h200.py run --json $OUT/h200.json

Every row is checked against PyTorch before it is timed (fresh random inputs,
output poisoned first).  Times are medians of `triton.testing.do_bench`; TB/s
counts each input read once and each output written once.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tilec  # noqa: E402
import tilec.language as tl  # noqa: E402
from h200_kernels import KERNELS, Case  # noqa: E402


def prepare() -> None:
    """Fill the disk cache for every case's specialization (numpy stand-ins)."""
    t0 = time.perf_counter()
    for case in KERNELS:
        for spec in case.specializations():
            case.kernel.warmup(*spec.args, target="sm90", **spec.kwargs)
    print(f"prepared {sum(len(c.specializations()) for c in KERNELS)} specializations in "
          f"{time.perf_counter() - t0:.1f} s into {os.environ.get('TILEC_CACHE_DIR')}")


def run(json_path: str | None) -> None:
    import torch
    import triton
    from triton.testing import do_bench

    dev = torch.device("cuda")
    torch.manual_seed(0)

    def bench(fn: Callable[[], Any]) -> float:
        return float(do_bench(fn, warmup=50, rep=300, return_mode="median")) * 1e-3

    # The ceiling: a large device-to-device copy (bytes read + written).
    a = torch.randn(1 << 28, device=dev)
    b = torch.empty_like(a)
    copy_tbs = 2 * a.numel() * 4 / bench(lambda: b.copy_(a)) / 1e12
    del a, b
    print(f"device copy: {copy_tbs:.2f} TB/s")
    rows: list[dict[str, Any]] = []
    for case in KERNELS:
        row = case.measure(torch, triton, bench, dev)
        row["pct_of_copy"] = round(100 * row["tilec"] / copy_tbs, 1) if row["unit"] == "TB/s" else None
        rows.append(row)
        print(f"{row['kernel']:28} {str(row['shape']):22} tilec {row['tilec']:8.3f} triton "
              f"{row['triton']:8.3f} torch {row['torch']:8.3f} {row['unit']:5} "
              f"x{row['ratio_vs_triton']:.3f} vs triton", flush=True)
    rows.append(launch_overhead(torch, triton))
    out = {"command": "TILEC_CACHE_DIR=.carry/tilec-cache python3 benchmarks/h200.py run --json "
                      "benchmarks/results/h200-<date>.json",
           "date": time.strftime("%Y-%m-%d"), "device": torch.cuda.get_device_name(),
           "torch": torch.__version__, "triton": triton.__version__,
           "copy_tb_s": round(copy_tbs, 3), "rows": rows}
    if json_path:
        with open(json_path, "w") as f:
            json.dump(out, f, indent=2)
        plot(out, os.path.splitext(json_path)[0] + ".png")
    print_table(out)


def plot(out: dict[str, Any], path: str) -> None:
    """A bar chart of tilec's speed relative to Triton and PyTorch, one group per row."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not available: no chart")
        return
    rows = out["rows"]
    labels = [f"{r['kernel']}\n{'x'.join(map(str, r['shape']))}" for r in rows]
    vs_triton = [r["ratio_vs_triton"] for r in rows]
    vs_torch = [(r["tilec"] / r["torch"]) if r["unit"] == "TB/s" else (r["torch"] / r["tilec"])
                for r in rows]
    xs = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(8, 1.4 * len(rows)), 4.8))
    ax.bar(xs - 0.2, vs_triton, 0.4, label="tilec / Triton")
    ax.bar(xs + 0.2, vs_torch, 0.4, label="tilec / PyTorch")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(0.95, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xticks(xs, labels, fontsize=7)
    ax.set_ylabel("speed ratio (higher is better; launch: inverse time)")
    ax.set_title(f"tilec on {out['device']} ({out['date']}), device copy {out['copy_tb_s']} TB/s")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


def per_launch(torch: Any, fn: Callable[[], Any], batches: int = 50, n: int = 200) -> float:
    """Host time per launch: batches of `n` launches, synchronizing between
    batches (untimed) so the GPU's launch queue never fills and blocks the
    host, which would measure the GPU's kernel throughput instead."""
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    total = 0.0
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        total += time.perf_counter() - t0
        torch.cuda.synchronize()
    return total / (batches * n) * 1e6


def launch_overhead(torch: Any, triton: Any) -> dict[str, Any]:
    """Host time per launch of a tiny kernel (no synchronization inside the loop)."""
    from h200_kernels import t_add, tiny_add
    x = torch.ones(16, device="cuda")
    y = torch.ones(16, device="cuda")
    o = torch.empty(16, device="cuda")

    from tilec.runtime import native
    ours = per_launch(torch, lambda: tiny_add[(1,)](x, y, o, 16, BLOCK=16))
    print(f"C launch path: {native.status()} ({type(tiny_add[(1,)]).__name__})")
    # Where the host time goes: the Python launch path (what runs without a C
    # compiler), the loaded kernel's launch alone, and the driver call alone.
    python_path = per_launch(torch, lambda: tiny_add.run((1,), (x, y, o, 16), {"BLOCK": 16}))
    loaded = next(iter(tiny_add._fast.values()))
    raw = [x.data_ptr(), y.data_ptr(), o.data_ptr(), 16]
    launch_only = per_launch(torch, lambda: loaded.launch((1, 1, 1), raw))
    cu = loaded._launcher
    driver_only = per_launch(torch, lambda: cu._raw_launch(cu._function_handle, 1, 1, 1, cu.threads, 1,
                                                    1, 0, 0, cu._params_addr, None)) \
        if cu._raw_launch is not None else float("nan")
    print(f"launch breakdown: C path {ours:.2f} us; Python path {python_path:.2f} us = "
          f"frontend {python_path - launch_only:.2f} + CudaKernel.launch {launch_only:.2f} "
          f"(of which ctypes cuLaunchKernel {driver_only:.2f})")
    theirs = per_launch(torch, lambda: t_add[(1,)](x, y, o, 16, BLOCK=16))
    torch_us = per_launch(torch, lambda: torch.add(x, y, out=o))
    assert torch.equal(o, x + y)
    print(f"launch overhead: tilec {ours:.1f} us, triton {theirs:.1f} us, torch {torch_us:.1f} us")
    return {"kernel": "launch overhead", "shape": [16], "unit": "us", "tilec_us": round(ours, 2),
            "triton_us": round(theirs, 2), "torch_us": round(torch_us, 2),
            "tilec": round(ours, 2), "triton": round(theirs, 2), "torch": round(torch_us, 2),
            "ratio_vs_triton": round(theirs / ours, 3), "tilec_python_path_us": round(python_path, 2),
            "driver_call_us": round(driver_only, 2)}


def print_table(out: dict[str, Any]) -> None:
    print(f"\n{out['device']}, torch {out['torch']}, triton {out['triton']}, device copy "
          f"{out['copy_tb_s']} TB/s")
    print("| kernel | shape | tilec | Triton | PyTorch | unit | tilec/Triton | % of copy |")
    print("|---|---|---|---|---|---|---|---|")
    for r in out["rows"]:
        pct = r.get("pct_of_copy")
        print(f"| {r['kernel']} | {r['shape']} | {r['tilec']} | {r['triton']} | {r['torch']} | "
              f"{r['unit']} | {r['ratio_vs_triton']} | {pct if pct is not None else '-'} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["prepare", "run"])
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.phase == "prepare":
        prepare()
    else:
        run(args.json)


if __name__ == "__main__":
    main()
