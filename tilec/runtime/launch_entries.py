"""Entries for the C launch fast path (`_launch.c`): NVIDIA and CPU kernels.

`entry_spec` turns one launch that the general path has just checked (its
arguments, where each came from, the loaded kernel) into the entry a C
`Launcher` matches later calls against: the same facts the specialization key
holds (tensor type, dtype, device, 16-byte alignment; NumPy array dtype,
writability and alignment; i32 range, 16-divisibility and being 1; float;
bool; constexpr values; the module globals the kernel reads), so a call the C
path accepts is one the general path would have sent to the same compiled
kernel.  Calls it cannot describe get no entry and stay on the Python path.
`native_target(loaded)` says how the C path launches a loaded kernel: a
CUfunction through cuLaunchKernel, or a CPU kernel's packed entry point.
"""
from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from tilec.runtime import native
from tilec.runtime.args import is_torch_tensor

K_CONST, K_TENSOR, K_I32, K_F32, K_BOOL, K_ONE, K_NDARRAY = 0, 1, 2, 3, 4, 5, 6
_POINTER = (ctypes.c_uint64, ctypes.c_void_p)
_SLOT_CTYPES: dict[int, tuple[type, ...]] = {
    K_TENSOR: _POINTER, K_NDARRAY: _POINTER, K_I32: (ctypes.c_int32,),
    K_ONE: (ctypes.c_int32,), K_F32: (ctypes.c_float,), K_BOOL: (ctypes.c_uint8, ctypes.c_bool)}
# (name, is_constexpr, annotated, default) per kernel parameter, as in Kernel._plan
Plan = Sequence[tuple[str, bool, bool, Any]]


@dataclass(frozen=True)
class NativeTarget:
    """How the C path launches one loaded kernel."""

    slot_types: tuple[type, ...]   # the C type of each kernel parameter
    function: int = 0              # CUDA: the CUfunction
    launch: int = 0                # CUDA: address of cuLaunchKernel
    threads: int = 0
    shared: int = 0
    cpu_fn: int = 0                # CPU: address of tilec_<name>_packed
    cpu_max: int = 0               # CPU: grids with fewer programs run on the caller's thread


def native_target(launcher: Any) -> NativeTarget | None:
    """The C-path description of a loaded kernel's launcher, or None."""
    packed = getattr(launcher, "packed_address", 0)
    if packed:
        from tilec.runtime.cpu import _PARALLEL_MIN_PROGRAMS
        return NativeTarget(tuple(launcher.arg_ctypes), cpu_fn=packed,
                            cpu_max=_PARALLEL_MIN_PROGRAMS if _threads() > 1 else 2 ** 62)
    raw = getattr(launcher, "_raw_launch", None)
    if raw is not None:
        return NativeTarget(tuple(type(s) for s in launcher._slots),
                            function=launcher._function_handle,
                            launch=ctypes.cast(raw, ctypes.c_void_p).value or 0,
                            threads=launcher.threads, shared=launcher.shared)
    return None


def _threads() -> int:
    from tilec.runtime.cpu import num_threads
    return num_threads()


def _kind(v: Any) -> tuple[int, Any, Any, Any, int] | None:
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
    if t.__module__ == "numpy" and getattr(v, "shape", ()) != ():
        ai = getattr(v, "__array_interface__", None)
        try:
            fmt = memoryview(v).format  # what the C path compares (e.g. 'f', 'e', '?')
        except (TypeError, ValueError):
            return None
        if isinstance(ai, dict) and isinstance(ai.get("data"), tuple):
            ptr, readonly = ai["data"]
            return K_NDARRAY, t, fmt, bool(readonly), ptr & 15 == 0
    return None


ANY_VALUE = 2  # the `aligned` of a check that ignores the value (do_not_specialize)


def entry_spec(plan: Plan, args: Sequence[Any], kwargs: Mapping[str, Any],
               options: Sequence[str], native: NativeTarget,
               globals_read: Sequence[tuple[str, Any]],
               no_spec: frozenset[str] = frozenset()) -> tuple[Any, ...] | None:
    """The `Launcher.add` argument for this launch, or None (no C entry).
    Parameters in `no_spec` are matched on their type only."""
    slots = native.slot_types
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
                slots[runtime] not in _SLOT_CTYPES[kind[0]]:
            return None
        check: tuple[Any, ...] = kind
        if name in no_spec and kind[0] in (K_I32, K_ONE, K_TENSOR, K_NDARRAY):
            check = (K_I32 if kind[0] == K_ONE else kind[0], *kind[1:4], ANY_VALUE)
        checks.append((src, *check, runtime))
        runtime += 1
    if runtime != len(slots):
        return None
    for opt in options:
        if opt in kwargs:
            checks.append((opt, K_CONST, kwargs[opt], None, None, False, -1))
    return (len(args), len(kwargs), tuple(checks), tuple(globals_read), native.function,
            native.threads, native.shared, len(slots), native.launch, native.cpu_fn,
            native.cpu_max)


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


def make_launcher(grid: tuple[int, int, int], fallback: Callable[..., None],
                  on_error: Callable[[int], None], module_globals: dict[str, Any]) -> Any:
    """A C `Launcher` for a static grid, or None where the C path is unavailable."""
    module = native.launch_module()
    if module is None:
        return None
    get_device, get_stream = stream_functions()
    return module.Launcher(grid, fallback, on_error, get_device, get_stream, module_globals)
