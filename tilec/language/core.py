"""Types of the tilec language: scalar dtypes, pointer types, constexpr.

These objects are what kernel code names (`tl.float32`, `tl.constexpr`); the
frontend maps them to MLIR types.  Nothing here imports MLIR.
"""
from __future__ import annotations

from typing import Any


class dtype:
    """A scalar element type.  `kind` is 'float', 'int', 'uint' or 'bool'."""

    __slots__ = ("name", "short", "kind", "bits")

    SINT_TYPES = ("int8", "int16", "int32", "int64")
    UINT_TYPES = ("int1", "uint8", "uint16", "uint32", "uint64")
    FP_TYPES = ("fp16", "bf16", "fp32", "fp64")
    STANDARD_FP_TYPES = ("fp16", "bf16", "fp32", "fp64")
    OTHER_TYPES = ("void",)

    def __new__(cls, name: str, *rest: Any) -> dtype:
        if not rest:  # Triton's tl.dtype("float32"): the existing dtype
            found = _BY_NAME.get(name) or _BY_SHORT.get(name)
            if found is None:
                raise ValueError(f"unknown dtype {name!r}")
            return found
        return super().__new__(cls)

    def __init__(self, name: str, short: str = "", kind: str = "", bits: int = 0) -> None:
        if not kind:
            return  # tl.dtype(name): already initialized
        self.name = name      # tl.<name>
        self.short = short    # Triton's signature spelling: fp32, i32, u8, i1
        self.kind = kind
        self.bits = bits

    # Triton's introspection.
    @property
    def primitive_bitwidth(self) -> int:
        return self.bits

    @property
    def int_bitwidth(self) -> int:
        return self.bits

    @property
    def fp_mantissa_width(self) -> int:
        return {"float16": 10, "bfloat16": 7, "float32": 23, "float64": 52}.get(self.name, 0)

    @property
    def exponent_bias(self) -> int:
        return {"float16": 15, "bfloat16": 127, "float32": 127, "float64": 1023}.get(self.name, 0)

    @property
    def scalar(self) -> dtype:
        return self

    @property
    def int_signedness(self) -> str:
        return "signed" if self.kind == "int" else "unsigned"

    def is_int_signed(self) -> bool:
        return self.kind == "int"

    def is_int_unsigned(self) -> bool:
        return self.kind in ("uint", "bool")

    def is_standard_floating(self) -> bool:
        return self.kind == "float"

    def is_ptr(self) -> bool:
        return False

    def is_block(self) -> bool:
        return False

    def is_fp8(self) -> bool:
        return False

    def __getattr__(self, attr: str) -> Any:
        # is_fp16(), is_bf16(), is_fp32(), is_fp64(), is_int1() ... is_uint64()
        if attr.startswith("is_"):
            want = attr[3:]
            return lambda: want in (self.name, self.short.replace("i", "int", 1)
                                    if self.short.startswith("i") else self.short,
                                    self.short.replace("u", "uint", 1)
                                    if self.short.startswith("u") else self.short)
        raise AttributeError(attr)

    @property
    def itemsize(self) -> int:
        return max(self.bits // 8, 1)

    def is_floating(self) -> bool:
        return self.kind == "float"

    def is_int(self) -> bool:
        return self.kind in ("int", "uint", "bool")

    def is_bool(self) -> bool:
        return self.kind == "bool"

    def is_signed(self) -> bool:
        return self.kind == "int"

    def __repr__(self) -> str:
        return f"tl.{self.name}"

    def __reduce__(self) -> Any:
        return (_dtype_by_name, (self.name,))


class pointer_type:
    """A pointer to elements of `element_ty` in global memory."""

    __slots__ = ("element_ty",)

    def __init__(self, element_ty: dtype) -> None:
        self.element_ty = element_ty

    @property
    def short(self) -> str:
        return "*" + self.element_ty.short

    def __eq__(self, other: object) -> bool:
        return isinstance(other, pointer_type) and other.element_ty is self.element_ty

    def __hash__(self) -> int:
        return hash(("ptr", self.element_ty.name))

    def __repr__(self) -> str:
        return f"tl.pointer_type({self.element_ty!r})"


class block_type:
    """The type of a tile (Triton's `x.type` of a block): `element_ty` is the
    element dtype (a `pointer_type` for a tile of pointers), `shape` the tile's."""

    __slots__ = ("element_ty", "shape")

    def __init__(self, element_ty: Any, shape: Any) -> None:
        self.element_ty = element_ty
        self.shape = tuple(int(d) for d in shape)

    @property
    def scalar(self) -> Any:
        return self.element_ty

    def is_block(self) -> bool:
        return True

    def get_block_shapes(self) -> tuple[int, ...]:
        return self.shape

    def __eq__(self, other: object) -> bool:
        return isinstance(other, block_type) and other.element_ty == self.element_ty \
            and other.shape == self.shape

    def __hash__(self) -> int:
        return hash(("block", repr(self.element_ty), self.shape))

    def __repr__(self) -> str:
        return f"tl.block_type({self.element_ty!r}, {list(self.shape)})"


class constexpr:
    """Marks a kernel parameter as a compile-time constant (`BLOCK: tl.constexpr`)."""

    def __init__(self, value: Any = None) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"tl.constexpr({self.value!r})"


class tensor:
    """The type of a tile value in kernel code: `isinstance(x, tl.tensor)`."""


class tensor_descriptor:
    """The type of a `tl.make_tensor_descriptor` value: `isinstance(d, tl.tensor_descriptor)`."""


int1 = dtype("int1", "i1", "bool", 1)
int8 = dtype("int8", "i8", "int", 8)
int16 = dtype("int16", "i16", "int", 16)
int32 = dtype("int32", "i32", "int", 32)
int64 = dtype("int64", "i64", "int", 64)
uint8 = dtype("uint8", "u8", "uint", 8)
uint16 = dtype("uint16", "u16", "uint", 16)
uint32 = dtype("uint32", "u32", "uint", 32)
uint64 = dtype("uint64", "u64", "uint", 64)
float16 = dtype("float16", "fp16", "float", 16)
bfloat16 = dtype("bfloat16", "bf16", "float", 16)
float32 = dtype("float32", "fp32", "float", 32)
float64 = dtype("float64", "fp64", "float", 64)
# fp8 (OCP): e4m3 "fn" (no infinities, one NaN per sign, max 448) and e5m2 (IEEE-like);
# storage and conversion types: arithmetic converts them with .to() first.
float8e4nv = dtype("float8e4nv", "fp8e4nv", "float", 8)
float8e5 = dtype("float8e5", "fp8e5", "float", 8)
FP8_DTYPES = (float8e4nv, float8e5)

ALL_DTYPES: tuple[dtype, ...] = (int1, int8, int16, int32, int64, uint8, uint16, uint32,
                                 uint64, float16, bfloat16, float32, float64, float8e4nv,
                                 float8e5)
_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_SHORT = {d.short: d for d in ALL_DTYPES}
_BY_SHORT.update({"fp16": float16, "bf16": bfloat16, "fp32": float32, "fp64": float64,
                  "f16": float16, "f32": float32, "f64": float64, "bool": int1})


def _dtype_by_name(name: str) -> dtype:
    return _BY_NAME[name]


def parse_type(spelling: str) -> dtype | pointer_type:
    """Parse Triton's signature spelling: 'fp32', 'i32', '*fp16', 'u8'."""
    s = spelling.strip()
    if s.startswith("*"):
        inner = parse_type(s[1:])
        if isinstance(inner, pointer_type):
            raise ValueError(f"pointers to pointers are not supported: '{spelling}'")
        return pointer_type(inner)
    if s in _BY_SHORT:
        return _BY_SHORT[s]
    if s in _BY_NAME:
        return _BY_NAME[s]
    raise ValueError(f"unknown type '{spelling}'; expected e.g. 'fp32', 'i32', '*fp16'")
