"""Progress lines on stderr for long work: compiles over a second, autotuning.

One line per step, for a person watching a terminal: on when stderr is a TTY,
`TILEC_PROGRESS=0` turns it off, `TILEC_PROGRESS=1` on (also without a TTY).
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from typing import Iterator

_SLOW_COMPILE_S = 1.0


def enabled() -> bool:
    setting = os.environ.get("TILEC_PROGRESS", "")
    if setting in ("0", "1"):
        return setting == "1"
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def line(text: str) -> None:
    if enabled():
        print(f"tilec: {text}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def compiling(kernel: str, target: str) -> Iterator[None]:
    """Announce a compile still running after a second, and its time when it ends."""
    if not enabled():
        yield
        return
    t0 = time.perf_counter()
    timer = threading.Timer(_SLOW_COMPILE_S, line, (f"compiling '{kernel}' for {target} ...",))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        took = time.perf_counter() - t0
        if took >= _SLOW_COMPILE_S:
            line(f"compiled '{kernel}' for {target} in {took:.1f} s")


def autotune_step(kernel: str, i: int, n: int, config: str) -> None:
    """One line per config timed, when there are several to time."""
    if n > 1:
        line(f"autotuning '{kernel}': config {i + 1}/{n} {config}")
