"""The cluster half of `tile-pipeline`'s TMA rings (passes/tile_pipeline.py): B
blocks multicast to the two CTAs of a program split by tile-split-ctas.  Not a
pass of its own.

Input: a wgmma loop whose two loads `tile-tma-descriptors` tagged, B's with
`tile.multicast = n` (tile-split-ctas: both CTAs of the cluster load the same
B block).  Each CTA copies its 1/n of B's rows into both CTAs' slots
(`tile.tma_copy {tile.multicast}`) and its own A; each CTA's transaction
barrier still expects the whole slot's bytes (n parts of B, one A).
A slot may be refilled only when every CTA of the cluster has released it
(a copy writes into the other CTA's slot too), so beside the S transaction
barriers the loop gets S "slot is free" barriers counting n arrivals
(`tile.arrivals = "ctas"`): at iteration j the issuing thread, after the
CTA barrier that follows the product's wait (every warp of its CTA is done
with slot (j - 1) % S), arrives on that slot's barrier in every CTA
(`tile.cluster_release`; not at the loop's first iteration, which refills a
slot never used), its warp waits until its own has completed phase
((j - 1) / S) & 1 (both CTAs released iteration j - 1), and only then it
expects and copies.  The loop's first refill (slot S - 1, never used) finds
its "previous" phase complete (parity 1 of a fresh barrier); the prologue's
slots 0 .. S - 2 are filled without a wait.  A `tile.cluster_barrier`
after the barriers' initialization (a CTA's copies complete on the other's
barriers) and one after the loop (no CTA leaves while the other may still
arrive on its barriers) close the protocol.

Nearest upstream analogue: CUTLASS's `PipelineTmaAsync` with a 2x1 cluster
(consumer arrivals on every multicast source's empty barrier) and
`cute::cluster_sync`.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from tilec.dialects import tile_memory
from tilec.passes import pipeline_support as ps
from tilec.passes import pipeline_tma


def ctas(loads: list[ir.Operation]) -> int:
    """The CTAs B's block is multicast to: 1 (none) unless every tagged load is
    a 2-D map block whose rows split into parts of whole 8-row swizzle groups
    that a TMA box can hold (at most 256 rows); else each CTA copies it all."""
    found = [int(ir.IntegerAttr(ld.attributes["tile.multicast"]).value)
             for ld in loads if "tile.multicast" in ld.attributes]
    n = max(found, default=1)
    for ld in loads:
        if "tile.multicast" not in ld.attributes:
            continue
        rows = ir.RankedTensorType(ld.results[0].type).shape[0]
        hint = pipeline_tma.coords_op(ld)
        if rows % (8 * n) or rows // n > 256 or hint is None or len(hint.operands) != 2:
            return 1
    return n


def barriers(loads: list[ir.Operation], kind: str, stages: int,
             loc: ir.Location) -> tuple[ir.Value, ir.Value | None]:
    """The rings' S transaction barriers, and for a wgmma loop whose B is
    multicast their "slot is free" barriers, then the cluster barrier that
    makes every CTA's barriers initialized before any copy; B's load is then
    marked `tile.multicast_ring`, which `pipeline_tma.issue` reads.  Elsewhere
    (and in the other pipeliners, which never mark a load) no second array,
    and each CTA copies all of B itself."""
    full = tile_memory.mbarrier_alloc(stages, loc=loc)
    if kind != "wgmma" or ctas(loads) == 1:
        return full, None
    for ld in loads:
        if "tile.multicast" in ld.attributes:
            ld.attributes["tile.multicast_ring"] = ld.attributes["tile.multicast"]
    empty = tile_memory.mbarrier_alloc(stages, per_cta=True, loc=loc)
    tile_memory.cluster_barrier(loc=loc)
    return full, empty


def release(empty: ir.Value | None, slot: ir.Value, counter: ir.Value, iv: ir.Value, lb: ir.Value,
            live: ir.Value, stages: int, loc: ir.Location) -> None:
    """Before the refill of `slot` at the iteration of `counter` (0 <= counter
    < 2S, the loop's phased counter): release the slot cluster-wide and wait
    for every CTA's release (phase ((j - 1) / S) & 1, j - 1 taken mod 2S).
    Nothing without `empty`."""
    if empty is None:
        return
    two = 2 * stages
    prev = arith.RemUIOp(arith.AddIOp(counter, ps.i32(two - 1)).result, ps.i32(two)).result
    late = arith.CmpIOp(arith.CmpIPredicate.uge, prev, ps.i32(stages)).result
    phase = arith.ExtUIOp(ir.IntegerType.get_signless(32), late).result
    arrive = arith.CmpIOp(arith.CmpIPredicate.ne, iv, lb).result
    tile_memory.cluster_release(empty, slot, phase, arrive, live, loc=loc)


def finish(empty: ir.Value | None, full: ir.Value, loc: ir.Location) -> None:
    """After the loop: with `empty`, no CTA goes on while another may arrive on
    its barriers, then both barrier arrays are invalidated (else `full` only)."""
    if empty is not None:
        tile_memory.cluster_barrier(loc=loc)
        tile_memory.mbarrier_inval(empty, loc=loc)
    tile_memory.mbarrier_inval(full, loc=loc)
