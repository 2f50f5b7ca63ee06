"""`convert-tile-to-gpu` rules for `tile.atomic_rmw` and `tile.atomic_cas`.

Input: the atomic ops at the tiled level (pointer, value, mask and result tiles
share one layout, which `tile-layout` guarantees), or on scalars.
Output, per element the calling thread owns: `llvm.atomicrmw` (`kind` -> the
LLVM bin op; floats use `fadd`/`fmax`/`fmin`) or `llvm.cmpxchg` (floats
through same-width integers, which is all cmpxchg accepts) on `!llvm.ptr<1>`,
ordering acq_rel (cmpxchg failure: acquire) at device scope (an atomicrmw through
the target hook `hook.atomic-rmw`: NVIDIA's keeps the ordering in the PTX text),
under an `scf.if`
when the element is masked off or the thread only holds a replica of it (a
layout that covers more than the tile would otherwise apply the operation
several times).  Lanes that do nothing get 0 as their old value.  A scalar
atomic runs once per program (thread 0; Triton's semantics), and its old
value reaches every thread through workgroup memory.
Unsupported kind/type/target combinations raise a `TilecError` naming the op
and the target.

Nearest upstream analogue: `memref.generic_atomic_rmw` / `memref.atomic_rmw`
lowering in `finalize-memref-to-llvm`; Triton's `AtomicRMWOpConversion`.
"""
from __future__ import annotations

import functools
from typing import Callable

from mlir import ir
from mlir.dialects import arith, gpu, llvm, scf, vector

from tilec.dialects import tile
from tilec.errors import TilecError, source_loc
from tilec.passes.gpu.context import FuncLowering, Rule, is_tile, segments
from tilec.passes.gpu.reduce import canonical_thread
from tilec.passes.rules import RuleSet
from tilec.targets import Target

RULES: RuleSet[Rule] = RuleSet("gpu.atomic")

_BIN_OPS = {
    "add": llvm.AtomicBinOp.add, "fadd": llvm.AtomicBinOp.fadd, "max": llvm.AtomicBinOp.max,
    "min": llvm.AtomicBinOp.min, "umax": llvm.AtomicBinOp.umax, "umin": llvm.AtomicBinOp.umin,
    "fmax": llvm.AtomicBinOp.fmax, "fmin": llvm.AtomicBinOp.fmin, "xchg": llvm.AtomicBinOp.xchg,
    "and": llvm.AtomicBinOp._and, "or": llvm.AtomicBinOp._or, "xor": llvm.AtomicBinOp._xor,
}


def _scope(target: Target) -> str:
    """LLVM's syncscope for "all threads of the device" on this target."""
    if target.atomic_scope is None:
        raise TilecError(f"no device-scope atomics for target {target.name}")
    return target.atomic_scope


def _check(op: ir.Operation, kind: str, elem: ir.Type, target: Target) -> None:
    width = elem.width if isinstance(elem, (ir.IntegerType, ir.FloatType)) else 0
    is_float = isinstance(elem, ir.FloatType)
    ok = width in (32, 64) or (is_float and width == 16 and kind in ("fadd", "fmax", "fmin", "xchg"))
    if not ok:
        raise TilecError(f"'{op.name}' ({kind}) on {elem} is not supported on {target.name}: "
                         "use 32- or 64-bit elements", source_loc(op.location))


def _guarded(L: FuncLowering, pred: ir.Value | None, t: ir.Type,
             build: Callable[[], ir.Value]) -> ir.Value:
    if pred is None:
        return build()
    if_op = scf.IfOp(pred, [t], has_else=True)
    with ir.InsertionPoint(if_op.then_block):
        scf.YieldOp([build()])
    with ir.InsertionPoint(if_op.else_block):
        scf.YieldOp([L.zero(t)])
    return if_op.results[0]


def _once_per_program(L: FuncLowering, pred: ir.Value | None, t: ir.Type,
                      build: Callable[[], ir.Value]) -> ir.Value:
    """A scalar atomic, as Triton runs it: once per program (thread 0), its old
    value broadcast to every thread through workgroup memory, so a spin lock
    (`while tl.atomic_cas(lock, 0, 1) == 1`) takes the lock once and every
    thread sees the same answer.  Scalar code is uniform across the program,
    so the barriers are reached by all threads."""
    assert L.tid is not None
    first = arith.CmpIOp(arith.CmpIPredicate.eq, L.tid, L.const_i32(0)).result
    slot = L.shared_buffer(t, 1)
    # Every thread's earlier accesses happen before the atomic (a lock's
    # release covers the whole program's stores), and earlier readers of the
    # slot are done; the second barrier publishes the old value (and a lock's
    # acquire to the whole program).
    gpu.BarrierOp()
    only = scf.IfOp(first, [], has_else=False)
    with ir.InsertionPoint(only.then_block):
        llvm.StoreOp(_guarded(L, pred, t, build), slot)
        scf.YieldOp([])
    gpu.BarrierOp()
    return llvm.LoadOp(t, slot).result


