"""Test helper: run spawned worker processes and collect what they report."""
from __future__ import annotations

from typing import Any


def run_workers(procs: list[Any], results: Any, timeout: float = 300,
                before_get: Any = None) -> list[Any]:
    """Start `procs`, call `before_get` (e.g. an Event's `set`), take one item
    per process from the `results` queue, join them and kill any left alive;
    the items in arrival order.  Every process must exit with status 0."""
    for p in procs:
        p.start()
    try:
        if before_get is not None:
            before_get()
        outcomes = [results.get(timeout=timeout) for _ in procs]
        for p in procs:
            p.join(60)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
    assert [p.exitcode for p in procs] == [0] * len(procs), outcomes
    return outcomes
