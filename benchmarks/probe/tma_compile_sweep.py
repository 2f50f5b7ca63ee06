"""Compile-only sweep of the fuzzer's `tma` mode cases (tests/fuzz/tma.py and
tma_desc.py: pointer and descriptor kernels) for sm90 and sm100, with their
blocks raised to 128 x 128 x 64 (128 x 256 for every third case), 8 warps and
3 stages (`--stages`): what the CPU differential harness cannot reach (the NVIDIA
pipeliner, the TMA lowering of rank 2-5 maps, ptxas).  Each case counts as
ok, a located user error (TilecError: e.g. a raised block that needs more
shared memory than the chip has), or a compiler bug / internal exception
(with its message); compiles whose ptxas report spills are counted, by case
kind, dtype and BLOCK_N.

    TILEC_CACHE_DIR=$(mktemp -d) .venv/bin/python benchmarks/probe/tma_compile_sweep.py \\
        --seed 2605 --cases 300 [--stages 3] --json F
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

from tests.fuzz.tma import tma_case  # noqa: E402
from tests.fuzz.tma_run import make_args  # noqa: E402
from tests.fuzz.worker import _load  # noqa: E402
from tilec.errors import CompilerBugError, TilecError  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=2605)
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--stages", type=int, default=3)
    ap.add_argument("--json")
    ns = ap.parse_args()
    folder = tempfile.mkdtemp(prefix="tma-compile-sweep-")
    out: dict = {"compiles_ok": 0, "user_errors": [], "bugs": [], "spills": {}}
    totals: collections.Counter = collections.Counter()
    spills: collections.Counter = collections.Counter()
    t0 = time.time()
    for i in range(ns.cases):
        case = tma_case(ns.seed, i)
        cx = dict(case["constexprs"])
        for k, v in (("BLOCK_M", 128), ("BLOCK_N", 256 if i % 3 == 0 else 128), ("BLOCK_K", 64)):
            if k in cx:
                cx[k] = v
        key = f"{case['kind']} {case['features'].get('dtype', '?')} BLOCK_N={cx.get('BLOCK_N')}"
        try:
            kernel, _ = _load(case, folder)
            args, _ = make_args(case)()
            for target in ("sm90", "sm100"):
                h = kernel.warmup(*args, **cx, num_warps=8, num_stages=ns.stages, target=target)
                out["compiles_ok"] += 1
                totals[f"{target} {key}"] += 1
                spills[f"{target} {key}"] += bool(h.n_spills)
        except CompilerBugError as e:
            out["bugs"].append({"case": i, "kind": case["kind"], "error": str(e)[:800]})
        except TilecError as e:
            out["user_errors"].append({"case": i, "error": str(e).splitlines()[-1][:300]})
        except Exception:  # noqa: BLE001 - an internal exception is a finding
            out["bugs"].append({"case": i, "kind": case["kind"],
                                "error": traceback.format_exc()[-1500:]})
    out["spills"] = {k: f"{spills[k]} / {totals[k]}" for k in sorted(totals)}
    out.update(seed=ns.seed, cases=ns.cases, seconds=round(time.time() - t0, 1),
               command=" ".join(sys.argv))
    print(json.dumps({k: v for k, v in out.items() if k != "spills"}, indent=1)[:3000])
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
