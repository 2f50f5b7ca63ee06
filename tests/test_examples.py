"""Every script in examples/ runs on the CPU and checks itself against NumPy.

Each example is imported by path and its `main()` called (examples keep their
sizes small enough for this).  That every example's `SPECS` compiles for every
GPU target is tests/test_targets.py's job.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from toolcheck import EXAMPLES_DIR, load_example

EXAMPLES = sorted(p for p in EXAMPLES_DIR.glob("*.py") if not p.name.startswith("_"))



def test_examples_found() -> None:
    names = {p.stem for p in EXAMPLES}
    assert {"softmax", "layernorm", "rmsnorm", "cross_entropy", "histogram",
            "prefix_sum", "vector_add"} <= names, names


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    module = load_example(path)
    assert callable(getattr(module, "main", None)), f"{path.name} has no main()"
    module.main()
    out = capsys.readouterr().out
    assert "ok" in out or "matches" in out, out


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_has_specs(path: Path) -> None:
    module = load_example(path)
    specs = getattr(module, "SPECS", None)
    assert specs, f"{path.name} defines no SPECS"
    for kernel, _sig, constexprs in specs:
        assert getattr(kernel, "__tilec_kernel__", False), kernel
        assert isinstance(constexprs, dict)


def test_softmax_shapes() -> None:
    """A few more shapes through both softmax kernels (one compile each)."""
    import numpy as np
    softmax = load_example(EXAMPLES_DIR / "softmax.py")
    for rows, cols in ((1, 1), (3, 513), (40, 1000)):
        softmax.check(rows, cols, np.float32)


def test_prefix_sum_sizes() -> None:
    import numpy as np
    prefix_sum = load_example(EXAMPLES_DIR / "prefix_sum.py")
    for n in (2, 1023, 2048, 2049, 65_537):
        prefix_sum.check(n, np.float32)


def test_cross_entropy_ignore_index_and_int32() -> None:
    import numpy as np
    ce = load_example(EXAMPLES_DIR / "cross_entropy.py")
    ce.check(5, 1000, "fp32", np.int32, 1024)     # vocabulary smaller than one block
    ce.check(3, 2049, "fp32", np.int32, 1024)     # last block holds one column
