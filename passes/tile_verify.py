"""tile-verify: the shape and type rules of `tile` ops that IRDL cannot state.

IRDL checks op names, operand counts and attribute presence; this pass checks
the rest (see the table in `tilec.dialects.tile`) and raises `VerifyError`
naming the op and its location for the first violation.  It also refuses, as
a located `TilecError`, a tile with more elements than the target's
`max_tile_elements` (before any code generation: a huge tile aborts LLVM's
instruction selection on the CPU and cannot fit in registers on a GPU) that
the kernel uses: a dead side-effect-free op is erased before code generation.

Input invariants: any module.  Output invariants: unchanged module; every tile
op satisfies its typing rule.  Nearest upstream analogue: an op's C++
`verify()` hook.
"""
from __future__ import annotations

from typing import Callable

from mlir import ir

from tilec.dialects import tile, tile_memory
from tilec.dialects import tile_descriptors as descs
from tilec.errors import TilecError, source_loc
from tilec.options import CompileOptions
from tilec.passes import tile_dce
from tilec.passes.analysis import axis_info
from tilec.targets import Target

NAME = "tile-verify"


class VerifyError(Exception):
    def __init__(self, op: ir.Operation, message: str) -> None:
        self.op = op
        super().__init__(f"{op.location}: '{op.name}' op {message}")


def _is_int(t: ir.Type) -> bool:
    return isinstance(t, ir.IntegerType)


def _attr_int(op: ir.Operation, name: str) -> int:
    if name not in op.attributes:
        raise VerifyError(op, f"requires attribute '{name}'")
    return ir.IntegerAttr(op.attributes[name]).value


def _axis(op: ir.Operation) -> None:
    a = _attr_int(op, "axis")
    if a not in (0, 1, 2):
        raise VerifyError(op, f"axis must be 0, 1 or 2, got {a}")


def _range(op: ir.Operation) -> None:
    s, e = _attr_int(op, "start"), _attr_int(op, "end")
    t = op.result.type
    if tile.shape_of(t) != (e - s,) or str(tile.element_type(t)) != "i32":
        raise VerifyError(op, f"result must be tensor<{e - s}xi32>, got {t}")


def _broadcast(op: ir.Operation) -> None:
    src, dst = op.operands[0].type, op.result.type
    ss, ds = tile.shape_of(src), tile.shape_of(dst)
    if len(ss) != len(ds) or any(a != b and a != 1 for a, b in zip(ss, ds)):
        raise VerifyError(op, f"cannot broadcast {src} to {dst}")
    if tile.element_type(src) != tile.element_type(dst):
        raise VerifyError(op, "element types of source and result differ")


def _expand_dims(op: ir.Operation) -> None:
    axis = _attr_int(op, "axis")
    ss = list(tile.shape_of(op.operands[0].type))
    if not 0 <= axis <= len(ss):
        raise VerifyError(op, f"axis {axis} out of range for rank {len(ss)}")
    ss.insert(axis, 1)
    if tuple(ss) != tile.shape_of(op.result.type):
        raise VerifyError(op, f"result shape must be {ss}")


def _addptr(op: ir.Operation) -> None:
    p, o, r = op.operands[0].type, op.operands[1].type, op.result.type
    if not tile.is_ptr(tile.element_type(p)):
        raise VerifyError(op, f"operand #0 must be a pointer or a tile of pointers, got {p}")
    if not _is_int(tile.element_type(o)):
        raise VerifyError(op, f"offset must be an integer or a tile of integers, got {o}")
    if tile.shape_of(p) != tile.shape_of(o) or p != r:
        raise VerifyError(op, "pointer, offset and result must have the same shape and type")


def _mask_ok(op: ir.Operation, mask: ir.Value, shape: tuple[int, ...]) -> None:
    if str(tile.element_type(mask.type)) != "i1" or tile.shape_of(mask.type) != shape:
        raise VerifyError(op, f"mask must be i1 with shape {list(shape)}, got {mask.type}")


def _load(op: ir.Operation) -> None:
    seg = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    p = op.operands[0].type
    if not tile.is_ptr(tile.element_type(p)):
        raise VerifyError(op, f"operand #0 must be a pointer or a tile of pointers, got {p}")
    shape = tile.shape_of(p)
    r = op.result.type
    if tile.shape_of(r) != shape or tile.element_type(r) != tile.pointee(tile.element_type(p)):
        raise VerifyError(op, f"result type {r} does not match the pointer type {p}")
    if seg[1]:
        _mask_ok(op, op.operands[1], shape)
    if seg[2]:
        if not seg[1]:
            raise VerifyError(op, "'other' requires a mask")
        if op.operands[1 + seg[1]].type != r:
            raise VerifyError(op, "'other' must have the result type")


