"""Kernel ids for traced launches: the `tilec::launch` operator's key names its
kernel as `<module>.<qualname>` (`#2`, ... for a second live kernel of that name),
so an exported program finds it again in a process that imports the same module."""
from __future__ import annotations

import weakref
from typing import Any

from tilec.errors import TilecError

# Kernel ids for traced launches (the `tilec::launch` key names its kernel by id).
_KERNELS: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()


def registered_kernel(kernel_id: str) -> Any:
    """The kernel a traced launch names."""
    k = _KERNELS.get(kernel_id)
    if k is None:
        raise TilecError(f"no tilec kernel '{kernel_id}' is defined in this process (a traced "
                         "launch names its kernel by module and name: import the module that "
                         "defines it before running the compiled or exported program)")
    return k


def register(kernel: Any) -> str:
    base = f"{kernel.fn.__module__}.{kernel.fn.__qualname__}"
    name, n = base, 1
    while _KERNELS.get(name) is not None:
        n += 1
        name = f"{base}#{n}"
    _KERNELS[name] = kernel
    return name
