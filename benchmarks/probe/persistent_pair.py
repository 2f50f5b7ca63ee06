"""tilec's persistent matmul (examples/matmul_persistent.py) and Triton's twin
(benchmarks/matmul_kernels.py) launched once each per dtype at 4096^3, and the
tutorial-03 kernel of both at 1024x8192x1024 (the skinny row): for ncu side by
side at its locked clock and for Triton's PTX/TTGIR (TRITON_CACHE_DIR).
`prepare` compiles just these tilec specializations (sm90) into TILEC_CACHE_DIR;
`check` compares tilec's persistent kernels with torch at 4096^3 and at a
ragged 3968x4000x4032 (63 K steps per tile: the rings' slots and phases run
across tiles out of step with the tile boundaries) and prints the worst error.

    TILEC_CACHE_DIR=$PWD/.carry/pair .venv/bin/python benchmarks/probe/persistent_pair.py prepare
    # on the H200:
    ncu --section SpeedOfLight --section WarpStateStats --section SchedulerStats \\
        -k regex:"matmul_persistent|mm_tutorial" python3 benchmarks/probe/persistent_pair.py
"""
from __future__ import annotations

import os
import sys
from typing import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(ROOT, "benchmarks"), os.path.join(ROOT, "examples"), ROOT]

import torch  # noqa: E402
from matmul_kernels import mm_tutorial  # noqa: E402
from matmul_persistent import matmul_persistent  # noqa: E402

PERSISTENT = (("float16", (128, 256, 64, 8, 3)), ("float8_e4m3fn", (128, 256, 128, 8, 3)))
SKINNY = (1024, 8192, 1024, (128, 128, 64, 8, 3))
CLOCK_DTYPES = ("float16", "bfloat16")


def _pmeta(cfg: tuple[int, ...]) -> dict[str, int]:
    bm, bn, bk, w, s = cfg
    return dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, NUM_SMS=132, num_warps=w,
                num_stages=s)


def _tmeta(cfg: tuple[int, ...]) -> dict[str, int]:
    bm, bn, bk, w, s = cfg
    return dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=w, num_stages=s)


def prepare() -> None:
    for dt, cfg in PERSISTENT:
        a = torch.empty(16, 16, dtype=getattr(torch, dt))
        c = torch.empty(16, 16, dtype=torch.float16)
        for m, n, k in ((4096, 4096, 4096), (3968, 4000, 4032), (8192, 8192, 8192)):
            matmul_persistent.warmup(a, a, c, m, n, k, target="sm90", **_pmeta(cfg))
    for dt in (d for d in CLOCK_DTYPES if d not in dict(PERSISTENT)):   # bf16 (fp16 is above)
        a = torch.empty(16, 16, dtype=getattr(torch, dt))
        c = torch.empty(16, 16, dtype=torch.float16)
        matmul_persistent.warmup(a, a, c, 4096, 4096, 4096, target="sm90",
                                 **_pmeta(PERSISTENT[0][1]))
    m, n, k, cfg = SKINNY
    a = torch.empty(16, 16, dtype=torch.float16)
    mm_tutorial.warmup(a, a, a, m, n, k, k, 1, n, 1, n, 1, target="sm90", **_tmeta(cfg))
    print("prepared")


def check() -> None:
    """tilec's persistent kernels against torch (fp32 reference of the same
    inputs); prints one line per case and exits non-zero on a mismatch."""
    bad = 0
    for m, n, k in ((4096, 4096, 4096), (3968, 4000, 4032)):
        for dt, cfg in PERSISTENT:
            t = getattr(torch, dt)
            a = torch.randn(m, k, device="cuda").to(t)
            b = torch.randn(n, k, device="cuda").to(t)
            c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
            matmul_persistent[(132,)](a, b, c, m, n, k, **_pmeta(cfg))
            ref = a.float() @ b.float().T
            # ||c - ref|| / ||ref|| as benchmarks/h200_matmul.py checks (fp8
            # wgmma accumulates with fewer bits than fp32: no per-element bound)
            err = ((c.float() - ref).norm() / ref.norm()).item()
            ok = err < 2e-2
            bad += not ok
            print(f"check {dt} {m}x{n}x{k}: rel err {err:.2e} {'ok' if ok else 'FAIL'}")
    if bad:
        sys.exit(1)


