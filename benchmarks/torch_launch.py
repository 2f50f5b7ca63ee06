"""Host time per launch of a tilec kernel with torch CPU tensors: eager (the C
launch path of a static grid, the Python fast path of a grid function) and
inside `torch.compile(fullgraph=True)` functions (one launch per call, through
the `tilec::launch` operator), next to the same add done by torch.

    .venv/bin/python benchmarks/torch_launch.py [--json PATH] [--eager-only]

Median over 15 blocks of 2000 calls (eager) or 300 calls (compiled).
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from typing import Any, Callable

import tilec
import tilec.language as tl


@tilec.kernel
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


def per_call_us(fn: Callable[[], Any], blocks: int = 15, n: int = 2000) -> float:
    for _ in range(n // 4):
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
    ap.add_argument("--eager-only", action="store_true")
    args = ap.parse_args()
    import torch
    torch.set_num_threads(1)
    x, y, o = torch.ones(16), torch.ones(16), torch.empty(16)
    grid_fn = lambda meta: (tilec.cdiv(meta["n"], meta["BLOCK"]),)  # noqa: E731
    add[(1,)](x, y, o, 16, BLOCK=16)
    add[grid_fn](x, y, o, 16, BLOCK=16)
    assert torch.equal(o, x + y)
    rows = {
        "eager, static grid (C path)": per_call_us(lambda: add[(1,)](x, y, o, 16, BLOCK=16)),
        "eager, grid function (general path)":
            per_call_us(lambda: add[grid_fn](x, y, o, 16, BLOCK=16)),
        "torch.add(x, y, out=o)": per_call_us(lambda: torch.add(x, y, out=o)),
    }
    if not args.eager_only:
        def f(a: Any, b: Any, out: Any) -> Any:
            add[grid_fn](a, b, out, a.numel(), BLOCK=16)
            return out
        for backend in ("aot_eager", "inductor"):
            cf = torch.compile(f, backend=backend, fullgraph=True)
            cf(x, y, o)
            rows[f"torch.compile({backend}, fullgraph) of one launch"] = \
                per_call_us(lambda: cf(x, y, o), n=300)
        cadd = torch.compile(lambda a, b, out: torch.add(a, b, out=out), backend="inductor",
                             fullgraph=True)
        cadd(x, y, o)
        rows["torch.compile(inductor) of torch.add(out=)"] = per_call_us(lambda: cadd(x, y, o),
                                                                         n=300)
    for k, v in rows.items():
        print(f"{v:8.2f} us  {k}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"command": "benchmarks/torch_launch.py", "torch": torch.__version__,
                       "machine": platform.processor() or platform.machine(),
                       "unit": "us per launch",
                       "rows": [{"case": k, "us": round(v, 3)} for k, v in rows.items()]},
                      fh, indent=1)


if __name__ == "__main__":
    main()
