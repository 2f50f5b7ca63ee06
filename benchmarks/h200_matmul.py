"""Matrix multiply on the H200: tilec vs Triton (the same tutorial-03 source,
benchmarks/matmul_kernels.py) vs cuBLAS (torch.matmul), every row checked
against torch before timing.

Rows: the tutorial-03 pointer matmul, autotuned for both compilers over the
same `CONFIGS` (the best config of each is reported), fp16 and bf16 at 4096^3
and 8192^3, and ragged / skinny fp16 shapes.  The ptxas report (registers,
spills) of every tilec config and the cold compile time of one config are
recorded at `prepare` time (the compiler runs here, not on the GPU machine).

    # here (compiler installed)
    TILEC_CACHE_DIR=$PWD/.carry/tilec-cache .venv/bin/python benchmarks/h200_matmul.py prepare
    # on the GPU machine
    PYTHONPATH=$PWD TILEC_CACHE_DIR=$PWD/.carry/tilec-cache python3 benchmarks/h200_matmul.py run --json $OUT/h200-matmul.json

Times are medians of `triton.testing.do_bench`; TFLOP/s = 2 M N K / time.
Every config is launched and checked before any is timed (Triton compiles its
kernels there, with the GPU idle for a second or two each: a pause that gave
the next timing a cooler card).  In the tutorial-03 rows' sweep the two
compilers take turns config by config (who goes first alternates); the
persistent and fp8 rows sweep tilec's configs and then Triton's.  After the sweep, each row's best tilec config, best peer
config and cuBLAS are timed again, alternated over `ALT_ROUNDS` rounds (median
of the rounds): the `*_alternated` fields and `tilec_vs_triton_alternated`.
A sweep that timed one side's configs after the other's moved a row's ratio by
up to 3% with the card's clock; alternation spreads the drift evenly.
The rounds run in ABC / CBA order, and each round's Triton time over its tilec
time is a paired ratio: `tilec_vs_triton_paired` is their median and
`paired_ratios_q1_q3` their quartiles (the spread a row's ratio has on this
card).  An A/A control times tilec's kernel a second time in every round
(`tilec_again`): `aa_control_paired` and its quartiles are what the same
kernel reads against itself, the estimator's own spread.  nvidia-smi samples
the SM clock and power during the rounds (benchmarks/gpu_clock.py):
`*_alternated_sm_mhz` / `*_alternated_watts`.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import tilec  # noqa: E402
from matmul_kernels import mm_tutorial  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))
from matmul_persistent import matmul_persistent  # noqa: E402

# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages), the same for both compilers.
CONFIGS = [(128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (128, 128, 64, 8, 3),
           (128, 128, 64, 4, 4), (64, 128, 64, 4, 3), (128, 128, 128, 8, 3)]
MAIN = [(s, s, s, dt) for dt in ("float16", "bfloat16") for s in (4096, 8192)]
RAGGED = [(4096, 4096, 4000, "float16"), (8192, 1024, 8192, "float16"),
          (1024, 8192, 1024, "float16"), (127, 4096, 4096, "float16")]
GROUP_M = 8
# The descriptor + persistent example (B given as [N, K], used through b.T).
# At (128, 256, 64, 8, 4) tilec's store goes out in column passes beside 4
# ring slots (until session 28 that config was pipelined with 3: the s3 kernel).
PERSISTENT_CONFIGS = [(128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (128, 128, 64, 8, 4)]
PERSISTENT = [(4096, 4096, 4096, "float16"), (8192, 8192, 8192, "float16"),
              (4096, 4096, 4000, "float16"), (4096, 4096, 4096, "bfloat16"),
              (8192, 8192, 8192, "bfloat16")]
NUM_SMS = 132
# fp8 e4m3 inputs, fp16 output: tilec's persistent example (B [N, K]); Triton's
# tutorial-03 source on the same data (B as a [K, N] view of [N, K]); cuBLAS
# through torch._scaled_mm.
# (128, 256, 128, 8, 4): tilec's store then goes out in column passes
# (passes/pipeline_tma.py fit_store); Triton's build of it may not fit.
FP8_CONFIGS = [(128, 128, 128, 8, 4), (128, 256, 128, 8, 3), (128, 128, 128, 8, 3),
               (128, 256, 128, 8, 4)]
FP8 = [(4096, 4096, 4096), (8192, 8192, 8192)]
# tilec's 2-CTA cluster configs (num_ctas=2: a 256-row program split over two
# CTAs of 128 rows, B multicast to both: passes/tile_split_ctas.py), a sixth
# element; launched on NUM_SMS // 2 programs.  Prepared always, timed in
# tilec's sweeps only with TILEC_BENCH_CLUSTERS=1 (Triton's configs never
# change: its TMA kernel has no multicast).
CLUSTER_PERSISTENT_CONFIGS = [(256, 256, 64, 8, 3, 2), (256, 256, 64, 8, 4, 2)]
CLUSTER_FP8_CONFIGS = [(256, 256, 128, 8, 3, 2), (256, 256, 128, 8, 4, 2)]
CLUSTERS = os.environ.get("TILEC_BENCH_CLUSTERS") == "1"
PREPARED = os.path.join(os.environ.get("TILEC_CACHE_DIR", "."), "..", "matmul-prepare.json")


def _args(torch: Any, dev: str, m: int, n: int, k: int, dt: str, real: bool) -> tuple[Any, ...]:
    if real:
        a = torch.randn(m, k, device=dev).to(getattr(torch, dt))
        b = torch.randn(k, n, device=dev).to(getattr(torch, dt))
        c = torch.full((m, n), float("nan"), device=dev, dtype=torch.float16)
    else:   # a stand-in of the same dtypes, alignment and ints for `prepare`
        a = torch.empty(16, 16, dtype=getattr(torch, dt))
        b = torch.empty(16, 16, dtype=getattr(torch, dt))
        c = torch.empty(16, 16, dtype=torch.float16)
    return (a, b, c, m, n, k, k, 1, n, 1, n, 1)


def _meta(cfg: tuple[int, ...]) -> dict[str, int]:
    bm, bn, bk, w, s = cfg
    return dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=GROUP_M, num_warps=w, num_stages=s)


def _persistent_args(torch: Any, dev: str, m: int, n: int, k: int, dt: str,
                     real: bool) -> tuple[Any, ...]:
    t = getattr(torch, dt)
    if real:
        a, b = torch.randn(m, k, device=dev).to(t), torch.randn(n, k, device=dev).to(t)
        c = torch.full((m, n), float("nan"), device=dev, dtype=torch.float16)
    else:
        a, b = torch.empty(16, 16, dtype=t), torch.empty(16, 16, dtype=t)
        c = torch.empty(16, 16, dtype=torch.float16)
    return (a, b, c, m, n, k)


def _pmeta(cfg: tuple[int, ...]) -> dict[str, int]:
    bm, bn, bk, w, s, *ctas = cfg
    meta = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=GROUP_M,
                NUM_SMS=NUM_SMS // (ctas[0] if ctas else 1), num_warps=w, num_stages=s)
    return {**meta, "num_ctas": ctas[0]} if ctas else meta


def _pgrid(cfg: tuple[int, ...]) -> tuple[int]:
    """A persistent config's programs: one per SM, per 2 SMs at num_ctas=2."""
    return (NUM_SMS // (cfg[5] if len(cfg) > 5 else 1),)


def _tilec_persistent(fp8: bool) -> list[tuple[int, ...]]:
    """tilec's persistent configs: Triton's, and the cluster ones when asked."""
    base = FP8_CONFIGS if fp8 else PERSISTENT_CONFIGS
    extra = CLUSTER_FP8_CONFIGS if fp8 else CLUSTER_PERSISTENT_CONFIGS
    return base + extra if CLUSTERS else base


def _grid(m: int, n: int, cfg: tuple[int, ...]) -> tuple[int]:
    return (tilec.cdiv(m, cfg[0]) * tilec.cdiv(n, cfg[1]),)


def prepare() -> None:
    import torch
    for m, n, k, dt in MAIN + RAGGED:
        for cfg in CONFIGS:
            mm_tutorial.warmup(*_args(torch, "cpu", m, n, k, dt, False), target="sm90",
                               **_meta(cfg))
    for m, n, k, dt in PERSISTENT:
        for cfg in PERSISTENT_CONFIGS + CLUSTER_PERSISTENT_CONFIGS:
            matmul_persistent.warmup(*_persistent_args(torch, "cpu", m, n, k, dt, False),
                                     target="sm90", **_pmeta(cfg))
    for m, n, k in FP8:
        for cfg in FP8_CONFIGS + CLUSTER_FP8_CONFIGS:
            matmul_persistent.warmup(*_persistent_args(torch, "cpu", m, n, k, "float8_e4m3fn",
                                                       False), target="sm90", **_pmeta(cfg))
    persistent_ptxas = {}   # the persistent example's configs (shapes all multiples of 16)
    for dt, cfgs in (("fp16", PERSISTENT_CONFIGS + CLUSTER_PERSISTENT_CONFIGS),
                     ("bf16", PERSISTENT_CONFIGS + CLUSTER_PERSISTENT_CONFIGS),
                     ("fp8e4nv", FP8_CONFIGS + CLUSTER_FP8_CONFIGS)):
        for cfg in cfgs:
            meta = _pmeta(cfg)
            opts = {o: meta.pop(o) for o in ("num_warps", "num_stages", "num_ctas") if o in meta}
            persistent_ptxas[f"{dt} {cfg}"] = _ptxas(matmul_persistent.compile(
                target="sm90", signature=f"*{dt}:16,*{dt}:16,*fp16:16,i32:16,i32:16,i32:16",
                constexprs=meta, **opts))
    sig = "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1"
    ptxas = {}
    for cfg in CONFIGS:
        bm, bn, bk, w, s = cfg
        ck: Any = mm_tutorial.compile(target="sm90", signature=sig, num_warps=w, num_stages=s,
                                      constexprs={"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk,
                                                  "GROUP_M": GROUP_M})
        ptxas[str(cfg)] = _ptxas(ck)
    # Cold compile of one config: `tilec compile` in a fresh process, empty cache.
    import subprocess
    tmp = tempfile.mkdtemp()
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "tilec.cli", "compile",
                    os.path.join(HERE, "matmul_kernels.py"), "--target", "sm90",
                    "--kernel", "mm_tutorial", "--signature", sig, "--num-warps", "8",
                    "--num-stages", "3", "--constexpr", "BLOCK_M=128", "BLOCK_N=256",
                    "BLOCK_K=64", "GROUP_M=8", "-o", os.path.join(tmp, "out")],
                   check=True, capture_output=True, env={**os.environ, "TILEC_CACHE_DIR": tmp})
    cold = time.perf_counter() - t0
    shutil.rmtree(tmp, ignore_errors=True)
    with open(PREPARED, "w") as f:
        json.dump({"ptxas": ptxas, "ptxas_persistent": persistent_ptxas,
                   "tilec_cold_compile_s_128x256x64_w8_s3": round(cold, 3),
                   "cold_compile_note": "`tilec compile` in a fresh process with an empty "
                   "cache on the 2-core dev machine (includes Python start and imports)"},
                  f, indent=1)
    print(f"prepared {len(CONFIGS) * len(MAIN + RAGGED)} specializations; cold compile "
          f"{cold:.2f} s")


