"""CPU lowering of pointer arithmetic, loads and stores.

| op | CPU form |
|---|---|
| `tile.addptr` | `llvm.getelementptr` on a pointer or a vector of pointers. |
| `tile.load`   | (bf16 vectors as their i16 bits) split into chunks of the contiguity axis info proves: `llvm.load` (unmasked) or `llvm.intr.masked.load` per chunk, joined with `vector.insert_strided_slice`; `llvm.intr.masked.gather` when nothing is contiguous or there would be more than `MAX_CHUNKS` chunks; a scalar load under a mask is an `scf.if`.  Booleans are bytes in memory: loaded as i8 and compared with zero. |
| `tile.store`  | the same with `llvm.store` / `llvm.intr.masked.store` / `llvm.intr.masked.scatter`; booleans are stored as bytes 0/1.  In strip-mined elementwise kernels (`lw.streaming`) vector stores are non-temporal, and a masked chunk stores non-temporally when its mask is all true.  A mask known at compile time (constants, cmpi/andi/ori/xori of them) gives plain stores of its runs of true lanes, never `llvm.intr.masked.store` (see `_store_runs`). |

On a target without `Feature.MASKED_NARROW_MEMORY`, a masked load or store of
more than 64 8- or 16-bit lanes whose mask is not a compile-time constant is an
all-true fast path and a loop over lane groups (passes/cpu/narrow_masks.py).

Alignment is what axis info proves about the pointers' divisibility, capped at
the SIMD width (`target.vector_bytes`).
"""
from __future__ import annotations

import math
from typing import Callable

from mlir import ir
from mlir.dialects import arith, llvm, vector

from tilec.dialects import tile
from tilec.passes.analysis import axis_info as ai
from tilec.passes.cpu import narrow_masks
from tilec.passes.cpu.context import (GEP_DYNAMIC, CpuRules, Lowering, all_true, as_bytes,
                                      extract, if_else, insert_slice, int_t, is_bool, scalar_zero,
                                      segments, slice_, zeros)

RULES = CpuRules("cpu.memory")
MAX_CHUNKS = 256  # beyond this many contiguous pieces, a gather is cheaper to compile


@RULES.rule("tile.addptr")
def addptr(lw: Lowering, op: ir.Operation) -> None:
    elem = tile.pointee(tile.element_type(op.operands[0].type))
    lw.bind(op.result, llvm.GEPOp(lw.convert(op.result.type), lw.mapped(op.operands[0]),
                                  [lw.mapped(op.operands[1])], [GEP_DYNAMIC], elem,
                                  llvm.GEPNoWrapFlags.none).result)


def _bits(vt: ir.VectorType) -> ir.VectorType:
    """The i16 vector a bf16 vector is loaded and stored as: LLVM 22's x86
    back end cannot select a masked load of bf16 lanes on a host with
    AVX512-BF16 (`Cannot select: v16bf16 masked_load`, an abort: found by the
    tma fuzzer on Triton's tutorial matmul in bf16), and the bits are all a
    load or store moves."""
    return ir.VectorType.get(vt.shape, int_t(16))


def _chunking(lw: Lowering, ptr: ir.Value, n: int, elem_bytes: int) -> tuple[int, int]:
    """(chunk length, alignment in bytes) for an access of n elements through `ptr`."""
    info = lw.info.get(ptr)
    contig = info.contiguity[-1] if info.contiguity else 1
    chunk = math.gcd(contig, n)
    div = info.divisibility[-1] if info.divisibility else elem_bytes
    align = max(elem_bytes, min(div, chunk * elem_bytes, lw.vector_bytes))
    align = 1 << (align.bit_length() - 1)
    return chunk, align


@RULES.rule("tile.load")
def load(lw: Lowering, op: ir.Operation) -> None:
    seg = segments(op)
    ptr_old = op.operands[0]
    mask = lw.mapped(op.operands[1]) if seg[1] else None
    other = lw.mapped(op.operands[1 + seg[1]]) if seg[2] else None
    rt = lw.convert(op.result.type)
    if not is_bool(rt):
        lw.bind(op.result, _load_value(lw, ptr_old, mask, other, rt))
        return
    # Booleans live in memory as bytes (NumPy, torch, Triton), but LLVM packs a
    # vector of i1 into bits: load bytes and compare them with zero.
    bt = as_bytes(rt)
    if other is not None:
        other = arith.ExtUIOp(bt, other).result
    raw = _load_value(lw, ptr_old, mask, other, bt)
    zero = zeros(bt) if isinstance(bt, ir.VectorType) else scalar_zero(bt)
    lw.bind(op.result, arith.CmpIOp(arith.CmpIPredicate.ne, raw, zero).result)


