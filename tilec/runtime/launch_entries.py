"""Entries for the C launch fast path (`_launch.c`): NVIDIA and CPU kernels.

`entry_for` turns one launch that the general path has just checked into the
entry a C `Launcher` matches later calls against.  What each check requires
comes from the launch's `Specialization` (tilec/specialization.py): a pointer's
16-byte alignment, an i32's 16-divisibility or being 1, or nothing for a
parameter whose value is not specialized on; the constexpr and launch option
values; the module globals the kernel reads.  How the C code recognises an
argument comes from the launch's own values (the tensor type, dtype and
device; the NumPy array type, buffer format and writability), so a call the C
path accepts is one the general path would have sent to the same compiled
kernel.  Calls it cannot describe get no entry and stay on the Python path.
`native_target(loaded)` says how the C path launches a loaded kernel: a
CUfunction through cuLaunchKernel, or a CPU kernel's packed entry point.
"""
from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from tilec.language import core as tl
from tilec.runtime import native
from tilec.runtime.args import EQUAL_TO_1, is_torch_tensor
from tilec.specialization import LAUNCH_OPTIONS

if TYPE_CHECKING:
    from tilec.specialization import ArgSpec, Specialization

K_CONST, K_TENSOR, K_I32, K_F32, K_BOOL, K_ONE, K_NDARRAY, K_DENSE = 0, 1, 2, 3, 4, 5, 6, 7
ANY_VALUE = 2  # the `aligned` of a check that ignores the value
_POINTER = (ctypes.c_uint64, ctypes.c_void_p)
_SLOT_CTYPES: dict[int, tuple[type, ...]] = {
    K_TENSOR: _POINTER, K_DENSE: _POINTER, K_NDARRAY: _POINTER, K_I32: (ctypes.c_int32,),
    K_ONE: (ctypes.c_int32,), K_F32: (ctypes.c_float,), K_BOOL: (ctypes.c_uint8, ctypes.c_bool)}


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
    cpu_name: bytes = b""          # CPU: the kernel's name (for the crash handler)
    maps: Any = None               # CUDA, TMA kernels: the launcher's `TensorMaps`


def native_target(launcher: Any) -> NativeTarget | None:
    """The C-path description of a loaded kernel's launcher, or None."""
    if getattr(launcher, "cluster_ctas", 1) != 1:
        return None   # n CTAs per program: the Python path multiplies the grid
    packed = getattr(launcher, "packed_address", 0)
    if packed:
        from tilec.runtime.cpu import _PARALLEL_MIN_PROGRAMS
        return NativeTarget(tuple(launcher.arg_ctypes), cpu_fn=packed,
                            cpu_max=_PARALLEL_MIN_PROGRAMS if _threads() > 1 else 2 ** 62,
                            cpu_name=getattr(launcher, "name", b""))
    raw = getattr(launcher, "_raw_launch", None)
    if raw is not None:
        return NativeTarget(tuple(type(s) for s in launcher._slots),
                            function=launcher._function_handle,
                            launch=ctypes.cast(raw, ctypes.c_void_p).value or 0,
                            threads=launcher.threads, shared=launcher.shared,
                            maps=getattr(launcher, "_maps", None))
    return None


def _threads() -> int:
    from tilec.runtime.cpu import num_threads
    return num_threads()


def _aligned(a: ArgSpec, specialized: bool) -> int | None:
    """The `aligned` a check of `a`'s value requires, or None (C cannot check it).

    A specialized parameter selects its compiled kernel by the exact fact (a
    16-divisible value is another specialization than one that is not); one
    that is not (do_not_specialize, every parameter of an ahead-of-time kernel)
    takes any value the fact admits."""
    if specialized:
        return int(a.divisibility == 16)
    return {16: 1, 1: ANY_VALUE}.get(a.divisibility)


