"""CPU reduction benchmark: row softmax and LayerNorm, tilec-CPU vs torch-CPU in one run.

Kernels are written Triton-tutorial style (one row per program).  GB/s counts
bytes read plus bytes written once (softmax: x read, y written; LayerNorm: x,
weight and bias read, y written).  Every kernel is checked against torch before
it is timed.  Also reports the end-to-end compile time of each kernel
(`kernel.compile(target="cpu")`, no cache) and its LLVM codegen share.

    .venv/bin/python benchmarks/cpu_reductions.py [--threads N] [--json PATH]

Note: on this 2-core VM, once tilec's thread pool has run a launch, torch's own
2-thread OpenMP kernels were measured several times slower in the same process
when the machine had other load (scheduler ticks while a worker waits); compare
with `--threads 1` as well.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from typing import Any, Callable

import numpy as np

import tilec
import tilec.language as tl


@tilec.kernel
def softmax_kernel(y_ptr, x_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    den = tl.sum(num, axis=0)
    tl.store(y_ptr + row * n_cols + offs, num / den, mask=mask)


@tilec.kernel
def layernorm_kernel(y_ptr, x_ptr, w_ptr, b_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(y_ptr + row * n_cols + offs, xc * rstd * w + b, mask=mask)


SOFTMAX_SIG = "*fp32:16,*fp32:16,i32"
LAYERNORM_SIG = "*fp32:16,*fp32:16,*fp32:16,*fp32:16,i32,fp32"


def bench_pair(f_a: Callable[[], object], f_b: Callable[[], object],
               reps: int = 40) -> tuple[float, float]:
    """Seconds per call of `f_a` and `f_b`: each timed in its own block of
    repetitions after warm-up (median), a block of `f_a`, then of `f_b`, then
    again, keeping each side's better block.  Blocks, not interleaving: torch's
    OpenMP workers spin for a while after each parallel region, so interleaved
    calls would charge torch's idle spinning to whichever side runs next."""
    def block(f: Callable[[], object]) -> float:
        for _ in range(3):
            f()
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts)
    a1, b1 = block(f_a), block(f_b)
    a2, b2 = block(f_a), block(f_b)
    return min(a1, a2), min(b1, b2)


def compile_time(kernel: Any, sig: str, block: int) -> tuple[float, float]:
    """(end-to-end seconds, LLVM codegen seconds) of one uncached CPU compile."""
    t0 = time.perf_counter()
    ck = kernel.compile(target="cpu", signature=sig, constexprs={"BLOCK": block})
    total = time.perf_counter() - t0
    steps = ck.metadata["step_seconds"]
    return total, float(sum(steps.get(s, 0.0) for s in ("llvm-opt", "asm", "so")))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--threads", type=int, default=0,
                    help="threads for both tilec and torch (default: torch's default, "
                         "tilec's TILEC_NUM_THREADS or all cores)")
    args = ap.parse_args()
    import torch
    if args.threads > 0:
        torch.set_num_threads(args.threads)
        os.environ["TILEC_NUM_THREADS"] = str(args.threads)
    from tilec.runtime.cpu import num_threads

    rng = np.random.default_rng(0)
    rows_out = []
    # The first compile in a process also pays one-time set-up (MLIR context,
    # llvmlite target initialisation): report it apart from the per-kernel times.
    first = compile_time(softmax_kernel, SOFTMAX_SIG, 128)[0]
    print(f"CPU reductions, float32, {os.cpu_count()} cores, tilec threads {num_threads()}, "
          f"torch threads {torch.get_num_threads()}")
    print(f"{'kernel':10} {'shape':>11} {'BLOCK':>6} {'tilec GB/s':>11} {'torch GB/s':>11} "
          f"{'vs torch':>9} {'compile ms':>11} {'codegen ms':>11}")

    def report(name: str, shape: tuple[int, int], block: int, nbytes: int,
               f_tilec: Callable[[], object], f_torch: Callable[[], object],
               ct: tuple[float, float]) -> None:
        t_t, t_r = bench_pair(f_tilec, f_torch)
        g_t, g_r = nbytes / t_t / 1e9, nbytes / t_r / 1e9
        row = {"kernel": name, "shape": list(shape), "block": block, "dtype": "float32",
               "unit": "GB/s", "tilec": round(g_t, 2), "torch": round(g_r, 2),
               "ratio_vs_torch": round(g_t / g_r, 3), "compile_ms": round(ct[0] * 1e3, 1),
               "codegen_ms": round(ct[1] * 1e3, 1)}
        rows_out.append(row)
        print(f"{name:10} {shape[0]:>5}x{shape[1]:<5} {block:>6} {g_t:>11.2f} {g_r:>11.2f} "
              f"{g_t / g_r:>8.2f}x {ct[0] * 1e3:>11.0f} {ct[1] * 1e3:>11.0f}")

    for m, n in [(4096, 1024), (1024, 4096)]:
        block = n
        x = rng.standard_normal((m, n), dtype=np.float32) * 3
        y = np.empty_like(x)
        tx = torch.from_numpy(x)
        ct = compile_time(softmax_kernel, SOFTMAX_SIG, block)
        softmax_kernel[(m,)](y, x, n, BLOCK=block)
        ref = torch.softmax(tx, dim=1).numpy()
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-7)
        report("softmax", (m, n), block, 2 * 4 * m * n,
               lambda: softmax_kernel[(m,)](y, x, n, BLOCK=block),
               lambda: torch.softmax(tx, dim=1),
               ct)

    m, n = 4096, 1024
    x = rng.standard_normal((m, n), dtype=np.float32)
    w = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    y = np.empty_like(x)
    tx, tw, tb = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b)
    eps = 1e-5
    ct = compile_time(layernorm_kernel, LAYERNORM_SIG, n)
    layernorm_kernel[(m,)](y, x, w, b, n, eps, BLOCK=n)
    ref = torch.nn.functional.layer_norm(tx, (n,), tw, tb, eps).numpy()
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    report("layernorm", (m, n), n, 4 * (2 * m * n + 2 * n),
           lambda: layernorm_kernel[(m,)](y, x, w, b, n, eps, BLOCK=n),
           lambda: torch.nn.functional.layer_norm(tx, (n,), tw, tb, eps), ct)

    print(f"(compile ms: kernel.compile(target='cpu') end to end, uncached, after a first "
          f"compile in this process that took {first * 1e3:.0f} ms with one-time set-up)")
    result = {
        "command": " ".join(["python", "benchmarks/cpu_reductions.py"] +
                            (["--threads", str(args.threads)] if args.threads else []) +
                            (["--json", args.json] if args.json else [])),
        "machine": {"cores": os.cpu_count(), "processor": platform.processor(),
                    "python": platform.python_version(), "numpy": np.__version__,
                    "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
                    "tilec_threads": num_threads(),
                    "load_average": list(os.getloadavg())},
        "rows": rows_out,
        "first_compile_in_process_ms": round(first * 1e3, 1),
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
