"""`tile-tma-descriptors`: the descriptor loads and stores a host-encoded tensor map can copy.

A TMA copy reads a block through a tensor map, a 128-byte record of the
tensor's address, shape, strides and block (box) shape.  tilec encodes it on
the host at launch (`cuTensorMapEncodeTiled`, tilec/runtime/tensormap.py) and
passes it as a `__grid_constant__` kernel parameter, so the kernel needs
neither a scratch buffer nor a fence: this works where the descriptor's fields
are functions of the kernel's arguments.  (Triton builds descriptors on the
device too, which takes any base.)  A per-program base, as a batched
matmul's or attention's per-head descriptors have
(`make_tensor_descriptor(O + off_z * s_z + off_h * s_h, [N, D], [D, 1], ..)`),
is the block of a map of rank 3 to 5 whose leading dimensions are batches:
the base offset written as sum_k b_k * S_k (`map_blocks.split_offset`:
terms grouped by their kernel integer arguments, S_k those arguments times
the gcd of the group's coefficients), the map [2^31.., rows, columns] with
strides [S_k.., row stride, 1], block [1.., R, C], and coordinates
(b_k.., row, column) built before the access.  That block holds exactly
the descriptor's elements where every b_k >= 0, so each b_k must be shown
non-negative on every program (`map_blocks.nonnegative`: positive
coefficients over program ids, loop counters, and remainders and quotients
of those; `(NB - 1 - pid) * s` splits into 1 * (NB s) + (-1 - pid) * s and
is refused).  A quotient by an integer argument (`pid // H`) is non-negative
when the argument is positive: the recipe lists such arguments
(`positive`), and the runtime refuses a launch where one is not.

Input: tile-level IR before `tile-lower-descriptors`.  A
`tile.descriptor_load` or `tile.descriptor_store` qualifies when the target
has `Feature.TMA` and
  * its `tile.make_descriptor` has rank 2, its base is a pointer argument of
    the kernel known to be 16-byte aligned (the launch's specialization),
    plus a scalar offset of at most 3 batch terms whose strides S_k are
    known to be multiples of 16 bytes (above), and
    its shape and strides are host expressions (kernel integer arguments,
    constants, and sums and products of them, through `arith.extsi`/`extui`);
    the last stride is the constant 1 and the first one, in bytes, is known to
    be a multiple of 16 (TMA's requirement);
  * its block has rows a multiple of 8 and a last dimension of whole 128-byte
    atoms (the 128-byte swizzle of the pipeliner's rings);
  * it keeps the descriptor defaults: every dimension checked, zero padding
    (a load's).
Output: each qualifying load (store) is the masked `tile.load` (`tile.store`)
of `tile-lower-descriptors` (`lower_load` / `lower_store`), tagged
`tile.tma = id`, and right before it `tile.tma_coords(offsets) {tma = id}`
keeps its block coordinates for the pipeliner (a store: `tile-pipeline`
makes it a `tile.tma_store` where it stores a wgmma accumulator); the
kernel's `tile.tensormaps` (a JSON string) maps each id
to its recipe: `base` (argument index), `elem_bytes`, `shape` and `strides`
(host expressions: ["arg", i], ["const", c], ["add"|"mul", x, y]; strides in
elements), `block`, for a store's map `store: true`, and the arguments that
must be positive (`positive`, above); with a per-program base, the hint's
coordinates are the batches' then the access's offsets.  A tagged access that `tile-pipeline` does not turn into
TMA copies stays the correct pointer access it is; `convert-tile-to-gpu` drops
the hints and passes only the tensor maps a `tile.tma_copy` or
`tile.tma_store` reads.  Every new
op carries the location of the access it replaces.

Nearest upstream analogue: none in MLIR (nvgpu's TMA ops take a descriptor
made by the host); Triton's host-side `TensorDescriptor` argument.
"""
from __future__ import annotations

import json
from typing import Any

from mlir import ir

from tilec.dialects import tile, tile_memory
from tilec.dialects import tile_descriptors as desc
from tilec.options import CompileOptions
from tilec.passes import tile_lower_descriptors
from tilec.passes.analysis import axis_info
from tilec.passes.analysis.index_poly import Evaluator, Poly
from tilec.passes.analysis.map_blocks import BATCH_EXTENT, build, host, int_arg, nonnegative, \
    pointer_base, split_offset, stride_aligned
from tilec.targets import Feature, Target

NAME = "tile-tma-descriptors"
ATTR = "tile.tensormaps"
HostExpr = list[Any]


def host_expr(v: ir.Value, func_block: ir.Block) -> HostExpr | None:
    """`v` as an expression of the kernel's arguments, or None."""
    owner = v.owner
    if isinstance(owner, ir.Block):
        if owner == func_block and isinstance(v.type, ir.IntegerType):
            return ["arg", list(func_block.arguments).index(v)]
        return None
    op = owner.operation
    if op.name == "arith.constant":
        attr = op.attributes["value"]
        return ["const", int(ir.IntegerAttr(attr).value)] if isinstance(attr, ir.IntegerAttr) \
            else None
    if op.name in ("arith.extsi", "arith.extui", "arith.index_cast"):
        return host_expr(op.operands[0], func_block)
    if op.name in ("arith.muli", "arith.addi"):
        x, y = (host_expr(o, func_block) for o in op.operands)
        if x is None or y is None:
            return None
        return ["mul" if op.name == "arith.muli" else "add", x, y]
    return None


