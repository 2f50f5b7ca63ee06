"""Module-level kernels and process workers for tests that spawn processes.

A spawned process imports this module by name (it is on `sys.path` through the
parent), so its kernels and workers must live at module level here.
"""
from __future__ import annotations

import os
import traceback
from typing import Any

import numpy as np

import tilec
import tilec.language as tl


@tilec.kernel
def scale_add(x_ptr, o_ptr, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) * a + 1.0, mask=m)


def compile_and_run(cache_dir: str, start: Any, results: Any) -> None:
    """Wait for `start`, then launch `scale_add` (compiling it) and report."""
    try:
        os.environ["TILEC_CACHE_DIR"] = cache_dir
        import tilec.driver
        calls = []
        real = tilec.driver.compile_kernel

        def counting(*args: Any, **kwargs: Any) -> Any:
            calls.append(1)
            return real(*args, **kwargs)

        tilec.driver.compile_kernel = counting  # type: ignore[assignment]
        n = 1000
        x = np.arange(n, dtype=np.float32)
        out = np.zeros(n, np.float32)
        start.wait(120)
        scale_add[(tilec.cdiv(n, 128),)](x, out, 2.0, n, BLOCK=128)
        ok = bool((out == x * 2 + 1).all())
        results.put(("ok" if ok else "wrong result", len(calls)))
    except BaseException:
        results.put(("error: " + traceback.format_exc(), -1))
