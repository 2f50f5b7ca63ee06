"""The persistent attention forward (`_attn_fwd_persistent`, examples/attention.py)
beside the default non-persistent one and SDPA cuDNN: correctness on uneven tile
counts, then timings alternated in one process, and one launch each for ncu.

    # here
    TILEC_CACHE_DIR=$PWD/.carry/pers .venv/bin/python benchmarks/probe/attention_persistent.py prepare
    # on the H200
    python3 benchmarks/probe/attention_persistent.py check [--small]
    python3 benchmarks/probe/attention_persistent.py run [--json F]
    ncu --metrics gpc__cycles_elapsed.max -k regex:"_attn_fwd|cudnn" python3 benchmarks/probe/attention_persistent.py once
"""
from __future__ import annotations

import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(ROOT, "benchmarks"), os.path.join(ROOT, "examples"), ROOT]

import torch  # noqa: E402
import attention as A  # noqa: E402
import h200_attention as bench  # noqa: E402

DEFAULT = (128, 128, 8, 3, True)          # the example's forward default on the H200
PERSISTENT = (128, 128, 8, 3, True, None, True)
SHAPES = [(4, 32, 4096, 128), (1, 32, 16384, 128)]
# (Z, H, N, D, dtype, programs): tile counts that do not divide by the programs
CHECKS = [(1, 2, 512, 128, "float16", 3), (2, 3, 256, 128, "bfloat16", 5),
          (1, 1, 128, 128, "float16", 132), (4, 32, 4096, 128, "float16", None),
          (4, 32, 4096, 128, "bfloat16", None), (1, 32, 16384, 128, "float16", None)]


def prepare() -> None:
    for z, h, n, d in SHAPES + [c[:4] for c in CHECKS]:
        for dt in ("float16", "bfloat16"):
            q = torch.empty((1, 1, 16, d), dtype=getattr(torch, dt))
            lse = torch.empty(16, dtype=torch.float32)
            A._attn_fwd_persistent.warmup(q, q, q, q, lse, 0.1, z, h, n, HEAD_DIM=d,
                                          BLOCK_M=128, BLOCK_N=128, num_warps=8,
                                          num_stages=3, target="sm90")
            A._attn_fwd.warmup(q, q, q, q, lse, 0.1, z, h, n, HEAD_DIM=d, BLOCK_M=128,
                               BLOCK_N=128, CAUSAL=False, WARP_SPECIALIZE=True,
                               num_warps=8, num_stages=3, target="sm90")
    print("prepared")


def _inputs(shape: tuple[int, ...], dt: str) -> list[torch.Tensor]:
    """q, k, v as the benchmark makes them (h200_attention._inputs)."""
    return bench._inputs(torch, shape, dt, "cuda", True)[:3]


def check(small: bool = False) -> None:
    """Against SDPA in fp32 (O) and the default kernel (LSE); `small`: the
    first three cases only (for compute-sanitizer)."""
    bad = 0
    for z, h, n, d, dt, progs in CHECKS[:3] if small else CHECKS:
        q, k, v = _inputs((z, h, n, d), dt)
        scale = 1.0 / math.sqrt(d)
        ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                               scale=scale)
        o, lse = A._launch_fwd(q, k, v, False, scale, PERSISTENT, num_programs=progs)
        o2, lse2 = A._launch_fwd(q, k, v, False, scale, DEFAULT)
        torch.cuda.synchronize()
        err = float((o.float() - ref).abs().max() / ref.abs().max())
        lse_d = float((lse - lse2).abs().max())
        ok = err < 1e-2 and lse_d < 1e-3
        bad += not ok
        print(f"check {(z, h, n, d)} {dt} programs {progs}: o err {err:.2e}, "
              f"lse vs default {lse_d:.2e} {'ok' if ok else 'FAIL'}", flush=True)
    print("persistent check:", "FAILED" if bad else "all passed")
    if bad:
        sys.exit(1)


def once() -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    for shape in SHAPES:
        q, k, v = _inputs(shape, "float16")
        scale = 1.0 / math.sqrt(shape[3])
        A._launch_fwd(q, k, v, False, scale, PERSISTENT)
        A._launch_fwd(q, k, v, False, scale, DEFAULT)
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)
        torch.cuda.synchronize()
    print("launch order per shape:", SHAPES, "persistent, default, cudnn")


def run(out: str | None) -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from triton.testing import do_bench
    rows = []
    for shape in SHAPES:
        for dt in ("float16", "bfloat16"):
            q, k, v = _inputs(shape, dt)
            scale = 1.0 / math.sqrt(shape[3])

            def cudnn() -> None:
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)
            fns = {"persistent": lambda: A._launch_fwd(q, k, v, False, scale, PERSISTENT),
                   "default": lambda: A._launch_fwd(q, k, v, False, scale, DEFAULT),
                   "cudnn": cudnn}
            times: dict[str, list[float]] = {name: [] for name in fns}
            for _ in range(5):
                for name, fn in fns.items():
                    times[name].append(do_bench(fn, warmup=25, rep=200, return_mode="median"))
            z, h, n, d = shape
            flops = 4 * z * h * n * n * d
            row = {"shape": list(shape), "dtype": dt, **{
                name: round(flops / sorted(ts)[2] / 1e9, 1) for name, ts in times.items()},
                "ms": times}
            rows.append(row)
            print(f"{shape} {dt}: persistent {row['persistent']} default {row['default']} "
                  f"cudnn {row['cudnn']} TFLOP/s (medians of 5 alternated rounds)", flush=True)
    if out:
        with open(out, "w") as f:
            json.dump({"command": "benchmarks/probe/attention_persistent.py run",
                       "device": torch.cuda.get_device_name(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    phase = sys.argv[1] if len(sys.argv) > 1 else "run"
    if phase == "prepare":
        prepare()
    elif phase == "check":
        check("--small" in sys.argv)
    elif phase == "once":
        once()
    else:
        run(sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None)
