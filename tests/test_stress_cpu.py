"""Issue 11, finding 2: many distinct CPU kernels compiled and launched in one
process (tests/stress_cpu.py, reduced size here; the full run under
AddressSanitizer is scripts/sanitize_cpu.sh), with guard bands around every
array; and a check that the guard bands do catch an out-of-bounds write."""
from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest

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


@tilec.kernel
def _row_sums(x_ptr, o_ptr, R, C, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.arange(0, BM)
    cols = tl.arange(0, BN)
    ok = (rows[:, None] < R) & (cols[None, :] < C)
    x = tl.load(x_ptr + rows[:, None] * C + cols[None, :], mask=ok, other=0)
    tl.store(o_ptr + rows, tl.sum(x, axis=1), mask=rows < R)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.float16, np.float32])
@pytest.mark.parametrize("rows", [1, 2, 3])
def test_a_constant_mask_stores_only_its_lanes(dtype: type, rows: int) -> None:
    """The fuzzer's find (and the heap corruption's cause): with R == 1 (compiled
    in as the constant 1) the store's mask is the constant [1, 0, ...]; LLVM
    turned that masked store of an int16 into a 4-byte vmovd (an int8: the 3
    bytes after it too), writing past the end of a 1-element array."""
    g = stress_cpu.Guarded()
    x = g.array(np.ones((rows, 11), dtype), "x")
    o = g.array(np.zeros(rows, dtype), "o")
    _row_sums[(1,)](x, o, rows, 11, BM=8, BN=16)
    assert g.check() == []
    np.testing.assert_array_equal(o, np.full(rows, 11, dtype))
