"""Flash attention on the H200: tilec vs Triton (the same source,
examples/attention.py, compiled by Triton) vs `scaled_dot_product_attention`
with the flash and the cuDNN back ends, forward and backward, every row
checked against torch (fp32) before timing.

Rows: (Z, H, N, D) in SHAPES, fp16 and bf16, causal and not.  tilec and Triton
are autotuned over the same configurations (the best of each is reported).
TFLOP/s: the forward counts 4 Z H N^2 D (halved when causal), the backward
2.5 times the forward.  Times are medians of `triton.testing.do_bench`.

    # here (compiler installed)
    TILEC_CACHE_DIR=$PWD/.carry/tilec-cache .venv/bin/python benchmarks/h200_attention.py prepare
    # on the GPU machine
    PYTHONPATH=$PWD TILEC_CACHE_DIR=$PWD/.carry/tilec-cache python3 benchmarks/h200_attention.py run --json $OUT/h200-attention.json
    # correctness only, small ragged shapes (under compute-sanitizer)
    ... python3 benchmarks/h200_attention.py check
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import sys
import tempfile
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if "tilec" not in sys.modules:   # an importer may have chosen another compiler tree
    sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "examples"))

import attention as tl_attn  # noqa: E402  (tilec's example)

SHAPES = [(4, 32, 4096, 128), (1, 32, 16384, 128), (16, 16, 1024, 64), (4, 32, 4096, 64)]
DTYPES = ("float16", "bfloat16")
# Forward (BLOCK_M, BLOCK_N, warps, stages) per head dimension, the same for both compilers.
# The fifth entry: the key/value loop's `warp_specialize` (tilec: warpgroup
# turns, passes/tile_pingpong.py; Triton: its own warp specialization).
# A seventh entry True: `_attn_fwd_persistent` where the row allows it (not
# causal, N a multiple of both blocks; elsewhere the same config without it).
FWD_CONFIGS = {128: [(128, 64, 8, 2, True), (128, 64, 8, 3, True), (128, 64, 8, 4, True),
                     (128, 128, 8, 3, True), (128, 64, 8, 3, False), (128, 64, 8, 4, False),
                     (128, 128, 8, 3, False), (128, 128, 8, 3, True, None, True)],
               64: [(128, 64, 4, 3, False), (128, 64, 8, 3, True), (128, 64, 8, 4, True),
                    (128, 128, 8, 3, True), (128, 64, 8, 3, False), (128, 64, 8, 4, False),
                    (128, 128, 8, 3, False)]}
BWD_CONFIGS = {128: [((64, 128, 8), (128, 64, 8), 2), ((64, 128, 8), (128, 64, 8), 3)],
               64: [((64, 128, 8), (128, 64, 8), 2), ((64, 128, 8), (128, 64, 8), 3)]}
# Small ragged cases for the correctness check (N not a multiple of any block).
CHECKS = [(1, 2, 200, 64, "float16", False), (1, 2, 333, 128, "float16", True),
          (2, 1, 256, 64, "bfloat16", True), (1, 1, 77, 128, "bfloat16", False)]


def _inputs(torch: Any, shape: tuple[int, ...], dt: str, dev: str, real: bool) -> list[Any]:
    if not real:   # a stand-in of the same dtypes and alignment for `prepare`
        return [torch.empty((1, 1, 16, shape[3]), dtype=getattr(torch, dt)) for _ in range(4)]
    g = torch.Generator(device=dev).manual_seed(sum(shape))
    return [torch.randn(shape, generator=g, device=dev, dtype=torch.float32)
            .to(getattr(torch, dt)) for _ in range(4)]


def prepare(checks_only: bool = False) -> None:
    """Compile every tilec specialization the run needs (sm90) into the cache
    (with `checks_only`, those of `check`: scripts/gpu_suite.py)."""
    import torch
    done = 0
    for z, h, n, d in ([] if checks_only else SHAPES) + [(c[0], c[1], c[2], c[3])
                                                         for c in CHECKS]:
        for dt in DTYPES:
            q, k, v, o = _inputs(torch, (z, h, n, d), dt, "cpu", False)
            lse = torch.empty(16, dtype=torch.float32)
            for causal in (False, True):
                for bm, bn, w, s, ws, *rest in FWD_CONFIGS[d]:
                    if rest and rest[-1]:   # persistent: where `_launch_fwd` takes it
                        if not causal and n % bm == 0 and n % bn == 0:
                            tl_attn._attn_fwd_persistent.warmup(
                                q, k, v, o, lse, 0.1, z, h, n, HEAD_DIM=d, BLOCK_M=bm,
                                BLOCK_N=bn, num_warps=w, num_stages=s, target="sm90")
                            done += 1
                        continue
                    tl_attn._attn_fwd.warmup(q, k, v, o, lse, 0.1, z, h, n, HEAD_DIM=d,
                                             BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal,
                                             WARP_SPECIALIZE=ws, num_warps=w, num_stages=s,
                                             target="sm90")
                    done += 1
                for (bm1, bn1, w1), (bm2, bn2, w2), s in BWD_CONFIGS[d]:
                    tl_attn._attn_bwd_dkdv.warmup(q, k, v, o, q, k, lse, lse, 0.1, z * h * n, n,
                                                  HEAD_DIM=d, BLOCK_M=bm1, BLOCK_N=bn1,
                                                  CAUSAL=causal, num_warps=w1, num_stages=s,
                                                  target="sm90")
                    tl_attn._attn_bwd_dq.warmup(q, k, v, o, q, lse, lse, 0.1, z * h * n, n,
                                                HEAD_DIM=d,
                                                BLOCK_M=bm2, BLOCK_N=bn2, CAUSAL=causal,
                                                num_warps=w2, num_stages=s, target="sm90")
                    done += 2
            tl_attn._attn_bwd_preprocess.warmup(o, o, lse, z * h * n, HEAD_DIM=d, BLOCK_M=64,
                                                target="sm90")
    print(f"prepared {done} attention specializations")


def _triton_module() -> Any:
    """examples/attention.py compiled by Triton: the same source, imports changed."""
    with open(os.path.join(ROOT, "examples", "attention.py")) as f:
        src = f.read()
    # (tilec's `overlap_dots` loop hint has no Triton spelling: left out)
    src = (src.replace("import tilec.language as tl", "import triton.language as tl")
           .replace("import tilec\n", "import triton as tilec\n")
           .replace("@tilec.kernel", "@tilec.jit")
           .replace(",\n                            overlap_dots=OVERLAP)", ")"))
    if "overlap_dots=" in src:
        raise RuntimeError("examples/attention.py: the overlap_dots hint was not left out")
    path = os.path.join(tempfile.mkdtemp(), "attention_triton.py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location("attention_triton", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _reference(torch: Any, q: Any, k: Any, v: Any, do: Any, causal: bool,
               scale: float) -> tuple[Any, ...]:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    qf, kf, vf = (t.float().requires_grad_() for t in (q, k, v))
    # The math backend (matmuls + softmax): the reference stays out of
    # PyTorch's fused fp32 kernels, which racecheck reports hazards in.
    with sdpa_kernel(SDPBackend.MATH):
        o = torch.nn.functional.scaled_dot_product_attention(qf, kf, vf, is_causal=causal,
                                                             scale=scale)
        o.backward(do.float())
    return o.detach(), qf.grad, kf.grad, vf.grad


def _err(torch: Any, got: Any, ref: Any) -> float:
    """Max abs error relative to the reference's max magnitude."""
    return float((got.float() - ref).abs().max() / ref.abs().max().clamp_min(1e-6))


