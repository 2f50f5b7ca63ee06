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

Stores (`store_plan`, `store_through_tma`): a tagged `tile.store` of the
wgmma accumulator, or of its `arith.truncf` (the epilogue's
`acc.to(tl.float16)`), seen through the one `tile.convert_layout` that
`tile-layout` put before it, becomes `tile.tma_store` of the accumulator-layout
value into a one-slot 128-byte swizzled buffer of its own (`tile.local_alloc`);
the store's pointer and mask arithmetic and the conversion die.  A flattened
loop's buffer is allocated with the rings and lives through the loop (the
store of one tile overlaps the next tile's loop; the next store waits for the
previous one's reads); after the loop `tile.tma_store_wait` precedes the
loop's last barrier and the buffer is released before the rings.  After an
ordinary loop the buffer is allocated where the rings were, and the store is
followed by its wait, a barrier and the release.
In a flattened loop whose rings at the asked depth leave too little room for
the whole tile's buffer (fp8 128x256x128 at 4 stages: 192 KiB of rings and a
64 KiB f16 tile), `fit_store` gives the store a buffer of 1/2, 1/4, ... of the
tile's columns (whole 128-byte atoms): the store then writes and copies the
tile in that many column passes through it, each waiting until the previous
one's copy has read the buffer (targets/nvidia/tma_store.py), so the loop
keeps the asked `num_stages` instead of losing a stage; the loop says so
(`tile.store_note`).  Only where no depth down to 2 fits the store at all
does the pointer store stay.  Nearest upstream analogue:
Triton's TMA store lowering (`async_tma_copy_local_to_global` with
`async_tma_store_wait`, TMAStoresPipeline).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from mlir import ir
from mlir.dialects import arith

from tilec.dialects import tile, tile_memory
from tilec.passes import pipeline_support as ps
from tilec.passes.analysis import axis_info
from tilec.passes.analysis.layouts import Distribution


def tma_id(load: ir.Operation) -> int | None:
    """The tensor map a tagged `tile.load` can be copied through, or None."""
    if "tile.tma" not in load.attributes:
        return None
    return int(ir.IntegerAttr(load.attributes["tile.tma"]).value)


def coords_op(load: ir.Operation) -> ir.Operation | None:
    """The `tile.tma_coords` of a tagged load (before it in its block)."""
    return ps.tma_coords_op(load)


def all_tagged(loads: list[ir.Operation]) -> bool:
    return all(tma_id(ld) is not None and coords_op(ld) is not None for ld in loads)


def rows_in_order_ok(for_op: ir.Operation, acc_index: int, dot: ir.Operation,
                     tail: ir.Operation | None = None) -> bool:
    """Whether the loop's accumulator may hold its rows permuted until the loop
    ends: it starts as a splat constant (the same in every row), nothing in the
    body but the dot reads it and nothing but the yield reads the product.  In
    a flattened loop (`tail`: its epilogue branch) the product goes round the
    loop through the branch, whose epilogue reads it (after the exchange) and
    which resets it to a splat at a tile's end."""
    if not ps.splat_constant(list(for_op.operands)[3 + acc_index]):
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
            ps.splat_constant(ps.ops(tail.regions[0].blocks[0])[-1].operands[r])
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


def b_evict_first(flattened: bool) -> bool:
    """Whether B's TMA copies take an L2 evict-first policy (A's never): in a
    per-tile K loop, not a flattened persistent one.  Measured on the H200
    (benchmarks/results/README.md, session 26): tutorial-03 with B so hinted
    read 1.018-1.12x Triton paired on every benchmark shape (127x4096x4096
    1.12: the memset's dirty L2 lines survive instead of being written back
    during the launch) against 0.999-1.032 without; back to back the
    127-row launch lost 2-4%, and A so hinted (session 22) cost DRAM."""
    return not flattened


_RING = "tile.multicast_ring"   # B copied for a cluster (pipeline_cluster.barriers)


