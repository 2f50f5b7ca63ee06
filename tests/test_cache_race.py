"""Two processes that compile the same kernel into one cache at the same moment
both get correct results, and the cache ends with one complete entry.

The test command runs pytest in two worker processes that share one
TILEC_CACHE_DIR, so this race happens there all the time.  Here it is forced:
the launch path's per-entry build lock is switched off in the workers and both
wait at a barrier right before `DiskCache.put`, so both compile and both store
the same key at once (the first writer wins, tilec/cache.py).  A third process
then launches from the cache without compiling.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import pathlib
import time
import traceback
from typing import Any

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.cache import DiskCache
from processes import run_workers

N = 1000


@tilec.kernel
def race_axpb(x_ptr, o_ptr, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) * a + 1.0, mask=m)


def _valid_entries(root: pathlib.Path) -> int:
    """How many entries under `root` pass `DiskCache.get`'s size/SHA-256 checks."""
    cache = DiskCache(root)
    return sum(cache.get(d.name) is not None for d in _entries(root))


def _worker(mode: str, cache_dir: str, barrier: Any, index: int, results: Any) -> None:
    """Compile `race_axpb` ("launch": through a launch, "compile": Kernel.compile)
    and check it; with a barrier, meet the other worker right before storing
    (the second one `index` * 50 ms later, so its store overlaps the first one's
    store and what follows it).  Then, while the other may still be storing,
    the one entry must stay valid (a valid entry is never replaced)."""
    try:
        os.environ["TILEC_CACHE_DIR"] = cache_dir
        import tilec.driver
        calls: list[int] = []
        real_compile = tilec.driver.compile_kernel

        def counting(*args: Any, **kwargs: Any) -> Any:
            calls.append(1)
            return real_compile(*args, **kwargs)

        tilec.driver.compile_kernel = counting  # type: ignore[assignment]
        if barrier is not None:
            real_put = DiskCache.put

            def put_together(self: DiskCache, *args: Any, **kwargs: Any) -> Any:
                barrier.wait(300)
                time.sleep(0.05 * index)
                return real_put(self, *args, **kwargs)

            DiskCache.put = put_together  # type: ignore[method-assign]
            DiskCache.build_lock = (  # type: ignore[method-assign]
                lambda self, key: contextlib.nullcontext())
        x = np.arange(N, dtype=np.float32)
        if mode == "compile":
            ck = race_axpb.compile(target="cpu", signature="*fp32,*fp32,fp32,i32",
                                   constexprs={"BLOCK": 128})
            status = "ok" if ck.asm.get("so") else "no shared object"
        else:
            out = np.zeros(N, np.float32)
            race_axpb[(tilec.cdiv(N, 128),)](x, out, 3.0, N, BLOCK=128)
            status = "ok" if (out == x * 3 + 1).all() else f"wrong result {out[:8]}"
        for _ in range(10):
            valid = _valid_entries(pathlib.Path(cache_dir))
            if valid != 1:
                status = f"{valid} valid cache entries right after storing"
            time.sleep(0.05)
        results.put((status, len(calls)))
    except BaseException:
        results.put(("error: " + traceback.format_exc(), -1))


def _run(mode: str, cache_dir: pathlib.Path, n: int, together: bool) -> list[tuple[str, int]]:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(n) if together else None
    results = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(mode, str(cache_dir), barrier, i, results))
             for i in range(n)]
    return run_workers(procs, results)


def _entries(root: pathlib.Path) -> list[pathlib.Path]:
    """The entry directories (not another writer's hidden .tmp-/.old- ones)."""
    return [p.parent for p in root.glob("*/*/manifest.json")
            if not p.parent.name.startswith(".")]


def _hidden(root: pathlib.Path) -> list[pathlib.Path]:
    return [p for shard in root.iterdir() if shard.is_dir() and shard.name != ".locks"
            for p in shard.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("mode", ["launch", "compile"])
def test_two_processes_store_the_same_kernel_at_once(mode: str, tmp_path: pathlib.Path) -> None:
    cache_dir = tmp_path / "cache"
    outcomes = _run(mode, cache_dir, 2, together=True)
    assert outcomes == [("ok", 1), ("ok", 1)], outcomes     # both compiled, both correct
    (entry_dir,) = _entries(cache_dir)                      # one entry: the first writer's
    assert _hidden(cache_dir) == []                         # no half-written leftovers
    key = entry_dir.name
    entry = DiskCache(cache_dir).get(key)
    assert entry is not None, "the surviving entry fails its size/SHA-256 check"
    assert entry.read("kernel.so")[:4] == b"\x7fELF"
    # A later process finds the complete entry: no compile, correct result.
    assert _run(mode, cache_dir, 1, together=False) == [("ok", 0)]
    assert _entries(cache_dir) == [entry_dir]
