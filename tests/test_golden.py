"""The compiler's PTX (sm80, sm90, sm100) and AMDGCN (gfx942, gfx1100) of every
golden kernel equal the files under tests/golden/machine/ (after stripping
volatile lines).  A change that alters machine code must update them in the
same commit: `python tests/golden_code.py` rewrites them."""
from __future__ import annotations

import difflib
from typing import Any

import pytest

from golden_code import TARGETS, emit, golden_path, golden_specs

SPECS = list(golden_specs())


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("name,kernel,sig,cx,warps", SPECS, ids=[s[0] for s in SPECS])
def test_machine_code_matches_golden(name: str, kernel: Any, sig: Any, cx: dict[str, Any],
                                     warps: int, target: str) -> None:
    path = golden_path(name, target)
    assert path.exists(), f"{path} missing: run python tests/golden_code.py"
    want = path.read_text()
    got = emit(kernel, target, sig, cx, warps)
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                            "golden", "now", n=2))
        pytest.fail(f"{name} on {target} differs from {path.name}:\n{diff[:6000]}")
