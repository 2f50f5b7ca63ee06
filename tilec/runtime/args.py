"""Launch arguments: classify, check and convert (no MLIR import).

`classify(value)` turns one launch argument into its specialization: the tilec
type (`*fp32`, `i32`, `fp32`, ...), whether it is 16-aligned/divisible, and the
raw value passed to the machine code (an address for arrays).  Anything that is
not an array (NumPy, torch, or an object with `__array_interface__` /
`__cuda_array_interface__`), a Python/NumPy scalar, is rejected.
"""
from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass
from typing import Any

from tilec.errors import TilecError
from tilec.language import core as tl

_NP_TO_TL = {
    "bool": tl.int1, "int8": tl.int8, "int16": tl.int16, "int32": tl.int32, "int64": tl.int64,
    "uint8": tl.uint8, "uint16": tl.uint16, "uint32": tl.uint32, "uint64": tl.uint64,
    "float16": tl.float16, "float32": tl.float32, "float64": tl.float64,
    "bfloat16": tl.bfloat16,
}
_TORCH_TO_TL = {
    "torch.bool": tl.int1, "torch.int8": tl.int8, "torch.int16": tl.int16,
    "torch.int32": tl.int32, "torch.int64": tl.int64, "torch.uint8": tl.uint8,
    "torch.uint16": tl.uint16, "torch.uint32": tl.uint32, "torch.uint64": tl.uint64,
    "torch.float16": tl.float16, "torch.bfloat16": tl.bfloat16, "torch.float32": tl.float32,
    "torch.float64": tl.float64,
    "torch.float8_e4m3fn": tl.float8e4nv, "torch.float8_e5m2": tl.float8e5,
}


@dataclass(frozen=True)
class ArgInfo:
    """What a launch argument specializes on, and what is passed to the kernel."""

    type: tl.dtype | tl.pointer_type
    divisible16: bool
    raw: int | float
    device: str = "cpu"        # 'cpu' or 'cuda' for arrays
    writable: bool = True
    one: bool = False          # an integer equal to 1: compiled in as the constant 1
    overlapping: bool = False  # a tensor whose elements may share memory (a stride 0, ...)
    zero_dim: bool = False     # a 0-d tensor


# The placeholder of a runtime parameter given None (Triton's constexpr None;
# tilec/specialization.py): an i64 0 the kernel never reads.
ABSENT = ArgInfo(tl.int64, True, 0)


class TensorWithoutStorage(TypeError):
    """A meta, fake or functional tensor: it has no memory a kernel could use."""


# Signature divisibility value of an integer parameter specialized to the value 1
# (Triton's equal_to_1): spelled `i32=1`, compiled in as the constant 1.
EQUAL_TO_1 = -1


def _torch_info(v: Any) -> ArgInfo:
    dt = _TORCH_TO_TL.get(str(v.dtype))
    if dt is None:
        raise TypeError(f"torch dtype {v.dtype} is not supported by tilec")
    if v.device.type == "meta":
        raise TensorWithoutStorage("a meta tensor")
    fake = sys.modules.get("torch._subclasses.fake_tensor")
    if fake is not None and type(v).__name__ != "Tensor" and fake.is_fake(v):
        raise TensorWithoutStorage(f"a {type(v).__name__} (a tensor without memory)")
    try:
        ptr = int(v.data_ptr())
    except RuntimeError:  # FunctionalTensor & co: "Cannot access data pointer"
        raise TensorWithoutStorage(f"a {type(v).__name__} (a tensor without memory)") from None
    if ptr == 0 and v.numel() > 0:
        raise TensorWithoutStorage(f"a {type(v).__name__} without memory (address 0)")
    overlapping = not v.is_contiguous() and may_overlap(tuple(v.shape), tuple(v.stride()))
    return ArgInfo(tl.pointer_type(dt), ptr % 16 == 0, ptr, v.device.type,
                   overlapping=overlapping, zero_dim=v.dim() == 0)


