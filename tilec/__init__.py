"""tilec: a portable tile-kernel compiler.

Write a kernel with `@tilec.kernel` in the `tilec.language` (imported as `tl`,
names as Triton's `tl.*`), launch it with `kernel[grid](*args)`.  Importing
tilec does not import MLIR: the compiler loads only when a kernel must be
compiled.
"""
from __future__ import annotations

import os as _os
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

__all__ = ["kernel", "Kernel", "TilecError", "CompilerBugError", "cdiv", "load", "autotune",
           "heuristics", "Config", "device_info", "DeviceInfo", "__version__"]


def load(manifest_path: Any) -> Any:
    """Load a kernel compiled by `tilec compile` (no compiler needed)."""
    from tilec.runtime.loaded import load as _load
    return _load(manifest_path)


def cdiv(x: Any, y: Any) -> Any:
    """Ceiling division: the number of blocks of size y that cover x."""
    return -(-x // y)