def _ptxas(ck: Any) -> dict[str, Any]:
    """ptxas's report of one compiled config (and its workgroup memory, CTAs per program)."""
    md = ck.metadata
    return {key: md.get(key) for key in ("registers", "spill_stores", "spill_loads",
                                         "stack_bytes", "dynamic_shared", "cluster_ctas")}


def _check(torch: Any, c: Any, a: Any, b: Any) -> float:
    ref = a.float() @ b.float()
    if torch.isnan(c).any().item():
        return float("nan")
    return ((c.float() - ref).norm() / ref.norm()).item()


def _sweep(torch: Any, do_bench: Any, launches: dict[str, Any], args: tuple[Any, ...],
           m: int, n: int, k: int, peer_first: bool
           ) -> dict[str, tuple[float, str, float, dict[str, float]]]:
    """Each side's (best TFLOP/s, its config, its relative error, TFLOP/s per
    config).  Every config of both sides is launched and checked first (Triton
    compiles there, 1-2 s per new config, with the GPU idle), then timed: the
    sides take turns config by config, who goes first alternating (Triton first
    on the first config with `peer_first`), so neither side's best configs meet
    a card still hot from the row before or one cooled by a compile."""
    a, b, c = args[:3]
    per: dict[str, dict[str, float]] = {name: {} for name in launches}
    best = {name: (0.0, "", float("nan")) for name in launches}
    errs: dict[tuple[str, tuple[int, ...]], float] = {}
    for cfg in CONFIGS:
        for name, launch in launches.items():
            try:
                c.fill_(float("nan"))
                launch(cfg, args)
                torch.cuda.synchronize()
                err = _check(torch, c, a, b)
            except Exception as e:  # noqa: BLE001 - e.g. Triton's OutOfResources
                print(f"  {name} {cfg}: {type(e).__name__}: {str(e)[:100]}")
                continue
            if not err < 1e-2:
                per[name][str(cfg)] = float("nan")
                print(f"  WRONG {name} {cfg}: rel err {err}")
                continue
            errs[(name, cfg)] = err
    for i, cfg in enumerate(CONFIGS):
        names = list(launches)
        if (i % 2 == 1) != peer_first:
            names.reverse()
        for name in (s for s in names if (s, cfg) in errs):
            launch = launches[name]
            t = do_bench(lambda: launch(cfg, args), warmup=25, rep=200, return_mode="median")
            tf = 2 * m * n * k / t / 1e9
            per[name][str(cfg)] = round(tf, 1)
            if tf > best[name][0]:
                best[name] = (tf, str(cfg), errs[(name, cfg)])
    return {name: (*best[name], per[name]) for name in launches}


