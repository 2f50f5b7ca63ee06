"""NVIDIA runtime: load cubin/PTX with the CUDA driver API and launch kernels.

Uses `cuda-bindings` (`cuda.bindings.driver`); imports no MLIR.  Launches go
to the current torch CUDA stream when torch is loaded (so they order with torch
work and can be captured in a CUDA graph), else to the default stream.  The
argument block (one ctypes slot per kernel parameter and the `void*[]` that
points at them) is built once per loaded kernel; a launch only stores the new
values and calls `cuLaunchKernel`.
"""
from __future__ import annotations

import ctypes
import sys
import threading
from typing import Any, Sequence

from tilec.errors import TilecError
from tilec.language import core as tl
from tilec.runtime.tensormap import TensorMaps

_CTYPE = {
    "i1": ctypes.c_uint8, "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32,
    "i64": ctypes.c_int64, "u8": ctypes.c_uint8, "u16": ctypes.c_uint16,
    "u32": ctypes.c_uint32, "u64": ctypes.c_uint64, "fp32": ctypes.c_float,
    "fp64": ctypes.c_double,
}


def driver() -> Any:
    """The cuda-bindings driver module, or a TilecError saying how to get it."""
    try:
        from cuda.bindings import driver as cu
    except ImportError:
        try:
            from cuda import cuda as cu  # older cuda-python layout
        except ImportError:
            raise TilecError("launching on NVIDIA GPUs needs the `cuda-bindings` package "
                             "(pip install cuda-bindings)") from None
    return cu


def check(result: Any) -> Any:
    """Unpack a cuda-bindings (err, value...) tuple; raise TilecError on failure."""
    cu = driver()
    err, *rest = result if isinstance(result, tuple) else (result,)
    if int(err) != int(cu.CUresult.CUDA_SUCCESS):
        _, name = cu.cuGetErrorName(err)
        raise TilecError(f"CUDA driver error {name.decode() if name else int(err)}")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else tuple(rest)


def raise_driver_error(code: int) -> None:
    """Raise the TilecError for a failed driver call's CUresult code."""
    check((driver().CUresult(code),))
    raise TilecError(f"CUDA driver error {code}")


def _ensure_context() -> None:
    """Make the device's primary context current (torch does this too)."""
    cu = driver()
    check(cu.cuInit(0))
    err, ctx = cu.cuCtxGetCurrent()
    if int(err) == 0 and int(ctx) != 0:
        return
    dev = check(cu.cuDeviceGet(0))
    ctx = check(cu.cuDevicePrimaryCtxRetain(dev))
    check(cu.cuCtxSetCurrent(ctx))


def device_attributes(names: Sequence[str], device: int = 0) -> dict[str, int]:
    """CUDA driver device attributes by their name without the
    `CU_DEVICE_ATTRIBUTE_` prefix (`MULTIPROCESSOR_COUNT`, ...)."""
    cu = driver()
    check(cu.cuInit(0))
    dev = check(cu.cuDeviceGet(device))
    attr = cu.CUdevice_attribute
    return {n: int(check(cu.cuDeviceGetAttribute(getattr(attr, "CU_DEVICE_ATTRIBUTE_" + n), dev)))
            for n in names}


