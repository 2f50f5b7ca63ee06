"""`tile-lower-descriptors`: tensor-descriptor loads and stores as masked pointer tiles.

Input: tile-level IR (before `tile-layout`) with `tile.descriptor_load` /
`tile.descriptor_store` on the result of a `tile.make_descriptor` (base
pointer, r shape values and r stride values, all i64; dialects/
tile_descriptors.py), offsets i32, block shape B (the descriptor type's).
Output: for each access, per dimension d the indices
`idx_d = offset_d + [0, B_d)` in i64, the element offsets
`sum_d idx_d * stride_d` (a last stride that is the constant 1, as every
descriptor's is, adds `idx_d` itself and stays contiguous for the axis
analysis), the mask `0 <= idx_d < shape_d` for every checked d (the access's
`boundary` dimensions, all by default; none: an unmasked access), then
`tile.addptr` on the splat base and `tile.load` (masked, `other` 0 or NaN
per `padding`) / `tile.store` (masked).  Block pointers
(`tl.make_block_ptr`) arrive as these ops too.  Offsets are
64-bit, so tensors past 2^31 elements address correctly.  The
`tile.make_descriptor`s are erased once unused.  Every new op carries the
location of the access it replaces.

On targets with TMA, `tile-tma-descriptors` runs before this pass: it lowers
the loads and stores a tensor map can copy itself (through `lower_load` /
`lower_store`) and tags them for the pipeliner.

Nearest upstream analogue: none in MLIR; Triton's descriptor load/store
rewritten to pointer loads where TMA is unavailable.
"""
from __future__ import annotations

from typing import Any

from mlir import ir
from mlir.dialects import arith, tensor

from tilec.dialects import tile
from tilec.dialects import tile_descriptors as desc
from tilec.errors import CompilerBugError
from tilec.options import CompileOptions
from tilec.targets import Target

NAME = "tile-lower-descriptors"


def _walk(op: ir.Operation, out: list[ir.Operation]) -> None:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                if inner.operation.name in ("tile.descriptor_load", "tile.descriptor_store",
                                            "tile.make_descriptor"):
                    out.append(inner.operation)
                _walk(inner.operation, out)


def _splat(v: ir.Value, shape: tuple[int, ...], at: dict[str, Any]) -> ir.Value:
    return tensor.splat(tile.tensor_type(shape, v.type), v, [], **at)


def _index_tile(offset: ir.Value, d: int, block: tuple[int, ...], at: dict[str, Any]) -> ir.Value:
    """offset + [0, B_d) as i64, shaped to broadcast along the other dimensions."""
    i64 = ir.IntegerType.get_signless(64)
    n = block[d]
    r = arith.extsi(tile.tensor_type((n,), i64), tile.range_(0, n, **at), **at)
    off = arith.extsi(i64, offset, **at) if offset.type != i64 else offset
    idx = arith.addi(r, _splat(off, (n,), at), **at)
    for axis in range(len(block)):
        if axis != d:
            idx = tile.expand_dims(idx, axis, **at)
    return idx


def _full(v: ir.Value, block: tuple[int, ...], at: dict[str, Any]) -> ir.Value:
    shape = tile.shape_of(v.type)
    if shape == block:
        return v
    return tile.broadcast(v, tile.tensor_type(block, tile.element_type(v.type)), **at)


def _pointers_and_mask(op: ir.Operation, make: ir.Operation,
                       offsets: list[ir.Value]) -> tuple[ir.Value, ir.Value | None]:
    at = {"loc": op.location, "ip": ir.InsertionPoint(op)}
    base, shape, strides = desc.parts(make)
    block = tuple(desc.block_type(make.results[0].type).shape)
    i64 = ir.IntegerType.get_signless(64)
    offs: ir.Value | None = None
    mask: ir.Value | None = None
    checked = desc.checked_dims(op, len(block))
    for d in range(len(block)):
        idx = _index_tile(offsets[d], d, block, at)
        sub_shape = tile.shape_of(idx.type)
        inside: ir.Value | None = None
        if d in checked:
            zero = _splat(arith.constant(i64, 0, **at), sub_shape, at)
            inside = arith.andi(arith.cmpi(arith.CmpIPredicate.sge, idx, zero, **at),
                                arith.cmpi(arith.CmpIPredicate.slt, idx,
                                           _splat(shape[d], sub_shape, at), **at), **at)
        term = idx if constant_one(strides[d]) else \
            arith.muli(idx, _splat(strides[d], sub_shape, at), **at)
        term = _full(term, block, at)
        offs = term if offs is None else arith.addi(offs, term, **at)
        if inside is not None:
            inside = _full(inside, block, at)
            mask = inside if mask is None else arith.andi(mask, inside, **at)
    assert offs is not None
    ptrs = tile.addptr(_splat(base, block, at), offs, **at)
    return ptrs, mask


def constant_one(v: ir.Value) -> bool:
    """Whether `v` is the constant 1 (the contiguous last stride of a descriptor)."""
    owner = v.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "arith.constant":
        return False
    attr = owner.operation.attributes["value"]
    return isinstance(attr, ir.IntegerAttr) and ir.IntegerAttr(attr).value == 1


def lower_load(op: ir.Operation) -> ir.Operation:
    """Replace the `tile.descriptor_load` `op` by its masked `tile.load` (returned)."""
    ptrs, mask = _pointers_and_mask(op, make_of(op), list(op.operands)[1:])
    at = {"loc": op.location, "ip": ir.InsertionPoint(op)}
    rt = op.results[0].type
    other = None if mask is None else arith.constant(rt, ir.DenseElementsAttr.get_splat(
        rt, _pad_attr(tile.element_type(rt), desc.padding(op))), **at)
    new = tile.load(ptrs, mask, other, **at)
    op.results[0].replace_all_uses_with(new)
    op.erase()
    owner = new.owner
    return owner.operation if isinstance(owner, ir.OpView) else owner


def lower_store(op: ir.Operation) -> ir.Operation:
    """Replace the `tile.descriptor_store` `op` by its masked `tile.store` (returned)."""
    ptrs, mask = _pointers_and_mask(op, make_of(op), list(op.operands)[2:])
    new = tile.store(ptrs, op.operands[1], mask, loc=op.location, ip=ir.InsertionPoint(op))
    op.erase()
    return new.operation if isinstance(new, ir.OpView) else new


def make_of(op: ir.Operation) -> ir.Operation:
    owner = op.operands[0].owner
    if isinstance(owner, ir.Block) or owner.operation.name != "tile.make_descriptor":
        raise CompilerBugError(f"{op.name} needs a tile.make_descriptor operand")
    return owner.operation


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    with module.context:
        ops: list[ir.Operation] = []
        _walk(module.operation, ops)
        makes = [op for op in ops if op.name == "tile.make_descriptor"]
        for op in ops:
            if op.name == "tile.descriptor_load":
                lower_load(op)
            elif op.name == "tile.descriptor_store":
                lower_store(op)
        for make in makes:
            if not list(make.results[0].uses):
                make.erase()


def _pad_attr(elem: ir.Type, padding: str) -> ir.Attribute:
    if isinstance(elem, ir.IntegerType):
        return ir.IntegerAttr.get(elem, 0)
    return ir.FloatAttr.get(elem, float("nan") if padding == "nan" else 0.0)
