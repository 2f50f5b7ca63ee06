"""Host time of one tiny CPU launch: tilec (C launch path, and the Python path it
replaces) next to NumPy and PyTorch doing the same 16-element add, in one run.

    .venv/bin/python benchmarks/cpu_launch.py [--json PATH]

Median over 20 blocks of 2000 calls each.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from typing import Any, Callable

import numpy as np

import tilec
import tilec.language as tl
from tilec.runtime import native


@tilec.kernel
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


def per_call_us(fn: Callable[[], Any], blocks: int = 20, n: int = 2000) -> float:
    for _ in range(n):
        fn()
    times = []
    for _ in range(blocks):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    import torch
    torch.set_num_threads(1)
    x, y = np.ones(16, np.float32), np.ones(16, np.float32)
    o = np.empty(16, np.float32)
    launch = add[(1,)]
    launch(x, y, o, 16, BLOCK=16)
    assert np.array_equal(o, x + y)
    tx, ty, to = torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(o)
    rows = {
        "tilec (C launch path)": per_call_us(lambda: add[(1,)](x, y, o, 16, BLOCK=16)),
        "tilec (Python launch path)": per_call_us(lambda: add.run((1,), (x, y, o, 16),
                                                                  {"BLOCK": 16})),
        "numpy np.add(x, y, out=o)": per_call_us(lambda: np.add(x, y, out=o)),
        "torch.add(x, y, out=o) (CPU)": per_call_us(lambda: torch.add(tx, ty, out=to)),
    }
    print(f"C launch path: {native.status()} ({type(add[(1,)]).__name__})")
    for k, v in rows.items():
        print(f"{v:8.2f} us  {k}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": "benchmarks/cpu_launch.py", "machine": platform.processor()
                       or platform.machine(), "unit": "us per launch",
                       "rows": [{"kernel": k, "us": round(v, 3)} for k, v in rows.items()]},
                      f, indent=1)


if __name__ == "__main__":
    main()