def run(json_path: str | None, peer_first: bool = False) -> None:
    import torch
    from triton.testing import do_bench
    from matmul_kernels import t_mm_tutorial

    def tilec_launch(cfg: tuple[int, ...], args: tuple[Any, ...]) -> None:
        mm_tutorial[_grid(args[3], args[4], cfg)](*args, **_meta(cfg))

    def triton_launch(cfg: tuple[int, ...], args: tuple[Any, ...]) -> None:
        t_mm_tutorial[_grid(args[3], args[4], cfg)](*args, **_meta(cfg))

    # Triton's cold compile of one config (its own JIT, fresh cache), on this machine.
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp()
    args = _args(torch, "cuda", 4096, 4096, 4096, "float16", True)
    t0 = time.perf_counter()
    triton_launch((128, 256, 64, 8, 3), args)
    torch.cuda.synchronize()
    triton_cold = time.perf_counter() - t0
    rows = []
    for m, n, k, dt in MAIN + RAGGED:
        torch.manual_seed(m * 7 + n * 3 + k)
        args = _args(torch, "cuda", m, n, k, dt, True)
        a, b = args[:2]
        swept = _sweep(torch, do_bench, {"tilec": tilec_launch, "triton": triton_launch},
                       args, m, n, k, peer_first)
        tl_tf, tl_cfg, tl_err, tl_per = swept["tilec"]
        tr_tf, tr_cfg, tr_err, tr_per = swept["triton"]
        t_cublas = do_bench(lambda: torch.matmul(a, b), warmup=25, rep=200, return_mode="median")
        cb = 2 * m * n * k / t_cublas / 1e9
        row = {"kernel": "tutorial-03 pointer matmul", "dtype": dt, "shape": [m, n, k],
               "tilec": round(tl_tf, 1), "tilec_config": tl_cfg, "tilec_rel_error": tl_err,
               "triton": round(tr_tf, 1), "triton_config": tr_cfg, "triton_rel_error": tr_err,
               "cublas": round(cb, 1),
               "tilec_vs_triton": round(tl_tf / tr_tf, 3) if tr_tf else None,
               "tilec_vs_cublas": round(tl_tf / cb, 3),
               "tilec_per_config": tl_per, "triton_per_config": tr_per}
        rows.append(row)
        print(f"{dt:9s} {m}x{n}x{k}: tilec {tl_tf:6.1f} {tl_cfg}  triton {tr_tf:6.1f} "
              f"{tr_cfg}  cublas {cb:6.1f}  ratio {row['tilec_vs_triton']}", flush=True)
    for m, n, k, dt in PERSISTENT:
        torch.manual_seed(m + n + k + 1)
        pargs = _persistent_args(torch, "cuda", m, n, k, dt, True)
        a, b, c = pargs[:3]
        per: dict[str, float] = {}
        best = (0.0, "", float("nan"))
        for cfg in _tilec_persistent(fp8=False):
            def go(cfg: tuple[int, ...] = cfg) -> None:
                matmul_persistent[_pgrid(cfg)](*pargs, **_pmeta(cfg))
            c.fill_(float("nan"))
            go()
            torch.cuda.synchronize()
            ref = a.float() @ b.float().T
            err = float("nan") if torch.isnan(c).any().item() else \
                ((c.float() - ref).norm() / ref.norm()).item()
            if not err < 1e-2:
                print(f"  WRONG persistent {cfg}: rel err {err}")
                continue
            t = do_bench(go, warmup=25, rep=200, return_mode="median")
            per[str(cfg)] = round(2 * m * n * k / t / 1e9, 1)
            if per[str(cfg)] > best[0]:
                best = (per[str(cfg)], str(cfg), err)
        bt = b.T
        t_cublas = do_bench(lambda: torch.matmul(a, bt), warmup=25, rep=200,
                            return_mode="median")
        cb = 2 * m * n * k / t_cublas / 1e9
        tr, tr_cfg, tr_per = _triton_persistent(torch, do_bench, pargs, ref, PERSISTENT_CONFIGS)
        row = {"kernel": "descriptor + persistent (examples/matmul_persistent.py), B [N,K] as b.T",
               "dtype": dt, "shape": [m, n, k], "tilec": best[0], "tilec_config": best[1],
               "tilec_rel_error": best[2], "cublas": round(cb, 1),
               "triton": tr, "triton_config": tr_cfg,
               "triton_note": "the same source in Triton: TMA descriptors + persistent",
               "tilec_vs_triton": round(best[0] / tr, 3) if tr else None,
               "tilec_vs_cublas": round(best[0] / cb, 3), "tilec_per_config": per,
               "triton_per_config": tr_per}
        rows.append(row)
        print(f"persistent {dt} {m}x{n}x{k}: tilec {best[0]:6.1f} {best[1]}  triton TMA {tr:6.1f} "
              f"{tr_cfg}  cublas {cb:6.1f}", flush=True)
    rows += _fp8_rows(torch, do_bench)
    from gpu_clock import ClockLog
    with ClockLog() as clock:
        _alternate(torch, do_bench, rows, clock)
    clocks = clock.summary()
    for i, row in enumerate(rows):   # each side's mean SM clock and power over its rounds
        for name in ("tilec", "triton", "cublas"):
            if f"{i} {name}" in clocks:
                row[f"{name}_alternated_sm_mhz"] = clocks[f"{i} {name}"]["mhz"]
                row[f"{name}_alternated_watts"] = clocks[f"{i} {name}"]["watts"]
    _summary(rows)
    prepared = {}
    if os.path.exists(PREPARED):
        with open(PREPARED) as f:
            prepared = json.load(f)
    out = {"command": "benchmarks/h200_matmul.py prepare (dev machine), run (H200)"
                      + (" --peer-first" if peer_first else ""),
           "device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "configs": [list(c) for c in CONFIGS], "rows": rows,
           "triton_cold_compile_s_128x256x64_w8_s3": round(triton_cold, 3),
           "triton_cold_compile_note": "first launch with an empty TRITON_CACHE_DIR on the "
                                       "GPU machine (16 cores), includes its ptxas",
           "not_measured": ["fp8 with B [K, N] N-major in tilec (fp8 wgmma reads B K-major: "
                            "such dots take the register-staged path)"],
           **prepared}
    if json_path:
        with open(json_path, "w") as f:
            json.dump(out, f, indent=1)
        _plot(rows, os.path.splitext(json_path)[0] + ".png")


