"""Frontend rules for Triton's block pointers.

* `tl.make_block_ptr(base, shape, strides, offsets, block_shape, order)` -> a
  `BlockPointer`: a compile-time object holding a `tile.make_descriptor`
  (base, runtime i64 shape and strides: any strides, the last need not be 1)
  and the current offsets (i32 scalars).  `order` is Triton's layout hint: it
  is checked (a permutation of the dimensions) and otherwise unused.
* `tl.advance(ptr, offsets)` -> the same descriptor with the offsets added.
  A block pointer made before a loop and moved by `tl.advance` in its body is
  loop-carried: its offsets are the loop's values (`Compound`).
* `tl.load(ptr, boundary_check=(dims), padding_option="" | "zero" | "nan")`
  and `tl.store(ptr, value, boundary_check=(dims))` are `tile.descriptor_load`
  / `tile.descriptor_store` with the checked dimensions as `boundary` (only
  those are masked; unchecked elements outside the tensor are the caller's
  promise, as in Triton) and the padding (`""` reads as zero).
  passes/tile_lower_descriptors.py turns them into masked pointer accesses.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from mlir import ir

from tilec.dialects import tile_descriptors as desc_d
from tilec.frontend.builtins import Rule, _constexpr_int, _shape, rule_table
from tilec.frontend.builtins_lang import _i64, _int_list
from tilec.frontend.semantic import TValue, mlir_type
from tilec.frontend.values import Compound
from tilec.language import core as tl

if TYPE_CHECKING:
    from tilec.frontend.codegen import CodeGen

RULES: dict[str, Rule] = {}
rule = rule_table(RULES)


@dataclass(frozen=True)
class BlockPointer(Compound):
    """A `tl.make_block_ptr` value in kernel code (`is_block_pointer` marks it
    for tl.load / tl.store)."""

    desc: ir.Value
    elem: tl.dtype
    block_shape: tuple[int, ...]
    offsets: tuple[TValue, ...]
    is_block_pointer = True

    def parts(self) -> list[TValue]:
        return list(self.offsets)

    def with_parts(self, parts: list[TValue]) -> BlockPointer:
        return replace(self, offsets=tuple(parts))

    def same_kind(self, other: Any) -> bool:
        return isinstance(other, BlockPointer) and other.desc == self.desc

    def load(self, cg: CodeGen, node: Any, boundary_check: Any, padding_option: Any) -> TValue:
        dims = _checked(cg, node, self, boundary_check)
        if padding_option not in ("", "zero", "nan", None):
            cg.err(node, f"padding_option must be '', 'zero' or 'nan', got {padding_option!r}")
        pad = "nan" if padding_option == "nan" else "zero"
        if pad == "nan" and not self.elem.is_floating():
            cg.err(node, f"padding_option='nan' needs a floating-point block, not {self.elem!r}")
        res = desc_d.descriptor_load(self.desc, [o.handle for o in self.offsets], loc=cg.loc,
                                     ip=cg.ip, boundary=dims, padding=pad)
        return TValue(res, self.elem, self.block_shape)

    def store(self, cg: CodeGen, node: Any, value: Any, boundary_check: Any) -> None:
        dims = _checked(cg, node, self, boundary_check)
        v = cg.to_value(value, node, self.elem if not isinstance(value, TValue) else None)
        if v.is_ptr:
            cg.err(node, "storing pointers is not supported")
        if v.shape and v.shape != self.block_shape:
            cg.err(node, f"the value's shape {list(v.shape)} is not the block pointer's block "
                   f"shape {list(self.block_shape)}")
        v = cg.broadcast_to(cg.cast(v, self.elem, node), self.block_shape, node)
        desc_d.descriptor_store(self.desc, v.handle, [o.handle for o in self.offsets],
                                loc=cg.loc, ip=cg.ip, boundary=dims)


def _checked(cg: CodeGen, node: Any, p: BlockPointer, boundary_check: Any) -> list[int]:
    if isinstance(boundary_check, tl.constexpr):
        boundary_check = boundary_check.value
    items = boundary_check if isinstance(boundary_check, (tuple, list)) else \
        () if boundary_check is None else (boundary_check,)
    rank = len(p.block_shape)
    dims = sorted({_constexpr_int(cg, node, d, "a boundary_check dimension") for d in items})
    for d in dims:
        if not 0 <= d < rank:
            cg.err(node, f"boundary_check dimension {d} is out of range for a block of rank "
                   f"{rank}")
    return dims


def _offsets(cg: CodeGen, node: Any, xs: Any, rank: int) -> list[TValue]:
    out = []
    for x in _int_list(cg, node, xs, "the offsets", rank):
        v = cg.to_value(x, node, tl.int32)
        out.append(cg.cast(v, tl.int32, node))
    return out


@rule("make_block_ptr")
def make_block_ptr(cg: CodeGen, node: Any, base: Any, shape: Any, strides: Any, offsets: Any,
                   block_shape: Any, order: Any) -> BlockPointer:
    if not isinstance(base, TValue) or not base.is_ptr or base.is_block:
        cg.err(node, f"tl.make_block_ptr needs a pointer as its base, got {cg.describe(base)}")
    if isinstance(block_shape, tl.constexpr):
        block_shape = block_shape.value
    if not isinstance(block_shape, (tuple, list)):
        cg.err(node, "block_shape must be a tuple of constexpr ints, e.g. (BLOCK_M, BLOCK_K)")
    block = _shape(cg, node, block_shape)
    rank = len(block)
    dims = _int_list(cg, node, shape, "shape", rank)
    steps = _int_list(cg, node, strides, "strides", rank)
    if isinstance(order, tl.constexpr):
        order = order.value
    perm = [_constexpr_int(cg, node, d, "an order entry") for d in
            (order if isinstance(order, (tuple, list)) else (order,))]
    if sorted(perm) != list(range(rank)):
        cg.err(node, f"order {perm} is not a permutation of the {rank} dimensions")
    assert isinstance(base.elem, tl.pointer_type)
    elem = base.elem.element_ty
    handle = desc_d.make_descriptor(base.handle, [_i64(cg, node, d) for d in dims],
                                    [_i64(cg, node, s) for s in steps],
                                    ir.RankedTensorType(mlir_type(elem, block)),
                                    loc=cg.loc, ip=cg.ip)
    return BlockPointer(handle, elem, block, tuple(_offsets(cg, node, offsets, rank)))


@rule("advance")
def advance(cg: CodeGen, node: Any, base: Any, offsets: Any) -> BlockPointer:
    if not isinstance(base, BlockPointer):
        cg.err(node, f"tl.advance needs a block pointer (tl.make_block_ptr), got "
               f"{cg.describe(base)}")
    steps = _offsets(cg, node, offsets, len(base.block_shape))
    moved = tuple(cg.binary("+", o, s, node) for o, s in zip(base.offsets, steps))
    return replace(base, offsets=moved)


__all__ = ["RULES", "BlockPointer"]
