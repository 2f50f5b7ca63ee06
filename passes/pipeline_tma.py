"""The TMA half of `tile-pipeline`'s rings (passes/tile_pipeline.py): loads that
`tile-tma-descriptors` tagged are copied by one thread through their tensor
map into a ring slot, completing on that slot's transaction barrier, instead
of by every thread with `cp.async`.  Not a pass of its own.

Per ring set: `tile.mbarrier_alloc {slots = S}` before the prologue; a slot is
filled by `tile.tma_expect` (the bytes of every tile of the slot) and one
`tile.tma_copy` per tile, with the tile's coordinates cloned for the
iteration; a consumer waits with `tile.mbarrier_wait(slot, (j / S) & 1)`,
because slot j % S completes its phase once per S iterations.  After the loop
every issued copy has been waited for, so `tile.mbarrier_inval` follows the
loop's last barrier.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from tilec.dialects import tile_memory
from tilec.passes import pipeline_support as ps
from tilec.passes.analysis import axis_info


def tma_id(load: ir.Operation) -> int | None:
    """The tensor map a tagged `tile.load` can be copied through, or None."""
    if "tile.tma" not in load.attributes:
        return None
    return int(ir.IntegerAttr(load.attributes["tile.tma"]).value)


def coords_op(load: ir.Operation) -> ir.Operation | None:
    """The `tile.tma_coords` of a tagged load (before it in its block)."""
    tma = tma_id(load)
    for op in ps.ops(load.block):
        if op.name == "tile.tma_coords" and int(ir.IntegerAttr(op.attributes["tma"]).value) == tma:
            return op
    return None


def all_tagged(loads: list[ir.Operation]) -> bool:
    return all(tma_id(ld) is not None and coords_op(ld) is not None for ld in loads)


def _splat(v: ir.Value) -> bool:
    owner = v.owner
    if not (isinstance(owner, ir.OpView) and owner.operation.name == "arith.constant"):
        return False
    attr = owner.operation.attributes["value"]
    return isinstance(attr, ir.DenseElementsAttr) and attr.is_splat


def rows_in_order_ok(for_op: ir.Operation, acc_index: int, dot: ir.Operation,
                     tail: ir.Operation | None = None) -> bool:
    """Whether the loop's accumulator may hold its rows permuted until the loop
    ends: it starts as a splat constant (the same in every row), nothing in the
    body but the dot reads it and nothing but the yield reads the product.  In
    a flattened loop (`tail`: its epilogue branch) the product goes round the
    loop through the branch, whose epilogue reads it (after the exchange) and
    which resets it to a splat at a tile's end."""
    if not _splat(list(for_op.operands)[3 + acc_index]):
        return False
    body = for_op.regions[0].blocks[0]
    arg = body.arguments[1 + acc_index]
    if not all(u.owner == dot for u in arg.uses):
        return False
    if tail is not None:
        v = ps.ops(body)[-1].operands[acc_index]
        r = list(tail.results).index(v)
        inside = set(ps.region_ops(tail))
        return all((u.owner.operation if isinstance(u.owner, ir.OpView) else u.owner) in inside
                   for u in dot.results[0].uses) and \
            _splat(ps.ops(tail.regions[0].blocks[0])[-1].operands[r])
    # The product itself only goes round the loop (anything else in the body
    # would see its rows permuted).
    yld = ps.ops(body)[-1]
    return all(u.owner == yld for u in dot.results[0].uses)


def exchange_bytes(dot: ir.Operation, elem_bytes: int = 4) -> int:
    """The workgroup memory `tile.row_exchange` of the dot's accumulator takes
    (targets/nvidia/tma.py: rows padded by 8 elements), exchanged as
    `elem_bytes`-byte elements (4: f32; 2: after the epilogue's cast)."""
    rows, cols = ir.RankedTensorType(dot.results[0].type).shape
    return rows * (cols + 8) * elem_bytes


def tile_bytes(load: ir.Operation) -> int:
    t = ir.RankedTensorType(load.results[0].type)
    return axis_info.type_bytes(t.element_type) * t.shape[0] * t.shape[1]


def issue(loads: list[ir.Operation], rings: list[ir.Value], bars: ir.Value, slot: ir.Value,
          live: ir.Value, mapping: ps.Mapping) -> None:
    """At the current insertion point: expect the slot's bytes, then copy each
    load's block (its coordinates looked up in `mapping`) into its ring."""
    tile_memory.tma_expect(bars, slot, live, sum(tile_bytes(ld) for ld in loads),
                           loc=loads[0].location)
    for load, ring in zip(loads, rings):
        hint = coords_op(load)
        assert hint is not None and (tma := tma_id(load)) is not None
        coords = [mapping.get(v, v) for v in hint.operands]
        tile_memory.tma_copy(ring, slot, bars, live, coords, tma, loc=load.location)


def wait(bars: ir.Value, counter: ir.Value, stages: int, loc: ir.Location) -> ir.Operation:
    """Wait for slot counter % S to be filled (phase (counter / S) & 1)."""
    s = ps.i32(stages)
    slot = arith.RemUIOp(counter, s).result
    phase = arith.AndIOp(arith.DivUIOp(counter, s).result, ps.i32(1)).result
    return tile_memory.mbarrier_wait(bars, slot, phase, loc=loc)


def wait_free(empty: ir.Value, index: ir.Value, stages: int, loc: ir.Location) -> ir.Operation:
    """The issuing thread waits until slot index % S is free for load `index`:
    every warp arrived on `empty` for the slot's previous use (index - S, phase
    (index / S - 1) & 1); the first S loads find that "previous" phase complete."""
    s = ps.i32(stages)
    slot = arith.RemUIOp(index, s).result
    parity = arith.XOrIOp(arith.AndIOp(arith.DivUIOp(index, s).result, ps.i32(1)).result,
                          ps.i32(1)).result
    return tile_memory.mbarrier_wait(empty, slot, parity, loc=loc, one_thread=True)


def drop_hints(loads: list[ir.Operation]) -> None:
    """Erase the coordinate hints of loads the rings replace."""
    for load in loads:
        hint = coords_op(load)
        if hint is not None:
            hint.erase()
