"""What both halves of `tile-pipeline` share (passes/tile_pipeline.py: one-dot
K loops; passes/tile_pipeline_multi.py: loops with several wgmma dots): the
load side of a loop's tile loads, its cloning for a later iteration, the
prologue and the rebuilt loop with its slot counter, and small IR queries.
Not a pass of its own.
"""
from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import arith, scf, tensor

from tilec.dialects import tile
from tilec.passes.analysis import axis_info
from tilec.passes.analysis.layouts import Distribution

PURE_PREFIXES = ("arith.",)
PURE = {"tensor.splat", "tile.range", "tile.broadcast", "tile.expand_dims", "tile.addptr",
        "tile.program_id", "tile.num_programs", "tile.convert_layout"}
SWIZZLE = 128
# Shared memory left to the rest of the kernel (layout conversions, reductions)
# when the rings are sized.
RESERVED_SHARED = 8192
Mapping = dict[ir.Value, ir.Value]


def hinted_kernel_loops(module: ir.Module, hint: str
                        ) -> list[tuple[ir.Operation, list[ir.Operation]]]:
    """Each kernel (`func.func` with `tile.kernel`) with the `scf.for` ops
    directly in its body that carry the attribute `hint`, in order."""
    out = []
    for fop in list(module.body.operations):
        f = fop.operation
        if f.name == "func.func" and "tile.kernel" in f.attributes:
            out.append((f, [op for op in ops(f.regions[0].blocks[0])
                            if op.name == "scf.for" and hint in op.attributes]))
    return out


def loops(op: ir.Operation) -> list[ir.Operation]:
    """The `scf.for` ops nested in `op`, innermost first."""
    out: list[ir.Operation] = []
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                out += loops(inner.operation)
                if inner.operation.name == "scf.for":
                    out.append(inner.operation)
    return out


def staged_loops(module: ir.Module, num_stages: int
                 ) -> list[tuple[ir.Operation, ir.Operation, int]]:
    """(kernel, loop, stages) of every loop of every kernel, innermost first,
    where the loop's depth (`tile.num_stages`, else the launch option) is > 1."""
    out = []
    for func in list(module.body.operations):
        if func.operation.name != "func.func" or "tile.kernel" not in func.attributes:
            continue
        for op in loops(func.operation):
            stages = num_stages
            if "tile.num_stages" in op.attributes:
                stages = int(ir.IntegerAttr(op.attributes["tile.num_stages"]).value)
            if stages > 1:
                out.append((func.operation, op, stages))
    return out


def ops(block: ir.Block) -> list[ir.Operation]:
    return [v.operation for v in block.operations]


def defining_op(v: ir.Value) -> ir.Operation | None:
    """The operation defining `v` (None for a block argument)."""
    owner = v.owner
    if isinstance(owner, ir.Block):
        return None
    return owner.operation if isinstance(owner, ir.OpView) else owner


def splat_constant(v: ir.Value) -> bool:
    """Whether `v` is an `arith.constant` tile with one value in every element."""
    op = defining_op(v)
    if op is None or op.name != "arith.constant":
        return False
    attr = op.attributes["value"]
    return isinstance(attr, ir.DenseElementsAttr) and attr.is_splat


def const_int(v: ir.Value) -> int | None:
    owner = v.owner
    if isinstance(owner, ir.OpView) and owner.operation.name == "arith.constant":
        attr = owner.attributes["value"]
        if isinstance(attr, ir.IntegerAttr):
            return int(attr.value)
    return None


def is_zero(v: ir.Value) -> bool:
    owner = v.owner
    if not (isinstance(owner, ir.OpView) and owner.operation.name == "arith.constant"):
        return False
    attr = owner.attributes["value"]
    if not (isinstance(attr, ir.DenseElementsAttr) and attr.is_splat):
        return False
    s = attr.get_splat_value()
    return float(s.value) == 0.0 if isinstance(s, (ir.FloatAttr, ir.IntegerAttr)) else False


def load_parts(load: ir.Operation) -> tuple[ir.Value, ir.Value | None, ir.Value | None]:
    seg = list(ir.DenseI32ArrayAttr(load.attributes["operandSegmentSizes"]))
    operands = list(load.operands)
    return (operands[0], operands[1] if seg[1] else None,
            operands[1 + seg[1]] if seg[2] else None)


def kind(dot: ir.Operation) -> str:
    """The dot's family (`tile-accelerate-dot`'s `tile.mma`)."""
    return ir.StringAttr(dot.attributes["tile.mma"]).value if "tile.mma" in dot.attributes \
        else "fma"