def _recipe(make: ir.Operation, func_block: ir.Block, info: axis_info.AxisInfoMap,
            ev: Evaluator) -> tuple[dict[str, Any], list[Poly]] | None:
    """The map of `make`'s descriptor and its batch coordinates (none where
    the base is a pointer argument), or None."""
    base, shape, strides = desc.parts(make)
    block = tuple(desc.block_type(make.results[0].type).shape)
    elem = tile.pointee(base.type)
    eb = axis_info.type_bytes(elem)
    if len(block) != 2 or eb not in (1, 2, 4):
        return None
    if block[0] % 8 or (block[1] * eb) % 128:
        return None
    batches = _batches(base, func_block, info, ev, eb)
    if batches is None:
        return None
    arg, coords, batch_strides, positive = batches
    if info.get(arg).divisibility[0] < 16:
        return None
    if not tile_lower_descriptors.constant_one(strides[1]):
        return None
    if (info.get(strides[0]).divisibility[0] * eb) % 16:
        return None
    exprs = [host_expr(v, func_block) for v in (*shape, *strides)]
    if any(e is None for e in exprs):
        return None
    lead = [["const", BATCH_EXTENT] for _ in coords]
    recipe = {"base": list(func_block.arguments).index(arg), "elem_bytes": eb,
              "shape": [*lead, *exprs[:2]], "strides": [*batch_strides, *exprs[2:]],
              "block": [*(1 for _ in coords), *block]}
    if positive:
        recipe["positive"] = sorted(positive)
    return recipe, coords


def _batches(base: ir.Value, func_block: ir.Block, info: axis_info.AxisInfoMap, ev: Evaluator,
             eb: int) -> tuple[ir.Value, list[Poly], list[HostExpr], set[int]] | None:
    """(pointer argument, batch coordinates, batch strides as host
    expressions, the arguments that must be positive) of a descriptor's
    base: the argument itself, or it plus sum_k b_k * S_k with each S_k a
    known multiple of 16 bytes and each b_k non-negative
    (`map_blocks.nonnegative`)."""
    if isinstance(base.owner, ir.Block):
        return (base, [], [], set()) if base.owner == func_block else None
    e = ev.expr(base)
    if e is None or e[1]:
        return None
    arg = pointer_base(e[0], ev, func_block)
    if arg is None:
        return None
    split = split_offset(e[0] - ev.atom_of(arg),
                         lambda a: int_arg(a, ev, func_block) is not None)
    if split is None:
        return None
    coords, hosts = [], []
    positive: set[int] = set()
    for b, s in split:
        need = nonnegative(b, ev, func_block)
        if need is None:
            return None
        positive |= need
        h = host(s, ev, func_block)
        if h is None or not stride_aligned(s, ev, lambda v: info.get(v).divisibility[0], eb):
            return None
        coords.append(b)
        hosts.append(h)
    return arg, coords, hosts, positive


def _accesses(func: ir.Operation) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in ("tile.descriptor_load", "tile.descriptor_store"):
            found.append(op)
        return ir.WalkResult.ADVANCE

    func.walk(visit)
    return found


def _run_func(func: ir.Operation) -> None:
    accesses = _accesses(func)
    if not accesses:
        return
    func_block = func.regions[0].blocks[0]
    info = axis_info.analyze(func)
    ev = Evaluator()
    maps: dict[str, Any] = {}
    for op in accesses:
        is_load = op.name == "tile.descriptor_load"
        if "boundary" in op.attributes or (is_load and desc.padding(op) != "zero"):
            continue
        made = _recipe(tile_lower_descriptors.make_of(op), func_block, info, ev)
        if made is None:
            continue
        recipe, batch = made
        tma = len(maps)
        offsets = list(op.operands)[1 if is_load else 2:]
        with op.location, ir.InsertionPoint(op):
            i32 = ir.IntegerType.get_signless(32)
            lead = [build(b, ev, i32) for b in batch]
        tile_memory.tma_coords([*lead, *offsets], tma, loc=op.location, ip=ir.InsertionPoint(op))
        multicast = op.attributes["tile.multicast"] if "tile.multicast" in op.attributes else None
        lowered = tile_lower_descriptors.lower_load(op) if is_load else \
            tile_lower_descriptors.lower_store(op)
        lowered.attributes["tile.tma"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), tma)
        if multicast is not None:   # tile-split-ctas: B of a 2-CTA cluster
            lowered.attributes["tile.multicast"] = multicast
        if not is_load:
            recipe["store"] = True
        maps[str(tma)] = recipe
    if maps:
        func.attributes[ATTR] = ir.StringAttr.get(json.dumps(maps, sort_keys=True))


def recipes(func: ir.Operation) -> dict[int, dict[str, Any]]:
    """The kernel's tensor-map recipes by id ({} without any)."""
    if ATTR not in func.attributes:
        return {}
    return {int(k): v for k, v in json.loads(ir.StringAttr(func.attributes[ATTR]).value).items()}


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    if not target.has(Feature.TMA):
        return
    with module.context:
        for op in module.body.operations:
            if op.operation.name == "func.func":
                _run_func(op.operation)
