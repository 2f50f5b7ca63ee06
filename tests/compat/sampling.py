"""The deterministic sample of a large case list that the normal test command
runs; `TILEC_COMPAT_FULL=1` runs every case (tests/compat/SUMMARY.md)."""
from __future__ import annotations

import os
from typing import Sequence, TypeVar

T = TypeVar("T")


def sample(cases: Sequence[T], every: int) -> list[T]:
    """Every `every`-th case (and the first and last), or all with TILEC_COMPAT_FULL=1."""
    if os.environ.get("TILEC_COMPAT_FULL") == "1" or every <= 1:
        return list(cases)
    picked = [c for i, c in enumerate(cases) if i % every == 0]
    return picked + ([cases[-1]] if cases and cases[-1] not in picked else [])