ALT_ROUNDS = 12


def _alternate(torch: Any, do_bench: Any, rows: list[dict[str, Any]], clock: Any) -> None:
    """Re-time each row's best tilec config, the peer's best and cuBLAS in
    alternation (module docstring); adds `*_alternated` and `*_paired` fields;
    each timing is a window "<row index> <side>" of `clock` (gpu_clock.ClockLog)."""
    import ast
    from matmul_kernels import t_matmul_persistent, t_mm_tutorial
    for i, row in enumerate(rows):
        m, n, k = row["shape"]
        dt = row["dtype"]
        fns: dict[str, Any] = {}
        if row["kernel"].startswith("tutorial-03"):
            args = _args(torch, "cuda", m, n, k, dt, True)
            a, b = args[:2]
            for name, kern, key in (("tilec", mm_tutorial, "tilec_config"),
                                    ("triton", t_mm_tutorial, "triton_config")):
                if row.get(key):
                    cfg = ast.literal_eval(row[key])
                    fns[name] = (lambda kern=kern, cfg=cfg:
                                 kern[_grid(m, n, cfg)](*args, **_meta(cfg)))
            fns["cublas"] = lambda: torch.matmul(a, b)
        else:
            pargs = _persistent_args(torch, "cuda", m, n, k, dt, True)
            a, b = pargs[:2]
            key = "triton_tma_persistent_config" if dt.startswith("float8") else "triton_config"
            for name, kern, ckey in (("tilec", matmul_persistent, "tilec_config"),
                                     ("triton", t_matmul_persistent, key)):
                if row.get(ckey):
                    cfg = ast.literal_eval(row[ckey])
                    fns[name] = (lambda kern=kern, cfg=cfg:
                                 kern[_pgrid(cfg)](*pargs, **_pmeta(cfg)))
            if dt.startswith("float8"):
                one = torch.tensor(1.0, device="cuda")
                fns["cublas"] = lambda: torch._scaled_mm(a, b.T, scale_a=one, scale_b=one,
                                                         out_dtype=torch.float16)
            else:
                fns["cublas"] = lambda: torch.matmul(a, b.T)
        if "tilec" in fns:   # A/A control: tilec's kernel timed again as a fourth side
            fns["tilec_again"] = fns["tilec"]
        times: dict[str, list[float]] = {name: [] for name in fns}
        order = list(fns)
        for rnd in range(ALT_ROUNDS):
            # ABC CBA ABC ...: a drift of the card's clock within a pair of
            # rounds reaches every side alike
            for name in (order if rnd % 2 == 0 else order[::-1]):
                t0 = time.time()
                times[name].append(do_bench(fns[name], warmup=10, rep=100,
                                            return_mode="median"))
                clock.window(f"{i} {name}", t0, time.time())
        for name, ts in times.items():
            row[f"{name}_alternated"] = round(2 * m * n * k / statistics.median(ts) / 1e9, 1)
        if "tilec_alternated" in row and "triton_alternated" in row:
            row["tilec_vs_triton_alternated"] = round(row["tilec_alternated"] /
                                                      row["triton_alternated"], 3)
            ratios = sorted(p / t for p, t in zip(times["triton"], times["tilec"]))
            q = statistics.quantiles(ratios, n=4)
            row["tilec_vs_triton_paired"] = round(statistics.median(ratios), 3)
            row["paired_ratios_q1_q3"] = [round(q[0], 3), round(q[2], 3)]
            row["paired_rounds"] = len(ratios)
        if "tilec_again" in times:
            aa = sorted(p / t for p, t in zip(times["tilec_again"], times["tilec"]))
            q = statistics.quantiles(aa, n=4)
            row["aa_control_paired"] = round(statistics.median(aa), 3)
            row["aa_control_q1_q3"] = [round(q[0], 3), round(q[2], 3)]
        print(f"alternated {dt} {m}x{n}x{k} ({row['kernel'][:10]}): " + "  ".join(
            f"{name} {row[name + '_alternated']:.1f}" for name in fns) +
            f"  ratio {row.get('tilec_vs_triton_alternated')}"
            f"  paired {row.get('tilec_vs_triton_paired')} {row.get('paired_ratios_q1_q3')}"
            f"  A/A {row.get('aa_control_paired')} {row.get('aa_control_q1_q3')}",
            flush=True)


