"""Cold compile time of one matmul config, tilec vs Triton, offline on this machine.

The kernel is tutorial-03's pointer matmul (benchmarks/matmul_kernels.py:
`mm_tutorial` and its Triton twin `t_mm_tutorial`, the same text), fp16,
128x256x64 tiles, 8 warps, 3 stages, for sm90 (Triton: `GPUTarget("cuda", 90,
32)`), with the specialization both launchers would make for contiguous 4096^3
operands: pointers and the non-unit ints 16-divisible, the unit strides
constants.  Each sample is a fresh process with an empty cache, timed from
the parent (Python start and imports included; bytecode caching on, as in a
normal install, and one untimed run of each first so that both start from
written `.pyc` files), run alternately; the tilec child does not import Triton
(matmul_kernels.py defines the twin only where Triton imports).  The JSON
keeps every sample, the medians and tilec's own step times (manifest
`times_ms`).  Needs Triton installed beside tilec (`pip install
triton==3.9.0`: not a test dependency; it compiles without a GPU).

    .venv/bin/python benchmarks/compile_time.py [--samples 5] [--json benchmarks/results/compile-time-<date>.json]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CONSTEXPRS = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}
WARPS, STAGES = 8, 3
# a_ptr b_ptr c_ptr M N K stride_am stride_ak stride_bk stride_bn stride_cm stride_cn
TILEC_SIG = "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1"

TRITON_CHILD = """
import sys, time
t0 = time.perf_counter()
sys.path.insert(0, {here!r})
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from matmul_kernels import t_mm_tutorial as fn
ones = {{"stride_ak": 1, "stride_bn": 1, "stride_cn": 1}}
names = list(fn.arg_names)
types = ["*fp16"] * 3 + ["i32"] * 9
sig = {{n: t for n, t in zip(names, types)}}
sig.update({{k: "constexpr" for k in list(ones) + list({cx!r})}})
attrs = {{(names.index(n),): [["tt.divisibility", 16]] for n in names[:12] if n not in ones}}
k = triton.compile(ASTSource(fn=fn, signature=sig, constexprs={{**ones, **{cx!r}}}, attrs=attrs),
                   target=GPUTarget("cuda", 90, 32),
                   options={{"num_warps": {warps}, "num_stages": {stages}}})
assert "wgmma" in k.asm["ptx"], "expected wgmma"
print("in-process", time.perf_counter() - t0, "cubin", len(k.asm["cubin"]))
"""


# The children's environment: bytecode written and read as in a normal install.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
TILEC_CHILD = ("import sys, runpy; sys.modules['triton'] = None; sys.argv[0] = 'tilec'; "
               "runpy.run_module('tilec.cli', run_name='__main__')")


def tilec_once() -> tuple[float, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-c", TILEC_CHILD, "compile",
               os.path.join(HERE, "matmul_kernels.py"), "--target", "sm90",
               "--kernel", "mm_tutorial", "--signature", TILEC_SIG,
               "--num-warps", str(WARPS), "--num-stages", str(STAGES),
               "--constexpr", *[f"{k}={v}" for k, v in CONSTEXPRS.items()],
               "-o", os.path.join(tmp, "out")]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT,
                       env={**ENV, "TILEC_CACHE_DIR": os.path.join(tmp, "cache")})
        wall = time.perf_counter() - t0
        with open(os.path.join(tmp, "out", "mm_tutorial", "manifest.json")) as f:
            steps = json.load(f)["metadata"].get("times_ms", {})
    return wall, steps


def triton_once() -> float:
    code = TRITON_CHILD.format(here=HERE, cx=CONSTEXPRS, warps=WARPS, stages=STAGES)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                       env={**ENV, "TRITON_CACHE_DIR": tmp})
        return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args()
    import triton
    tilec_s: list[float] = []
    triton_s: list[float] = []
    steps: list[dict[str, float]] = []
    tilec_once(), triton_once()          # .pyc files written
    for _ in range(args.samples):
        wall, st = tilec_once()
        tilec_s.append(wall)
        steps.append(st)
        triton_s.append(triton_once())
        print(f"tilec {wall:.2f} s  triton {triton_s[-1]:.2f} s", flush=True)
    med_t, med_tr = statistics.median(tilec_s), statistics.median(triton_s)
    print(f"median: tilec {med_t:.2f} s, triton {med_tr:.2f} s, tilec/triton {med_t / med_tr:.2f}")
    if args.json:
        out: dict[str, Any] = {
            "command": "benchmarks/compile_time.py " + " ".join(sys.argv[1:]),
            "config": {**CONSTEXPRS, "num_warps": WARPS, "num_stages": STAGES, "target": "sm90"},
            "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()},
            "triton": triton.__version__,
            "tilec_s": [round(x, 3) for x in tilec_s], "triton_s": [round(x, 3) for x in triton_s],
            "tilec_median_s": round(med_t, 3), "triton_median_s": round(med_tr, 3),
            "tilec_over_triton": round(med_t / med_tr, 3),
            "tilec_steps_ms": steps,
            "note": "fresh process and empty cache per sample (Python start and imports included)",
        }
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
