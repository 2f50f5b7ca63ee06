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
        for m, n, k in ((4096, 4096, 4096), (3968, 4000, 4032)):
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
    m = n = k = 4096
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
    power and temperature every 50 ms; print per window TFLOP/s, mean MHz and
    W, and TFLOP/s per GHz (the work per clock: what the kernel's cycles give
    once the power cap has chosen the clock)."""
    import datetime
    import subprocess
    import time
    log = "/tmp/smi-clocks.csv"
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,"
                            "temperature.gpu", "--format=csv,noheader,nounits", "-lms", "50",
                            "-f", log])
    windows = []
    try:
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
                    windows.append((rnd, dt, name, t0 + 0.3, time.time(), flops / ms * 1e-9))
    finally:
        time.sleep(0.2)
        smi.terminate()
        smi.wait()
    samples = []
    for line in open(log):
        f = [x.strip() for x in line.split(",")]
        try:
            ts = datetime.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            samples.append((ts, float(f[1]), float(f[2]), float(f[3])))
        except (ValueError, IndexError):
            continue
    # nvidia-smi's timestamps are this host's local time, as strptime's reading
    for rnd, dt, name, t0, t1, tf in windows:
        got = [s for s in samples if t0 <= s[0] <= t1]
        if got:
            mhz = sum(s[1] for s in got) / len(got)
            watts = sum(s[2] for s in got) / len(got)
            temp = max(s[3] for s in got)
            print(f"round {rnd} {dt:9s} {name:7s} {tf:7.1f} TFLOP/s  SM {mhz:6.0f} MHz  "
                  f"{watts:5.0f} W  {temp:.0f} C  ({len(got)} samples)  "
                  f"TFLOP/s per GHz {tf / mhz * 1000:6.1f}", flush=True)
        else:
            print(f"round {rnd} {dt:9s} {name:7s} {tf:7.1f} TFLOP/s  (no samples)", flush=True)


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


if __name__ == "__main__":
    phases = {"prepare": prepare, "check": check, "clocks": clocks}
    phases.get(sys.argv[1] if sys.argv[1:] else "", run)()
