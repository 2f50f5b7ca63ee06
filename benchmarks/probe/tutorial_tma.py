"""Probe: the tutorial-03 pointer source (benchmarks/matmul_kernels.py) as
tilec builds it with `tile-tma-pointers` (A and B loads and the C store
through tensor maps) and as `mm_ptr_store` (the same with a store mask that
keeps the C store a pointer store) and `mm_clamped` (tests/kernels_for_tests.py:
A's rows clamped, so both operands are cp.async copies), against Triton's
build of the source,
alternated ABC / CBA; every (shape, config) checked against torch first,
ragged shapes included (rows and columns wrapped by `% M` / `% N`).

    here:   TILEC_CACHE_DIR=$PWD/.carry/tma23/cache .venv/bin/python benchmarks/probe/tutorial_tma.py prepare
    device: PYTHONPATH=$PWD TILEC_CACHE_DIR=$PWD/.carry/tma23/cache \\
                python3 benchmarks/probe/tutorial_tma.py run --json F
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(ROOT, "benchmarks"), HERE, ROOT]

import torch  # noqa: E402
import tilec  # noqa: E402
import tilec.language as tl  # noqa: E402
from h200_matmul import _args as _bench_args, _grid, _meta  # noqa: E402
from matmul_kernels import mm_tutorial  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tests"))
from kernels_for_tests import mm_clamped  # noqa: E402  (A's rows clamped: cp.async copies)

CONFIGS = [(128, 256, 64, 8, 3), (128, 256, 64, 8, 4)]
SHAPES = [(4096, 4096, 4096, "float16"), (4096, 4096, 4096, "bfloat16"),
          (8192, 8192, 8192, "float16"), (4096, 4096, 4000, "float16"),
          (127, 4096, 4096, "float16"), (4000, 4000, 4000, "float16"),
          (1000, 1000, 1000, "float16"), (8192, 1024, 8192, "float16")]
ROUNDS = 8


@tilec.kernel
def mm_ptr_store(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                 stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # tutorial-03 with one more store-mask conjunct (offs_cn >= 0, always true),
    # which keeps the C store a pointer store: TMA loads, pointer epilogue
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
    c = acc.to(tl.float16)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N)
             & (offs_cn[None, :] >= 0))


def _args(m: int, n: int, k: int, dt: str, dev: str | None) -> tuple[Any, ...]:
    return _bench_args(torch, dev or "cpu", m, n, k, dt, dev is not None)


def prepare() -> None:
    for m, n, k, dt in SHAPES:
        for cfg in CONFIGS:
            for kern in (mm_tutorial, mm_ptr_store, mm_clamped):
                h = kern.warmup(*_args(m, n, k, dt, None), target="sm90", **_meta(cfg))
                print(kern.__name__, dt, (m, n, k), cfg, "regs", h.n_regs, "spills", h.n_spills)


def run(json_path: str | None) -> None:
    from triton.testing import do_bench
    from matmul_kernels import t_mm_tutorial
    rows = []
    for m, n, k, dt in SHAPES:
        torch.manual_seed(m + 3 * n + 7 * k)
        args = _args(m, n, k, dt, "cuda")
        a, b, c = args[:3]
        ref = a.float() @ b.float()
        for cfg in CONFIGS:
            g = _grid(m, n, cfg)
            fns = {"tilec": lambda g=g, cfg=cfg: mm_tutorial[g](*args, **_meta(cfg)),
                   "tilec_ptr_store": lambda g=g, cfg=cfg: mm_ptr_store[g](*args, **_meta(cfg)),
                   "tilec_cp_async": lambda g=g, cfg=cfg: mm_clamped[g](*args, **_meta(cfg)),
                   "triton": lambda g=g, cfg=cfg: t_mm_tutorial[g](*args, **_meta(cfg))}
            errs = {}
            for name, fn in fns.items():
                c.fill_(float("nan"))
                fn()
                torch.cuda.synchronize()
                errs[name] = ((c.float() - ref).norm() / ref.norm()).item()
            if not all(e < 1e-2 for e in errs.values()):
                print(f"WRONG {dt} {m}x{n}x{k} {cfg}: {errs}", flush=True)
                continue
            times: dict[str, list[float]] = {name: [] for name in fns}
            order = list(fns)
            for rnd in range(ROUNDS):
                for name in (order if rnd % 2 == 0 else order[::-1]):
                    times[name].append(do_bench(fns[name], warmup=10, rep=100,
                                                return_mode="median"))
            tf = {n_: 2 * m * n * k / statistics.median(ts) / 1e9 for n_, ts in times.items()}
            paired = {n_: statistics.median(t / s for t, s in zip(times["triton"], ts))
                      for n_, ts in times.items() if n_ != "triton"}
            row = {"shape": [m, n, k], "dtype": dt, "config": list(cfg),
                   **{f"{n_}_tflops": round(v, 1) for n_, v in tf.items()},
                   **{f"{n_}_vs_triton_paired": round(v, 3) for n_, v in paired.items()}}
            rows.append(row)
            print(f"{dt:9s} {m}x{n}x{k} {cfg}: " + "  ".join(f"{n_} {v:6.1f}" for n_, v in tf.items())
                  + "  paired vs triton: " + "  ".join(f"{n_} {v:.3f}" for n_, v in paired.items()),
                  flush=True)
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "rounds": ROUNDS, "rows": rows},
                      f, indent=1)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["prepare", "run"])
    ap.add_argument("--json")
    ap.add_argument("--configs", help="BM,BN,BK,W,S;... instead of CONFIGS")
    ap.add_argument("--shapes", help="M,N,K,dtype;... instead of SHAPES")
    ap.add_argument("--rounds", type=int, default=ROUNDS)
    ns = ap.parse_args()
    if ns.configs:
        CONFIGS[:] = [tuple(int(v) for v in c.split(",")) for c in ns.configs.split(";")]
    if ns.shapes:
        SHAPES[:] = [(*(int(v) for v in s.split(",")[:3]), s.split(",")[3])
                     for s in ns.shapes.split(";")]
    ROUNDS = ns.rounds
    prepare() if ns.phase == "prepare" else run(ns.json)
