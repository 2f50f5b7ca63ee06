"""CPU matmul benchmark: tilec's tutorial-03 matmul on the CPU target against
torch.matmul (CPU) and NumPy's `@`, fp32, in one process run.

The tilec kernel is Triton's tutorial-03 structure (grouped program ids,
loop-carried pointer tiles, a K mask, `acc = tl.dot(a, b, acc)`), storing fp32.
tilec is autotuned here over a few (BLOCK_M, BLOCK_N, BLOCK_K) configs (the
best is reported); every config is checked against NumPy (float64) before it
is timed.  Then the best config, torch.matmul and NumPy are timed in turn,
rep by rep (the ratios come from these).  Programs run on tilec's CPU thread pool (one thread per core,
`TILEC_NUM_THREADS`); torch and NumPy use their own threads (all cores).
Also reports each config's cold compile time (fresh cache directory).

    .venv/bin/python benchmarks/cpu_matmul.py [--size 2048] [--reps 5] [--json PATH]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from typing import Any, Callable

import numpy as np

import tilec
import tilec.language as tl


@tilec.kernel
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                  stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


SIG = "*fp32:16,*fp32:16,*fp32:16,i32,i32,i32,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1"
CONFIGS = [(64, 64, 64), (128, 128, 64), (128, 128, 128), (128, 256, 64), (128, 256, 128), (256, 128, 64)]


def best_time(fn: Callable[[], Any], reps: int) -> tuple[float, list[float]]:
    fn()  # warm-up
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    n = args.size
    flop = 2.0 * n ** 3
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    want = a.astype(np.float64) @ b.astype(np.float64)
    rows: list[dict[str, Any]] = []
    load0 = list(os.getloadavg())
    cache = tempfile.mkdtemp(prefix="tilec-cpu-matmul-")
    os.environ["TILEC_CACHE_DIR"] = cache     # cold compiles, read when a kernel compiles
    for bm, bn, bk in CONFIGS:
        consts = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}
        t0 = time.perf_counter()
        matmul_kernel.compile(target="cpu", signature=SIG, constexprs=consts)
        compile_s = time.perf_counter() - t0
        c = np.full((n, n), np.nan, np.float32)
        grid = (tilec.cdiv(n, bm) * tilec.cdiv(n, bn),)

        def run(c: np.ndarray = c, grid: tuple[int] = grid,
                consts: dict[str, int] = consts) -> None:
            matmul_kernel[grid](a, b, c, n, n, n, n, 1, n, 1, n, 1, **consts)
        run()
        err = float(np.abs(c - want).max())
        assert err < 1e-3 * np.sqrt(n), f"config {bm}x{bn}x{bk}: max error {err}"
        t, times = best_time(run, args.reps)
        rows.append({"impl": "tilec", "config": [bm, bn, bk], "seconds": t, "times": times,
                     "gflops": flop / t / 1e9, "max_abs_err": err, "compile_s": compile_s})
        print(f"tilec {bm:3d}x{bn:3d}x{bk:3d}: {flop / t / 1e9:7.1f} GFLOP/s "
              f"(compile {compile_s:.2f} s, max err {err:.1e})", flush=True)
    import torch
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    best = max(rows, key=lambda r: r["gflops"])
    bm, bn, bk = best["config"]
    consts = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}
    c = np.empty((n, n), np.float32)
    grid = (tilec.cdiv(n, bm) * tilec.cdiv(n, bn),)
    # The best tilec config, torch and NumPy timed in turn, rep by rep, so that
    # a change in the machine's load hits all three alike.
    fns: dict[str, Callable[[], Any]] = {
        "tilec": lambda: matmul_kernel[grid](a, b, c, n, n, n, n, 1, n, 1, n, 1, **consts),
        "torch": lambda: torch.matmul(ta, tb), "numpy": lambda: a @ b}
    final: dict[str, list[float]] = {k: [] for k in fns}
    for f in fns.values():
        f()
    for _ in range(args.reps):
        for name, f in fns.items():
            # The previous library's worker threads spin-wait after their call
            # (OpenMP / OpenBLAS) and take the cores from whoever runs next:
            # let them go idle first.
            time.sleep(0.3)
            t0 = time.perf_counter()
            f()
            final[name].append(time.perf_counter() - t0)
    gf = {k: flop / min(v) / 1e9 for k, v in final.items()}
    for k in ("torch", "numpy"):
        rows.append({"impl": k, "seconds": min(final[k]), "times": final[k], "gflops": gf[k]})
    rows.append({"impl": "tilec-best", "config": best["config"], "seconds": min(final["tilec"]),
                 "times": final["tilec"], "gflops": gf["tilec"]})
    print(f"interleaved: tilec {best['config']} {gf['tilec']:7.1f} GFLOP/s, "
          f"torch.matmul ({torch.get_num_threads()} threads) {gf['torch']:7.1f}, "
          f"numpy @ {gf['numpy']:7.1f}")
    summary = {"best_tilec_config": best["config"], "best_tilec_gflops": gf["tilec"],
               "torch_gflops": gf["torch"], "numpy_gflops": gf["numpy"],
               "tilec_over_torch": gf["tilec"] / gf["torch"],
               "tilec_over_numpy": gf["tilec"] / gf["numpy"],
               "max_compile_s": max(r["compile_s"] for r in rows if "compile_s" in r),
               "load_average_at_end": list(os.getloadavg())}
    print(f"best tilec {best['config']}: {gf['tilec'] / 1e3:.3f} TFLOP/s; "
          f"tilec / torch = {summary['tilec_over_torch']:.2f}, "
          f"tilec / numpy = {summary['tilec_over_numpy']:.2f} "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    if args.json:
        from tilec.runtime.cpu import num_threads
        out = {"benchmark": "cpu_matmul", "size": n, "dtype": "fp32", "rows": rows,
               "load_average_at_start": load0,
               "summary": summary, "tilec_threads": num_threads(), "cpus": os.cpu_count(),
               "machine": platform.processor() or platform.machine(),
               "python": sys.version.split()[0], "torch": torch.__version__,
               "numpy": np.__version__, "command": " ".join(sys.argv)}
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
        _plot(rows, os.path.splitext(args.json)[0] + ".png", n)


def _plot(rows: list[dict[str, Any]], path: str, n: int) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not available: no chart")
        return
    labels = [(r["impl"] + " " + "x".join(map(str, r["config"]))) if "config" in r
              else r["impl"] for r in rows]
    values = [r["gflops"] for r in rows]
    colors = ["tab:blue" if r["impl"].startswith("tilec") else "tab:gray" for r in rows]
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.barh(labels, values, color=colors)
    ax.set_xlabel("GFLOP/s")
    ax.set_title(f"fp32 matmul {n}^3, CPU ({os.cpu_count()} cores), one run\n"
                 "(the last three rows timed in turn)", fontsize=10)
    for y, v in enumerate(values):
        ax.text(v, y, f" {v:.0f}", va="center")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    print("wrote", path)


if __name__ == "__main__":
    main()