def device_capability() -> tuple[int, int]:
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        return tuple(torch.cuda.get_device_capability())
    cu = driver()
    check(cu.cuInit(0))
    dev = check(cu.cuDeviceGet(0))
    attr = cu.CUdevice_attribute
    major = check(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
    minor = check(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
    return int(major), int(minor)


def target_for_device() -> str:
    """The tilec target name of the current NVIDIA device."""
    major, _minor = device_capability()
    from tilec.targets import TARGETS, target_for_compute_capability
    target = target_for_compute_capability(major)
    if target is None:
        served = ", ".join(f"{t.name} ({t.compute_capability}.x)" for t in TARGETS.values()
                           if t.compute_capability is not None)
        raise TilecError(f"NVIDIA compute capability {major}.x is not a tilec target "
                         f"({served} are)")
    return target.name


def _stream_getter() -> Any:
    """A cheap function returning the current torch CUDA stream handle (0 without torch)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return lambda: 0
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    device = getattr(torch._C, "_cuda_getDevice", None)
    if raw is not None and device is not None:
        return lambda: raw(device())
    return lambda: int(torch.cuda.current_stream().cuda_stream)


def param_slots(arg_types: Sequence[tl.dtype | tl.pointer_type]) -> list[Any]:
    """One ctypes value per kernel parameter, of the parameter's C type."""
    slots: list[Any] = []
    for t in arg_types:
        if isinstance(t, tl.pointer_type):
            slots.append(ctypes.c_uint64())
        else:
            ct = _CTYPE.get(t.short)
            if ct is None:
                raise TilecError(f"scalar kernel arguments of type {t.short} are not supported "
                                 "on NVIDIA yet")
            slots.append(ct())
    return slots


class CudaKernel:
    """A kernel loaded into the current CUDA context."""

    def __init__(self, image: bytes, name: str, arg_types: Sequence[tl.dtype | tl.pointer_type],
                 threads: int, shared_bytes: int = 0,
                 tensormaps: Sequence[dict[str, Any]] = (), cluster_ctas: int = 1) -> None:
        cu = driver()
        # num_ctas=2 (tile-split-ctas): each program is a cluster of CTAs along
        # x; the kernel's `.reqnctapercluster` makes the driver group them.
        self.cluster_ctas = cluster_ctas
        _ensure_context()
        self._cu = cu
        self.module = check(cu.cuModuleLoadData(image))
        self.function = check(cu.cuModuleGetFunction(self.module, name.encode()))
        self.threads = threads
        self.shared = shared_bytes  # static shared memory is part of the image; this is dynamic
        if shared_bytes > 48 * 1024:  # beyond the default dynamic limit: opt in
            attr = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            check(cu.cuFuncSetAttribute(self.function, attr, shared_bytes))
        slots = param_slots(arg_types)
        self._slots = slots
        # TMA kernels: the tensor maps follow the parameters (runtime/tensormap.py),
        # encoded from each launch's arguments; such kernels take the Python path.
        self._maps = TensorMaps(tensormaps) if tensormaps else None
        extra = self._maps.addresses if self._maps else []
        self._params = (ctypes.c_void_p * max(len(slots) + len(extra), 1))(
            *[ctypes.addressof(s) for s in slots], *extra)
        self._params_addr = ctypes.addressof(self._params)
        self._launch = cu.cuLaunchKernel
        self._stream_type = cu.CUstream
        self._streams: dict[int, Any] = {}
        self._stream_handle = _stream_getter()
        # The hot path calls the driver's cuLaunchKernel through ctypes with
        # fixed argument types: about a microsecond, against several for the
        # generic wrapper.  The wrapper stays as the fallback.
        self._raw_launch = _raw_launcher()
        self._function_handle = int(self.function)
        # Launch arguments that never change, converted to ctypes once.
        self._c_function = ctypes.c_void_p(self._function_handle)
        self._c_threads = ctypes.c_uint(threads)
        self._c_one = ctypes.c_uint(1)
        self._c_shared = ctypes.c_uint(self.shared)
        self._c_params = ctypes.c_void_p(self._params_addr)
        # The argument block is shared: one launch at a time fills it and calls
        # the driver (threads may switch between the two otherwise).
        self._lock = threading.Lock()

    def launch(self, grid: tuple[int, int, int], raw_args: Sequence[Any]) -> None:
        if grid[0] * grid[1] * grid[2] == 0:
            return
        if self.cluster_ctas > 1:
            grid = (grid[0] * self.cluster_ctas, grid[1], grid[2])
        handle = self._stream_handle()
        raw = self._raw_launch
        if raw is not None:
            one = self._c_one
            with self._lock:
                for slot, v in zip(self._slots, raw_args):
                    slot.value = v
                if self._maps is not None:
                    self._maps.fill(raw_args)
                code = raw(self._c_function, grid[0], grid[1], grid[2], self._c_threads, one,
                           one, self._c_shared, handle, self._c_params, None)
            if code != 0:
                check((self._cu.CUresult(code),))
            return
        stream = self._streams.get(handle)
        if stream is None:
            stream = self._streams[handle] = self._stream_type(handle)
        with self._lock:
            for slot, v in zip(self._slots, raw_args):
                slot.value = v
            if self._maps is not None:
                self._maps.fill(raw_args)
            err = self._launch(self.function, grid[0], grid[1], grid[2], self.threads, 1, 1,
                               self.shared, stream, self._params_addr, 0)
        code = err[0] if isinstance(err, tuple) else err
        if int(code) != 0:
            check(err)


_RAW: list[Any] = []


def _raw_launcher() -> Any:
    """libcuda's cuLaunchKernel with ctypes argument types, or None."""
    if not _RAW:
        fn = None
        try:
            # PyDLL keeps the GIL across the call: cuLaunchKernel only queues
            # work, and releasing and retaking the GIL costs more than it does.
            lib = ctypes.PyDLL("libcuda.so.1")
            fn = lib.cuLaunchKernel
            fn.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                           ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                           ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
            fn.restype = ctypes.c_int
        except (OSError, AttributeError):
            fn = None
        _RAW.append(fn)
    return _RAW[0]
