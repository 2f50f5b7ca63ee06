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
from tilec.device import DeviceInfo, device_info
from tilec.kernel import Kernel, kernel
from tilec.version import __version__
from tilec import compat as _compat
from tilec import language  # noqa: F401  (tilec.language, Triton's triton.language)
from tilec.runtime import driver as _driver  # noqa: F401  (tilec.runtime.driver.active)

# Triton's names (`import tilec as triton`): the decorator `jit` (the name of the
# API-boundary module tilec/jit.py too, which stays importable as a module),
# next_power_of_2, cdiv, OutOfResources; tilec.testing is imported on first use.
jit = _compat.jit
next_power_of_2 = _compat.next_power_of_2
cdiv = _compat.cdiv
OutOfResources = _compat.OutOfResources
set_allocator = _compat.set_allocator
reinterpret = _compat.reinterpret
TensorWrapper = _compat.TensorWrapper
# Triton's exception names: every user mistake is a TilecError.
TritonError = TilecError
CompilationError = TilecError

__all__ = ["kernel", "jit", "Kernel", "TilecError", "CompilerBugError", "cdiv", "load", "autotune",
           "heuristics", "Config", "next_power_of_2", "OutOfResources", "set_allocator", "device_info",
           "reinterpret", "TensorWrapper", "TritonError", "CompilationError",
           "DeviceInfo", "__version__"]


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


def load(manifest_path: Any) -> Any:
    """Load a kernel compiled by `tilec compile` (no compiler needed)."""
    from tilec.runtime.loaded import load as _load
    return _load(manifest_path)


def __getattr__(name: str) -> Any:
    """`tilec.torch` and `tilec.testing`, imported on first use."""
    if name in ("torch", "testing"):
        return importlib.import_module(f"tilec.{name}")
    raise AttributeError(f"module 'tilec' has no attribute '{name}'")