def _check_impl(torch: Any, mod: Any, q: Any, k: Any, v: Any, do: Any, causal: bool,
                scale: float, ref: tuple[Any, ...], fwd_cfg: Any, bwd_cfg: Any) -> dict[str, float]:
    o, lse = mod._launch_fwd(q, k, v, causal, scale, fwd_cfg)
    dq, dk, dv = mod._launch_bwd(q, k, v, o, lse, do, causal, scale, bwd_cfg)
    torch.cuda.synchronize()
    return {name: _err(torch, got, r) for name, got, r in
            (("o", o, ref[0]), ("dq", dq, ref[1]), ("dk", dk, ref[2]), ("dv", dv, ref[3]))}


def check() -> None:
    """Small ragged shapes, every config, against torch fp32 (the GPU suite's
    attention cases; run under compute-sanitizer)."""
    import torch
    worst = 0.0
    for z, h, n, d, dt, causal in CHECKS:
        q, k, v, do = _inputs(torch, (z, h, n, d), dt, "cuda", True)
        scale = 1 / math.sqrt(d)
        ref = _reference(torch, q, k, v, do, causal, scale)
        for fc in FWD_CONFIGS[d]:
            for bc in BWD_CONFIGS[d]:
                e = _check_impl(torch, tl_attn, q, k, v, do, causal, scale, ref, fc, bc)
                worst = max(worst, *e.values())
                bad = {key: val for key, val in e.items() if val > 2e-2}
                print(f"check {(z, h, n, d, dt, causal)} fwd {fc} bwd {bc}: "
                      f"{'FAIL ' + str(bad) if bad else 'ok'} (max rel err {max(e.values()):.2e})")
                if bad:
                    raise AssertionError(f"attention {(z, h, n, d, dt, causal)} {fc} {bc}: {bad}")
    print(f"attention check: all passed, worst relative error {worst:.2e}")


