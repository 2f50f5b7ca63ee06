"""The fuzzer's driver: make cases, run them in a worker process with a
watchdog, classify the outcomes, write a JSON summary.

    python -m tests.fuzz --cases 10000 --seed 1 --mode cpu --out benchmarks/results/fuzz.json
    python -m tests.fuzz --cases 1000 --mode gpu --targets sm90,gfx942,gfx1100
    python -m tests.fuzz --cases 700 --mode tma --budget 900

Mode `tma` (tests/fuzz/tma.py) generates pointer matmul and copy kernels and
compares each plain CPU build with the one whose tile-tma-pointers tags are
emulated (tests/tma_emulation.py); its summary adds the fraction of cases
the pass tagged anything in.

Cases alternate between generated valid kernels (tests/fuzz/gen.py) and
mutated ones (tests/fuzz/mutate.py) by `--mistakes` (the fraction of
mutated cases; GPU mode compiles valid kernels only).  One worker
(tests/fuzz/worker.py) runs the cases one after another; when it dies the
case is a crash, when a case runs past `--timeout` seconds the worker is
killed and the case is a timeout; a new worker takes the next case.

Outcomes: ok, wrong, located user error, documented limitation (a valid
kernel a target refuses by design, with a located error: worker.LIMITATIONS),
unlocated user error, accepted mistake (a mutated kernel that ran), rejected
valid kernel, compiler bug, internal exception, crash, timeout.  GOOD names the ones that are not
findings.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from typing import Any, Iterator

from .gen import valid_case
from .mutate import mutated_case
from .tma import tma_case
from .tma_run import Tally

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py")
GOOD = {"ok", "located user error", "documented limitation"}
OUTCOMES = ["ok", "wrong", "located user error", "documented limitation",
            "unlocated user error", "accepted mistake",
            "rejected valid kernel", "compiler bug", "plain build failed", "internal exception",
            "crash", "timeout"]


def make_cases(count: int, seed: int, mode: str, mistakes: float,
               targets: list[str]) -> Iterator[dict[str, Any]]:
    r = random.Random(seed)
    for i in range(count):
        case = tma_case(seed, i) if mode == "tma" else valid_case(seed, i)
        if mode == "cpu" and r.random() < mistakes:
            case = mutated_case(case, seed, i)
        case["mode"] = mode
        case["targets"] = targets
        case["data_seed"] = seed * 100_003 + i
        yield case


class Worker:
    """One worker process; `run(case, timeout)` -> outcome dict."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.proc: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([sys.executable, WORKER], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True, env=self.env, bufsize=1)
        return self.proc

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def run(self, case: dict[str, Any], timeout: float) -> dict[str, Any]:
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        try:
            proc.stdin.write(json.dumps(case) + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            pass
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        if not ready:
            self.stop()
            return {"outcome": "timeout", "detail": f"no answer within {timeout:g} s"}
        line = proc.stdout.readline()
        if not line:
            code = proc.wait()
            err = proc.stderr.read()[-3000:]
            self.proc = None
            how = (f"signal {-code} ({signal.Signals(-code).name})" if code < 0
                   else f"exit status {code}")
            return {"outcome": "crash", "detail": f"the worker died: {how}\n{err}"}
        return json.loads(line)  # type: ignore[no-any-return]


def fuzz(count: int, seed: int, mode: str = "cpu", mistakes: float = 0.45,
         targets: list[str] | None = None, timeout: float = 60.0,
         budget_s: float | None = None, progress: bool = False) -> dict[str, Any]:
    """Run `count` cases (fewer when `budget_s` runs out); the summary."""
    targets = targets or ["sm90", "gfx942", "gfx1100"]
    env = dict(os.environ)
    env.setdefault("TILEC_CACHE_DIR", tempfile.mkdtemp(prefix="tilec-fuzz-cache-"))
    env["PYTHONFAULTHANDLER"] = "1"
    worker = Worker(env)
    counts: Counter[str] = Counter()
    by_kind: dict[str, Counter[str]] = {}
    findings: list[dict[str, Any]] = []
    tally = Tally()
    t0 = time.time()
    done = 0
    try:
        for case in make_cases(count, seed, mode, mistakes, targets):
            if budget_s is not None and time.time() - t0 > budget_s:
                break
            t1 = time.time()
            out = worker.run(case, timeout)
            done += 1
            counts[out["outcome"]] += 1
            tag = case.get("mutation") or case["kind"]
            by_kind.setdefault(tag, Counter())[out["outcome"]] += 1
            if mode == "tma":
                tally.add(case, out)
            if out["outcome"] not in GOOD:
                found = {"case": case["name"], "outcome": out["outcome"],
                         "kind": case["kind"], "mutation": case.get("mutation"),
                         "seconds": round(time.time() - t1, 2),
                         "detail": out["detail"], "source": case["source"],
                         "constexprs": case["constexprs"]}
                if mode == "tma":   # what tests.fuzz.tma.run_case needs to rerun it
                    found["launch"] = {k: case[k] for k in ("params", "arrays", "scalars",
                                                            "grid", "data_seed", "features")}
                findings.append(found)
            if progress and done % 100 == 0:
                print(f"{done} cases, {dict(counts)}, {time.time() - t0:.0f} s", flush=True)
    finally:
        worker.stop()
    summary = {"mode": mode, "seed": seed, "cases": done, "requested": count,
               "targets": targets if mode == "gpu" else ["cpu"],
               "seconds": round(time.time() - t0, 1),
               "counts": {k: counts.get(k, 0) for k in OUTCOMES},
               "by_kind": {k: dict(v) for k, v in sorted(by_kind.items())},
               "findings": findings}
    if mode == "tma":
        summary["tma"] = tally.summary()
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mode", choices=["cpu", "gpu", "tma"], default="cpu")
    ap.add_argument("--mistakes", type=float, default=0.45)
    ap.add_argument("--targets", default="sm90,gfx942,gfx1100")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--budget", type=float, default=None, help="stop after this many seconds")
    ap.add_argument("--out", default=None, help="write the JSON summary here")
    a = ap.parse_args(argv)
    summary = fuzz(a.cases, a.seed, a.mode, a.mistakes, a.targets.split(","), a.timeout,
                   a.budget, progress=True)
    summary["command"] = "python -m tests.fuzz " + " ".join(argv if argv is not None
                                                            else sys.argv[1:])
    text = json.dumps(summary, indent=1)
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            f.write(text + "\n")
    print(json.dumps({k: summary[k] for k in ("mode", "cases", "seconds", "counts")}))
    if "tma" in summary:
        print(json.dumps({k: summary["tma"][k] for k in ("tagged_cases", "tagged_fraction")}))
    return 0 if all(f["outcome"] in GOOD for f in summary["findings"]) else 1
