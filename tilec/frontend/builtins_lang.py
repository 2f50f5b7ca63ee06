"""Frontend rules for transposes, casts and tensor descriptors.

* `tl.trans(x, *dims)`, `tl.permute(x, *dims)`, `x.T`, `x.trans(...)`,
  `x.permute(...)`: dims as varargs or one tuple; a 2-D swap is `tile.trans`,
  the identity permutation returns `x`; a 3-D or 4-D permutation is one
  `tile.restride` (dialects/tile_elements.py).
* `tl.cast(x, dtype, fp_downcast_rounding=None, bitcast=False)`: `.to()`
  (`fp_downcast_rounding`: 'rtne' or 'rtz' on float conversions to fewer bits).
* `tl.make_tensor_descriptor(base, shape, strides, block_shape,
  padding_option="zero")` -> a `TensorDescriptor` (a compile-time object
  holding the `tile.make_descriptor` value) with `.load(offsets)` and
  `.store(offsets, value)`: out-of-bounds elements read as 0 and are not
  written (dialects/tile_descriptors.py, passes/tile_lower_descriptors.py).
* `host_descriptor`: a host `TensorDescriptor` argument (a `DescriptorType`
  constexpr and hidden parameters, tilec/tools/tensor_descriptor.py) as the
  same kind of value, made at the kernel's entry.

`METHODS` holds the rules of the methods on tiles and descriptors (called as
`rule(cg, node, obj, *args, **kwargs)`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mlir import ir
from mlir.dialects import arith

from tilec.dialects import tile
from tilec.dialects import tile_elements as el
from tilec.dialects import tile_descriptors as desc_d
from tilec.frontend.builtins import Rule, _constexpr_int, _shape, rule_table
from tilec.frontend.semantic import TValue, mlir_type
from tilec.frontend.values import BoundMethod
from tilec.language import core as tl
from tilec.tools.tensor_descriptor import DescriptorType

if TYPE_CHECKING:
    from tilec.frontend.codegen import CodeGen

RULES: dict[str, Rule] = {}
rule = rule_table(RULES)
METHODS: dict[str, Rule] = {}


def _tile_arg(cg: CodeGen, node: Any, x: Any, fn: str) -> TValue:
    if isinstance(x, tl.constexpr):
        x = x.value
    if not isinstance(x, TValue) or not x.is_block or x.is_ptr:
        cg.err(node, f"{fn} needs a tile of numbers, got {cg.describe(x)}")
    return x


def _permute(cg: CodeGen, node: Any, x: Any, dims: tuple[Any, ...], fn: str,
             default_reverse: bool) -> TValue:
    v = _tile_arg(cg, node, x, fn)
    rank = len(v.shape)
    if len(dims) == 1 and isinstance(dims[0], (tuple, list, tl.constexpr)):
        inner = dims[0].value if isinstance(dims[0], tl.constexpr) else dims[0]
        dims = tuple(inner) if isinstance(inner, (tuple, list)) else (inner,)
    if not dims:
        if not default_reverse or rank != 2:
            cg.err(node, f"{fn} needs the permutation of the {rank} dimensions, e.g. "
                   f"{fn}(x, {tuple(reversed(range(rank)))})")
        dims = (1, 0)
    order = tuple(_constexpr_int(cg, node, d, f"{fn}'s dimension") for d in dims)
    if sorted(order) != list(range(rank)):
        cg.err(node, f"{fn}: {list(order)} is not a permutation of the dimensions "
               f"{list(range(rank))} of a tile of shape {list(v.shape)}")
    if order == tuple(range(rank)):
        return v
    shape = tuple(v.shape[d] for d in order)
    if rank == 2:
        return TValue(tile.trans(v.handle, loc=cg.loc, ip=cg.ip), v.elem, shape)
    # Rank 3 and 4: one element shuffle; result coordinate k walks the
    # source's dimension order[k].
    strides = [math.prod(v.shape[d + 1:]) for d in range(rank)]
    h = el.restride([v.handle], shape, list(shape), [strides[d] for d in order], 0,
                    loc=cg.loc, ip=cg.ip)
    return TValue(h, v.elem, shape)


@rule("trans")
def trans(cg: CodeGen, node: Any, input: Any, *dims: Any) -> TValue:
    return _permute(cg, node, input, dims, "tl.trans", True)


@rule("permute")
def permute(cg: CodeGen, node: Any, input: Any, *dims: Any) -> TValue:
    return _permute(cg, node, input, dims, "tl.permute", False)


METHODS["trans"] = trans
METHODS["permute"] = permute


@rule("cast")
def cast(cg: CodeGen, node: Any, input: Any, dtype: Any, fp_downcast_rounding: Any = None,
         bitcast: Any = False) -> TValue:
    if isinstance(input, tl.constexpr):
        input = input.value
    v = cg.to_value(input, node)
    if isinstance(dtype, tl.constexpr):
        dtype = dtype.value
    if not isinstance(dtype, tl.dtype):
        cg.err(node, f"tl.cast needs a dtype such as tl.float32, got {cg.describe(dtype)}")
    if isinstance(bitcast, tl.constexpr):
        bitcast = bitcast.value
    if bitcast and fp_downcast_rounding is not None:
        cg.err(node, "tl.cast: fp_downcast_rounding= does not apply to a bitcast")
    return cg.cast(v, dtype, node, bitcast=bool(bitcast), rounding=fp_downcast_rounding)


# ------------------------------------------------------------------ descriptors

@dataclass(frozen=True)
class TensorDescriptor(tl.tensor_descriptor):
    """A `tl.make_tensor_descriptor` value in kernel code."""

    handle: ir.Value
    elem: tl.dtype
    block_shape: tuple[int, ...]

    @property
    def dtype(self) -> tl.dtype:
        return self.elem

    @property
    def load(self) -> BoundMethod:
        return BoundMethod(self, "descriptor_load")

    @property
    def store(self) -> BoundMethod:
        return BoundMethod(self, "descriptor_store")


def _int_list(cg: CodeGen, node: Any, xs: Any, what: str, rank: int | None) -> list[Any]:
    if isinstance(xs, tl.constexpr):
        xs = xs.value
    if not isinstance(xs, (tuple, list)):
        cg.err(node, f"{what} must be a list, e.g. [M, K], got {cg.describe(xs)}")
    items = [x.value if isinstance(x, tl.constexpr) else x for x in xs]
    if rank is not None and len(items) != rank:
        cg.err(node, f"{what} has {len(items)} entries; the block shape has {rank}")
    for x in items:
        ok = isinstance(x, TValue) and not x.is_block and not x.is_ptr and x.dtype.is_int() \
            or isinstance(x, int) and not isinstance(x, bool)
        if not ok:
            cg.err(node, f"{what} must hold integer scalars, got {cg.describe(x)}")
    return items


def _i64(cg: CodeGen, node: Any, x: Any) -> ir.Value:
    v = cg.to_value(x, node, tl.int64)
    return cg.cast(v, tl.int64, node).handle


def _known_int(x: Any) -> int | None:
    """The value of a compile-time int or of a runtime value that is a constant."""
    if isinstance(x, int):
        return x
    owner = x.handle.owner
    if not isinstance(owner, ir.Block) and owner.operation.name == "arith.constant":
        return ir.IntegerAttr(owner.operation.attributes["value"]).value
    return None


@rule("make_tensor_descriptor")
def make_tensor_descriptor(cg: CodeGen, node: Any, base: Any, shape: Any, strides: Any,
                           block_shape: Any, padding_option: Any = "zero") -> TensorDescriptor:
    if not isinstance(base, TValue) or not base.is_ptr or base.is_block:
        cg.err(node, f"tl.make_tensor_descriptor needs a pointer as its base, got "
               f"{cg.describe(base)}")
    if isinstance(block_shape, tl.constexpr):
        block_shape = block_shape.value
    if not isinstance(block_shape, (tuple, list)):
        cg.err(node, "block_shape must be a list of constexpr ints, e.g. [BLOCK_M, BLOCK_K]")
    block = _shape(cg, node, block_shape)
    rank = len(block)
    dims = _int_list(cg, node, shape, "shape", rank)
    steps = _int_list(cg, node, strides, "strides", rank)
    if _known_int(steps[-1]) != 1:
        cg.err(node, "the last stride of a tensor descriptor must be the constant 1 "
               "(the innermost dimension is contiguous)")
    if padding_option not in ("zero", None):
        cg.err(node, f"padding_option {padding_option!r} is not supported (\"zero\" is)")
    assert isinstance(base.elem, tl.pointer_type)
    elem = base.elem.element_ty
    block_t = ir.RankedTensorType(mlir_type(elem, block))
    handle = desc_d.make_descriptor(base.handle, [_i64(cg, node, d) for d in dims],
                                    [_i64(cg, node, s) for s in steps], block_t,
                                    loc=cg.loc, ip=cg.ip)
    return TensorDescriptor(handle, elem, block)


def host_descriptor(cg: CodeGen, name: str, d: DescriptorType) -> TensorDescriptor:
    """Parameter `name`'s host TensorDescriptor, from its hidden parameters
    (tilec/tools/tensor_descriptor.py); built at the kernel's entry."""
    base = cg.scope[f"{name}.base"]
    shape = [cg.scope[f"{name}.shape{i}"].handle for i in range(d.rank)]
    i64 = ir.IntegerType.get_signless(64)
    one = arith.constant(i64, 1, loc=cg.loc, ip=cg.ip)
    strides = [cg.scope[f"{name}.stride{i}"].handle for i in range(d.rank - 1)] + [one]
    assert isinstance(base.elem, tl.pointer_type)
    elem = base.elem.element_ty
    block_t = ir.RankedTensorType(mlir_type(elem, d.block_shape))
    handle = desc_d.make_descriptor(base.handle, shape, strides, block_t, loc=cg.loc, ip=cg.ip)
    return TensorDescriptor(handle, elem, d.block_shape)