def _summary(rows: list[dict[str, Any]]) -> None:
    print("\nrow                                   sweep  altern  paired [q1, q3]      "
          "tilec MHz / W       Triton MHz / W     A/A [q1, q3]")
    for r in rows:
        name = (("pers " if "persistent" in r["kernel"] else "fp8 " if "fp8" in r["kernel"]
                 else "tut ") + r["dtype"][:8] + " " + "x".join(map(str, r["shape"])))
        sweep = r.get("tilec_vs_triton_tma", r.get("tilec_vs_triton"))
        print(f"{name:36s} {sweep!s:6s} {r.get('tilec_vs_triton_alternated')!s:6s}  "
              f"{r.get('tilec_vs_triton_paired')!s:6s} {r.get('paired_ratios_q1_q3')!s:15s} "
              f"{r.get('tilec_alternated_sm_mhz')!s:5s} / {r.get('tilec_alternated_watts')!s:6s}  "
              f"{r.get('triton_alternated_sm_mhz')!s:5s} / {r.get('triton_alternated_watts')!s:6s}  "
              f"{r.get('aa_control_paired')!s:6s} {r.get('aa_control_q1_q3')!s}",
              flush=True)


def _triton_persistent(torch: Any, do_bench: Any, pargs: tuple[Any, ...], ref: Any,
                       configs: list[tuple[int, ...]]) -> tuple[float, str, dict[str, float]]:
    """Triton's TMA + persistent twin of the example: (best TFLOP/s, config, per config)."""
    import triton
    from matmul_kernels import t_matmul_persistent
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                 device="cuda"))
    a, b, c, m, n, k = pargs
    best, best_cfg, per = 0.0, "", {}
    ok = []
    for cfg in configs:   # compiled and checked first: no compile pause between timings
        try:
            c.fill_(float("nan"))
            t_matmul_persistent[(NUM_SMS,)](*pargs, **_pmeta(cfg))
            torch.cuda.synchronize()
            err = ((c.float() - ref).norm() / ref.norm()).item()
        except Exception as e:  # noqa: BLE001
            print(f"  triton persistent {cfg}: {type(e).__name__}: {str(e)[:120]}")
            continue
        if not err < 2e-2:
            print(f"  WRONG triton persistent {cfg}: rel err {err}")
            continue
        ok.append(cfg)
    for cfg in ok:
        def go(cfg: tuple[int, ...] = cfg) -> None:
            t_matmul_persistent[(NUM_SMS,)](*pargs, **_pmeta(cfg))
        t = do_bench(go, warmup=25, rep=200, return_mode="median")
        per[str(cfg)] = round(2 * m * n * k / t / 1e9, 1)
        if per[str(cfg)] > best:
            best, best_cfg = per[str(cfg)], str(cfg)
    return best, best_cfg, per


