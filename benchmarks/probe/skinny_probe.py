"""Probe: where the timed rate of a latency-bound tutorial-03 launch
(127x4096x4096: 32 programs) differs from its per-launch cycles.

Nsight Compute (L2 flushed and invalidated before the launch) puts tilec's
TMA build 2.4% ahead of Triton's cp.async build, while the benchmark's
`do_bench` rounds (a 256 MB memset before each launch: L2 full of dirty
lines) read 0.973-0.998.  This probe times, alternated ABC / CBA:

  * `flush`: do_bench as the benchmark does (memset, then the launch);
  * `b2b`: 50 launches back to back between two events, no memset;
  * `read`: as `flush` with a read of the 256 MB buffer instead of the
    memset (the L2 holds clean lines), `small`: a 16 MB memset;

for tilec's build with the tensor maps' L2 promotion at 256 B (the
runtime's), 128 B and none (the same cubin: the runtime's module constant is
set before a variant's first launch, which encodes that variant's maps on
its own copies of the tensors), `mm_ptr_store` (TMA loads, pointer
epilogue) and Triton.  `once` launches each after a memset (for ncu with
`--cache-control none`).

    here:   TILEC_CACHE_DIR=$PWD/.carry/sk24/cache .venv/bin/python benchmarks/probe/skinny_probe.py prepare
    device: PYTHONPATH=$PWD TILEC_CACHE_DIR=$PWD/.carry/sk24/cache \\
                python3 benchmarks/probe/skinny_probe.py run --json F
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(ROOT, "benchmarks"), HERE, ROOT]

import torch  # noqa: E402
from h200_matmul import _args as _bench_args, _grid, _meta  # noqa: E402
from matmul_kernels import mm_tutorial  # noqa: E402
from tutorial_tma import mm_ptr_store  # noqa: E402
from tilec.runtime import tensormap  # noqa: E402

ROWS = [((127, 4096, 4096, "float16"), (128, 128, 64, 4, 4)),
        ((4096, 4096, 4096, "float16"), (128, 256, 64, 8, 3))]
PROMOTION = {"tilec": 3, "tilec_p128": 2, "tilec_p0": 0}
ROUNDS = 12


def prepare() -> None:
    for (m, n, k, dt), cfg in ROWS:
        for kern in (mm_tutorial, mm_ptr_store):
            h = kern.warmup(*_bench_args(torch, "cpu", m, n, k, dt, False), target="sm90",
                            **_meta(cfg))
            print(kern.__name__, dt, (m, n, k), cfg, "regs", h.n_regs, "spills", h.n_spills)


def _launchers(m: int, n: int, k: int, dt: str, cfg: tuple[int, ...]
               ) -> tuple[dict[str, Callable[[], None]], dict[str, float]]:
    """Each side's launch on its own copies of one set of operands, checked."""
    from matmul_kernels import t_mm_tutorial
    torch.manual_seed(m + 3 * n + 7 * k)
    base = _bench_args(torch, "cuda", m, n, k, dt, True)
    ref = base[0].float() @ base[1].float()
    g = _grid(m, n, cfg)
    fns: dict[str, Callable[[], None]] = {}
    errs: dict[str, float] = {}
    sides: list[tuple[str, Any]] = [(name, mm_tutorial) for name in PROMOTION]
    sides += [("tilec_ptr_store", mm_ptr_store), ("triton", t_mm_tutorial)]
    for name, kern in sides:
        args = (base[0].clone(), base[1].clone(), torch.empty_like(base[2]), *base[3:])
        tensormap._L2_PROMOTION_256B = PROMOTION.get(name, 3)   # encoded at the first launch
        fn = (lambda kern=kern, args=args: kern[g](*args, **_meta(cfg)))
        args[2].fill_(float("nan"))
        fn()
        torch.cuda.synchronize()
        errs[name] = ((args[2].float() - ref).norm() / ref.norm()).item()
        fns[name] = fn
    tensormap._L2_PROMOTION_256B = 3
    return fns, errs


def _b2b(fn: Callable[[], None], n: int = 50) -> float:
    fn()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(n):
        fn()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) / n


def _events(fn: Callable[[], None], before: Callable[[], Any], reps: int = 100) -> float:
    """do_bench's loop with `before` in place of its memset: the median ms."""
    fn()
    ts = []
    for _ in range(reps):
        before()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    return statistics.median(ts)


def run(json_path: str | None, modes: list[str]) -> None:
    from triton.testing import do_bench
    junk = torch.ones(64 * 2 ** 20, dtype=torch.int32, device="cuda")
    small = torch.empty(4 * 2 ** 20, dtype=torch.int32, device="cuda")
    timers: dict[str, Callable[[Callable[[], None]], float]] = {
        "flush": lambda f: do_bench(f, warmup=10, rep=100, return_mode="median"),
        "b2b": _b2b,
        "read": lambda f: _events(f, lambda: junk.sum()),
        "small": lambda f: _events(f, small.zero_)}
    out = []
    for (m, n, k, dt), cfg in ROWS:
        fns, errs = _launchers(m, n, k, dt, cfg)
        if not all(e < 1e-2 for e in errs.values()):
            print(f"WRONG {m}x{n}x{k} {cfg}: {errs}", flush=True)
            continue
        for mode in modes:
            times: dict[str, list[float]] = {name: [] for name in fns}
            order = list(fns)
            for rnd in range(ROUNDS):
                for name in (order if rnd % 2 == 0 else order[::-1]):
                    f = fns[name]
                    times[name].append(timers[mode](f))
            us = {nm: round(statistics.median(ts) * 1e3, 2) for nm, ts in times.items()}
            paired = {nm: round(statistics.median(t / s for t, s in zip(times["triton"], ts)), 3)
                      for nm, ts in times.items() if nm != "triton"}
            row = {"shape": [m, n, k], "dtype": dt, "config": list(cfg), "mode": mode,
                   "us": us, "vs_triton_paired": paired}
            out.append(row)
            print(f"{m}x{n}x{k} {cfg} {mode}: " + "  ".join(f"{nm} {v} us" for nm, v in us.items())
                  + "  paired: " + "  ".join(f"{nm} {v}" for nm, v in paired.items()), flush=True)
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rounds": ROUNDS, "rows": out},
                      f, indent=1)


def once() -> None:
    """Each side once after a 256 MB memset (as do_bench leaves the L2)."""
    junk = torch.empty(256 * 2 ** 20, dtype=torch.int8, device="cuda")
    for (m, n, k, dt), cfg in ROWS[:1]:
        fns, _ = _launchers(m, n, k, dt, cfg)
        for name in ("tilec", "tilec_ptr_store", "triton"):
            junk.zero_()
            fns[name]()
        torch.cuda.synchronize()
    print("launched")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["prepare", "run", "once"])
    ap.add_argument("--json")
    ap.add_argument("--modes", default="flush,b2b", help="of flush, b2b, read, small")
    ap.add_argument("--rows", type=int, default=len(ROWS), help="the first N of ROWS")
    ns = ap.parse_args()
    ROWS[:] = ROWS[:ns.rows]
    {"prepare": prepare, "once": once}.get(ns.phase, lambda: run(ns.json, ns.modes.split(",")))()
