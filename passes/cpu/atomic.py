"""CPU lowering of `tile.atomic_rmw` and `tile.atomic_cas`.

| op | CPU form |
|---|---|
| `tile.atomic_rmw` | per element `llvm.atomicrmw <kind> ... acq_rel` guarded by `scf.if` on the mask bit; masked-off lanes return 0.  Up to `UNROLL_LANES` lanes are unrolled; wider tiles spill pointers/values/mask to stack buffers (allocas in the entry block) and run an `scf.for` over the lanes. |
| `tile.atomic_cas` | the same with `llvm.cmpxchg ... acq_rel acquire` (floats are bitcast to integers of their width, as cmpxchg wants). |

Float atomics (fadd/fmax/fmin) have no x86 instruction: LLVM's AtomicExpand
turns them into compare-exchange loops, which are atomic under the runtime's
parallel programs.
"""
from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import arith, llvm, scf

from tilec.dialects import tile
from tilec.errors import TilecError, source_loc
from tilec.passes.cpu.context import (CpuRules, Lowering, elem_bits, entry_alloca, extract,
                                      for_loop, from_elements, if_else, int_t, lane_ptr,
                                      scalar_bytes, segments, zero)

RULES = CpuRules("cpu.atomic")
# Atomics on at most this many lanes are unrolled; wider ones loop over lanes.
UNROLL_LANES = 16

_B = llvm.AtomicBinOp
_ATOMIC_BIN_OP = {
    "xchg": _B.xchg, "add": _B.add, "and": _B._and, "or": _B._or, "xor": _B._xor,
    "max": _B.max, "min": _B.min, "umax": _B.umax, "umin": _B.umin,
    "fadd": _B.fadd, "fmax": _B.fmax, "fmin": _B.fmin,
}


def _guarded(bit: ir.Value | None, fn: Callable[[], ir.Value],
             result: ir.Type | None) -> ir.Value | None:
    """fn() if `bit` (or unconditionally); 0 for a masked-off lane."""
    if bit is None:
        return fn()
    return if_else(bit, fn, lambda: zero(result) if result is not None else None, result)


def _per_lane(lw: Lowering, operands: list[ir.Value], mask: ir.Value | None,
              fn: Callable[[list[ir.Value]], ir.Value], result: ir.Type,
              want_result: bool) -> ir.Value | None:
    """Apply `fn` to the scalars of each lane of `operands` (vectors of one length,
    or scalars) where `mask` is set; returns the vector (or scalar) of results."""
    res_t = result if want_result else None
    if not isinstance(operands[0].type, ir.VectorType):
        return _guarded(mask, lambda: fn(operands), res_t)
    n = ir.VectorType(operands[0].type).shape[0]
    if n <= UNROLL_LANES:
        lanes = []
        for k in range(n):
            scalars = [extract(v, k) for v in operands]
            bit = extract(mask, k) if mask is not None else None
            r = _guarded(bit, lambda: fn(scalars), res_t)
            if r is not None:
                lanes.append(r)
        return from_elements(lanes) if want_result else None
    # Wide tiles: spill the lanes to stack buffers and loop over them.
    if mask is not None:
        mask = arith.ExtUIOp(ir.VectorType.get([n], int_t(8)), mask).result
    spilled = operands + ([mask] if mask is not None else [])
    elems = [ir.VectorType(v.type).element_type for v in spilled]
    bufs = []
    for v, et in zip(spilled, elems):
        buf = entry_alloca(lw, et, n)
        llvm.StoreOp(v, buf, alignment=scalar_bytes(et))
        bufs.append(buf)
    out_buf = entry_alloca(lw, result, n) if want_result else None
    loop = for_loop(n)
    with ir.InsertionPoint(loop.body):
        index = loop.induction_variable
        scalars = [llvm.LoadOp(et, lane_ptr(buf, index, et), alignment=scalar_bytes(et)).result
                   for buf, et in zip(bufs, elems)]
        bit = None
        if mask is not None:
            bit = arith.TruncIOp(int_t(1), scalars.pop()).result
        r = _guarded(bit, lambda: fn(scalars), res_t)
        if r is not None and out_buf is not None:
            llvm.StoreOp(r, lane_ptr(out_buf, index, result), alignment=scalar_bytes(result))
        scf.YieldOp([])
    if out_buf is None:
        return None
    vt = ir.VectorType.get([n], result)
    return llvm.LoadOp(vt, out_buf, alignment=scalar_bytes(result)).result


def _bind_old(lw: Lowering, op: ir.Operation, res: ir.Value | None) -> None:
    """The old values, or a poison value of their type when nobody reads them
    (the big-tile path still stores every tile result to its buffer)."""
    lw.bind(op.result, res if res is not None else llvm.PoisonOp(lw.convert(op.result.type)).result)


@RULES.rule("tile.atomic_rmw")
def atomic_rmw(lw: Lowering, op: ir.Operation) -> None:
    seg = segments(op)
    kind = ir.StringAttr(op.attributes["kind"]).value
    if kind not in _ATOMIC_BIN_OP:
        raise TilecError(f"atomic kind '{kind}' is not supported on the CPU target",
                         source_loc(op.location))
    ptr = lw.mapped(op.operands[0])
    val = lw.mapped(op.operands[1])
    mask = lw.mapped(op.operands[2]) if seg[2] else None
    elem = tile.element_type(op.result.type)

    def rmw(s: list[ir.Value]) -> ir.Value:
        return llvm.AtomicRMWOp(_ATOMIC_BIN_OP[kind], s[0], s[1],
                                llvm.AtomicOrdering.acq_rel).result
    want = len(list(op.result.uses)) > 0
    _bind_old(lw, op, _per_lane(lw, [ptr, val], mask, rmw, elem, want))


@RULES.rule("tile.atomic_cas")
def atomic_cas(lw: Lowering, op: ir.Operation) -> None:
    ptr, cmp, val = (lw.mapped(v) for v in op.operands)
    elem = tile.element_type(op.result.type)
    is_float = isinstance(elem, ir.FloatType)
    ity = int_t(elem_bits(elem)) if is_float else elem

    def cas(s: list[ir.Value]) -> ir.Value:
        c, v = s[1], s[2]
        if is_float:
            c = arith.BitcastOp(ity, c).result
            v = arith.BitcastOp(ity, v).result
        pair = llvm.AtomicCmpXchgOp(s[0], c, v, llvm.AtomicOrdering.acq_rel,
                                    llvm.AtomicOrdering.acquire).result
        old = llvm.ExtractValueOp(ity, pair, [0]).result
        if is_float:
            old = arith.BitcastOp(elem, old).result
        return old
    want = len(list(op.result.uses)) > 0
    _bind_old(lw, op, _per_lane(lw, [ptr, cmp, val], None, cas, elem, want))