def _bench(do_bench: Any, fn: Any) -> float:
    return float(do_bench(fn, warmup=10, rep=60, return_mode="median"))


def run(json_path: str | None) -> None:
    import torch
    import triton
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from triton.testing import do_bench
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))
    tr = _triton_module()
    rows: list[dict[str, Any]] = []
    for z, h, n, d in SHAPES:
        for dt in DTYPES:
            for causal in (False, True):
                q, k, v, do = _inputs(torch, (z, h, n, d), dt, "cuda", True)
                scale = 1 / math.sqrt(d)
                ref = _reference(torch, q, k, v, do, causal, scale)
                flops = 4 * z * h * n * n * d * (0.5 if causal else 1.0)
                row: dict[str, Any] = {"shape": [z, h, n, d], "dtype": dt, "causal": causal}
                for name, mod in (("tilec", tl_attn), ("triton", tr)):
                    best_f, best_b = (math.inf, None), (math.inf, None)
                    errs: dict[str, float] = {}
                    for fc in FWD_CONFIGS[d]:
                        try:
                            e = _check_impl(torch, mod, q, k, v, do, causal, scale, ref, fc,
                                            BWD_CONFIGS[d][0])
                        except Exception as ex:  # a config one compiler cannot build
                            row.setdefault("errors", []).append(f"{name} {fc}: {ex!s:.200}")
                            continue
                        if max(e.values()) > 2e-2:
                            row.setdefault("errors", []).append(f"{name} {fc}: wrong {e}")
                            continue
                        errs = e
                        t = _bench(do_bench, lambda fc=fc: mod._launch_fwd(q, k, v, causal,
                                                                           scale, fc))
                        best_f = min(best_f, (t, fc), key=lambda x: x[0])
                        row.setdefault(f"{name}_fwd_ms_by_config", {})[str(fc)] = t
                    if best_f[1] is not None:
                        o, lse = mod._launch_fwd(q, k, v, causal, scale, best_f[1])
                        for bc in BWD_CONFIGS[d]:
                            t = _bench(do_bench, lambda bc=bc: mod._launch_bwd(
                                q, k, v, o, lse, do, causal, scale, bc))
                            best_b = min(best_b, (t, bc), key=lambda x: x[0])
                    row[name] = {"fwd_ms": best_f[0], "fwd_config": best_f[1],
                                 "bwd_ms": best_b[0], "bwd_config": best_b[1],
                                 "fwd_tflops": flops / best_f[0] * 1e-9,
                                 "bwd_tflops": 2.5 * flops / best_b[0] * 1e-9, "rel_err": errs}
                for name, backend in (("sdpa_flash", SDPBackend.FLASH_ATTENTION),
                                      ("sdpa_cudnn", SDPBackend.CUDNN_ATTENTION)):
                    try:
                        with sdpa_kernel(backend):
                            qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
                            f = torch.nn.functional.scaled_dot_product_attention
                            out = f(qg, kg, vg, is_causal=causal, scale=scale)
                            e = _err(torch, out, ref[0])
                            tf = _bench(do_bench, lambda: f(qg, kg, vg, is_causal=causal,
                                                            scale=scale))
                            tb = _bench(do_bench, lambda: torch.autograd.grad(
                                out, (qg, kg, vg), do, retain_graph=True))
                        row[name] = {"fwd_ms": tf, "bwd_ms": tb, "rel_err_o": e,
                                     "fwd_tflops": flops / tf * 1e-9,
                                     "bwd_tflops": 2.5 * flops / tb * 1e-9}
                    except Exception as ex:
                        row[name] = {"error": f"{ex!s:.200}"}
                for key in ("fwd", "bwd"):
                    a, b = row["tilec"][f"{key}_tflops"], row["triton"][f"{key}_tflops"]
                    row[f"{key}_vs_triton"] = a / b if b else None
                    c = row["sdpa_cudnn"].get(f"{key}_tflops")
                    row[f"{key}_vs_cudnn"] = a / c if c else None
                rows.append(row)
                print(json.dumps(_brief(row)), flush=True)
    out = {"command": "benchmarks/h200_attention.py prepare (dev machine), run (H200)",
           "device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "triton": triton.__version__, "rows": rows}
    if json_path:
        with open(json_path, "w") as f:
            json.dump(out, f, indent=1)
        _plot(rows, os.path.splitext(json_path)[0] + ".png")


def _brief(row: dict[str, Any]) -> dict[str, Any]:
    def tf(name: str, key: str) -> Any:
        v = row.get(name, {}).get(f"{key}_tflops")
        return round(v, 1) if isinstance(v, float) and math.isfinite(v) else None
    return {"shape": row["shape"], "dt": row["dtype"], "causal": row["causal"],
            **{f"{n}_{k}": tf(n, k) for k in ("fwd", "bwd")
               for n in ("tilec", "triton", "sdpa_flash", "sdpa_cudnn")},
            **{f"{n}_fwd_ms_by_config": {k: round(v, 4) for k, v in
                                         row.get(f"{n}_fwd_ms_by_config", {}).items()}
               for n in ("tilec", "triton")},
            "errors": row.get("errors")}


def _plot(rows: list[dict[str, Any]], path: str) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not available: no chart")
        return
    fig, axes = plt.subplots(2, 1, figsize=(13, 7))
    names = ("tilec", "triton", "sdpa_flash", "sdpa_cudnn")
    for ax, key in zip(axes, ("fwd", "bwd")):
        xs = range(len(rows))
        w = 0.2
        for i, name in enumerate(names):
            vals = [r.get(name, {}).get(f"{key}_tflops") or 0 for r in rows]
            ax.bar([x + (i - 1.5) * w for x in xs], [v if math.isfinite(v) else 0 for v in vals],
                   w, label=name)
        labels = [f"{'x'.join(map(str, r['shape']))} {r['dtype'][:4]}{' c' if r['causal'] else ''}"
                  for r in rows]
        ax.set_xticks(list(xs), labels, rotation=35, ha="right", fontsize=7)
        ax.set_ylabel(f"{key} TFLOP/s")
        ax.legend(fontsize=7)
    axes[0].set_title("H200 flash attention: tilec vs Triton (same source) vs SDPA")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _quick() -> None:
    """A probe subset: d = 128 and 64 at N = 4096, fp16, the first backward config."""
    global SHAPES, DTYPES, CHECKS
    SHAPES = [SHAPES[0], SHAPES[3]]
    DTYPES = ("float16",)
    CHECKS = [c for c in CHECKS if c[4] == "float16"]
    for d in BWD_CONFIGS:
        BWD_CONFIGS[d] = BWD_CONFIGS[d][:1]


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["prepare", "run", "check"])
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true", help="the probe subset (_quick)")
    ns = ap.parse_args()
    if ns.quick:
        _quick()
    {"prepare": prepare, "check": check}.get(ns.phase, lambda: run(ns.json))()
