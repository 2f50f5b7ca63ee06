"""Masked loads and stores of 8- and 16-bit lanes on hosts that cannot mask them.

x86 before AVX-512BW masks only 32- and 64-bit lanes (`vpmaskmovd/q`).  LLVM
expands an `llvm.intr.masked.load/store/gather/scatter` of narrower lanes with
a mask it cannot see into one branch per lane, and its code generation of the
result grows faster than the lane count: a softmax row of 2048 f16 lanes did
not finish in 300 s.  Targets without `Feature.MASKED_NARROW_MEMORY` lower such
accesses of more than `MAX_UNROLLED_LANES` lanes here:

- all lanes true (`vector.reduction <and>` of the mask): the access without a
  mask, as memory.py emits it (plain vector loads/stores per contiguous chunk,
  or a gather/scatter under an all-true constant mask);
- otherwise a loop over groups of lanes through stack buffers (the pointers,
  the mask as bytes, the values): a group that lies in one contiguous chunk and
  whose mask is all true moves as one vector, every other group lane by lane
  under an `scf.if`.

The nearest upstream analogue is LLVM's ScalarizeMaskedMemIntrin, which
unrolls the lanes; here they stay a loop, so code size does not grow with the
tile.
"""
from __future__ import annotations

import contextlib
import math
from typing import Callable

from mlir import ir
from mlir.dialects import arith, llvm, scf, vector

from tilec.passes.analysis import axis_info as ai
from tilec.passes.cpu.context import (Lowering, as_bytes, entry_alloca, for_loop, if_else,
                                      int_t, lane_ptr)
from tilec.targets import Feature

# Up to this many masked narrow lanes in one access, LLVM's per-lane branches
# are kept: their code generation is quick and they need no stack buffers.
MAX_UNROLLED_LANES = 64


def needs_lane_loop(lw: Lowering, n: int, ebytes: int) -> bool:
    """Whether a masked access of `n` lanes of `ebytes` bytes goes through a lane loop."""
    return (ebytes < 4 and n > MAX_UNROLLED_LANES
            and not lw.target.has(Feature.MASKED_NARROW_MEMORY))


def _all_true(mask: ir.Value) -> ir.Value:
    return vector.ReductionOp(int_t(1), vector.CombiningKind.AND, mask).result