def _store(op: ir.Operation) -> None:
    seg = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    p, v = op.operands[0].type, op.operands[1].type
    if not tile.is_ptr(tile.element_type(p)):
        raise VerifyError(op, f"operand #0 must be a pointer or a tile of pointers, got {p}")
    if tile.shape_of(v) != tile.shape_of(p) or \
            tile.element_type(v) != tile.pointee(tile.element_type(p)):
        raise VerifyError(op, f"value type {v} does not match the pointer type {p}")
    if seg[2]:
        _mask_ok(op, op.operands[2], tile.shape_of(p))


def _combine_func(op: ir.Operation) -> ir.Operation:
    if "combine" not in op.attributes:
        raise VerifyError(op, "requires attribute 'combine' (a function symbol)")
    f = tile.combine_function(op)
    if f is None:
        name = ir.FlatSymbolRefAttr(op.attributes["combine"]).value
        raise VerifyError(op, f"combine function @{name} not found")
    return f


def _reduce_like(op: ir.Operation, keeps_shape: bool) -> None:
    srcs = list(op.operands)
    if not srcs or len(srcs) != len(op.results):
        raise VerifyError(op, "needs one result per operand and at least one operand")
    shape = tile.shape_of(srcs[0].type)
    axis = _attr_int(op, "axis")
    if not shape or not 0 <= axis < len(shape):
        raise VerifyError(op, f"axis {axis} out of range for operand shape {list(shape)}")
    out_shape = shape if keeps_shape else shape[:axis] + shape[axis + 1:]
    elems = []
    for s, r in zip(srcs, op.results):
        if tile.shape_of(s.type) != shape:
            raise VerifyError(op, "all operands must have the same shape")
        if tile.shape_of(r.type) != out_shape or tile.element_type(r.type) != tile.element_type(s.type):
            raise VerifyError(op, f"result type {r.type} does not match operand {s.type}")
        elems.append(tile.element_type(s.type))
    ftype = ir.FunctionType(ir.TypeAttr(_combine_func(op).attributes["function_type"]).value)
    if list(ftype.inputs) != elems + elems or list(ftype.results) != elems:
        raise VerifyError(op, f"combine function must have type ({', '.join(map(str, elems * 2))})"
                          f" -> ({', '.join(map(str, elems))}), got {ftype}")


def _reduce(op: ir.Operation) -> None:
    _reduce_like(op, keeps_shape=False)


def _scan(op: ir.Operation) -> None:
    _reduce_like(op, keeps_shape=True)


def _atomic_rmw(op: ir.Operation) -> None:
    seg = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    p, v, r = op.operands[0].type, op.operands[1].type, op.results[0].type
    kind = ir.StringAttr(op.attributes["kind"]).value if "kind" in op.attributes else ""
    allowed = tile.ATOMIC_KINDS.get(kind)
    if allowed is None:
        raise VerifyError(op, f"unknown atomic kind '{kind}'; valid: {', '.join(tile.ATOMIC_KINDS)}")
    if not tile.is_ptr(tile.element_type(p)):
        raise VerifyError(op, f"operand #0 must be a pointer or a tile of pointers, got {p}")
    elem = tile.pointee(tile.element_type(p))
    if tile.shape_of(v) != tile.shape_of(p) or tile.element_type(v) != elem or v != r:
        raise VerifyError(op, f"value and result must be {elem} with the pointers' shape")
    is_float = isinstance(elem, ir.FloatType)
    if ("f" in allowed) != is_float and not ("i" in allowed and "f" in allowed):
        raise VerifyError(op, f"atomic kind '{kind}' does not accept {elem}")
    if seg[2]:
        _mask_ok(op, op.operands[2], tile.shape_of(p))


def _atomic_cas(op: ir.Operation) -> None:
    p, c, v, r = (op.operands[0].type, op.operands[1].type, op.operands[2].type,
                  op.results[0].type)
    if not tile.is_ptr(tile.element_type(p)):
        raise VerifyError(op, f"operand #0 must be a pointer or a tile of pointers, got {p}")
    elem = tile.pointee(tile.element_type(p))
    for t in (c, v, r):
        if tile.shape_of(t) != tile.shape_of(p) or tile.element_type(t) != elem:
            raise VerifyError(op, f"cmp, value and result must be {elem} with the pointers' shape")


