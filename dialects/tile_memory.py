"""Typed builders of the `tile` memory-hierarchy ops (dialects/memory_ops.py
describes them): shared-memory rings, asynchronous copies into them and
matrix-unit products reading them, as `tile-pipeline` builds them."""
from __future__ import annotations

from typing import Sequence

from mlir import ir

from tilec.dialects.tile import IP, _create, _segments

SHARED_MEMORY_SPACE = 3
# Coordinates of a TMA copy or store: a map's rows and columns behind up to
# three batch dimensions (a tensor map has rank <= 5).
TMA_COORDS = range(2, 6)


def ring_type(slots: int, shape: Sequence[int], element: ir.Type) -> ir.MemRefType:
    return ir.MemRefType.get([slots, *shape], element,
                             memory_space=ir.IntegerAttr.get(
                                 ir.IntegerType.get_signless(64), SHARED_MEMORY_SPACE))


def local_alloc(slots: int, shape: Sequence[int], element: ir.Type, *, swizzle: int,
                row_permutation: str, loc: ir.Location, ip: IP = None) -> ir.Value:
    i32 = ir.IntegerType.get_signless(32)
    return _create("tile.local_alloc", [ring_type(slots, shape, element)], [],
                   {"swizzle": ir.IntegerAttr.get(i32, swizzle),
                    "row_permutation": ir.StringAttr.get(row_permutation)}, loc, ip).result


def local_dealloc(ring: ir.Value, *, loc: ir.Location, ip: IP = None) -> ir.Operation:
    return _create("tile.local_dealloc", [], [ring], None, loc, ip)


def async_copy(ring: ir.Value, slot: ir.Value, ptr: ir.Value, mask: ir.Value | None, *,
               loc: ir.Location, ip: IP = None) -> ir.Operation:
    operands = [ring, slot, ptr] + ([mask] if mask is not None else [])
    return _create("tile.async_copy", [], operands,
                   {"operandSegmentSizes": _segments(1, 1, 1, int(mask is not None))}, loc, ip)


def local_store(ring: ir.Value, slot: ir.Value, value: ir.Value, *, loc: ir.Location,
                ip: IP = None) -> ir.Operation:
    return _create("tile.local_store", [], [ring, slot, value], None, loc, ip)


def async_commit(*, loc: ir.Location, ip: IP = None) -> ir.Operation:
    return _create("tile.async_commit", [], [], None, loc, ip)


def async_wait(pending: int, *, loc: ir.Location, ip: IP = None) -> ir.Operation:
    return _create("tile.async_wait", [], [],
                   {"pending": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), pending)},
                   loc, ip)


def mma(a: ir.Value, a_slot: ir.Value, b: ir.Value, b_slot: ir.Value, acc: ir.Value, kind: str,
        *, loc: ir.Location, ip: IP = None) -> ir.Value:
    return _create("tile.mma", [acc.type], [a, a_slot, b, b_slot, acc],
                   {"kind": ir.StringAttr.get(kind)}, loc, ip).result


def mma_wait(acc: ir.Value, pending: int, *, loc: ir.Location, ip: IP = None) -> ir.Value:
    return _create("tile.mma_wait", [acc.type], [acc],
                   {"pending": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), pending)},
                   loc, ip).result


def _i32_attr(v: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), v)


def tma_coords(coords: Sequence[ir.Value], tma: int, *, loc: ir.Location,
               ip: IP = None) -> ir.Operation:
    return _create("tile.tma_coords", [], list(coords), {"tma": _i32_attr(tma)}, loc, ip)


def mbarrier_alloc(slots: int, *, loc: ir.Location, ip: IP = None,
                   per_warp: bool = False, per_cta: bool = False) -> ir.Value:
    t = ir.MemRefType.get([slots], ir.IntegerType.get_signless(64),
                          memory_space=ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                          SHARED_MEMORY_SPACE))
    attrs: dict[str, ir.Attribute] = {"slots": _i32_attr(slots)}
    if per_warp:
        attrs["tile.arrivals"] = ir.StringAttr.get("warps")
    if per_cta:
        attrs["tile.arrivals"] = ir.StringAttr.get("ctas")
    return _create("tile.mbarrier_alloc", [t], [], attrs, loc, ip).result


