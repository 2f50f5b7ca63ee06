"""tilec: a portable tile-kernel compiler.

Write a kernel with `@tilec.kernel` in the `tilec.language` (imported as `tl`,
names as Triton's `tl.*`), launch it with `kernel[grid](*args)`.  Importing
tilec does not import MLIR: the compiler loads only when a kernel must be
compiled.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os as _os
import sys as _sys
from typing import Any

# An uninstalled checkout (PYTHONPATH=. on a machine without the package, such as
# the GPU machine): reach the top-level dialects/, passes/ and targets/ as
# tilec.dialects etc., the way the installed package's package-dir mapping does.
_ROOT = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if _os.path.isfile(_os.path.join(_ROOT, "targets", "__init__.py")) and \
        not _os.path.isdir(_os.path.join(_os.path.dirname(__file__), "targets")):
    __path__.append(_ROOT)

from tilec.errors import CompilerBugError, TilecError
from tilec.autotune import Config, autotune, heuristics
from tilec.kernel import Kernel, kernel
from tilec.version import __version__

__all__ = ["kernel", "Kernel", "TilecError", "CompilerBugError", "cdiv", "load", "autotune",
           "heuristics", "Config", "__version__"]


class _TorchAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`import tilec.torch` / `tilec.torch`: the module tilec/torch_ops.py, imported on
    first use (it imports torch).  No file in the package is named torch.py, which a
    script run from inside the package folder would import instead of PyTorch."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != "tilec.torch":
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: Any) -> Any:
        return importlib.import_module("tilec.torch_ops")

    def exec_module(self, module: Any) -> None:
        pass


_sys.meta_path.append(_TorchAlias())


def __getattr__(name: str) -> Any:
    if name == "torch":
        return importlib.import_module("tilec.torch")
    raise AttributeError(f"module 'tilec' has no attribute '{name}'")


def load(manifest_path: Any) -> Any:
    """Load a kernel compiled by `tilec compile` (no compiler needed)."""
    from tilec.runtime.loaded import load as _load
    return _load(manifest_path)


def cdiv(x: Any, y: Any) -> Any:
    """Ceiling division: the number of blocks of size y that cover x."""
    return -(-x // y)