def _load_value(lw: Lowering, ptr_old: ir.Value, mask: ir.Value | None, other: ir.Value | None,
                rt: ir.Type) -> ir.Value:
    """Load a value of (converted) type `rt` through the pointer(s) `ptr_old`."""
    ptr = lw.mapped(ptr_old)
    if not isinstance(rt, ir.VectorType):
        ebytes = ai.type_bytes(rt)

        def do_load() -> ir.Value:
            return llvm.LoadOp(rt, ptr, alignment=ebytes).result
        if mask is None:
            return do_load()
        res = if_else(mask, do_load, lambda: other if other is not None else scalar_zero(rt), rt)
        assert res is not None
        return res
    vt = ir.VectorType(rt)
    n = vt.shape[0]
    elem = vt.element_type
    if isinstance(elem, ir.BF16Type):   # moved as their bits (see _bits)
        bits_t = _bits(vt)
        raw = _load_value(lw, ptr_old, mask, None if other is None else
                          arith.BitcastOp(bits_t, other).result, bits_t)
        return arith.BitcastOp(rt, raw).result
    ebytes = ai.type_bytes(elem)
    chunk, align = _chunking(lw, ptr_old, n, ebytes)
    passthru = other if other is not None else zeros(rt)
    if (mask is not None and narrow_masks.needs_lane_loop(lw, n, ebytes)
            and constant_bits(mask) is None):
        return narrow_masks.load(lw, ptr, mask, passthru, rt, chunk, align,
                                 lambda: _load_chunks(lw, ptr, None, passthru, rt, chunk, align))
    return _load_chunks(lw, ptr, mask, passthru, rt, chunk, align)


