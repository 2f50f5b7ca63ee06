"""Fixtures shared by the test modules; the sampled sweeps (tests/sweeps.py)
and the order the test command starts the modules in."""
from __future__ import annotations

from typing import Any

import pytest

import sweeps
import tilec.driver

# Modules whose tests take the longest (measured on the 2-core dev machine,
# `--durations=0`), slowest first: they start first, so that neither
# pytest-xdist worker is left running one of them while the other is idle at
# the end of the run.  The rest keep pytest's order.  A name that no longer
# exists is ignored.
SLOW_MODULES = [
    "test_fuzz.py", "test_math_table.py", "test_cpu_bf16.py", "test_docs_pytorch.py",
    "test_reductions.py", "test_golden.py", "test_targets.py", "test_examples.py",
    "test_sort.py", "test_amd_lds_pipeline.py", "test_gpu_reductions.py",
    "test_language.py", "test_torch_compile.py", "test_cpu_narrow_masks.py",
    "test_torch_distributed.py", "test_stress_cpu.py",
]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "sample(every): the test command runs a deterministic sample of this "
        "parametrized sweep (about 1 case in `every`, each parameter value at least once); "
        "TILEC_TEST_FULL=1 runs all of it (tests/sweeps.py)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    dropped = sweeps.deselect(items, config.args)
    if dropped:
        gone = {id(it) for it in dropped}
        config.hook.pytest_deselected(items=dropped)
        items[:] = [it for it in items if id(it) not in gone]
    rank = {name: i for i, name in enumerate(SLOW_MODULES)}
    items.sort(key=lambda it: rank.get(it.path.name, len(rank)))   # stable: modules stay whole


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Count (by kernel name) the compilations of launch specializations."""
    calls: list[str] = []
    real = tilec.driver.compile_kernel

    def counting(kernel: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(kernel.name)
        return real(kernel, *args, **kwargs)

    monkeypatch.setattr(tilec.driver, "compile_kernel", counting)
    return calls
