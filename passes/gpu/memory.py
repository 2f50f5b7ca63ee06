"""`convert-tile-to-gpu` rules for `tile.load` and `tile.store`.

Input: `tile.load`/`tile.store` at the tiled level (pointer, mask, other and
value tiles share one layout) or on scalars.
Output, per access of `w` elements (`FuncLowering.access` picks the width and
alignment axis info proves, `w * sizeof(T) <= target.vector_bytes`; the mask
is constant over each access):
  * unmasked: `llvm.load` / `llvm.store` of `vector<w x T>` (or `T`).
  * masked: the target hooks `hook.masked-load` / `hook.masked-store`.  The
    generic rules here: a uniform-mask `llvm.intr.masked.load` for vector
    loads, an `scf.if` around scalar loads and all stores.  A target's own
    variant (targets/nvidia/rules.py: predicated PTX `ld/st.global` where
    `Feature.PTX_PREDICATED_MEM` holds) may return None for an access it does
    not take, and the generic rule runs.
  * `hook.tile-access` may take a whole tile access in a target's own form
    (the generic hook takes none; targets/amd/buffer_ops.py: buffer
    instructions from a scalar base where `Feature.BUFFER_OPS` holds).
  * `hook.address-lane` gives element j of an address or mask vector; the
    generic rule is `vector.extract` (a target may recompute it on scalars).
i1 tiles are stored as i8.  A scalar store (a scalar value through a scalar
pointer) is done once per program, by thread 0 (Triton's semantics: every
thread holds the same value and address), its mask and'ed with that; unlike a
scalar atomic (atomic.py) it has no result to broadcast, so no barriers.

Nearest upstream analogue: `vector.maskedload`/`vector.maskedstore` lowering
(`convert-vector-to-llvm`); Triton's `LoadOpConversion`/`StoreOpConversion`
(`LoadStoreOpToLLVM.cpp`).
"""
from __future__ import annotations

import math
from typing import Callable

from mlir import ir
from mlir.dialects import arith, llvm, scf

from tilec.passes.analysis import axis_info
from tilec.passes.gpu.context import FuncLowering, Rule, is_i1, is_tile, result, segments
from tilec.passes.rules import RuleSet

RULES: RuleSet[Rule] = RuleSet("gpu.memory")

Alt = Callable[[], ir.Value]


def _mem_type(elem: ir.Type) -> ir.Type:
    return ir.IntegerType.get_signless(8) if is_i1(elem) else elem


# ---------------------------------------------------------------- generic hooks

@RULES.rule("hook.address-lane")
def extract_lane(L: FuncLowering, v: ir.Value, j: int) -> ir.Value:
    return L.extract(v, j)


@RULES.rule("hook.tile-access")
def no_tile_access(L: FuncLowering, op: ir.Operation) -> bool:
    """A target's own form of a whole tile load/store (targets/amd/buffer_ops.py:
    buffer instructions where `Feature.BUFFER_OPS` holds); False: the rules here run."""
    return False


@RULES.rule("hook.masked-load")
def guarded_load(L: FuncLowering, pred: ir.Value, t: ir.Type, p: ir.Value, align: int,
                 alt: Alt) -> ir.Value:
    """A load of `t` at `p` where `pred` holds, `alt()` elsewhere."""
    if isinstance(t, ir.VectorType):
        # A uniform-mask llvm.masked.load: LLVM turns it into one branch around
        # the wide load, and lets the loads be scheduled together (ptxas
        # needs 2 fewer registers for vector add than with an scf.if here).
        mask_v = L.splat(pred, t.shape[0])
        return llvm.MaskedLoadOp(t, p, mask_v, align, pass_thru=alt()).result
    if_op = scf.IfOp(pred, [t], has_else=True)
    with ir.InsertionPoint(if_op.then_block):
        scf.YieldOp([llvm.LoadOp(t, p, alignment=align).result])
    with ir.InsertionPoint(if_op.else_block):
        scf.YieldOp([alt()])
    return if_op.results[0]


@RULES.rule("hook.masked-store")
def guarded_store(L: FuncLowering, pred: ir.Value, v: ir.Value, p: ir.Value,
                  align: int) -> bool:
    """A store of `v` at `p` where `pred` holds."""
    if_op = scf.IfOp(pred, [], has_else=False)
    with ir.InsertionPoint(if_op.then_block):
        llvm.StoreOp(v, p, alignment=align)
        scf.YieldOp([])
    return True


def _load_one(L: FuncLowering, pred: ir.Value | None, t: ir.Type, p: ir.Value, align: int,
              alt: Alt) -> ir.Value:
    if pred is None:
        return llvm.LoadOp(t, p, alignment=align).result
    v = L.hook("hook.masked-load")(L, pred, t, p, align, alt)
    return v if v is not None else guarded_load(L, pred, t, p, align, alt)


def first_thread(L: FuncLowering) -> ir.Value:
    """i1: the calling thread is thread 0 of its program."""
    assert L.tid is not None
    return arith.CmpIOp(arith.CmpIPredicate.eq, L.tid, L.const_i32(0)).result


