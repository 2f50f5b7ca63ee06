"""Probe: the cold compile of one tutorial-03 config (128x256x64, 8 warps, 3
stages, fp16, sm_90a), tilec against Triton's offline compiler on the same
machine, each in a fresh process with an empty cache, alternated.

    .venv/bin/python benchmarks/probe/cold_compile.py --triton <dir> [--runs 8] [--json F]

`<dir>` holds an unpacked Triton wheel (the `triton` package with its bundled
ptxas: `pip download triton==3.6.0`, then unzip): Triton runs there as
`triton.compile(ASTSource(...), target=GPUTarget("cuda", 90, 32))`, which needs
no GPU.  tilec runs as `tilec compile` (what `benchmarks/h200_matmul.py
prepare` times).  Both compile benchmarks/matmul_kernels.py's kernels with the
benchmark's specialization (ints divisible by 16, unit strides constant).
Times are wall seconds of the whole process (interpreter start, imports,
compile, ptxas); the medians are printed and written to the JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SIG = "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1"

# The Triton side, run as `python -c` with the wheel's folder first on sys.path
# and the Triton half of matmul_kernels.py written to a module of its own
# (Triton's JIT reads the function's source from its file).
TRITON = """
import sys
sys.path[:0] = [{path!r}, {twin!r}]
import triton
from triton.compiler import ASTSource
from triton.backends.compiler import GPUTarget
from matmul_twin import t_mm_tutorial
sig = {{"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32",
       "K": "i32", "stride_am": "i32", "stride_ak": "constexpr", "stride_bk": "i32",
       "stride_bn": "constexpr", "stride_cm": "i32", "stride_cn": "constexpr",
       "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr",
       "GROUP_M": "constexpr"}}
consts = {{(7,): 1, (9,): 1, (11,): 1, (12,): 128, (13,): 256, (14,): 64, (15,): 8}}
attrs = {{(i,): [["tt.divisibility", 16]] for i in (0, 1, 2, 3, 4, 5, 6, 8, 10)}}
k = triton.compile(ASTSource(t_mm_tutorial, sig, consts, attrs),
                   target=GPUTarget("cuda", 90, 32), options=dict(num_warps=8, num_stages=3))
assert k.asm["cubin"]
"""


def _twin(folder: str) -> None:
    """matmul_kernels.py's Triton half (the `try:` block), as folder/matmul_twin.py."""
    src = open(os.path.join(ROOT, "benchmarks", "matmul_kernels.py")).read()
    body = src[src.index("    import triton\n"):]
    body = body[:body.index("\nexcept")]
    with open(os.path.join(folder, "matmul_twin.py"), "w") as f:
        f.write("\n".join(line[4:] for line in body.splitlines()) + "\n")


def _tilec(cache: str) -> list[str]:
    return [sys.executable, "-m", "tilec.cli", "compile",
            os.path.join(ROOT, "benchmarks", "matmul_kernels.py"), "--target", "sm90",
            "--kernel", "mm_tutorial", "--signature", SIG, "--num-warps", "8",
            "--num-stages", "3", "--constexpr", "BLOCK_M=128", "BLOCK_N=256", "BLOCK_K=64",
            "GROUP_M=8", "-o", os.path.join(cache, "out")]


def _timed(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env, cwd=ROOT)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--triton", required=True, help="folder with an unpacked Triton wheel")
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--json")
    ns = ap.parse_args()
    twin = tempfile.mkdtemp()
    _twin(twin)
    script = TRITON.format(path=os.path.abspath(ns.triton), twin=twin)
    times: dict[str, list[float]] = {"tilec": [], "triton": []}
    for _ in range(ns.runs):
        with tempfile.TemporaryDirectory() as d:
            times["tilec"].append(_timed(_tilec(d), {**os.environ, "TILEC_CACHE_DIR": d}))
        with tempfile.TemporaryDirectory() as d:
            times["triton"].append(_timed([sys.executable, "-c", script],
                                          {**os.environ, "TRITON_CACHE_DIR": d}))
    med = {k: round(statistics.median(v), 3) for k, v in times.items()}
    for k, v in times.items():
        print(f"{k:6s} median {med[k]:.3f} s  runs " + " ".join(f"{t:.2f}" for t in v))
    print(f"tilec / Triton {med['tilec'] / med['triton']:.3f}")
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump({"command": " ".join(sys.argv), "config": "tutorial-03 128x256x64 w8 s3 "
                       "fp16 sm_90a", "cpus": os.cpu_count(), "runs_s": times,
                       "median_s": med}, f, indent=1)


if __name__ == "__main__":
    main()