def issue(loads: list[ir.Operation], rings: list[ir.Value], bars: ir.Value, slot: ir.Value,
          live: ir.Value, mapping: ps.Mapping, b_evict_first: bool = False) -> None:
    """At the current insertion point: expect the slot's bytes, then copy each
    load's block (its coordinates looked up in `mapping`) into its ring (the
    second, B's, under an L2 evict-first policy where `b_evict_first`; a load
    marked `tile.multicast_ring` multicast to its cluster's CTAs)."""
    tile_memory.tma_expect(bars, slot, live, sum(tile_bytes(ld) for ld in loads),
                           loc=loads[0].location)
    for i, (load, ring) in enumerate(zip(loads, rings)):
        hint = coords_op(load)
        assert hint is not None and (tma := tma_id(load)) is not None
        coords = [mapping.get(v, v) for v in hint.operands]
        tile_memory.tma_copy(ring, slot, bars, live, coords, tma, loc=load.location,
                             evict_first=b_evict_first and i == 1,
                             multicast=int(ir.IntegerAttr(load.attributes[_RING]).value)
                             if _RING in load.attributes else 1)


def _slot_phase(index: ir.Value, stages: int) -> tuple[ir.Value, ir.Value]:
    """(index % S, (index / S) & 1): the slot of load `index` and the phase
    its fill completes."""
    s = ps.i32(stages)
    slot = arith.RemUIOp(index, s).result
    return slot, arith.AndIOp(arith.DivUIOp(index, s).result, ps.i32(1)).result


def wait(bars: ir.Value, counter: ir.Value, stages: int, loc: ir.Location) -> ir.Operation:
    """Wait for slot counter % S to be filled (phase (counter / S) & 1)."""
    slot, phase = _slot_phase(counter, stages)
    return tile_memory.mbarrier_wait(bars, slot, phase, loc=loc)


def wait_phased(bars: ir.Value, counter: ir.Value, slot: ir.Value, stages: int,
                loc: ir.Location) -> ir.Operation:
    """Wait for `slot` to be filled, where the counter wraps at 2S (0 <= counter
    < 2S, slot = counter mod S): the phase is counter >= S."""
    late = arith.CmpIOp(arith.CmpIPredicate.uge, counter, ps.i32(stages)).result
    phase = arith.ExtUIOp(ir.IntegerType.get_signless(32), late).result
    return tile_memory.mbarrier_wait(bars, slot, phase, loc=loc)


def wait_if(full: ir.Value, index: ir.Value, live: ir.Value, stages: int,
            loc: ir.Location) -> None:
    """Wait for slot index % S to be filled where `live`; elsewhere for its
    previous phase (complete, or the initial one), which returns at once."""
    slot, phase = _slot_phase(index, stages)
    true = arith.ConstantOp(ir.IntegerType.get_signless(1), 1).result
    dead = arith.ExtUIOp(ir.IntegerType.get_signless(32), arith.XOrIOp(live, true).result).result
    tile_memory.mbarrier_wait(full, slot, arith.XOrIOp(phase, dead).result, loc=loc)


def wait_free(empty: ir.Value, index: ir.Value, stages: int, loc: ir.Location) -> ir.Operation:
    """The issuing thread waits until slot index % S is free for load `index`:
    every warp arrived on `empty` for the slot's previous use (index - S, phase
    (index / S - 1) & 1); the first S loads find that "previous" phase complete."""
    slot, phase = _slot_phase(index, stages)
    parity = arith.XOrIOp(phase, ps.i32(1)).result
    return tile_memory.mbarrier_wait(empty, slot, parity, loc=loc, one_thread=True)


def drop_hints(loads: list[ir.Operation]) -> None:
    """Erase the coordinate hints of loads the rings replace."""
    for load in loads:
        hint = coords_op(load)
        if hint is not None:
            hint.erase()


