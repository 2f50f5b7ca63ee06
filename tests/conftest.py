"""Fixtures shared by the test modules."""
from __future__ import annotations

from typing import Any

import pytest

import tilec.driver


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