def _fp8_rows(torch: Any, do_bench: Any) -> list[dict[str, Any]]:
    from matmul_kernels import t_mm_tutorial
    out = []
    for m, n, k in FP8:
        torch.manual_seed(m + 3)
        pargs = _persistent_args(torch, "cuda", m, n, k, "float8_e4m3fn", True)
        a, b, c = pargs[:3]
        ref = a.float() @ b.float().T
        res: dict[str, Any] = {}
        for name, cfgs in (("tilec", _tilec_persistent(fp8=True)), ("triton", FP8_CONFIGS)):
            best = (0.0, "", float("nan"))
            per: dict[str, float] = {}
            for cfg in cfgs:
                if name == "tilec":
                    def go(cfg: tuple[int, ...] = cfg) -> None:
                        matmul_persistent[_pgrid(cfg)](*pargs, **_pmeta(cfg))
                else:
                    bt = b.T   # [K, N] view, K contiguous
                    targs = (a, bt, c, m, n, k, a.stride(0), a.stride(1), bt.stride(0),
                             bt.stride(1), c.stride(0), c.stride(1))

                    def go(cfg: tuple[int, ...] = cfg, targs: Any = targs) -> None:
                        t_mm_tutorial[_grid(m, n, cfg)](*targs, **_meta(cfg))
                try:
                    c.fill_(float("nan"))
                    go()
                    torch.cuda.synchronize()
                    err = float("nan") if torch.isnan(c).any().item() else \
                        ((c.float() - ref).norm() / ref.norm()).item()
                    if not err < 2e-2:
                        print(f"  WRONG fp8 {name} {cfg}: rel err {err}")
                        continue
                    t = do_bench(go, warmup=25, rep=200, return_mode="median")
                except Exception as e:  # noqa: BLE001
                    print(f"  fp8 {name} {cfg}: {type(e).__name__}: {str(e)[:100]}")
                    continue
                per[str(cfg)] = round(2 * m * n * k / t / 1e9, 1)
                if per[str(cfg)] > best[0]:
                    best = (per[str(cfg)], str(cfg), err)
            res[name] = (best, per)
        one = torch.tensor(1.0, device="cuda")
        bt = b.T
        try:
            t_cb = do_bench(lambda: torch._scaled_mm(a, bt, scale_a=one, scale_b=one,
                                                     out_dtype=torch.float16),
                            warmup=25, rep=200, return_mode="median")
            cb: float | None = round(2 * m * n * k / t_cb / 1e9, 1)
        except Exception as e:  # noqa: BLE001
            print(f"  _scaled_mm: {type(e).__name__}: {str(e)[:100]}")
            cb = None
        tma, tma_cfg, tma_per = _triton_persistent(torch, do_bench, pargs, ref, FP8_CONFIGS)
        tl_b, tr_b = res["tilec"][0], res["triton"][0]
        row = {"kernel": "fp8 e4m3 -> fp16: tilec persistent descriptor example; Triton "
                         "tutorial-03 source; cuBLAS torch._scaled_mm",
               "dtype": "float8_e4m3fn", "shape": [m, n, k],
               "tilec": tl_b[0], "tilec_config": tl_b[1], "tilec_rel_error": tl_b[2],
               "triton": tr_b[0], "triton_config": tr_b[1], "triton_rel_error": tr_b[2],
               "triton_tma_persistent": tma, "triton_tma_persistent_config": tma_cfg,
               "triton_tma_persistent_per_config": tma_per,
               "tilec_vs_triton_tma": round(tl_b[0] / tma, 3) if tma else None,
               "cublas": cb, "tilec_vs_triton": round(tl_b[0] / tr_b[0], 3) if tr_b[0] else None,
               "tilec_vs_cublas": round(tl_b[0] / cb, 3) if cb else None,
               "tilec_per_config": res["tilec"][1], "triton_per_config": res["triton"][1]}
        out.append(row)
        print(f"fp8 {m}x{n}x{k}: tilec {tl_b[0]:7.1f} {tl_b[1]}  triton {tr_b[0]:7.1f} "
              f"{tr_b[1]}  triton TMA {tma:7.1f} {tma_cfg}  cublas {cb}", flush=True)
    return out