@dataclass
class StorePlan:
    """A tagged store of the accumulator that `tile.tma_store` can replace."""
    store: ir.Operation               # the tagged `tile.store`
    conv: ir.Operation | None         # the `tile.convert_layout` before it
    hint: ir.Operation                # its `tile.tma_coords`
    tma: int
    chunks: int = 1                   # column passes through its buffer (`fit_store`)

    @property
    def value(self) -> ir.Value:
        """What it stores, in the accumulator's layout (read when used: the
        pipeliner replaces the accumulator under it)."""
        return self.conv.operands[0] if self.conv is not None else self.store.operands[1]

    @property
    def nbytes(self) -> int:
        """The workgroup memory of its buffer."""
        t = ir.RankedTensorType(self.value.type)
        return t.shape[0] * t.shape[1] * axis_info.type_bytes(t.element_type)

    @property
    def buffer_bytes(self) -> int:
        """The workgroup memory of its buffer: one column pass's."""
        return self.nbytes // self.chunks


def _only_user(v: ir.Value) -> ir.Operation | None:
    uses = list(v.uses)
    if len(uses) != 1 or not isinstance(uses[0].owner, ir.OpView):
        return None
    return uses[0].owner.operation


# The TMA store pays where the accumulator takes at least half of a thread's
# registers: measured on the H200 (benchmarks/results/README.md, session 7),
# 128x256 tiles of 8 warps (128 f32 per thread) were 0-3% faster with it and
# lost their 4-byte spill, 128x128 tiles of 8 warps (64 per thread) 3-5% slower
# than the row exchange and pointer stores.
TMA_STORE_MIN_ACC_PER_THREAD = 128


def wide(dot: ir.Operation, num_warps: int) -> bool:
    """Whether `dot`'s accumulator is wide enough for a TMA store to pay."""
    rows, cols = ir.RankedTensorType(dot.results[0].type).shape
    return rows * cols // (32 * num_warps) >= TMA_STORE_MIN_ACC_PER_THREAD


def store_plan(readers: list[ir.OpOperand], num_warps: int) -> StorePlan | None:
    """The tagged store of the accumulator whose readers (scf.yields left out)
    are `readers`: one `arith.truncf` or none, then one `tile.convert_layout` or
    none, then a `tile.store` (unmasked or masked) of 2- or 4-byte elements
    tagged by `tile-tma-descriptors` or `tile-tma-pointers` with its hint (two
    coordinates, or three: a batched map's) in the same block, whose
    value's layout `tile.tma_store` can write (`store_layout_ok`, rows in place
    or permuted)."""
    if len(readers) != 1 or not isinstance(readers[0].owner, ir.OpView):
        return None
    op = readers[0].owner.operation
    value = readers[0].owner.operands[readers[0].operand_number]
    if op.name == "arith.truncf":
        value = op.results[0]
        op = _only_user(value)
    if op is not None and op.name == "tile.convert_layout":
        conv: ir.Operation | None = op
        op = _only_user(op.results[0])
    else:
        conv = None
    if op is None or op.name != "tile.store" or tma_id(op) is None:
        return None
    src = conv.results[0] if conv is not None else value
    if op.operands[1] != src:
        return None
    t = ir.RankedTensorType(value.type)
    eb = axis_info.type_bytes(t.element_type)
    layout = tile.layout_of(t)
    if len(t.shape) != 2 or eb not in (2, 4) or layout is None:
        return None
    d = Distribution.of(layout, tuple(t.shape))
    if not all(store_layout_ok(d, eb, p, num_warps) for p in (False, True)):
        return None
    hint = coords_op(op)
    tma = tma_id(op)
    if hint is None or tma is None or len(list(hint.operands)) not in tile_memory.TMA_COORDS:
        return None
    return StorePlan(op, conv, hint, tma)


