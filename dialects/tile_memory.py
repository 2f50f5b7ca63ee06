"""Typed builders of the `tile` memory-hierarchy ops (dialects/memory_ops.py
describes them): shared-memory rings, asynchronous copies into them and
matrix-unit products reading them, as `tile-pipeline` builds them."""
from __future__ import annotations

from typing import Sequence

from mlir import ir

from tilec.dialects.tile import IP, _create, _segments

SHARED_MEMORY_SPACE = 3


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
