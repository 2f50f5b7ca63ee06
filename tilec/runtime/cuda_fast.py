"""Entries for the C launch fast path (`_launch.c`) of NVIDIA kernels.

`entry_spec` turns one launch that the general path has just checked (its
arguments, where each came from, the loaded CudaKernel) into the entry a C
`Launcher` matches later calls against: the same facts the specialization key
holds (tensor type, dtype, device, 16-byte alignment; i32 range,
16-divisibility and being 1; float; bool; constexpr values; the module globals the kernel
reads), so a call the C path accepts is one the general path would have sent
to the same compiled kernel.  Calls it cannot describe get no entry and stay
on the Python path.
"""
from __future__ import annotations

import ctypes
import sys
from typing import Any, Callable, Mapping, Sequence

from tilec.runtime import native
from tilec.runtime.args import is_torch_tensor

K_CONST, K_TENSOR, K_I32, K_F32, K_BOOL, K_ONE = 0, 1, 2, 3, 4, 5
_SLOT_CTYPE = {K_TENSOR: ctypes.c_uint64, K_I32: ctypes.c_int32, K_F32: ctypes.c_float,
               K_BOOL: ctypes.c_uint8, K_ONE: ctypes.c_int32}
# (name, is_constexpr, annotated, default) per kernel parameter, as in Kernel._plan
Plan = Sequence[tuple[str, bool, bool, Any]]


def _kind(v: Any) -> tuple[int, Any, Any, Any, bool] | None:
    """(kind, expect, dtype, is_cuda, aligned) of a runtime argument, or None."""
    t = type(v)
    if is_torch_tensor(v):
        return K_TENSOR, t, v.dtype, v.is_cuda, v.data_ptr() & 15 == 0
    if t is int:
        if v == 1:  # its own specialization, as in the key (Triton's equal_to_1)
            return K_ONE, None, None, None, False
        return (K_I32, None, None, None, v & 15 == 0) if -2 ** 31 <= v < 2 ** 31 else None
    if t is float:
        return K_F32, None, None, None, False
    if t is bool:
        return K_BOOL, None, None, None, False
    return None


def entry_spec(plan: Plan, args: Sequence[Any], kwargs: Mapping[str, Any],
               options: Sequence[str], cuda_kernel: Any,
               globals_read: Sequence[tuple[str, Any]]) -> tuple[Any, ...] | None:
    """The `Launcher.add` argument for this launch, or None (no C entry)."""
    if getattr(cuda_kernel, "_raw_launch", None) is None:
        return None
    slots = cuda_kernel._slots
    checks: list[tuple[Any, ...]] = []
    runtime = 0
    for i, (name, is_constexpr, annotated, _default) in enumerate(plan):
        if i < len(args):
            src: int | str = i
            v = args[i]
        elif name in kwargs:
            src, v = name, kwargs[name]
        elif is_constexpr:
            continue  # its default: fixed, nothing to check
        else:
            return None  # a runtime default: left to the Python path
        if is_constexpr:
            checks.append((src, K_CONST, v, None, None, False, -1))
            continue
        kind = _kind(v)
        if annotated or kind is None or runtime >= len(slots) or \
                type(slots[runtime]) is not _SLOT_CTYPE[kind[0]]:
            return None
        checks.append((src, *kind, runtime))
        runtime += 1
    if runtime != len(slots):
        return None
    for opt in options:
        if opt in kwargs:
            checks.append((opt, K_CONST, kwargs[opt], None, None, False, -1))
    return (len(args), len(kwargs), tuple(checks), tuple(globals_read),
            cuda_kernel._function_handle, cuda_kernel.threads, cuda_kernel.shared, len(slots))


def static_grid(grid: tuple[Any, ...]) -> tuple[int, int, int] | None:
    """(x, y, z) of a grid of 1-3 plain ints within the launch limits, else None."""
    if not 1 <= len(grid) <= 3 or any(type(d) is not int for d in grid):
        return None
    x, y, z = (*grid, 1, 1)[:3]
    if not (0 <= x < 2 ** 31 and 0 <= y < 65536 and 0 <= z < 65536):
        return None
    return x, y, z


def stream_functions() -> tuple[Callable[..., Any] | None, Callable[..., Any] | None]:
    """(get_device, get_stream): the current torch stream's raw handle is
    get_stream(get_device()); (None, None) without torch (the default stream)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None, None
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    device = getattr(torch._C, "_cuda_getDevice", None)
    if raw is not None and device is not None:
        return device, raw
    return None, lambda: int(torch.cuda.current_stream().cuda_stream)


def make_launcher(grid: tuple[int, int, int], cuda_kernel: Any,
                  fallback: Callable[..., None],
                  on_error: Callable[[int], None], module_globals: dict[str, Any]) -> Any:
    """A C `Launcher` for a static grid, or None where the C path is unavailable."""
    module = native.launch_module()
    raw = getattr(cuda_kernel, "_raw_launch", None)
    if module is None or raw is None:
        return None
    address = ctypes.cast(raw, ctypes.c_void_p).value
    if not address:
        return None
    get_device, get_stream = stream_functions()
    return module.Launcher(grid, address, fallback, on_error, get_device, get_stream,
                           module_globals)