def copyable(ptr: ir.Value, mask: ir.Value | None, info: axis_info.AxisInfoMap) -> bool:
    """Whether `cp.async` can copy the tile `ptr` points at: the layout's fast
    dimension is the last (contiguous) one and each access moves >= 4 bytes."""
    t = ptr.type
    layout = tile.layout_of(t)
    if layout is None or len(t.shape) != 2:
        return False
    d = Distribution.of(layout, tuple(t.shape))
    if d.sliced_dim is not None or d.fast != 1:
        return False
    eb = axis_info.type_bytes(tile.pointee(t.element_type))
    pi = info.get(ptr)
    w = min(d.vec_len, 16 // eb, pi.contiguity[1], max(1, pi.divisibility[1] // eb))
    if mask is not None and isinstance(mask.type, ir.RankedTensorType):
        w = min(w, info.get(mask).constancy[1])
    return w * eb >= 4


def live_mask(mask: ir.Value | None, ptr: ir.Value, live: ir.Value) -> ir.Value:
    t = ptr.type
    mt = ir.RankedTensorType.get(list(t.shape), ir.IntegerType.get_signless(1), t.encoding)
    s = tensor.SplatOp(mt, live, []).result
    return s if mask is None else arith.AndIOp(mask, s).result


def i32(v: int) -> ir.Value:
    return arith.ConstantOp(ir.IntegerType.get_signless(32), v).result


def next_op(op: ir.Operation) -> ir.Operation:
    siblings = ops(op.block)
    return siblings[siblings.index(op) + 1]


def pure(op: ir.Operation) -> bool:
    return op.name.startswith(PURE_PREFIXES) or op.name in PURE


def pure_if(op: ir.Operation) -> bool:
    """An `scf.if` whose branches hold only pure, region-free ops (a flattened
    loop's per-tile coordinates, recomputed when the load side reaches a new
    tile: passes/tile_flatten_loops.py)."""
    return op.name == "scf.if" and all(
        inner.name == "scf.yield" or (pure(inner) and not inner.regions)
        for inner in region_ops(op))


def outer_operands(op: ir.Operation) -> list[ir.Value]:
    """The operands of `op` and of the ops nested in it that are defined
    outside `op`."""
    nested = region_ops(op)
    inside = set(nested)
    out = list(op.operands)
    for inner in nested:
        for v in inner.operands:
            owner = v.owner
            # (A pure_if's blocks have no arguments: a block argument is the loop's.)
            if isinstance(owner, ir.Block) or owner.operation not in inside:
                out.append(v)
    return out


def dce(block: ir.Block) -> None:
    """Erase the pure ops of `block` nobody uses any more (the originals of
    the load side)."""
    changed = True
    while changed:
        changed = False
        for op in reversed(ops(block)):
            if (pure(op) or pure_if(op)) and all(len(list(r.uses)) == 0 for r in op.results):
                op.erase()
                changed = True


def clone_side(side: list[ir.Operation], mapping: Mapping) -> Mapping:
    """Clone the load side at the current insertion point, operands looked up
    in `mapping` (the induction variable and carried arguments of the
    iteration wanted); returns `mapping` extended by the clones' results."""
    for op in side:
        new = op.clone(ip=ir.InsertionPoint.current)
        remap([new], mapping)
        for old, r in zip(op.results, new.results):
            mapping[old] = r
    return mapping


def remap(ops_: list[ir.Operation], mapping: Mapping) -> None:
    """Replace, in `ops_` and the ops nested in them, every operand in `mapping`."""
    for op in ops_:
        for inner in [op, *region_ops(op)]:
            for i, o in enumerate(inner.operands):
                if o in mapping:
                    inner.operands[i] = mapping[o]


def load_side(body: ir.Block, loads: list[ir.Operation], forbidden: int | None = None
              ) -> tuple[list[ir.Operation], list[int]] | None:
    """(the ops computing the operands of `loads`, in body order; the
    iteration-argument indices they carry), or None when that is not a pure
    computation (region-free ops and `pure_if`s) from the induction variable,
    values from outside and arguments only it uses and updates (never
    argument `forbidden`)."""
    args = list(body.arguments)
    body_ops = ops(body)
    side: set[ir.Operation] = set()
    carried: set[int] = set()
    hints = [h for h in map(tma_coords_op, loads) if h is not None]
    stack = [o for op in (*loads, *hints) for o in op.operands]
    while stack:
        v = stack.pop()
        owner = v.owner
        if isinstance(owner, ir.Block):
            if owner == body and v != args[0]:
                idx = args.index(v) - 1
                if idx == forbidden:
                    return None
                if idx not in carried:
                    carried.add(idx)
                    stack.append(body_ops[-1].operands[idx])
            continue
        op = owner.operation
        if op.block != body or op in side:
            continue
        if pure_if(op):
            side.add(op)
            stack.extend(outer_operands(op))
            continue
        if op.regions or not pure(op):
            return None
        side.add(op)
        stack.extend(op.operands)
    # Carried values run ahead: nothing but the load side may read them.
    nested = {inner for op in side for inner in region_ops(op)}
    for idx in carried:
        for use in args[idx + 1].uses:
            user = use.owner
            if user not in side and user not in nested and user not in loads and \
                    user.name != "tile.tma_coords":
                return None
    return [op for op in body_ops if op in side], sorted(carried)


def tma_coords_op(load: ir.Operation) -> ir.Operation | None:
    """The `tile.tma_coords` of a load tagged `tile.tma` (before it in its
    block), or None."""
    if "tile.tma" not in load.attributes:
        return None
    tma = int(ir.IntegerAttr(load.attributes["tile.tma"]).value)
    for op in ops(load.block):
        if op.name == "tile.tma_coords" and int(ir.IntegerAttr(op.attributes["tma"]).value) == tma:
            return op
    return None


def loop_parts(for_op: ir.Operation
               ) -> tuple[ir.Block, list[ir.Value], ir.Value, ir.Value, ir.Value, list[ir.Value]]:
    """(body, body arguments, lower bound, upper bound, step, initial values)
    of an `scf.for`."""
    body = for_op.regions[0].blocks[0]
    operands = list(for_op.operands)
    return body, list(body.arguments), operands[0], operands[1], operands[2], operands[3:]


def prologue_loop(for_op: ir.Operation, carried: list[int], ahead: int,
                  issue: Callable[[ir.Value, ir.Value, Mapping], Mapping]) -> scf.ForOp:
    """At the current insertion point (before `for_op`): iterations 0 .. ahead-1
    issued (`issue(slot, iv, mapping)` clones the load side with `mapping` and
    starts its copies), then the new loop, whose iteration arguments are the
    old ones with the carried ones `ahead` iterations on, plus a slot counter
    from 0 (the last).  Returns the new `scf.for` (its body still empty)."""
    body, args, lb, ub, step, inits = loop_parts(for_op)
    now = {args[i + 1]: inits[i] for i in carried}
    for s in range(ahead):
        iv = arith.AddIOp(lb, arith.MulIOp(step, i32(s)).result).result
        m = issue(i32(s), iv, {args[0]: iv, **now})
        yld = ops(body)[-1]
        now = {args[i + 1]: m.get(yld.operands[i], yld.operands[i]) for i in carried}
    new_inits = [now[args[i + 1]] if i in carried else v for i, v in enumerate(inits)] + [i32(0)]
    new_for = scf.ForOp(lb, ub, step, new_inits)
    for name in ("tile.num_stages", "tile.num_stages_note", "tile.store_note",
                 "tile.flattened", "tile.warp_specialize", "tile.loop_unroll_factor"):
        if name in for_op.attributes:
            new_for.operation.attributes[name] = for_op.attributes[name]
    return new_for


def first_reader(v: ir.Value) -> ir.Operation | None:
    """The first op after `v`'s definition, in its block, that reads `v`
    (itself or in an op of its regions); None when no op there does."""
    owner = v.owner
    assert isinstance(owner, ir.OpView)
    readers = [u.owner.operation if isinstance(u.owner, ir.OpView) else u.owner
               for u in v.uses]
    siblings = ops(owner.operation.block)
    for op in siblings[siblings.index(owner.operation) + 1:]:
        if any(r == inner for inner in [op, *region_ops(op)] for r in readers):
            return op
    return None


def region_ops(op: ir.Operation) -> list[ir.Operation]:
    """Every op nested in `op`'s regions, outermost first."""
    out: list[ir.Operation] = []
    for region in op.regions:
        for block in region.blocks:
            for inner in ops(block):
                out.append(inner)
                out += region_ops(inner)
    return out


def epilogue(for_op: ir.Operation, acc_index: int, product: ir.Value
             ) -> tuple[ir.Operation, int] | None:
    """For a loop `tile-flatten-loops` made (`tile.flattened`): (the epilogue
    `scf.if` whose result the loop yields for iteration argument `acc_index`,
    that result's index) where the branch's else yields `product` (its then
    yields the next tile's init); else None."""
    if "tile.flattened" not in for_op.attributes:
        return None
    body = for_op.regions[0].blocks[0]
    v = ops(body)[-1].operands[acc_index]
    owner = v.owner
    if not (isinstance(owner, ir.OpView) and owner.operation.name == "scf.if") or \
            owner.operation.block != body:
        return None
    tail = owner.operation
    r = list(tail.results).index(v)
    if ops(tail.regions[1].blocks[0])[-1].operands[r] != product:
        return None
    return tail, r


def conversion_bytes(op: ir.Operation, skip: ir.Operation | None = None) -> int:
    """The most workgroup memory one layout conversion nested in `op` (other
    than `skip`) takes (passes/gpu/shape.py: rows of 64 bytes or more padded
    by 16 bytes)."""
    most = 0
    for inner in region_ops(op):
        if inner.name != "tile.convert_layout" or (skip is not None and inner == skip):
            continue
        t = ir.RankedTensorType(inner.results[0].type)
        eb = max(1, axis_info.type_bytes(t.element_type))
        n = 1
        for d in t.shape:
            n *= d
        pad = 16 * t.shape[0] if len(t.shape) == 2 and t.shape[1] * eb >= 64 else 0
        most = max(most, n * eb + pad)
    return most