def _store_one(L: FuncLowering, pred: ir.Value | None, v: ir.Value, p: ir.Value,
               align: int) -> None:
    if pred is None:
        llvm.StoreOp(v, p, alignment=align)
    elif not L.hook("hook.masked-store")(L, pred, v, p, align):
        guarded_store(L, pred, v, p, align)


# ---------------------------------------------------------------- rules

@RULES.rule("tile.load")
def _load(L: FuncLowering, op: ir.Operation) -> None:
    seg = segments(op)
    ptr = op.operands[0]
    mask = op.operands[1] if seg[1] else None
    other = op.operands[1 + seg[1]] if seg[2] else None
    res = result(op)
    elem = res.type.element_type if is_tile(res.type) else res.type
    mem_t = _mem_type(elem)
    eb = axis_info.type_bytes(mem_t)

    def from_mem(v: ir.Value) -> ir.Value:
        if mem_t == elem:
            return v
        return arith.CmpIOp(arith.CmpIPredicate.ne, v, L.zero(v.type)).result

    def to_mem(v: ir.Value) -> ir.Value:
        return v if mem_t == elem else arith.ExtUIOp(
            ir.VectorType.get(v.type.shape, mem_t) if isinstance(v.type, ir.VectorType) else mem_t,
            v).result

    if not is_tile(res.type):
        pred = L.get(mask) if mask is not None else None
        v = _load_one(L, pred, mem_t, L.get(ptr), math.gcd(L.axis.get(ptr).divisibility[0], eb),
                      lambda: to_mem(L.get(other)) if other is not None else L.zero(mem_t))
        L.values[res] = from_mem(v)
        return
    if L.hook("hook.tile-access")(L, op):
        return
    d = L.dist(res.type)
    w, align = L.access(ptr, mask, d, eb)
    piece_t = ir.VectorType.get([w], mem_t) if w > 1 else mem_t
    pf = L.frag(ptr)
    mf = (L.frag(mask) if is_tile(mask.type) else None) if mask is not None else None
    of = (L.frag(other) if is_tile(other.type) else None) if other is not None else None
    elem_at = L.hook("hook.address-lane")
    out = []
    for ci in range(d.num_chunks):
        pieces = []
        for j in range(0, d.vec_len, w):
            pred = None
            if mask is not None:
                pred = elem_at(L, mf[ci], j) if mf is not None else L.get(mask)

            def alt(ci: int = ci, j: int = j) -> ir.Value:
                if other is None:
                    return L.zero(piece_t)
                if of is None:
                    s = L.get(other)
                    return to_mem(L.splat(s, w) if w > 1 else s)
                return to_mem(L.slice(of[ci], j, w) if w > 1 else L.extract(of[ci], j))
            pieces.append(_load_one(L, pred, piece_t, elem_at(L, pf[ci], j), align, alt))
        chunk = L.concat(pieces)
        if not isinstance(chunk.type, ir.VectorType):
            chunk = L.splat(chunk, 1)
        out.append(from_mem(chunk))
    L.values[res] = out


@RULES.rule("tile.store")
def _store(L: FuncLowering, op: ir.Operation) -> None:
    seg = segments(op)
    ptr, value = op.operands[0], op.operands[1]
    mask = op.operands[2] if seg[2] else None
    elem = value.type.element_type if is_tile(value.type) else value.type
    mem_t = _mem_type(elem)
    eb = axis_info.type_bytes(mem_t)

    def store(pred: ir.Value | None, v: ir.Value, p: ir.Value, align: int) -> None:
        if mem_t != elem:
            t = ir.VectorType.get(v.type.shape, mem_t) if isinstance(v.type, ir.VectorType) else mem_t
            v = arith.ExtUIOp(t, v).result
        _store_one(L, pred, v, p, align)

    if not is_tile(ptr.type):
        once = first_thread(L)
        pred = once if mask is None else arith.AndIOp(L.get(mask), once).result
        store(pred, L.get(value), L.get(ptr), math.gcd(L.axis.get(ptr).divisibility[0], eb))
        return
    if L.hook("hook.tile-access")(L, op):
        return
    d = L.dist(ptr.type)
    w, align = L.access(ptr, mask, d, eb)
    pf = L.frag(ptr)
    vf = L.frag(value) if is_tile(value.type) else None
    mf = (L.frag(mask) if is_tile(mask.type) else None) if mask is not None else None
    elem_at = L.hook("hook.address-lane")
    for ci in range(d.num_chunks):
        for j in range(0, d.vec_len, w):
            pred = None
            if mask is not None:
                pred = elem_at(L, mf[ci], j) if mf is not None else L.get(mask)
            if vf is not None:
                v = L.slice(vf[ci], j, w)
            else:
                v = L.get(value)
                v = L.splat(v, w) if w > 1 else v
            store(pred, v, elem_at(L, pf[ci], j), align)
