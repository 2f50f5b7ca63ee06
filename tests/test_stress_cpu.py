"""Issue 11, finding 2: many distinct CPU kernels compiled and launched in one
process (tests/stress_cpu.py, reduced size here; the full run under
AddressSanitizer is scripts/sanitize_cpu.sh), with guard bands around every
array; and a check that the guard bands do catch an out-of-bounds write."""
from __future__ import annotations

import os
import tempfile

import numpy as np

import tilec
import tilec.language as tl
import stress_cpu


def test_many_kernels_in_one_process() -> None:
    cases = stress_cpu.make_cases(int(os.environ.get("TILEC_STRESS_CASES", "48")), seed=11)
    with tempfile.TemporaryDirectory() as d:
        module = stress_cpu.load_kernels(cases, d)
        problems = [p for i, c in enumerate(cases) for p in stress_cpu.run_case(module, c, 11 + i)]
    assert problems == []


@tilec.kernel
def _unmasked(o_ptr, BLOCK: tl.constexpr):
    tl.store(o_ptr + tl.arange(0, BLOCK), 7)


def test_the_guard_bands_see_a_write_past_the_end() -> None:
    g = stress_cpu.Guarded()
    o = g.array(np.zeros(10, np.int32), "o")
    _unmasked[(1,)](o, BLOCK=16)          # the user's mistake: 6 elements past the end
    bad = g.check()
    assert len(bad) == 1 and "24 guard bytes after" in bad[0]