def run() -> None:
    import triton
    from matmul_kernels import t_matmul_persistent, t_mm_tutorial
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))
    m = n = k = int(os.environ.get("PAIR_SIZE", "4096"))   # the persistent pair's size
    for dt, cfg in PERSISTENT:
        t = getattr(torch, dt)
        a = torch.randn(m, k, device="cuda").to(t)
        b = torch.randn(n, k, device="cuda").to(t)
        c = torch.empty(m, n, device="cuda", dtype=torch.float16)
        matmul_persistent[(132,)](a, b, c, m, n, k, **_pmeta(cfg))
        t_matmul_persistent[(132,)](a, b, c, m, n, k, **_pmeta(cfg))
        torch.cuda.synchronize()
    m, n, k, cfg = SKINNY
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(m, cfg[0]) * triton.cdiv(n, cfg[1]),)
    mm_tutorial[grid](a, b, c, m, n, k, k, 1, n, 1, n, 1, **_tmeta(cfg))
    t_mm_tutorial[grid](a, b, c, m, n, k, k, 1, n, 1, n, 1, **_tmeta(cfg))
    torch.cuda.synchronize()
    print("done")


def clock_windows(cases: Callable[[str], dict[str, tuple[Callable[[], None], float]]],
                  dtypes: tuple[str, ...], rounds: int = 2) -> None:
    """Run each case of `cases(dtype)` (name -> (launch, flops per launch))
    back to back for 2 s per window while nvidia-smi samples the SM clock,
    power and temperature every 50 ms (benchmarks/gpu_clock.py); print per
    window TFLOP/s, mean MHz and W, and TFLOP/s per GHz (the work per clock:
    what the kernel's cycles give once the power cap has chosen the clock)."""
    import time
    from gpu_clock import ClockLog
    windows = []
    with ClockLog() as log:
        for rnd in range(rounds):
            for dt in dtypes:
                for name, (fn, flops) in cases(dt).items():
                    for _ in range(20):
                        fn()
                    torch.cuda.synchronize()
                    time.sleep(0.5)          # a pause between windows, as between rows
                    s0, e0 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
                        enable_timing=True)
                    t0 = time.time()
                    s0.record()
                    reps = 0
                    while time.time() - t0 < 2.0:
                        for _ in range(10):
                            fn()
                        reps += 10
                        torch.cuda.synchronize()
                    e0.record()
                    torch.cuda.synchronize()
                    ms = s0.elapsed_time(e0) / reps
                    key = f"{rnd} {dt} {name}"
                    log.window(key, t0 + 0.3, time.time())
                    windows.append((key, flops / ms * 1e-9))
    clocks = log.summary()
    for key, tf in windows:
        got = clocks.get(key)
        if got:
            print(f"round {key:24s} {tf:7.1f} TFLOP/s  SM {got['mhz']:6.0f} MHz  "
                  f"{got['watts']:5.0f} W  {got['max_temp_c']:.0f} C  ({got['samples']} samples)  "
                  f"TFLOP/s per GHz {tf / got['mhz'] * 1000:6.1f}", flush=True)
        else:
            print(f"round {key:24s} {tf:7.1f} TFLOP/s  (no samples)", flush=True)