def _check(a: ArgSpec, specialized: bool, v: Any, overlap_ok: bool = False
           ) -> tuple[Any, ...] | None:
    """(kind, expect, dtype, is_cuda, aligned) of runtime argument `v` of `a`, or None.
    A tensor must be contiguous (K_DENSE) unless `overlap_ok`."""
    t = type(v)
    if isinstance(a.type, tl.pointer_type):
        aligned = _aligned(a, specialized)
        if aligned is None:
            return None
        if is_torch_tensor(v):
            return K_TENSOR if overlap_ok else K_DENSE, t, v.dtype, v.is_cuda, aligned
        if t.__module__ == "numpy" and getattr(v, "shape", ()) != ():
            ai = getattr(v, "__array_interface__", None)
            try:
                fmt = memoryview(v).format  # what the C path compares (e.g. 'f', 'e', '?')
            except (TypeError, ValueError):
                return None
            if isinstance(ai, dict) and isinstance(ai.get("data"), tuple):
                return K_NDARRAY, t, fmt, bool(ai["data"][1]), aligned
        return None
    short = a.type.short
    if short == "i32" and t is int and -2 ** 31 <= v < 2 ** 31:
        if a.divisibility == EQUAL_TO_1:
            return K_ONE, None, None, None, False
        aligned = _aligned(a, specialized)
        return None if aligned is None else (K_I32, None, None, None, aligned)
    if a.divisibility != 1:  # a fact about a float or bool the C path does not check
        return None
    if short == "fp32" and t is float:
        return K_F32, None, None, None, False
    if short == "i1" and t is bool:
        return K_BOOL, None, None, None, False
    return None


def entry_for(spec: Specialization, order: Sequence[str], args: Sequence[Any],
              kwargs: Mapping[str, Any], native: NativeTarget,
              globals_read: Sequence[tuple[str, Any]],
              overlap_ok: frozenset[str] = frozenset()) -> tuple[Any, ...] | None:
    """The `Launcher.add` argument for this launch of `spec`, or None (no C entry).
    `order` names the kernel's parameters in order (constexprs included);
    `overlap_ok` the tensor parameters whose layout is not checked."""
    slots = native.slot_types
    constexprs = dict(spec.constexprs)
    if not {a.name for a in spec.args} <= set(order):
        return None   # hidden parameters (host descriptors' parts) the C path cannot fill
    runtime = {a.name: (i, a) for i, a in enumerate(spec.args)}
    specialized = spec.specialized or (True,) * len(spec.args)
    checks: list[tuple[Any, ...]] = []
    # A TMA kernel's entry holds its tensor maps, encoded for this launch's
    # values of the parameters the maps read: those must match exactly.
    exact: dict[int, int] = {}
    if native.maps is not None:
        values = _raw_values(spec, order, args, kwargs)
        exact = {r: values[r] for r in native.maps.parameters()}
        if any(v is None for v in exact.values()):
            return None
    for i, name in enumerate(order):
        if i < len(args):
            src: int | str = i
            v = args[i]
        elif name in kwargs:
            src, v = name, kwargs[name]
        elif name in constexprs:
            continue  # its default: fixed, nothing to check
        else:
            return None  # a runtime default: left to the Python path
        if name in constexprs:
            expect = v if isinstance(v, tl.constexpr) else constexprs[name]
            checks.append((src, K_CONST, expect, None, None, False, -1))
            continue
        r, a = runtime[name]
        check = _check(a, specialized[r], v, name in overlap_ok)
        if check is None or r >= len(slots) or slots[r] not in _SLOT_CTYPES[check[0]]:
            return None
        checks.append((src, *check, r, exact[r]) if r in exact else (src, *check, r))
    if len(runtime) != len(slots):
        return None
    for opt in LAUNCH_OPTIONS:
        if opt in kwargs:
            if kwargs[opt] != getattr(spec.options, opt):
                return None
            checks.append((opt, K_CONST, kwargs[opt], None, None, False, -1))
    entry = (len(args), len(kwargs), tuple(checks), tuple(globals_read), native.function,
             native.threads, native.shared, len(slots), native.launch, native.cpu_fn,
             native.cpu_max, native.cpu_name)
    if native.maps is not None:
        return (*entry, native.maps.encoded([exact.get(r, 0) for r in range(len(slots))]))
    return entry


def _raw_values(spec: Specialization, order: Sequence[str], args: Sequence[Any],
                kwargs: Mapping[str, Any]) -> list[Any]:
    """Each runtime parameter's raw value in this launch (a tensor's data
    pointer, an int; None for anything else)."""
    given = dict(zip(order, args))
    given.update({k: v for k, v in kwargs.items() if k in order})
    out: list[Any] = []
    for a in spec.args:
        v: Any = given.get(a.name)
        if is_torch_tensor(v):
            out.append(int(v.data_ptr()))
        elif type(v) is int:
            out.append(v)
        else:
            out.append(None)
    return out


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