def _load_chunks(lw: Lowering, ptr: ir.Value, mask: ir.Value | None, passthru: ir.Value,
                 rt: ir.Type, chunk: int, align: int) -> ir.Value:
    """The load of `rt` through `ptr`: per contiguous chunk of `chunk` lanes, or a gather."""
    vt = ir.VectorType(rt)
    n, elem = vt.shape[0], vt.element_type
    ebytes = ai.type_bytes(elem)
    if chunk == 1 or n // chunk > MAX_CHUNKS:
        m = mask if mask is not None else all_true(n)
        return llvm.masked_gather(rt, ptr, m, [passthru], ebytes).result
    acc = None
    ct = ir.VectorType.get([chunk], elem)
    for k in range(n // chunk):
        base = extract(ptr, k * chunk)
        if mask is None:
            piece = llvm.LoadOp(ct, base, alignment=align).result
        else:
            piece = llvm.MaskedLoadOp(ct, base, slice_(mask, k * chunk, chunk), align,
                                      pass_thru=slice_(passthru, k * chunk, chunk)).result
        if chunk == n:
            acc = piece
        else:
            acc = insert_slice(piece, acc if acc is not None else zeros(rt), k * chunk)
    assert acc is not None
    return acc


def _constant_ints(v: ir.Value, depth: int = 0) -> list[int] | None:
    """The lanes of a vector that folds to constants (arith.constant, and
    cmpi/andi/ori/xori of such), else None."""
    owner = v.owner
    if depth > 8 or not isinstance(owner, ir.OpView) or not isinstance(v.type, ir.VectorType):
        return None
    o = owner.operation
    n = ir.VectorType(v.type).shape[0]
    if o.name == "arith.constant":
        try:
            dense = ir.DenseIntElementsAttr(o.attributes["value"])
        except (ValueError, TypeError):
            return None
        if dense.is_splat:
            return [int(ir.IntegerAttr(dense.get_splat_value()).value)] * n
        return [int(dense[i]) for i in range(n)]
    if (o.name != "arith.cmpi" and o.name not in _BITWISE) or len(o.operands) != 2:
        return None
    a, b = (_constant_ints(x, depth + 1) for x in o.operands)
    if a is None or b is None:
        return None
    if o.name == "arith.cmpi":
        pred = _PREDICATES[int(ir.IntegerAttr(o.attributes["predicate"]).value)]
        width = ir.IntegerType(ir.VectorType(o.operands[0].type).element_type).width
        return [int(pred(x, y, width)) for x, y in zip(a, b)]
    return [_BITWISE[o.name](x, y) for x, y in zip(a, b)]


def _unsigned(x: int, width: int) -> int:
    return x & ((1 << width) - 1)


# arith.cmpi predicate numbers (eq, ne, slt, sle, sgt, sge, ult, ule, ugt, uge).
_PREDICATES = [
    lambda x, y, w: x == y, lambda x, y, w: x != y, lambda x, y, w: x < y,
    lambda x, y, w: x <= y, lambda x, y, w: x > y, lambda x, y, w: x >= y,
    lambda x, y, w: _unsigned(x, w) < _unsigned(y, w),
    lambda x, y, w: _unsigned(x, w) <= _unsigned(y, w),
    lambda x, y, w: _unsigned(x, w) > _unsigned(y, w),
    lambda x, y, w: _unsigned(x, w) >= _unsigned(y, w),
]
_BITWISE: dict[str, Callable[[int, int], int]] = {
    "arith.andi": lambda x, y: x & y, "arith.ori": lambda x, y: x | y,
    "arith.xori": lambda x, y: x ^ y}


def constant_bits(mask: ir.Value) -> list[bool] | None:
    """The lanes of a mask known at compile time, else None."""
    ints = _constant_ints(mask)
    return None if ints is None else [bool(x & 1) for x in ints]


def _store_runs(ptr: ir.Value, value: ir.Value, bits: list[bool], start: int, count: int,
                align: int, ebytes: int) -> None:
    """Store lanes [start, start + count) of `value` whose mask bit is a
    compile-time true, as plain stores of each run of true lanes.  LLVM 22's
    x86 back end turns a masked store of narrow elements with a constant
    one-lane mask into a 4-byte `vmovd` (an i16 lane wrote the next element,
    an i8 lane the next three: out of bounds, and the heap corruption found
    in a long-lived process); plain stores have no such freedom."""
    k = start
    end = start + count
    while k < end:
        if not bits[k]:
            k += 1
            continue
        run_end = k
        while run_end < end and bits[run_end]:
            run_end += 1
        length = run_end - k
        a = align if k == start and length == count else ebytes
        if length == 1:
            llvm.StoreOp(extract(value, k), extract(ptr, k), alignment=ebytes)
        else:
            llvm.StoreOp(slice_(value, k, length), extract(ptr, k), alignment=a)
        k = run_end


@RULES.rule("tile.store")
def store(lw: Lowering, op: ir.Operation) -> None:
    seg = segments(op)
    ptr_old = op.operands[0]
    ptr = lw.mapped(ptr_old)
    value = lw.mapped(op.operands[1])
    mask = lw.mapped(op.operands[2]) if seg[2] else None
    if is_bool(value.type):
        # One byte (0 or 1) per boolean, as NumPy and torch store them.
        value = arith.ExtUIOp(as_bytes(value.type), value).result
    if not isinstance(value.type, ir.VectorType):
        align = ai.type_bytes(value.type)

        def do_store() -> None:
            llvm.StoreOp(value, ptr, alignment=align)
        if mask is None:
            do_store()
        else:
            if_else(mask, do_store, lambda: None, None)
        return
    vt = ir.VectorType(value.type)
    if isinstance(vt.element_type, ir.BF16Type):   # moved as their bits (see _bits)
        vt = _bits(vt)
        value = arith.BitcastOp(vt, value).result
    n = vt.shape[0]
    ebytes = ai.type_bytes(vt.element_type)
    chunk, align = _chunking(lw, ptr_old, n, ebytes)
    if (mask is not None and narrow_masks.needs_lane_loop(lw, n, ebytes)
            and constant_bits(mask) is None):
        narrow_masks.store(lw, ptr, value, mask, chunk, align,
                           lambda: _store_chunks(lw, ptr, value, None, chunk, align))
        return
    _store_chunks(lw, ptr, value, mask, chunk, align)


def _store_chunks(lw: Lowering, ptr: ir.Value, value: ir.Value, mask: ir.Value | None,
                  chunk: int, align: int) -> None:
    """The store of `value` through `ptr`: per contiguous chunk of `chunk` lanes, or a scatter."""
    vt = ir.VectorType(value.type)
    n = vt.shape[0]
    ebytes = ai.type_bytes(vt.element_type)
    if chunk == 1 or n // chunk > MAX_CHUNKS:
        m = mask if mask is not None else all_true(n)
        llvm.masked_scatter(value, ptr, m, ebytes)
        return
    # A strip-mined elementwise kernel streams its output: store it with
    # non-temporal hints (no read-for-ownership of the destination lines; about
    # 1.2-1.4x on a memory-bound add here), and keep the masked store for chunks
    # whose mask is not all true (masked stores have no non-temporal form).
    # Row kernels with reductions (rows.py) store plainly: there non-temporal
    # stores were measured 1.15-1.6x slower per launch, in cache and out of it
    # (they evict the rows just written, and at 4-byte alignment LLVM splits
    # them into 8-byte `movnti`s).
    streaming = lw.streaming
    bits = constant_bits(mask) if mask is not None else None
    for k in range(n // chunk):
        base = extract(ptr, k * chunk)
        piece = slice_(value, k * chunk, chunk)
        if bits is not None:
            _store_runs(ptr, value, bits, k * chunk, chunk, align, ebytes)
            continue

        def plain(piece: ir.Value = piece, base: ir.Value = base) -> None:
            llvm.StoreOp(piece, base, alignment=align, nontemporal=True if streaming else None)
        if mask is None:
            plain()
            continue
        m = slice_(mask, k * chunk, chunk)

        def masked(piece: ir.Value = piece, base: ir.Value = base, m: ir.Value = m) -> None:
            llvm.MaskedStoreOp(piece, base, m, align)
        if not streaming:
            masked()
            continue
        full = vector.ReductionOp(int_t(1), vector.CombiningKind.AND, m).result
        if_else(full, plain, masked, None)
