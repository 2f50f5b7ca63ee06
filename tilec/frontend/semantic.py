"""Values, types and the typing rules of kernel code (Triton's rules).

A `TValue` is an SSA value with its tilec type: an element type (a `dtype` or
a `pointer_type`) and a shape (`()` for scalars).  Python numbers in kernel
code stay Python objects (constexprs) until an operation needs them; then
`promote` decides the result type exactly as Triton does:

* a Python literal of the same or a lower kind (bool < int < float) than the
  other operand takes the other operand's type;
* fp64 > fp32 > fp16 > bf16 (fp16 with bf16 gives fp16, bf16 with a non-bf16
  float gives fp32), a float with an int gives the float;
* `/` and `%` on fp16/bf16 compute in fp32; int / int gives fp32;
* integers promote to the wider type; mixing signedness prefers unsigned
  when it is at least as wide.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from mlir import ir

from tilec.dialects import tile
from tilec.language import core as tl

ElemType = Union[tl.dtype, tl.pointer_type]


@dataclass(frozen=True)
class TValue:
    """A runtime value in kernel code."""

    handle: ir.Value
    elem: ElemType
    shape: tuple[int, ...] = ()

    @property
    def is_block(self) -> bool:
        return bool(self.shape)

    @property
    def is_ptr(self) -> bool:
        return isinstance(self.elem, tl.pointer_type)

    @property
    def dtype(self) -> tl.dtype:
        assert isinstance(self.elem, tl.dtype)
        return self.elem

    def type_str(self) -> str:
        e = self.elem.short if isinstance(self.elem, (tl.dtype, tl.pointer_type)) else str(self.elem)
        return f"{e}[{', '.join(map(str, self.shape))}]" if self.shape else e


def mlir_scalar(elem: ElemType) -> ir.Type:
    """The MLIR type of one element of `elem`."""
    if isinstance(elem, tl.pointer_type):
        return tile.ptr_type(mlir_scalar(elem.element_ty))
    if elem in tl.FP8_DTYPES:
        return ir.Float8E4M3FNType.get() if elem is tl.float8e4nv else ir.Float8E5M2Type.get()
    if elem.kind == "float":
        return {16: ir.F16Type.get() if elem.name == "float16" else ir.BF16Type.get(),
                32: ir.F32Type.get(), 64: ir.F64Type.get()}[elem.bits]
    return ir.IntegerType.get_signless(elem.bits)


def mlir_type(elem: ElemType, shape: tuple[int, ...]) -> ir.Type:
    t = mlir_scalar(elem)
    return tile.tensor_type(shape, t) if shape else t


# ------------------------------------------------------------- promotion

def literal_dtype(v: object) -> tl.dtype:
    """The type a Python scalar gets on its own (Triton: int32/int64, fp32, int1)."""
    if isinstance(v, bool):
        return tl.int1
    if isinstance(v, int):
        if -(2 ** 31) <= v < 2 ** 31:
            return tl.int32
        if -(2 ** 63) <= v < 2 ** 63:
            return tl.int64
        if 0 <= v < 2 ** 64:
            return tl.uint64
        raise OverflowError(f"integer {v} does not fit in 64 bits")
    if isinstance(v, float):
        return tl.float32
    raise TypeError(f"{type(v).__name__} is not a number")


# Triton's kinds: bool < integral (signed or not) < floating.
_KIND_RANK = {"bool": 0, "uint": 1, "int": 1, "float": 2}


def _integer_promote(a: tl.dtype, b: tl.dtype) -> tl.dtype:
    a_signed = a.kind != "uint"
    b_signed = b.kind != "uint"
    if a_signed == b_signed:
        return a if a.bits > b.bits else b
    if not a_signed:
        return a if a.bits >= b.bits else b
    return b if b.bits >= a.bits else a


def promote(a: tl.dtype, a_literal: bool, b: tl.dtype, b_literal: bool,
            div_or_mod: bool = False) -> tl.dtype:
    """The computation type of a binary arithmetic operation (Triton's rules)."""
    if a in tl.FP8_DTYPES or b in tl.FP8_DTYPES:
        return _fp8_promote(a, a_literal, b, b_literal, div_or_mod)
    if a_literal != b_literal:
        lit, other = (a, b) if a_literal else (b, a)
        if _KIND_RANK[lit.kind] <= _KIND_RANK[other.kind]:
            if div_or_mod and other in (tl.float16, tl.bfloat16):
                return tl.float32
            return other
    if tl.float64 in (a, b):
        return tl.float64
    if tl.float32 in (a, b):
        return tl.float32
    if tl.float16 in (a, b):
        return tl.float32 if div_or_mod else tl.float16
    if tl.bfloat16 in (a, b):
        if div_or_mod:
            return tl.float32
        return tl.bfloat16 if a is b else tl.float32
    if div_or_mod and (a.kind == "uint") != (b.kind == "uint") and not (a.is_bool() or b.is_bool()):
        # "Cannot use ... because they have different signedness": Triton's wording
        raise TypeError(f"Cannot use / // or % on {a!r} and {b!r} because they have different "
                        "signedness; cast one of them with .to(...)")
    return _integer_promote(a, b)


def _fp8_promote(a: tl.dtype, a_literal: bool, b: tl.dtype, b_literal: bool,
                 div_or_mod: bool) -> tl.dtype:
    """fp8 with a wider float tile computes in that float; two different fp8
    types meet in fp16 (Triton); one fp8 type (with a literal) stays itself, for
    selects: its arithmetic is rejected by tile-expand-fp8 at the operator."""
    wider = [x for x, lit in ((a, a_literal), (b, b_literal))
             if x.is_floating() and x not in tl.FP8_DTYPES and not lit]
    if wider:
        return promote(wider[0], False, wider[0], False, div_or_mod)
    if a in tl.FP8_DTYPES and b in tl.FP8_DTYPES and a is not b:
        return tl.float32 if div_or_mod else tl.float16
    if a is b or a_literal or b_literal:
        return a if a in tl.FP8_DTYPES else b
    raise TypeError(f"arithmetic on {a if a in tl.FP8_DTYPES else b!r} is not supported: fp8 "
                    "is a storage type; convert with .to(tl.float16) or .to(tl.float32) first")


def broadcast_shapes(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy broadcasting of two tile shapes; ValueError when incompatible."""
    if not a:
        return b
    if not b:
        return a
    if len(a) != len(b):
        # Triton broadcasts only equal ranks (after [:, None] indexing); be
        # NumPy-like and left-pad the shorter shape with ones.
        n = max(len(a), len(b))
        a = (1,) * (n - len(a)) + a
        b = (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise ValueError(f"shapes {list(a)} and {list(b)} cannot be broadcast together")
    return tuple(out)
