"""A/B probe of attention forward schedules on the H200, in one process: each
round times every variant once (tilec configurations of examples/attention.py,
Triton's best configuration of the same source, SDPA cuDNN), and the report is
each variant's median over the rounds, so slow drifts of the card's clock
fall on all of them alike (separate processes differed by up to 7% for the
same binary).

Variants: (BLOCK_M, BLOCK_N, warps, stages, warp_specialize, overlap_dots);
warp_specialize=True is the producer warpgroup (tile-warp-specialize),
overlap_dots None lets tile-pipeline decide (early S = Q @ K.T), False
turns it off.

    # here
    TILEC_CACHE_DIR=$PWD/.carry/av .venv/bin/python benchmarks/probe/attention_variants.py prepare
    # a compiler experiment in another tree, beside main in the same cache and process
    # (TILEC_ALT_TREE goes first on sys.path; PYTHONPATH alone lost to this tree,
    # which h200_attention puts first; prepare prints which compiler it used):
    TILEC_ALT_TREE=<tree> TILEC_CACHE_DIR=$PWD/.carry/av .venv/bin/python benchmarks/probe/attention_variants.py prepare --alt
    # on the H200 (check: small ragged shapes against torch, for compute-sanitizer;
    # --alt on run / check adds the variants `prepare --alt` built)
    PYTHONPATH=$PWD TILEC_CACHE_DIR=$PWD/.carry/av python3 benchmarks/probe/attention_variants.py run
    PYTHONPATH=$PWD TILEC_CACHE_DIR=$PWD/.carry/av python3 benchmarks/probe/attention_variants.py check
"""
from __future__ import annotations

import argparse
import functools
import json
import math
import os
import statistics
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
if os.environ.get("TILEC_ALT_TREE"):   # the experiment's compiler: imported first
    sys.path.insert(0, os.environ["TILEC_ALT_TREE"])
    import tilec  # noqa: E402,F401
import h200_attention as bench  # noqa: E402

ROWS = [(4, 32, 4096, 128, False), (4, 32, 4096, 128, True), (4, 32, 4096, 64, False),
        (4, 32, 4096, 64, True)]
VARIANTS = [(128, 128, 8, 3, False, False), (128, 128, 8, 3, False, None),
            (128, 128, 8, 3, True, False), (128, 128, 8, 3, True, None),
            (128, 64, 8, 4, False, False), (128, 64, 8, 4, True, False),
            (128, 64, 8, 2, True, None), (128, 64, 8, 3, True, None)]
# Built by `prepare --alt` (another compiler tree) from a copy of the example
# whose kernels differ by a comment (other cache keys), timed beside VARIANTS.
ALT_VARIANTS: list[tuple[Any, ...]] = [(128, 128, 8, 3, True, None), (128, 128, 8, 3, True, False),
                                       (128, 64, 8, 4, True, False), (128, 128, 8, 3, False, False)]
TRITON = [(128, 64, 8, 3, True), (128, 128, 8, 3, False), (128, 64, 4, 3, False)]
ROUNDS = int(os.environ.get("TILEC_PROBE_ROUNDS", "5"))
# Small ragged shapes (N not a multiple of a block), checked against torch
# fp32 under compute-sanitizer: (Z, H, N, D, causal).
CHECKS = [(1, 2, 200, 64, False), (1, 2, 333, 128, True), (2, 1, 77, 128, False)]