def store_buffer(plan: StorePlan, loc: ir.Location) -> ir.Value:
    """At the current insertion point: the store's one-slot swizzled buffer."""
    t = ir.RankedTensorType(plan.value.type)
    rows, cols = t.shape
    return tile_memory.local_alloc(1, [rows, cols // plan.chunks], t.element_type,
                                   swizzle=ps.SWIZZLE, row_permutation="none", loc=loc)


def fit_store(for_op: ir.Operation, plan: StorePlan, tail: ir.Operation, stages: int,
              per_stage: int, shared_bytes: int, fit: int) -> tuple[StorePlan | None, int]:
    """A flattened loop's store beside its rings: (the plan with the fewest
    column passes whose buffer fits, the deepest ring depth up to `stages` at
    which one does), or (None, `fit`: the depth without it) where none fits
    even at depth 2.  The epilogue's other layout conversions and
    `RESERVED_SHARED` come out of the budget too; a pass covers whole
    128-byte column atoms.  A store in passes puts `tile.store_note` on the loop."""
    other = ps.conversion_bytes(tail, plan.conv)
    t = ir.RankedTensorType(plan.value.type)
    rows, cols = t.shape
    atoms = cols * axis_info.type_bytes(t.element_type) // 128
    for depth in range(stages, 1, -1):
        chunks = 1
        while chunks <= atoms and atoms % chunks == 0:
            if depth * per_stage + plan.nbytes // chunks + other + ps.RESERVED_SHARED \
                    <= shared_bytes:
                if chunks > 1:
                    for_op.attributes["tile.store_note"] = ir.StringAttr.get(
                        f"the TMA store writes its {rows}x{cols} tile in {chunks} column "
                        f"passes through a {plan.nbytes // chunks}-byte buffer, so that "
                        f"num_stages={depth} fits")
                return replace(plan, chunks=chunks), depth
            chunks *= 2
    return None, fit


def store_through_tma(plan: StorePlan, row_permutation: str, buf: ir.Value | None) -> None:
    """Replace the plan's store by `tile.tma_store` (into `buf`, or a buffer of
    its own allocated, waited for and released around it)."""
    store = plan.store
    loc = store.location
    block = store.block
    with loc, ir.InsertionPoint(store):
        own = buf is None
        if buf is None:
            buf = store_buffer(plan, loc)
        tile_memory.tma_store(buf, plan.value, list(plan.hint.operands), plan.tma,
                              row_permutation=row_permutation, loc=loc)
        if own:
            tile_memory.tma_store_wait(loc=loc)
            tile.barrier(loc=loc)
            tile_memory.local_dealloc(buf, loc=loc)
    store.erase()
    plan.hint.erase()
    if plan.conv is not None and not list(plan.conv.results[0].uses):
        plan.conv.erase()
    ps.dce(block)


def store_layout_ok(d: Distribution, elem_bytes: int, permute: bool, num_warps: int) -> bool:
    """Whether `tile.tma_store` can write a tile distributed as `d` into its
    swizzled buffer with one address per thread and 128-byte cover
    (targets/nvidia/tma_store.py): 2-D, columns fastest, no wrapped bases,
    one row per chunk, rows advancing by multiples of 8 (when permuted: a row
    cover of 8 W, so that a thread's base row lies in the first 8 W rows),
    a column cover of a power-of-two of at most 128 bytes, and chunks of at most
    16 bytes that divide it."""
    if d.sliced_dim is not None or d.rank != 2 or d.fast != 1 or d.ept[0] != 1:
        return False
    if d.needs_wrap(0) or d.needs_wrap(1):
        return False
    rows, cols = d.shape
    cover_bytes = d.cover[1] * elem_bytes
    vec_bytes = d.vec_len * elem_bytes
    if permute and (num_warps % 4 or num_warps & (num_warps - 1) or d.cover[0] != 8 * num_warps):
        return False
    return rows % 8 == 0 and (cols * elem_bytes) % 128 == 0 and d.cover[0] % 8 == 0 and \
        cover_bytes <= 128 and cover_bytes & (cover_bytes - 1) == 0 and \
        vec_bytes <= 16 and 16 % vec_bytes == 0 and cover_bytes % vec_bytes == 0 and \
        (rows <= 256 or rows % 256 == 0)
