"""CPU elementwise benchmark: tilec vs NumPy vs torch-CPU, side by side in one run.

Measures vector add and saxpy on 2**24 float32 elements (GB/s counts bytes read
plus bytes written once), plus tilec's cold compile time (a fresh process with
an empty cache: import + first launch) and warm load time (a fresh process whose
kernel is in the disk cache: first launch, which loads the shared object).

    .venv/bin/python benchmarks/cpu_elementwise.py [--json benchmarks/results/cpu-<date>.json]
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
from typing import Callable

import numpy as np

import tilec
import tilec.language as tl

N = 1 << 24
BLOCK = 4096


@tilec.kernel
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@tilec.kernel
def saxpy(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    y = tl.load(y_ptr + offs, mask=m, other=0.0)
    tl.store(out_ptr + offs, a * x + y, mask=m)


def bench(fn: Callable[[], object], reps: int = 30) -> float:
    """Median seconds of `fn` after warm-up."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


_CHILD = r"""
import sys, time
t0 = time.perf_counter()
import numpy as np, tilec
sys.path.insert(0, {bench_dir!r})
import cpu_elementwise as b
x = np.ones(1 << 16, np.float32); y = np.ones_like(x); out = np.empty_like(x)
t1 = time.perf_counter()
b.add[(tilec.cdiv(x.size, b.BLOCK),)](x, y, out, x.size, BLOCK=b.BLOCK)
t2 = time.perf_counter()
assert (out == 2).all()
print(t1 - t0, t2 - t1)
"""


def child_times(cache_dir: str) -> tuple[float, float]:
    """(import seconds, first-launch seconds) in a fresh process."""
    code = _CHILD.format(bench_dir=os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, TILEC_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    return float(out[0]), float(out[1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    import torch

    rng = np.random.default_rng(0)
    x = rng.random(N, dtype=np.float32)
    y = rng.random(N, dtype=np.float32)
    out = np.empty_like(x)
    tx, ty, tout = torch.from_numpy(x), torch.from_numpy(y), torch.empty(N)
    a = 2.5
    grid = (tilec.cdiv(N, BLOCK),)
    add[grid](x, y, out, N, BLOCK=BLOCK)
    np.testing.assert_array_equal(out, x + y)
    saxpy[grid](x, y, out, a, N, BLOCK=BLOCK)
    np.testing.assert_allclose(out, np.float32(a) * x + y, rtol=1e-6)

    nbytes = 3 * 4 * N
    rows = []
    cases = {
        "vector_add": {
            "tilec": lambda: add[grid](x, y, out, N, BLOCK=BLOCK),
            "numpy": lambda: np.add(x, y, out=out),
            "torch": lambda: torch.add(tx, ty, out=tout),
        },
        "saxpy": {
            "tilec": lambda: saxpy[grid](x, y, out, a, N, BLOCK=BLOCK),
            "numpy": lambda: np.add(np.multiply(x, np.float32(a), out=out), y, out=out),
            "torch": lambda: torch.add(ty, tx, alpha=a, out=tout),
        },
    }
    print(f"CPU elementwise, float32, n = 2**24, {os.cpu_count()} cores, torch threads "
          f"{torch.get_num_threads()}")
    print(f"{'kernel':12} {'tilec GB/s':>11} {'numpy GB/s':>11} {'torch GB/s':>11} "
          f"{'vs numpy':>9} {'vs torch':>9}")
    for name, fns in cases.items():
        gbs = {k: nbytes / bench(f) / 1e9 for k, f in fns.items()}
        row = {"kernel": name, "shape": [N], "dtype": "float32", "unit": "GB/s",
               "tilec": round(gbs["tilec"], 2), "numpy": round(gbs["numpy"], 2),
               "torch": round(gbs["torch"], 2),
               "ratio_vs_numpy": round(gbs["tilec"] / gbs["numpy"], 3),
               "ratio_vs_torch": round(gbs["tilec"] / gbs["torch"], 3)}
        rows.append(row)
        print(f"{name:12} {row['tilec']:>11.2f} {row['numpy']:>11.2f} {row['torch']:>11.2f} "
              f"{row['ratio_vs_numpy']:>8.2f}x {row['ratio_vs_torch']:>8.2f}x")

    colds, warms = [], []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as d:
            colds.append(child_times(d))
            warms.append(child_times(d))
    cold = statistics.median(t for _, t in colds)
    warm = statistics.median(t for _, t in warms)
    imp = statistics.median(i for i, _ in warms)
    print(f"\nvector add first launch in a fresh process: cold compile {cold * 1e3:.0f} ms "
          f"(empty cache), warm load {warm * 1e3:.1f} ms (disk cache); `import tilec` "
          f"{imp * 1e3:.0f} ms")
    result = {
        "command": "python benchmarks/cpu_elementwise.py --json " + (args.json or ""),
        "machine": {"cores": os.cpu_count(), "processor": platform.processor(),
                    "python": platform.python_version(), "numpy": np.__version__,
                    "torch": torch.__version__, "torch_threads": torch.get_num_threads()},
        "rows": rows,
        "compile": {"cold_compile_ms": round(cold * 1e3, 1), "warm_load_ms": round(warm * 1e3, 2),
                    "import_tilec_ms": round(imp * 1e3, 1)},
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