def _and(a: ir.Value | None, b: ir.Value | None) -> ir.Value | None:
    if a is None:
        return b
    if b is None:
        return a
    return arith.AndIOp(a, b).result


def _per_element(L: FuncLowering, op: ir.Operation, ptr: ir.Value, args: list[ir.Value],
                 mask: ir.Value | None, elem: ir.Type,
                 emit: Callable[[ir.Value, list[ir.Value]], ir.Value]) -> None:
    res = op.results[0]
    if not is_tile(ptr.type):
        L.values[res] = _once_per_program(L, L.get(mask) if mask is not None else None, elem,
                                          lambda: emit(L.get(ptr), [L.get(a) for a in args]))
        return
    d = L.dist(ptr.type)
    canon = canonical_thread(L, d)
    pf = L.frag(ptr)
    afs = [L.frag(a) if is_tile(a.type) else None for a in args]
    mf = L.frag(mask) if mask is not None and is_tile(mask.type) else None
    out = []
    for ci in range(d.num_chunks):
        elems = []
        for j in range(d.vec_len):
            p = L.extract(pf[ci], j)
            vals = [L.extract(f[ci], j) if f is not None else L.get(a) for f, a in zip(afs, args)]
            m = None
            if mask is not None:
                m = L.extract(mf[ci], j) if mf is not None else L.get(mask)
            elems.append(_guarded(L, _and(canon, m), elem, functools.partial(emit, p, vals)))
        vt = ir.VectorType.get([d.vec_len], elem)
        out.append(vector.FromElementsOp(vt, elems).result)
    L.values[res] = out


@RULES.rule("tile.atomic_rmw")
def _atomic_rmw(L: FuncLowering, op: ir.Operation) -> None:
    kind = ir.StringAttr(op.attributes["kind"]).value
    if kind not in _BIN_OPS:
        raise TilecError(f"unknown atomic kind '{kind}'", source_loc(op.location))
    ptr, value = op.operands[0], op.operands[1]
    mask = op.operands[2] if segments(op)[2] else None
    elem = tile.pointee(tile.element_type(ptr.type))
    _check(op, kind, elem, L.target)
    scope = _scope(L.target)
    rmw = L.hook("hook.atomic-rmw")

    def emit(p: ir.Value, vals: list[ir.Value]) -> ir.Value:
        return rmw(L, kind, _BIN_OPS[kind], p, vals[0], scope)

    _per_element(L, op, ptr, [value], mask, elem, emit)


@RULES.rule("hook.atomic-rmw")
def _llvm_rmw(L: FuncLowering, kind: str, bin_op: llvm.AtomicBinOp, p: ir.Value, v: ir.Value,
              scope: str) -> ir.Value:
    """One element's read-modify-write, `llvm.atomicrmw` acq_rel at `scope`
    (targets whose back end drops the ordering have their own form:
    targets/nvidia/atomics.py)."""
    return llvm.AtomicRMWOp(bin_op, p, v, llvm.AtomicOrdering.acq_rel, syncscope=scope).result


@RULES.rule("tile.atomic_cas")
def _atomic_cas(L: FuncLowering, op: ir.Operation) -> None:
    ptr, cmp, value = op.operands[0], op.operands[1], op.operands[2]
    elem = tile.pointee(tile.element_type(ptr.type))
    _check(op, "cas", elem, L.target)
    scope = _scope(L.target)
    as_int = ir.IntegerType.get_signless(elem.width)

    def emit(p: ir.Value, vals: list[ir.Value]) -> ir.Value:
        c, v = vals
        if elem != as_int:
            c, v = arith.BitcastOp(as_int, c).result, arith.BitcastOp(as_int, v).result
        pair = llvm.AtomicCmpXchgOp(p, c, v, llvm.AtomicOrdering.acq_rel,
                                    llvm.AtomicOrdering.acquire, syncscope=scope).result
        old = llvm.ExtractValueOp(as_int, pair, [0]).result
        return old if elem == as_int else arith.BitcastOp(elem, old).result

    _per_element(L, op, ptr, [cmp, value], None, elem, emit)
