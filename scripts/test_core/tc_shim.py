"""What Triton's test_core imports from `triton._internal_testing`, written for
tilec's CPU target in interpreter mode (the test module is Triton's; this file
is the project's).  Only the names test_core uses are provided: dtype-name
lists, the target predicates (all false: the CPU is neither CUDA nor HIP), and
the NumPy/torch conversion helpers with the contracts test_core relies on
(seeded RandomState(17) draws, never a zero integer, uint arrays passed as
reinterpreted signed torch tensors)."""
import os
from typing import Optional

import numpy as np
import torch
import triton
import triton.language as tl
from numpy.random import RandomState

_BITS = (8, 16, 32, 64)
int_dtypes = [f"int{b}" for b in _BITS]
uint_dtypes = [f"uint{b}" for b in _BITS]
integral_dtypes = int_dtypes + uint_dtypes
float_dtypes = ["float16", "float32", "float64"]
float_dtypes_with_bfloat16 = float_dtypes + ["bfloat16"]
dtypes = integral_dtypes + float_dtypes
dtypes_with_bfloat16 = dtypes + ["bfloat16"]
torch_float8_dtypes = ["float8_e4m3fn", "float8_e5m2"]
torch_dtypes = ["bool"] + int_dtypes + ["uint8"] + float_dtypes + ["bfloat16"]


def is_interpreter() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def _never(*_args, **_kwargs) -> bool:
    return False


is_cuda = is_hopper = is_hip = is_xpu = _never
is_hip_cdna = is_hip_cdna2 = is_hip_cdna3 = is_hip_cdna4 = _never


def get_arch() -> str:
    return ""


def _random_ints(rs, shape, name, low, high):
    info = np.iinfo(name)
    lo = info.min if low is None else max(low, info.min)
    hi = info.max if high is None else min(high, info.max)
    out = rs.randint(lo, hi, shape, dtype=np.dtype(name))
    out[out == 0] = 1                   # division tests must never see a zero
    return out


def numpy_random(shape, dtype_str, rs: Optional[RandomState] = None, low=None, high=None):
    """Seeded test data of `dtype_str` (the draw order matches what test_core expects)."""
    shape = (shape,) if isinstance(shape, int) else shape
    rs = RandomState(seed=17) if rs is None else rs
    if dtype_str in integral_dtypes:
        return _random_ints(rs, shape, dtype_str, low, high)
    if dtype_str and "float8" in dtype_str:
        return rs.randint(20, 40, shape, dtype=np.int8)     # raw fp8 bit patterns
    if dtype_str in float_dtypes:
        return rs.normal(0, 1, shape).astype(dtype_str)
    if dtype_str == "bfloat16":                             # fp32 values exact in bf16
        bits = rs.normal(0, 1, shape).astype(np.float32).view(np.uint32)
        return (bits & np.uint32(0xFFFF0000)).view(np.float32)
    if dtype_str in ("bool", "int1", "bool_"):
        return rs.normal(0, 1, shape) > 0.0
    raise RuntimeError(f"numpy_random: unknown dtype {dtype_str!r}")


def to_triton(x, device, dst_type=None):
    """A torch tensor for NumPy array `x`; unsigned data travels as its signed
    twin reinterpreted as the tl uint dtype (torch has no uint16/32/64 math)."""
    name = x.dtype.name
    if name in uint_dtypes:
        as_signed = torch.tensor(x.astype(np.dtype(name[1:])), device=device)
        return triton.reinterpret(as_signed, getattr(tl, name))
    if dst_type and "float8" in dst_type:
        return triton.reinterpret(torch.tensor(x, device=device), getattr(tl, dst_type))
    t = torch.tensor(x, device=device)
    return t.bfloat16() if (name == "float32" and dst_type == "bfloat16") else t


_SHORT = {"bool": "int1", "float8_e4m3fn": "float8e4nv", "float8_e5m2": "float8e5",
          "fp8e4nv": "float8e4nv", "fp8e5": "float8e5", "fp8e4b15": "float8e4b15",
          "fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64",
          "i1": "int1"}


def str_to_triton_dtype(name: str):
    """The tl dtype for a NumPy/torch/Triton dtype spelling."""
    return getattr(tl, _SHORT.get(name, name))


def torch_dtype_name(dtype) -> str:
    if isinstance(dtype, tl.dtype):
        return dtype.name
    if isinstance(dtype, torch.dtype):
        return str(dtype).split(".", 1)[1]
    raise TypeError(f"torch_dtype_name: {type(dtype).__name__} is not a tl or torch dtype")


def to_numpy(x):
    """A NumPy array for a torch tensor, a reinterpreted tensor, or an array."""
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, torch.Tensor):
        return (x.float() if x.dtype is torch.bfloat16 else x).cpu().numpy()
    base = getattr(x, "base", None)
    if base is not None:
        return base.cpu().numpy().astype(np.dtype(torch_dtype_name(x.dtype)))
    raise ValueError(f"to_numpy: {type(x).__name__} is not a tensor")