def may_overlap(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether two elements of an array of this shape and these strides (in
    elements) may share memory: dimensions of size 1 aside, sorted by stride,
    each stride must step past everything the smaller ones reach (a stride 0,
    as of an `expand`ed tensor, never does).  Exotic non-overlapping layouts
    that interleave dimensions count as overlapping."""
    if any(n == 0 for n in shape):
        return False
    reach = 0
    for stride, n in sorted((abs(st), n) for n, st in zip(shape, strides) if n > 1):
        if stride <= reach:
            return True
        reach += stride * (n - 1)
    return False


def classify(v: Any) -> ArgInfo:
    """Classify one runtime argument; TypeError with a plain reason otherwise."""
    if isinstance(v, bool):
        return ArgInfo(tl.int1, False, int(v))
    if isinstance(v, int):
        if -(2 ** 31) <= v < 2 ** 31:
            return ArgInfo(tl.int32, v % 16 == 0, v, one=v == 1)
        if -(2 ** 63) <= v < 2 ** 63:
            return ArgInfo(tl.int64, v % 16 == 0, v)
        if v < 2 ** 64:
            return ArgInfo(tl.uint64, v % 16 == 0, v)
        raise TypeError(f"the integer {v} does not fit in 64 bits")
    if isinstance(v, float):
        return ArgInfo(tl.float32, False, v)
    mod = type(v).__module__
    if mod == "torch" and hasattr(v, "data_ptr"):
        return _torch_info(v)
    if type(v).__name__ == "TensorWrapper" and mod == "tilec.compat":  # triton.reinterpret
        base = classify(v.base)
        return ArgInfo(tl.pointer_type(v.dtype), base.divisible16, base.raw, base.device, base.writable,
                       overlapping=base.overlapping, zero_dim=base.zero_dim)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(v, torch.Tensor):  # subclasses: Parameter, FakeTensor
        return _torch_info(v)
    ai = getattr(v, "__array_interface__", None)
    if ai is not None:
        shape = ai.get("shape", ())
        if shape == () and mod == "numpy":  # a NumPy scalar
            return _numpy_scalar(v)
        typestr = getattr(v, "dtype", None)
        name = str(typestr) if typestr is not None else _typestr_name(ai["typestr"])
        dt = _NP_TO_TL.get(name)
        if dt is None:
            raise TypeError(f"arrays of dtype {name} are not supported by tilec")
        ptr, readonly = ai["data"]
        return ArgInfo(tl.pointer_type(dt), ptr % 16 == 0, ptr, "cpu", not readonly)
    if mod == "numpy":
        return _numpy_scalar(v)
    if hasattr(v, "__dlpack__"):
        return _dlpack_info(v)
    cai = getattr(v, "__cuda_array_interface__", None)
    if cai is not None:
        ptr = cai["data"][0]
        name = getattr(v, "dtype", None) or _typestr_name(cai["typestr"])
        dt = _NP_TO_TL.get(str(name))
        if dt is None:
            raise TypeError(f"arrays of dtype {name} are not supported by tilec")
        return ArgInfo(tl.pointer_type(dt), ptr % 16 == 0, ptr, "cuda")
    raise TypeError(f"a {type(v).__name__} cannot be passed to a kernel; pass NumPy arrays, "
                    "torch tensors, ints, floats or bools")


def _typestr_name(typestr: str) -> str:
    """The dtype name ('float32') of an array-interface typestr ('<f4')."""
    import numpy as np
    try:
        return np.dtype(typestr).name
    except TypeError:
        return typestr


def _numpy_scalar(v: Any) -> ArgInfo:
    name = str(v.dtype)
    dt = _NP_TO_TL.get(name)
    if dt is None:
        raise TypeError(f"NumPy scalars of dtype {name} are not supported")
    raw: int | float = float(v) if dt.is_floating() else int(v)
    one = dt.kind == "int" and dt.bits == 32 and int(v) == 1
    return ArgInfo(dt, (not dt.is_floating()) and int(v) % 16 == 0, raw, one=one)


def check_declared(name: str, declared: tl.dtype | tl.pointer_type, got: ArgInfo) -> ArgInfo:
    """Check an argument against its annotation; return the info to specialize on."""
    if isinstance(declared, tl.pointer_type):
        if not isinstance(got.type, tl.pointer_type):
            raise TilecError(f"argument '{name}' is declared {declared.short} but got a scalar "
                             f"of type {got.type.short}")
        if got.type.element_ty is not declared.element_ty:
            raise TilecError(f"argument '{name}' is declared {declared.short} but got an array of "
                             f"{got.type.element_ty.name}")
        return got
    if isinstance(got.type, tl.pointer_type):
        raise TilecError(f"argument '{name}' is declared {declared.short} but got an array")
    if declared.is_floating():
        return ArgInfo(declared, False, float(got.raw))
    if got.type.is_floating():
        raise TilecError(f"argument '{name}' is declared {declared.short} but got a float")
    v = int(got.raw)
    lo, hi = ((0, 2 ** declared.bits) if declared.kind in ("uint", "bool")
              else (-(2 ** (declared.bits - 1)), 2 ** (declared.bits - 1)))
    if not lo <= v < hi:
        raise TilecError(f"argument '{name}' is declared {declared.short} but {v} does not fit")
    return ArgInfo(declared, v % 16 == 0, v, one=v == 1 and declared.kind != "bool")


_TENSOR_TYPES: set[type] = set()


def is_torch_tensor(v: Any) -> bool:
    """Whether `v` is a torch tensor (its type is remembered for the fast path)."""
    t = type(v)
    if t in _TENSOR_TYPES:
        return True
    if t.__module__ == "torch" and callable(getattr(v, "data_ptr", None)):
        _TENSOR_TYPES.add(t)
        return True
    return False


def _layout_ok(v: Any) -> bool:
    """A tensor whose elements do not share memory (contiguous: one C call)."""
    return bool(v.is_contiguous()) or not may_overlap(tuple(v.shape), tuple(v.stride()))


def fast_arg(v: Any, check_layout: bool = True) -> tuple[Any, Any] | None:
    """(key, raw value) for the launch fast path, or None for the general path.

    Two arguments with equal keys specialize identically (same tilec type,
    16-divisibility, device and writability), so a cached kernel can be
    launched without building `ArgInfo`s.  A tensor with no memory (address 0:
    a meta or an empty tensor) and, unless `check_layout` is False (a
    parameter declared `allow_overlap`), one whose elements may share memory
    take the general path, which checks them.
    """
    t = type(v)
    if t in _TENSOR_TYPES:  # torch.Tensor (and subclasses seen before): the common case
        p = v.data_ptr()
        if not p or check_layout and not _layout_ok(v):
            return None
        return (v.dtype, p & 15 == 0, v.is_cuda), p
    if t is int:
        if -2147483648 <= v <= 2147483647:
            return ("i32", v & 15 == 0, v == 1), v
        return None
    if t is float:
        return ("fp32",), v
    if t is bool:
        return ("i1",), int(v)
    if is_torch_tensor(v):
        return fast_arg(v, check_layout)
    ai = getattr(v, "__array_interface__", None)
    if ai is not None and t.__module__ == "numpy" and ai.get("shape"):
        p, readonly = ai["data"]
        return (v.dtype, p & 15 == 0, readonly), p
    return None


def fast_arg_plain(v: Any, check_layout: bool = True) -> tuple[Any, Any] | None:
    """`fast_arg` for a parameter that is not specialized on its value: the key
    keeps the type (and device / writability of arrays), not divisibility,
    alignment or being 1."""
    fk = fast_arg(v, check_layout)
    if fk is None:
        return None
    key, raw = fk
    if key[0] == "i32":
        return ("i32",), raw
    if len(key) == 3:  # an array: (dtype, aligned, device or read-only)
        return (key[0], key[2]), raw
    return fk


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("byte_offset", ctypes.c_uint64)]


# DLPack type codes (kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLBool) and device types.
_DL_DTYPES = {(0, 8): tl.int8, (0, 16): tl.int16, (0, 32): tl.int32, (0, 64): tl.int64,
              (1, 8): tl.uint8, (1, 16): tl.uint16, (1, 32): tl.uint32, (1, 64): tl.uint64,
              (2, 16): tl.float16, (2, 32): tl.float32, (2, 64): tl.float64,
              (4, 16): tl.bfloat16, (6, 8): tl.int1}
_DL_DEVICES = {1: "cpu", 2: "cuda", 3: "cpu"}  # kDLCPU, kDLCUDA, kDLCUDAHost


def _dlpack_info(v: Any) -> ArgInfo:
    """Read a `__dlpack__` capsule without consuming it (the producer keeps ownership)."""
    capsule = v.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    ptr = get(capsule, b"dltensor")
    t = _DLTensor.from_address(ptr)  # DLManagedTensor starts with its DLTensor
    if t.dtype.lanes != 1:
        raise TypeError("vector-typed DLPack tensors are not supported")
    dt = _DL_DTYPES.get((t.dtype.code, t.dtype.bits))
    if dt is None:
        raise TypeError(f"DLPack dtype (code {t.dtype.code}, {t.dtype.bits} bits) is not "
                        "supported by tilec")
    device = _DL_DEVICES.get(t.device.device_type)
    if device is None:
        raise TypeError(f"DLPack device type {t.device.device_type} is not supported")
    addr = int(t.data or 0) + int(t.byte_offset)
    return ArgInfo(tl.pointer_type(dt), addr % 16 == 0, addr, device)