def _reshape(op: ir.Operation) -> None:
    import math
    s, r = op.operands[0].type, op.results[0].type
    if math.prod(tile.shape_of(s)) != math.prod(tile.shape_of(r)) or \
            tile.element_type(s) != tile.element_type(r):
        raise VerifyError(op, f"cannot reshape {s} to {r}")


def _trans(op: ir.Operation) -> None:
    s, r = op.operands[0].type, op.results[0].type
    ss = tile.shape_of(s)
    if len(ss) != 2 or tile.shape_of(r) != (ss[1], ss[0]) or \
            tile.element_type(s) != tile.element_type(r):
        raise VerifyError(op, f"result must be the transpose of {s}, got {r}")


def _dot(op: ir.Operation) -> None:
    a, b, acc = (v.type for v in op.operands)
    r = op.results[0].type
    sa, sb, sc = tile.shape_of(a), tile.shape_of(b), tile.shape_of(acc)
    if len(sa) != 2 or len(sb) != 2 or sa[1] != sb[0] or sc != (sa[0], sb[1]) or r != acc:
        raise VerifyError(op, f"tile.dot needs a [M, K], b [K, N] and acc [M, N] (= the "
                              f"result), got {a}, {b}, {acc} -> {r}")
    ea, eb, ec = tile.element_type(a), tile.element_type(b), tile.element_type(acc)
    if ea != eb:
        raise VerifyError(op, f"tile.dot operands must have one element type, got {ea} and {eb}")
    if tile.is_ptr(a) or not dot_result_ok(ea, ec):
        raise VerifyError(op, f"tile.dot of {ea} cannot accumulate in {ec}")
    if "input_precision" in op.attributes:
        p = str(op.attributes["input_precision"]).strip('"')
        if p not in ("ieee", "tf32", "tf32x3") or (p != "ieee" and ea != ir.F32Type.get()):
            raise VerifyError(op, f"input_precision \"{p}\" needs f32 operands and one of "
                                  f"ieee, tf32, tf32x3 (operands: {ea})")


def dot_result_ok(operand: ir.Type, result: ir.Type) -> bool:
    """The accumulator types `tile.dot` allows for an operand element type:
    f16/bf16/f32/fp8 -> f32 (f16 -> f16 too), f64 -> f64, i8/i16/i32 -> i32."""
    f16, bf16, f32, f64 = (ir.F16Type.get(), ir.BF16Type.get(), ir.F32Type.get(),
                           ir.F64Type.get())
    if operand in (f16, bf16, f32):
        return result == f32 or (operand == f16 and result == f16)
    if str(operand) in ("f8E4M3FN", "f8E5M2"):
        return result == f32
    if operand == f64:
        return result == f64
    if isinstance(operand, ir.IntegerType) and operand.width in (8, 16, 32):
        return isinstance(result, ir.IntegerType) and result.width == 32
    return False


def _descriptor(op: ir.Operation) -> None:
    """make_descriptor: a pointer to the block's element type, rank i64 shapes and
    strides; load/store: rank i32 offsets, the block's type as result/value."""
    i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
    dt = op.results[0].type if op.name == "tile.make_descriptor" else op.operands[0].type
    if not descs.is_desc(dt):
        raise VerifyError(op, f"needs a !tile.tensordesc<tensor<...>>, got {dt}")
    block = descs.block_type(dt)
    rank = len(block.shape)
    if op.name == "tile.make_descriptor":
        base, shape, strides = descs.parts(op)
        if not tile.is_ptr(base.type) or tile.pointee(base.type) != block.element_type:
            raise VerifyError(op, f"base must be !tile.ptr<{block.element_type}>, got {base.type}")
        if len(shape) != rank or len(strides) != rank or \
                any(v.type != i64 for v in [*shape, *strides]):
            raise VerifyError(op, f"needs {rank} i64 shape values and {rank} i64 strides")
        return
    first = 1 if op.name == "tile.descriptor_load" else 2
    offsets = list(op.operands)[first:]
    if len(offsets) != rank or any(v.type != i32 for v in offsets):
        raise VerifyError(op, f"needs {rank} i32 offsets, got {len(offsets)}")
    t = op.results[0].type if first == 1 else op.operands[1].type
    if tile.shape_of(t) != tuple(block.shape) or tile.element_type(t) != block.element_type:
        raise VerifyError(op, f"the block is {block}, got {t}")