def _group(chunk: int, lw: Lowering, ebytes: int) -> int:
    """Lanes moved as one vector when their mask is all true: a SIMD register's
    worth that lies inside one contiguous chunk (1: lane by lane only)."""
    return math.gcd(chunk, max(1, lw.vector_bytes // ebytes)) if chunk > 1 else 1


def _buffers(lw: Lowering, ptr: ir.Value, mask: ir.Value, n: int) -> tuple[ir.Value, ir.Value]:
    """Stack copies of the lane pointers and of the mask (one byte per lane)."""
    pbuf = entry_alloca(lw, lw.llvm_ptr, n)
    llvm.StoreOp(ptr, pbuf, alignment=8)
    mbuf = entry_alloca(lw, int_t(8), n)
    llvm.StoreOp(arith.ExtUIOp(as_bytes(mask.type), mask).result, mbuf, alignment=1)
    return pbuf, mbuf


def _lane_true(mbuf: ir.Value, i: ir.Value) -> ir.Value:
    i8 = int_t(8)
    byte = llvm.LoadOp(i8, lane_ptr(mbuf, i, i8), alignment=1).result
    return arith.CmpIOp(arith.CmpIPredicate.ne, byte,
                        arith.ConstantOp(i8, ir.IntegerAttr.get(i8, 0)).result).result


def _lane_loop(lw: Lowering, n: int, group: int, mbuf: ir.Value, pbuf: ir.Value,
               whole: Callable[[ir.Value, ir.Value, int], None],
               lane: Callable[[ir.Value, ir.Value], None]) -> None:
    """For each group of `group` lanes from lane j: whole(first pointer, j,
    group) when its mask is all true (group > 1), else lane(pointer, i) for
    each lane i of it whose mask is true."""
    ptr_t = lw.llvm_ptr

    def pointer(i: ir.Value) -> ir.Value:
        return llvm.LoadOp(ptr_t, lane_ptr(pbuf, i, ptr_t), alignment=8).result

    def lanes(j: ir.Value) -> None:
        inner = for_loop(group) if group > 1 else None
        with ir.InsertionPoint(inner.body) if inner is not None else contextlib.nullcontext():
            i = (arith.AddIOp(j, inner.induction_variable).result if inner is not None else j)
            if_else(_lane_true(mbuf, i), lambda: lane(pointer(i), i), lambda: None, None)
            if inner is not None:
                scf.YieldOp([])

    loop = for_loop(n, group)
    with ir.InsertionPoint(loop.body):
        j = loop.induction_variable
        if group > 1:
            i8v = ir.VectorType.get([group], int_t(8))
            bytes_ = llvm.LoadOp(i8v, lane_ptr(mbuf, j, int_t(8)), alignment=1).result
            zero = arith.ConstantOp(i8v, ir.DenseElementsAttr.get_splat(
                i8v, ir.IntegerAttr.get(int_t(8), 0))).result
            bits = arith.CmpIOp(arith.CmpIPredicate.ne, bytes_, zero).result
            if_else(_all_true(bits), lambda: whole(pointer(j), j, group), lambda: lanes(j), None)
        else:
            lanes(j)
        scf.YieldOp([])


def load(lw: Lowering, ptr: ir.Value, mask: ir.Value, passthru: ir.Value, rt: ir.Type,
         chunk: int, align: int, unmasked: Callable[[], ir.Value]) -> ir.Value:
    """A masked load of vector type `rt` through the lane pointers `ptr`
    (contiguous in runs of `chunk` lanes, the first of each run `align`-byte
    aligned); `unmasked()` builds the load of every lane."""
    vt = ir.VectorType(rt)
    n, elem = vt.shape[0], vt.element_type
    ebytes = ai.type_bytes(elem)
    group = _group(chunk, lw, ebytes)
    galign = align if (group * ebytes) % align == 0 else ebytes

    def lane_loop() -> ir.Value:
        pbuf, mbuf = _buffers(lw, ptr, mask, n)
        rbuf = entry_alloca(lw, elem, n)
        llvm.StoreOp(passthru, rbuf, alignment=ebytes)

        def whole(p: ir.Value, j: ir.Value, g: int) -> None:
            gt = ir.VectorType.get([g], elem)
            v = llvm.LoadOp(gt, p, alignment=galign).result
            llvm.StoreOp(v, lane_ptr(rbuf, j, elem), alignment=ebytes)

        def lane(p: ir.Value, i: ir.Value) -> None:
            v = llvm.LoadOp(elem, p, alignment=ebytes).result
            llvm.StoreOp(v, lane_ptr(rbuf, i, elem), alignment=ebytes)
        _lane_loop(lw, n, group, mbuf, pbuf, whole, lane)
        return llvm.LoadOp(rt, rbuf, alignment=ebytes).result

    out = if_else(_all_true(mask), unmasked, lane_loop, rt)
    assert out is not None
    return out


def store(lw: Lowering, ptr: ir.Value, value: ir.Value, mask: ir.Value, chunk: int,
          align: int, unmasked: Callable[[], None]) -> None:
    """A masked store of `value` through the lane pointers `ptr` (see `load`);
    `unmasked()` builds the store of every lane."""
    vt = ir.VectorType(value.type)
    n, elem = vt.shape[0], vt.element_type
    ebytes = ai.type_bytes(elem)
    group = _group(chunk, lw, ebytes)
    galign = align if (group * ebytes) % align == 0 else ebytes

    def lane_loop() -> None:
        pbuf, mbuf = _buffers(lw, ptr, mask, n)
        vbuf = entry_alloca(lw, elem, n)
        llvm.StoreOp(value, vbuf, alignment=ebytes)

        def whole(p: ir.Value, j: ir.Value, g: int) -> None:
            gt = ir.VectorType.get([g], elem)
            v = llvm.LoadOp(gt, lane_ptr(vbuf, j, elem), alignment=ebytes).result
            llvm.StoreOp(v, p, alignment=galign)

        def lane(p: ir.Value, i: ir.Value) -> None:
            v = llvm.LoadOp(elem, lane_ptr(vbuf, i, elem), alignment=ebytes).result
            llvm.StoreOp(v, p, alignment=ebytes)
        _lane_loop(lw, n, group, mbuf, pbuf, whole, lane)

    if_else(_all_true(mask), unmasked, lane_loop, None)

