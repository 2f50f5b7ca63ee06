"""CPU runtime: load a kernel's shared object and run its grid on a thread pool.

The shared object exports `tilec_<name>(args..., g0, g1, g2, start, end)`,
which runs the programs with linear ids [start, end).  ctypes releases the GIL
during the call, so the programs of one launch run in parallel on the
machine's cores (`TILEC_NUM_THREADS` caps the number of threads).  While a
launch runs, the C extension's crash handler knows the kernel's name
(native.running_slot): a fault inside the kernel prints it.  No MLIR is
imported here.
"""
from __future__ import annotations

import ctypes
import math
import os
import shutil
import struct
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

from tilec.language import core as tl

_CTYPE = {
    "i1": ctypes.c_bool, "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32,
    "i64": ctypes.c_int64, "u8": ctypes.c_uint8, "u16": ctypes.c_uint16,
    "u32": ctypes.c_uint32, "u64": ctypes.c_uint64, "fp32": ctypes.c_float,
    "fp64": ctypes.c_double, "fp16": ctypes.c_uint16, "bf16": ctypes.c_uint16,
}


def _fp16_bits(v: float) -> int:
    return int(struct.unpack("<H", struct.pack("<e", v))[0])


def _bf16_bits(v: float) -> int:
    """The bits of `v` rounded to bfloat16 (to nearest even)."""
    if math.isnan(v):
        return 0x7FC0
    try:
        bits = int(struct.unpack("<I", struct.pack("<f", v))[0])
    except OverflowError:  # beyond fp32: infinity
        return 0x7F80 if v > 0 else 0xFF80
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


# Scalar arguments passed as bits (the kernel's entry point takes them as i16).
_TO_BITS = {"fp16": _fp16_bits, "bf16": _bf16_bits}

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
# Launches with fewer programs than this run on the calling thread.
_PARALLEL_MIN_PROGRAMS = 4


def num_threads() -> int:
    env = os.environ.get("TILEC_NUM_THREADS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    return os.cpu_count() or 1


def _get_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=num_threads(), thread_name_prefix="tilec-cpu")
        return _pool


def ctype_for(t: tl.dtype | tl.pointer_type) -> Any:
    if isinstance(t, tl.pointer_type):
        return ctypes.c_void_p
    ct = _CTYPE.get(t.short)
    if ct is None:
        raise TypeError(f"scalar arguments of type {t.short} are not supported on the CPU")
    return ct


def load_library(so_path: str) -> ctypes.CDLL:
    """dlopen a private copy of the shared object at `so_path`.

    The dynamic loader hands back an already loaded library for a path it has
    seen, so after a cache entry is rebuilt at the same path a plain dlopen
    would keep running the old code, and a cached file rewritten in place under
    a live mapping kills the process (SIGBUS).  A private copy, unlinked once
    loaded, has neither problem; where temporary files cannot be mapped
    executable, the cached file is loaded directly.
    """
    try:
        fd, tmp = tempfile.mkstemp(prefix="tilec-", suffix=".so")
    except OSError:
        return ctypes.CDLL(so_path)
    try:
        with os.fdopen(fd, "wb") as f, open(so_path, "rb") as src:
            shutil.copyfileobj(src, f)
        return ctypes.CDLL(tmp)
    except OSError:
        return ctypes.CDLL(so_path)
    finally:
        os.unlink(tmp)


class CpuKernel:
    """A loaded CPU kernel: call `launch(grid, raw_args)`."""

    def __init__(self, so_path: str, name: str, arg_types: Sequence[tl.dtype | tl.pointer_type],
                 cluster_ctas: int = 1):
        self.lib = load_library(so_path)
        # num_ctas=2 (tile-split-ctas): n program instances along x per program.
        self.cluster_ctas = cluster_ctas
        self.fn = getattr(self.lib, f"tilec_{name}")
        # The same grid function taking `void **args` (absent from objects built
        # before it existed): what the C launch path calls.
        try:
            self.packed_address = ctypes.cast(getattr(self.lib, f"tilec_{name}_packed"),
                                              ctypes.c_void_p).value or 0
        except AttributeError:
            self.packed_address = 0
        self.arg_ctypes = [ctype_for(t) for t in arg_types]
        self.fn.argtypes = [ctype_for(t) for t in arg_types] + [
            ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_int64, ctypes.c_int64]
        self.fn.restype = None
        self._to_bits = [(i, _TO_BITS[t.short]) for i, t in enumerate(arg_types)
                         if not isinstance(t, tl.pointer_type) and t.short in _TO_BITS]
        # The kernel's name where the crash handler reads it during a launch.
        from tilec.runtime.native import running_slot
        self.name = name.encode()
        self._name = ctypes.create_string_buffer(self.name)
        self._name_address = ctypes.addressof(self._name)
        self._running = running_slot()

    def launch(self, grid: tuple[int, int, int], raw_args: Sequence[Any]) -> None:
        running = self._running
        if running is None:
            self._launch(grid, raw_args)
            return
        before = running.value
        running.value = self._name_address
        try:
            self._launch(grid, raw_args)
        finally:
            running.value = before

    def _launch(self, grid: tuple[int, int, int], raw_args: Sequence[Any]) -> None:
        g0, g1, g2 = grid
        g0 *= self.cluster_ctas
        total = g0 * g1 * g2
        if total <= 0:
            return
        fn: Callable[..., None] = self.fn
        if self._to_bits:
            raw_args = list(raw_args)
            for i, to_bits in self._to_bits:
                raw_args[i] = to_bits(float(raw_args[i]))
        threads = min(num_threads(), total)
        if threads <= 1 or total < _PARALLEL_MIN_PROGRAMS:
            fn(*raw_args, g0, g1, g2, 0, total)
            return
        # Contiguous chunks, one per thread: neighbouring programs touch
        # neighbouring memory, which keeps each core's stream sequential.
        bounds = [total * i // threads for i in range(threads + 1)]
        pool = _get_pool()
        futures = [pool.submit(fn, *raw_args, g0, g1, g2, bounds[i], bounds[i + 1])
                   for i in range(1, threads)]
        fn(*raw_args, g0, g1, g2, bounds[0], bounds[1])
        for f in futures:
            f.result()
