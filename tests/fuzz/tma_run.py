"""The worker's side of the fuzzer's `tma` mode (tests/fuzz/tma.py makes the
cases): load a generated kernel, build its arguments, run it through the
differential harness for `tile-tma-pointers` (tests/tma_emulation.py),
classify the outcome; and the mode's summary (`Tally`).  Heavy imports
(NumPy, torch, tilec) happen in the functions, so that the driver
(tests/fuzz/run.py) stays light."""
from __future__ import annotations

import os
import pathlib
import sys
import traceback
from typing import Any, Callable

Case = dict[str, Any]
DTYPE = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}

def _array(spec: dict[str, Any], g: Any) -> Any:
    """A NaN-filled buffer, random values in its logical region, passed from
    its `lead` element on (a NumPy or torch 1-D view)."""
    import numpy as np
    counts = [n for n, _ in spec["fill"] or []]
    strides = [s for _, s in spec["fill"] or []]
    values = g.standard_normal(counts) if spec["fill"] else None
    lead, n = int(spec["lead"]), int(spec["length"])
    if spec["lib"] == "torch":
        import torch
        buf = torch.full((n,), float("nan"), dtype=getattr(torch, DTYPE[spec["dtype"]]))
        if values is not None:
            torch.as_strided(buf, counts, strides, lead).copy_(torch.from_numpy(values))
        return buf[lead:]
    arr = np.full(n, np.nan, np.dtype(DTYPE[spec["dtype"]]))
    if values is not None:
        view = np.lib.stride_tricks.as_strided(arr[lead:], counts,
                                               [s * arr.itemsize for s in strides])
        view[...] = values
    return arr[lead:]


def make_args(case: Case) -> Any:
    """The case's argument factory for `tma_emulation.differential`."""
    def make() -> tuple[list[Any], dict[str, Any]]:
        import numpy as np
        g = np.random.default_rng(case.get("data_seed", 0))
        args = [_array(case["arrays"][p], g) if p in case["arrays"] else case["scalars"][p]
                for p in case["params"]]
        return args, dict(case["constexprs"])
    return make


def run_case(case: Case, directory: str,
             load: Callable[[Case, str], tuple[Any, str]]) -> dict[str, Any]:
    """The outcome of one case: ok (with the accesses tagged), wrong (the
    builds differ: a soundness bug in the pass, or in the harness), compiler
    bug (the emulated build failed where the plain one did not: the pass or
    the emulation left IR the CPU cannot take), plain build failed (the CPU
    back end's or the frontend's problem, not this mode's), rejected valid
    kernel, internal exception."""
    tests = str(pathlib.Path(__file__).resolve().parent.parent)
    if tests not in sys.path:
        sys.path.insert(0, tests)
    import tma_emulation as te
    from tilec.errors import CompilerBugError, TilecError
    try:
        kernel, _ = load(case, directory)
        pair = te.differential(kernel, tuple(case["grid"]), make_args(case))
    except te.Mismatch as e:
        return {"outcome": "wrong", "detail": str(e)[:3000]}
    except te.BuildFailed as e:
        return {"outcome": "plain build failed" if e.plain else "compiler bug",
                "detail": str(e)[:3000]}
    except CompilerBugError as e:
        return {"outcome": "compiler bug", "detail": str(e)[:3000]}
    except TilecError as e:
        return {"outcome": "rejected valid kernel", "detail": str(e)[:3000]}
    except Exception:  # noqa: BLE001 - a harness error is a finding too
        return {"outcome": "internal exception", "detail": traceback.format_exc()[-3000:]}
    return {"outcome": "ok", "detail": "", "tagged": pair.tagged, "changed": pair.changed,
            "ranks": [len(m["block"]) for m in pair.recipes],
            "bases": [case["params"][int(m["base"])] for m in pair.recipes],
            "signature": pair.signature, "variants": pair.variants}


class Tally:
    """The mode's own summary: how many cases got a tag (a case with none
    proves nothing about the pass), how many of each access, map rank and
    feature value, and cases that wrote nothing."""

    def __init__(self) -> None:
        self.cases = 0
        self.tagged_cases = 0
        self.tags: dict[str, int] = {}
        self.bases: dict[str, int] = {}
        self.ranks: dict[str, int] = {}
        self.no_writes = 0
        self.fallbacks = 0
        self.features: dict[str, list[int]] = {}

    def add(self, case: Case, out: dict[str, Any]) -> None:
        self.cases += 1
        tagged = int(out.get("tagged") or 0)
        self.tagged_cases += tagged > 0
        for table, keys in ((self.tags, [str(tagged)]), (self.bases, out.get("bases") or []),
                            (self.ranks, [str(k) for k in out.get("ranks") or []])):
            for k in keys:
                table[k] = table.get(k, 0) + 1
        self.no_writes += out.get("outcome") == "ok" and not out.get("changed")
        self.fallbacks += "untagged pass IR" in (out.get("variants") or [])
        for k, v in case.get("features", {}).items():
            row = self.features.setdefault(f"{k}={v}", [0, 0])
            row[0] += 1
            row[1] += tagged > 0

    def summary(self) -> dict[str, Any]:
        return {"tagged_cases": self.tagged_cases,
                "tagged_fraction": round(self.tagged_cases / max(self.cases, 1), 3),
                "tags_per_case": dict(sorted(self.tags.items())),
                "tagged_accesses": dict(sorted(self.bases.items())),
                "map_ranks": dict(sorted(self.ranks.items())),
                "cases_comparing_the_untagged_k_major_fallback": self.fallbacks,
                "cases_writing_nothing": self.no_writes,
                "by_feature": {k: {"cases": v[0], "tagged": v[1]}
                               for k, v in sorted(self.features.items())}}