def _tma_store(op: ir.Operation) -> None:
    """tma_store(buf, value, [b,] c0, c1): a one-slot shared-memory buffer of
    the value's [R, C] tile and element type (or [R, C / p], p a power of two,
    whole 128-byte column atoms: written in passes), two i32 coordinates
    (three to five: a batched map's, the batches first), a map id and a known
    row permutation."""
    buf, value, *coords = op.operands
    bt = buf.type
    shape = list(tile.shape_of(value.type))
    if not isinstance(bt, ir.MemRefType) or len(bt.shape) != 3 or bt.shape[0] != 1 or \
            len(shape) != 2 or bt.shape[1] != shape[0] or \
            bt.element_type != tile.element_type(value.type):
        raise VerifyError(op, f"buffer {bt} does not hold one {value.type} tile")
    cols, passes = bt.shape[2], shape[1] // max(1, bt.shape[2])
    if cols != shape[1] and (passes * cols != shape[1] or passes & (passes - 1) or
                             cols * axis_info.type_bytes(bt.element_type) % 128):
        raise VerifyError(op, f"buffer {bt} holds neither one {value.type} tile nor a power-of-two "
                              "fraction of its columns in whole 128-byte atoms")
    i32 = ir.IntegerType.get_signless(32)
    if len(coords) not in tile_memory.TMA_COORDS or any(c.type != i32 for c in coords):
        raise VerifyError(op, "needs 2 to 5 i32 coordinates, got (" +
                          ", ".join(str(c.type) for c in coords) + ")")
    if _attr_int(op, "tma") < 0:
        raise VerifyError(op, "tma must be a tensor-map id (>= 0)")
    perm = ir.StringAttr(op.attributes["row_permutation"]).value
    if perm not in ("wgmma", "none"):
        raise VerifyError(op, f"row_permutation must be \"wgmma\" or \"none\", got \"{perm}\"")


_RULES: dict[str, Callable[[ir.Operation], None]] = {
    "tile.make_descriptor": _descriptor, "tile.descriptor_load": _descriptor,
    "tile.descriptor_store": _descriptor,
    "tile.reduce": _reduce, "tile.scan": _scan, "tile.atomic_rmw": _atomic_rmw,
    "tile.atomic_cas": _atomic_cas, "tile.reshape": _reshape, "tile.trans": _trans,
    "tile.program_id": _axis, "tile.num_programs": _axis, "tile.range": _range,
    "tile.broadcast": _broadcast, "tile.expand_dims": _expand_dims, "tile.addptr": _addptr,
    "tile.load": _load, "tile.store": _store, "tile.dot": _dot, "tile.tma_store": _tma_store,
}
RULES = _RULES  # other files add rules for ops they define


def _walk(op: ir.Operation) -> None:
    for region in op.regions:
        for block in region.blocks:
            for view in block.operations:
                inner = view.operation
                rule = _RULES.get(inner.name)
                if rule is not None:
                    rule(inner)
                _walk(inner)


def _dead_ops(op: ir.Operation) -> set[ir.Operation]:
    """The side-effect-free ops under `op` whose results nothing live uses
    (what tile-dce erases before any code generation)."""
    ops: list[ir.Operation] = []

    def collect(o: ir.Operation) -> None:
        for region in o.regions:
            for block in region.blocks:
                for view in block.operations:
                    ops.append(view.operation)
                    collect(view.operation)
    collect(op)
    dead: set[ir.Operation] = set()
    for inner in reversed(ops):     # users follow their definitions
        if tile_dce.pure(inner) and all(use.owner.operation in dead
                                for r in inner.results for use in r.uses):
            dead.add(inner)
    return dead


def _check_tile_sizes(op: ir.Operation, limit: int, target: str,
                      dead: set[ir.Operation] | None = None) -> None:
    """The first live op (in program order) with a tile result over `limit`
    elements (a dead one, such as test_core's unused [256, 512] tile beside
    tl.histogram, is erased before code generation: Triton accepts it too)."""
    dead = _dead_ops(op) if dead is None else dead
    for region in op.regions:
        for block in region.blocks:
            for view in block.operations:
                inner = view.operation
                for r in inner.results:
                    if isinstance(r.type, ir.RankedTensorType) and inner not in dead:
                        n = 1
                        for d in ir.RankedTensorType(r.type).shape:
                            n *= d
                        if n > limit:
                            dims = ir.RankedTensorType(r.type).shape
                            shape = f" ({'x'.join(map(str, dims))})" if len(dims) > 1 else ""
                            raise TilecError(
                                f"a tile of {n} elements{shape} exceeds the {target} limit of "
                                f"{limit} elements per tile; use smaller blocks (and loop over "
                                "them) or more programs", source_loc(inner.location))
                _check_tile_sizes(inner, limit, target, dead)


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    if not module.operation.verify():
        raise VerifyError(module.operation, "failed MLIR verification")
    _check_tile_sizes(module.operation, target.max_tile_elements, target.name)
    _walk(module.operation)