def _offsets(cg: CodeGen, node: Any, d: TensorDescriptor, offsets: Any) -> list[ir.Value]:
    items = _int_list(cg, node, offsets, "the offsets", len(d.block_shape))
    out = []
    for x in items:
        v = cg.to_value(x, node, tl.int32)
        out.append(cg.cast(v, tl.int32, node).handle if v.dtype.bits <= 32 else
                   arith.trunci(ir.IntegerType.get_signless(32), v.handle, loc=cg.loc, ip=cg.ip))
    return out


def descriptor_load(cg: CodeGen, node: Any, d: TensorDescriptor, offsets: Any) -> TValue:
    res = desc_d.descriptor_load(d.handle, _offsets(cg, node, d, offsets), loc=cg.loc, ip=cg.ip)
    return TValue(res, d.elem, d.block_shape)


def descriptor_store(cg: CodeGen, node: Any, d: TensorDescriptor, offsets: Any,
                     value: Any) -> None:
    offs = _offsets(cg, node, d, offsets)
    v = cg.to_value(value, node, d.elem if not isinstance(value, TValue) else None)
    if v.is_ptr:
        cg.err(node, "storing pointers is not supported")
    if v.shape and v.shape != d.block_shape:
        cg.err(node, f"the value's shape {list(v.shape)} is not the descriptor's block shape "
               f"{list(d.block_shape)}")
    v = cg.broadcast_to(cg.cast(v, d.elem, node), d.block_shape, node)
    desc_d.descriptor_store(d.handle, v.handle, offs, loc=cg.loc, ip=cg.ip)


METHODS["descriptor_load"] = descriptor_load
METHODS["descriptor_store"] = descriptor_store

__all__ = ["RULES", "METHODS", "TensorDescriptor"]