def mbarrier_arrive(bars: ir.Value, slot: ir.Value, live: ir.Value, *, loc: ir.Location,
                    ip: IP = None) -> ir.Operation:
    return _create("tile.mbarrier_arrive", [], [bars, slot, live], None, loc, ip)


def mbarrier_inval(bars: ir.Value, *, loc: ir.Location, ip: IP = None) -> ir.Operation:
    return _create("tile.mbarrier_inval", [], [bars], None, loc, ip)


def tma_expect(bars: ir.Value, slot: ir.Value, live: ir.Value, nbytes: int, *,
               loc: ir.Location, ip: IP = None) -> ir.Operation:
    return _create("tile.tma_expect", [], [bars, slot, live], {"bytes": _i32_attr(nbytes)},
                   loc, ip)


def tma_copy(ring: ir.Value, slot: ir.Value, bars: ir.Value, live: ir.Value,
             coords: Sequence[ir.Value], tma: int, *, loc: ir.Location,
             ip: IP = None, evict_first: bool = False, multicast: int = 1) -> ir.Operation:
    attrs: dict[str, ir.Attribute] = {"tma": _i32_attr(tma)}
    if evict_first:
        attrs["tile.l2_evict_first"] = ir.UnitAttr.get()
    if multicast > 1:
        attrs["tile.multicast"] = _i32_attr(multicast)
    return _create("tile.tma_copy", [], [ring, slot, bars, live, *coords], attrs, loc, ip)


def cta_rank(*, loc: ir.Location, ip: IP = None) -> ir.Value:
    return _create("tile.cta_rank", [ir.IntegerType.get_signless(32)], [], None, loc, ip).result


def cluster_barrier(*, loc: ir.Location, ip: IP = None) -> ir.Operation:
    return _create("tile.cluster_barrier", [], [], None, loc, ip)


def cluster_release(bars: ir.Value, slot: ir.Value, phase: ir.Value, arrive: ir.Value,
                    live: ir.Value, *, loc: ir.Location, ip: IP = None) -> ir.Operation:
    return _create("tile.cluster_release", [], [bars, slot, phase, arrive, live], None, loc, ip)


def mbarrier_wait(bars: ir.Value, slot: ir.Value, phase: ir.Value, *, loc: ir.Location,
                  ip: IP = None, one_thread: bool = False) -> ir.Operation:
    attrs = {"tile.one_thread": ir.UnitAttr.get()} if one_thread else None
    return _create("tile.mbarrier_wait", [], [bars, slot, phase], attrs, loc, ip)


def row_exchange(acc: ir.Value, *, loc: ir.Location, ip: IP = None) -> ir.Value:
    return _create("tile.row_exchange", [acc.type], [acc],
                   {"permutation": ir.StringAttr.get("wgmma")}, loc, ip).result


def tma_store(buf: ir.Value, value: ir.Value, coords: Sequence[ir.Value], tma: int, *,
              row_permutation: str, loc: ir.Location, ip: IP = None) -> ir.Operation:
    return _create("tile.tma_store", [], [buf, value, *coords],
                   {"tma": _i32_attr(tma), "row_permutation": ir.StringAttr.get(row_permutation)},
                   loc, ip)


def tma_store_wait(*, loc: ir.Location, ip: IP = None) -> ir.Operation:
    return _create("tile.tma_store_wait", [], [], None, loc, ip)


def turn_init(*, loc: ir.Location, ip: IP = None) -> ir.Operation:
    return _create("tile.turn_init", [], [], None, loc, ip)


def turn_wait(*, loc: ir.Location, ip: IP = None) -> ir.Operation:
    return _create("tile.turn_wait", [], [], None, loc, ip)


def turn_pass(*, loc: ir.Location, ip: IP = None) -> ir.Operation:
    return _create("tile.turn_pass", [], [], None, loc, ip)


def producer_role(warps: int, *, loc: ir.Location, ip: IP = None) -> ir.Value:
    return _create("tile.producer_role", [ir.IntegerType.get_signless(1)], [],
                   {"warps": _i32_attr(warps)}, loc, ip).result
