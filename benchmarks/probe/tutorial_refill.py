"""Probe: the tutorial-03 pointer matmul (benchmarks/matmul_kernels.py) per
config, tilec against Triton's build of the same source, alternated in one
process, for one tilec cache (one compiler build or schedule).  Run once per
cache to compare two schedules of tilec's cp.async + wgmma ring against the
same Triton baseline; `once` launches each config once (for ncu at its locked
clock).

    here:   TILEC_CACHE_DIR=$PWD/.carry/refill/<name> \\
                .venv/bin/python benchmarks/probe/tutorial_refill.py prepare
    device: PYTHONPATH=$PWD TILEC_CACHE_DIR=$PWD/.carry/refill/<name> \\
                python3 benchmarks/probe/tutorial_refill.py run --label <name> --json F
            ncu --metrics gpc__cycles_elapsed.max,smsp__inst_executed.sum \\
                -k regex:mm_tutorial python3 benchmarks/probe/tutorial_refill.py once
    here:   .venv/bin/python benchmarks/probe/tutorial_refill.py plot --json A.json B.json \\
                --out F.png   (tilec / Triton per shape and config, one bar per run)

Every (shape, config) is checked against torch (fp32 products of the same
inputs) before it is timed; times are medians of `triton.testing.do_bench`
over `ROUNDS` alternations (tilec, Triton, tilec, ...), TFLOP/s = 2 M N K / t.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(ROOT, "benchmarks"), HERE, ROOT]

import torch  # noqa: E402
from h200_matmul import _args as _bench_args, _grid, _meta  # noqa: E402
from matmul_kernels import mm_tutorial  # noqa: E402

CONFIGS = [(128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (128, 128, 64, 8, 3),
           (128, 128, 64, 8, 4), (128, 128, 64, 8, 5)]
SHAPES = [(4096, 4096, 4096, "float16"), (8192, 8192, 8192, "float16"),
          (4096, 4096, 4096, "bfloat16"), (4096, 4096, 4000, "float16"),
          (1024, 8192, 1024, "float16")]
ONCE = [(4096, 4096, 4096, "float16")]
ROUNDS = 5


def _args(m: int, n: int, k: int, dt: str, dev: str | None) -> tuple[Any, ...]:
    """The benchmark's arguments (stand-ins of the same dtypes and ints for
    `prepare` where `dev` is None)."""
    return _bench_args(torch, dev or "cpu", m, n, k, dt, dev is not None)


def prepare() -> None:
    for m, n, k, dt in SHAPES:
        for cfg in CONFIGS:
            mm_tutorial.warmup(*_args(m, n, k, dt, None), target="sm90", **_meta(cfg))
    print("prepared")


def run(label: str, json_path: str | None) -> None:
    from triton.testing import do_bench
    from matmul_kernels import t_mm_tutorial
    rows = []
    for m, n, k, dt in SHAPES:
        torch.manual_seed(m + 3 * n + 7 * k)
        args = _args(m, n, k, dt, "cuda")
        a, b, c = args[:3]
        ref = a.float() @ b.float()
        for cfg in CONFIGS:
            fns = {"tilec": lambda cfg=cfg: mm_tutorial[_grid(m, n, cfg)](*args, **_meta(cfg)),
                   "triton": lambda cfg=cfg: t_mm_tutorial[_grid(m, n, cfg)](*args, **_meta(cfg))}
            errs = {}
            for name, fn in list(fns.items()):
                c.fill_(float("nan"))
                try:
                    fn()
                except Exception as e:  # noqa: BLE001 - Triton's OutOfResources
                    print(f"{label} {name} {cfg}: {type(e).__name__}", flush=True)
                    del fns[name]
                    errs[name] = float("nan")
                    continue
                torch.cuda.synchronize()
                errs[name] = ((c.float() - ref).norm() / ref.norm()).item()
            if "tilec" not in fns:   # not in the cache (prepared for other configs)
                continue
            if not errs["tilec"] < 1e-2:
                print(f"WRONG tilec {dt} {m}x{n}x{k} {cfg}: rel err {errs['tilec']}", flush=True)
                rows.append({"shape": [m, n, k], "dtype": dt, "config": list(cfg),
                             "wrong": errs["tilec"]})
                continue
            times: dict[str, list[float]] = {name: [] for name in fns}
            for _ in range(ROUNDS):
                for name, fn in fns.items():
                    times[name].append(do_bench(fn, warmup=10, rep=100, return_mode="median"))
            tf = {name: 2 * m * n * k / sorted(ts)[ROUNDS // 2] / 1e9 for name, ts in times.items()}
            tr = tf.get("triton")
            row = {"shape": [m, n, k], "dtype": dt, "config": list(cfg),
                   "tilec": round(tf["tilec"], 1), "triton": tr and round(tr, 1),
                   "ratio": tr and round(tf["tilec"] / tr, 3), "rel_error": errs["tilec"]}
            rows.append(row)
            print(f"{label} {dt:9s} {m}x{n}x{k} {cfg}: tilec {tf['tilec']:6.1f}  "
                  f"triton {tr or 0:6.1f}  ratio {row['ratio']}", flush=True)
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"label": label, "device": torch.cuda.get_device_name(),
                       "rounds": ROUNDS, "rows": rows}, f, indent=1)


def once() -> None:
    from matmul_kernels import t_mm_tutorial
    for m, n, k, dt in ONCE:
        args = _args(m, n, k, dt, "cuda")
        for cfg in CONFIGS:
            for kern in (mm_tutorial, t_mm_tutorial):
                try:
                    kern[_grid(m, n, cfg)](*args, **_meta(cfg))
                except Exception as e:  # noqa: BLE001 - a config not prepared / not fitting
                    print(f"{'tilec' if kern is mm_tutorial else 'triton'} {cfg}: "
                          f"{type(e).__name__}")
    torch.cuda.synchronize()
    print("launched")


def clocks() -> None:
    """Tutorial-03 at the first config, tilec, Triton and cuBLAS per dtype of
    SHAPES' 4096^3 rows, each run for 2 s under nvidia-smi's sampling
    (persistent_pair.clock_windows): the SM clock the power cap chose and
    the work per clock."""
    from matmul_kernels import t_mm_tutorial
    from persistent_pair import clock_windows
    cfg = CONFIGS[0]
    dts = tuple(dt for m, n, k, dt in SHAPES if (m, n, k) == (4096, 4096, 4096))

    def cases(dt: str) -> dict[str, tuple[Any, float]]:
        args = _args(4096, 4096, 4096, dt, "cuda")
        a, b = args[:2]
        flops = 2.0 * 4096 ** 3
        return {"tilec": (lambda: mm_tutorial[_grid(4096, 4096, cfg)](*args, **_meta(cfg)),
                          flops),
                "triton": (lambda: t_mm_tutorial[_grid(4096, 4096, cfg)](*args, **_meta(cfg)),
                           flops),
                "cublas": (lambda: torch.matmul(a, b), flops)}
    clock_windows(cases, dts)


def plot(paths: list[str], out: str) -> None:
    """tilec / Triton per (shape, config), one bar per `run` JSON."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    runs = []
    for p in paths:
        with open(p) as f:
            runs.append(json.load(f))
    keys = [(tuple(r["shape"]), r["dtype"], tuple(r["config"])) for r in runs[0]["rows"]]
    for run_ in runs[1:]:
        keys += [k for k in ((tuple(r["shape"]), r["dtype"], tuple(r["config"]))
                             for r in run_["rows"]) if k not in keys]
    fig, ax = plt.subplots(figsize=(max(8, len(keys) * 0.5), 4.5))
    width = 0.8 / len(runs)
    for i, run_ in enumerate(runs):
        got = {(tuple(r["shape"]), r["dtype"], tuple(r["config"])): r.get("ratio")
               for r in run_["rows"]}
        ax.bar([j + i * width for j in range(len(keys))], [got.get(k) or 0 for k in keys],
               width, label=run_["label"])
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_ylim(0.8, 1.1)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(keys))])
    short = {"float16": "fp16", "bfloat16": "bf16"}
    ax.set_xticklabels(["x".join(map(str, s)) + f" {short.get(d, d)}\n" +
                        "/".join(map(str, c[:2])) + f" s{c[4]}" for s, d, c in keys],
                       rotation=90, fontsize=6)
    ax.set_ylabel("tilec / Triton (alternated medians)")
    ax.set_title("tutorial-03 per config, H200")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["prepare", "run", "once", "plot", "clocks"])
    ap.add_argument("--label", default="tilec")
    ap.add_argument("--json", nargs="*")
    ap.add_argument("--out")
    ap.add_argument("--configs", help="BM,BN,BK,W,S;... instead of CONFIGS (prepare, run, once)")
    ap.add_argument("--shapes", help="M,N,K,dtype;... instead of SHAPES (prepare, run)")
    ns = ap.parse_args()
    if ns.configs:
        CONFIGS[:] = [tuple(int(v) for v in c.split(",")) for c in ns.configs.split(";")]
    if ns.shapes:
        SHAPES[:] = [(*(int(v) for v in s.split(",")[:3]), s.split(",")[3])
                     for s in ns.shapes.split(";")]
        ONCE[:] = SHAPES
    if ns.phase == "prepare":
        prepare()
    elif ns.phase == "run":
        run(ns.label, ns.json[0] if ns.json else None)
    elif ns.phase == "plot":
        plot(ns.json, ns.out)
    elif ns.phase == "clocks":
        clocks()
    else:
        once()
