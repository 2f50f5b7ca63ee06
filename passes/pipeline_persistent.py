"""Helpers of the persistent form of tile-pipeline's deferred schedule
(passes/tile_pipeline_defer.py, "Persistent kernels"): finding a persistent
kernel's tile loop around a hinted loop, rebuilding it with more carried
indices, the per-tile issues' guard, and the teardown after the tile loop.
Not a pass; tile-warp-specialize reads the marks (`PERSISTENT`, `ISSUE`).
"""
from __future__ import annotations

import math
from typing import Callable

from mlir import ir
from mlir.dialects import scf

from tilec.dialects import tile, tile_memory
from tilec.passes import pipeline_support as ps
from tilec.passes import pipeline_tma
from tilec.passes.analysis import axis_info

PERSISTENT = "tile.persistent"
ISSUE = "tile.producer_issue"


def persistent_outer(for_op: ir.Operation) -> ir.Operation | None:
    """The outer loop of a persistent kernel around `for_op`: a loop hinted
    warp_specialize whose parent is an `scf.for` directly in a kernel's body
    (module docstring, "Persistent kernels"); else None."""
    if "tile.warp_specialize" not in for_op.attributes:
        return None
    parent = for_op.parent
    if parent is None or parent.name != "scf.for":
        return None
    outer = parent.operation if isinstance(parent, ir.OpView) else parent
    func = outer.parent
    if func is None or func.name != "func.func" or "tile.kernel" not in func.attributes:
        return None
    return outer


def extend(outer: ir.Operation, extra: list[ir.Value]) -> ir.Operation:
    """`outer` rebuilt with the iteration arguments `extra` appended (yielded
    unchanged until the caller sets their yield operands); `outer` is erased."""
    body, args, lb, ub, step, inits = ps.loop_parts(outer)
    with outer.location, ir.InsertionPoint(outer):
        new = scf.ForOp(lb, ub, step, inits + extra)
    for named in outer.attributes:
        new.operation.attributes[named.name] = named.attr
    nb = new.body
    for op in ps.ops(body):
        nb.append(op)
    new_args = list(nb.arguments)
    for old, arg in zip(args, new_args):
        old.replace_all_uses_with(arg)
    old_yield = ps.ops(nb)[-1]
    with outer.location, ir.InsertionPoint(old_yield):
        scf.YieldOp(list(old_yield.operands) + new_args[len(args):])
    old_yield.erase()
    for old, res in zip(outer.results, new.results):
        old.replace_all_uses_with(res)
    outer.erase()
    return new.operation


def guarded(live: ir.Value, emit: Callable[[], None]) -> None:
    """`emit()` inside `scf.if live` (marked as a producer issue)."""
    branch = scf.IfOp(live)
    branch.operation.attributes[ISSUE] = ir.UnitAttr.get()
    with ir.InsertionPoint(branch.then_block):
        emit()
        scf.YieldOp([])


def teardown(bars: list[ir.Value], rings: list[ir.Value], loc: ir.Location) -> None:
    """A barrier, the barriers invalidated and the rings released."""
    tile.barrier(loc=loc)
    for b in reversed(bars):
        tile_memory.mbarrier_inval(b, loc=loc)
    for ring in reversed(rings):
        tile_memory.local_dealloc(ring, loc=loc)


def store_bytes(outer: ir.Operation) -> int:
    """The workgroup memory of the TMA store buffers an epilogue in `outer`
    may take (pipeline_tma.store_through_tma: the largest tagged tile store;
    such a store replaces its layout conversion)."""
    total = 0
    for op in ps.region_ops(outer):
        if op.name == "tile.store" and pipeline_tma.tma_id(op) is not None:
            t = ir.RankedTensorType(op.operands[1].type)
            total = max(total, math.prod(t.shape) * axis_info.type_bytes(t.element_type))
    return total