@functools.lru_cache(maxsize=None)
def _alt() -> Any:
    """examples/attention.py with a comment in `_fwd_blocks` (so other cache
    keys), written beside this script and imported once."""
    import importlib.util
    path = os.path.join(HERE, "_attention_alt.py")
    with open(os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples",
                           "attention.py")) as fh:
        src = fh.read()
    marker = "    for start_n in tl.range(lo, hi, BLOCK_N,"
    assert marker in src
    src = src.replace(marker, "    # alternative build (benchmarks/probe/attention_variants.py)\n" + marker)
    old = None
    if os.path.exists(path):
        with open(path) as fh:
            old = fh.read()
    if old != src:
        with open(path, "w") as fh:
            fh.write(src)
    spec = importlib.util.spec_from_file_location("_attention_alt", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["_attention_alt"] = mod
    spec.loader.exec_module(mod)
    return mod


def _all_variants(alt: bool) -> list[tuple[Any, Any]]:
    """(module, config) of every variant: VARIANTS from examples/attention.py,
    and with `alt` ALT_VARIANTS from the alternative build (`prepare --alt`)."""
    out = [(bench.tl_attn, v) for v in VARIANTS]
    if alt:
        out += [(_alt(), v) for v in ALT_VARIANTS]
    return out


def _name(mod: Any, var: tuple[Any, ...]) -> str:
    return f"tilec {var}" + (" alt" if mod is not bench.tl_attn else "")


def prepare(alt: bool = False) -> None:
    import torch
    import tilec
    import tilec.passes
    tree = os.path.dirname(os.path.dirname(os.path.abspath(tilec.passes.__file__)))
    if alt and os.path.abspath(tree) != os.path.abspath(os.environ.get("TILEC_ALT_TREE", "")):
        sys.exit(f"prepare --alt: the compiler imported is {tree}, not TILEC_ALT_TREE")
    print(f"compiler: {tree} (tilec {tilec.__file__})")
    done = 0
    mod = _alt() if alt else bench.tl_attn
    for z, h, n, d, causal in ROWS + CHECKS:
        q = torch.empty((1, 1, 16, d), dtype=torch.float16)
        lse = torch.empty(16, dtype=torch.float32)
        for bm, bn, w, s, ws, ov in (ALT_VARIANTS if alt else VARIANTS):
            mod._attn_fwd.warmup(q, q, q, q, lse, 0.1, z, h, n, HEAD_DIM=d,
                                           BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal,
                                           WARP_SPECIALIZE=ws, OVERLAP=ov, num_warps=w,
                                           num_stages=s, target="sm90")
            done += 1
    print(f"prepared {done} specializations")


def check(only: list[int] | None = None, alt: bool = False) -> None:
    """Every variant (or those at indices `only`) on CHECKS against torch
    (fp32): run under compute-sanitizer."""
    import torch
    worst = 0.0
    for z, h, n, d, causal in CHECKS:
        q, k, v, do = bench._inputs(torch, (z, h, n, d), "float16", "cuda", True)
        scale = 1 / math.sqrt(d)
        want = bench._reference(torch, q, k, v, do, causal, scale)[0]
        for mod, var in [mv for i, mv in enumerate(_all_variants(alt)) if only is None or i in only]:
            o, _ = mod._launch_fwd(q, k, v, causal, scale, var)
            torch.cuda.synchronize()
            err = bench._err(torch, o, want)
            worst = max(worst, err)
            if err > 2e-2:
                raise SystemExit(f"check {(z, h, n, d, causal)} {_name(mod, var)}: FAIL ({err:.3g})")
    print(f"attention variants check: all passed, worst relative error {worst:.2e}")


def run(json_path: str | None, only_d: int | None = None, alt: bool = False) -> None:
    import torch
    import triton
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from triton.testing import do_bench
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))
    tr = bench._triton_module()
    out: list[dict[str, Any]] = []
    for z, h, n, d, causal in ROWS:
        if only_d is not None and d != only_d:
            continue
        q, k, v, do = bench._inputs(torch, (z, h, n, d), "float16", "cuda", True)
        scale = 1 / math.sqrt(d)
        ref = bench._reference(torch, q, k, v, do, causal, scale)
        flops = 4 * z * h * n * n * d * (0.5 if causal else 1.0)
        fns: dict[str, Any] = {}
        for mod, var in _all_variants(alt):
            o, _ = mod._launch_fwd(q, k, v, causal, scale, var)
            err = bench._err(torch, o, ref[0])
            if err > 2e-2:
                raise SystemExit(f"{_name(mod, var)}: wrong ({err:.3g})")
            fns[_name(mod, var)] = lambda mod=mod, var=var: mod._launch_fwd(q, k, v, causal,
                                                                           scale, var)
        for var in TRITON:
            fns[f"triton {var}"] = lambda var=var: tr._launch_fwd(q, k, v, causal, scale, var)
        f = torch.nn.functional.scaled_dot_product_attention

        def cudnn() -> Any:
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return f(q, k, v, is_causal=causal, scale=scale)
        fns["sdpa_cudnn"] = cudnn
        times: dict[str, list[float]] = {name: [] for name in fns}
        for _ in range(ROUNDS):
            for name, fn in fns.items():
                times[name].append(float(do_bench(fn, warmup=5, rep=25, return_mode="median")))
        row = {"shape": [z, h, n, d], "causal": causal,
               "ms": {k: statistics.median(v) for k, v in times.items()},
               "spread": {k: (max(v) - min(v)) / statistics.median(v) for k, v in times.items()},
               "ms_rounds": times}
        row["tflops"] = {k: flops / t * 1e-9 for k, t in row["ms"].items()}
        out.append(row)
        print(f"== {(z, h, n, d)} causal={causal}")
        for name in fns:
            print(f"  {name:42s} {row['ms'][name]:.4f} ms  {row['tflops'][name]:6.1f} TFLOP/s"
                  f"  spread {row['spread'][name]:.3f}  min {min(times[name]):.4f} ms",
                  flush=True)
    if json_path:
        with open(json_path, "w") as fh:
            json.dump({"command": "benchmarks/probe/attention_variants.py prepare (dev "
                       "machine), run (H200)", "device": torch.cuda.get_device_name(),
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
    fig, axes = plt.subplots(len(rows), 1, figsize=(12, 3.2 * len(rows)), squeeze=False)
    for ax, row in zip(axes[:, 0], rows):
        names = list(row["tflops"])
        ax.barh(range(len(names)), [row["tflops"][n] for n in names],
                color=["C0" if n.startswith("tilec") else "C1" if n.startswith("triton")
                       else "C2" for n in names])
        ax.set_yticks(range(len(names)), names, fontsize=7)
        ax.set_xlabel("TFLOP/s (median of rounds)")
        ax.set_title(f"{tuple(row['shape'])} fp16 causal={row['causal']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["prepare", "run", "check"])
    ap.add_argument("--json")
    ap.add_argument("--head-dim", type=int, help="time only the rows of this head dimension")
    ap.add_argument("--variants", help="check only these indices into VARIANTS + ALT_VARIANTS "
                    "(e.g. 2,3)")
    ap.add_argument("--alt", action="store_true",
                    help="prepare: build ALT_VARIANTS (with TILEC_ALT_TREE=<the other tree>); "
                    "run / check: time / check them too")
    ns = ap.parse_args()
    if ns.phase == "prepare":
        prepare(ns.alt)
    elif ns.phase == "check":
        check([int(i) for i in ns.variants.split(",")] if ns.variants else None, ns.alt)
    else:
        run(ns.json, ns.head_dim, ns.alt)