def _plot(rows: list[dict[str, Any]], path: str) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not available: no chart")
        return
    # fp8 rows: Triton's faster form (its TMA persistent kernel), as the ratios use
    rows = [dict(r, cublas=r["cublas"] or 0,
                 triton=max(r["triton"] or 0, r.get("triton_tma_persistent") or 0)) for r in rows]
    short = {"float16": "fp16", "bfloat16": "bf16", "float8_e4m3fn": "fp8"}
    labels = [f"{'pers ' if 'persistent' in r['kernel'] else ''}{short.get(r['dtype'], r['dtype'])} {'x'.join(map(str, r['shape']))}" for r in rows]
    xs = range(len(rows))
    fig, (ax, bx) = plt.subplots(2, 1, figsize=(12, 8), sharex=True,
                                 gridspec_kw={"height_ratios": [3, 2]})
    w = 0.27
    for i, (key, name) in enumerate((("tilec", "tilec"), ("triton", "Triton 3.6"),
                                     ("cublas", "cuBLAS"))):
        ax.bar([x + (i - 1) * w for x in xs], [r[key] for r in rows], w, label=name)
    ax.set_ylabel("TFLOP/s (sweep)")
    ax.set_title("H200 matmul: tutorial-03 source, best of the same configs")
    ax.legend()
    for key, q, name, dx in (("tilec_vs_triton_paired", "paired_ratios_q1_q3",
                              "tilec / Triton, paired rounds (median, quartiles)", -0.12),
                             ("aa_control_paired", "aa_control_q1_q3",
                              "A/A control: tilec / tilec", 0.12)):
        pts = [(x + dx, r[key], r[q]) for x, r in zip(xs, rows) if r.get(key)]
        if pts:
            bx.errorbar([p[0] for p in pts], [p[1] for p in pts],
                        yerr=[[p[1] - p[2][0] for p in pts], [p[2][1] - p[1] for p in pts]],
                        fmt="o", capsize=3, label=name)
    bx.axhline(1.0, color="gray", lw=0.8)
    bx.set_ylabel("time ratio")
    bx.legend(fontsize=8)
    bx.set_xticks(list(xs), labels, rotation=30, ha="right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["prepare", "run"])
    ap.add_argument("--json")
    ap.add_argument("--peer-first", action="store_true",
                    help="Triton first on the sweep's first config of each tutorial-03 row")
    ns = ap.parse_args()
    prepare() if ns.phase == "prepare" else run(ns.json, ns.peer_first)