def clocks() -> None:
    import triton
    from matmul_kernels import t_matmul_persistent
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))
    m = n = k = 4096
    fp8 = "fp8" in sys.argv[2:]   # `clocks fp8`: the fp8 e4m3 kernel instead of fp16 / bf16

    def cases(dt: str) -> dict[str, tuple[Callable[[], None], float]]:
        t = getattr(torch, dt)
        cfg = dict(PERSISTENT).get(dt, PERSISTENT[0][1])
        a = torch.randn(m, k, device="cuda").to(t)
        b = torch.randn(n, k, device="cuda").to(t)
        c = torch.empty(m, n, device="cuda", dtype=torch.float16)
        one = torch.tensor(1.0, device="cuda")
        return {"tilec": (lambda: matmul_persistent[(132,)](a, b, c, m, n, k, **_pmeta(cfg)),
                          2 * m * n * k),
                "triton": (lambda: t_matmul_persistent[(132,)](a, b, c, m, n, k, **_pmeta(cfg)),
                           2 * m * n * k),
                "cublas": ((lambda: torch._scaled_mm(a, b.T, scale_a=one, scale_b=one,
                                                     out_dtype=torch.float16)) if fp8 else
                           (lambda: torch.matmul(a, b.T)), 2 * m * n * k)}
    clock_windows(cases, ("float8_e4m3fn",) if fp8 else CLOCK_DTYPES)


def modes() -> None:
    """Where the fp8 kernel's deficit in the benchmark's timing comes from:
    tilec's and Triton's persistent kernels timed alternately (8 rounds, ABBA)
    in two ways, `flush` (triton.testing.do_bench: the L2 zeroed before every
    launch, the benchmark's way) and `warm` (20 launches back to back between
    two events, the inputs left in L2 where they fit), with the SM clock and
    power of each side and mode (benchmarks/gpu_clock.py)."""
    import statistics
    import time
    import triton
    from triton.testing import do_bench
    from gpu_clock import ClockLog
    from matmul_kernels import t_matmul_persistent
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))

    def warm(fn: Callable[[], None]) -> float:
        fn()
        s0, e0 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s0.record()
        for _ in range(20):
            fn()
        e0.record()
        torch.cuda.synchronize()
        return s0.elapsed_time(e0) / 20

    cases = [("float8_e4m3fn", 4096), ("float8_e4m3fn", 8192), ("float16", 4096),
             ("float16", 8192)]
    for dt, size in cases:
        m = n = k = size
        t = getattr(torch, dt)
        cfg = dict(PERSISTENT)[dt]
        a = torch.randn(m, k, device="cuda").to(t)
        b = torch.randn(n, k, device="cuda").to(t)
        c = torch.empty(m, n, device="cuda", dtype=torch.float16)
        fns = {"tilec": lambda: matmul_persistent[(132,)](a, b, c, m, n, k, **_pmeta(cfg)),
               "triton": lambda: t_matmul_persistent[(132,)](a, b, c, m, n, k, **_pmeta(cfg))}
        times: dict[tuple[str, str], list[float]] = {}
        with ClockLog() as log:
            for rnd in range(8):
                for mode in ("flush", "warm"):
                    for name in (("tilec", "triton") if rnd % 2 == 0 else ("triton", "tilec")):
                        fn = fns[name]
                        t0 = time.time()
                        ms = (do_bench(fn, warmup=10, rep=100, return_mode="median")
                              if mode == "flush" else statistics.median(warm(fn) for _ in range(5)))
                        times.setdefault((mode, name), []).append(ms)
                        log.window(f"{mode} {name}", t0, time.time())
        clocks = log.summary()
        for mode in ("flush", "warm"):
            ratios = [p / q for p, q in zip(times[(mode, "triton")], times[(mode, "tilec")])]
            line = f"{dt:13s} {size}^3 {mode:5s}: paired tilec/Triton {statistics.median(ratios):.3f}"
            for name in ("tilec", "triton"):
                tf = 2 * m * n * k / statistics.median(times[(mode, name)]) / 1e9
                ck = clocks.get(f"{mode} {name}", {})
                line += (f"  {name} {tf:7.1f} TFLOP/s {ck.get('mhz')} MHz {ck.get('watts')} W"
                         f" ({tf / ck['mhz'] * 1000:.0f}/GHz)" if ck else f"  {name} {tf:7.1f}")
            print(line, flush=True)


if __name__ == "__main__":
    phases = {"prepare": prepare, "check": check, "clocks": clocks, "modes": modes}
    phases.get(sys.argv[1] if sys.argv[1:] else "", run)()
