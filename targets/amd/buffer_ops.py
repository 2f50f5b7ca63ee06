"""Global loads and stores as CDNA buffer instructions: the `hook.tile-access`
target hook where the record has `Feature.BUFFER_OPS`.

Input: a `tile.load` / `tile.store` of a tile whose pointer `lane_range.split_pointer`
writes as a scalar base + scalar i32 offsets + i32 lane offsets in [0, hi],
with (hi + w) * sizeof(T) <= `NUM_RECORDS` (w elements per access).
Output, per access: one buffer resource per tile (`rocdl.make.buffer.rsrc` of
the scalar base advanced by the scalar offsets: 64-bit, exact) and
`rocdl.raw.ptr.buffer.load` / `store` at the 32-bit byte offset
`lane * sizeof(T)` (`buffer_load_dwordx4 v, v_off, s[rsrc], 0 offen`).  A
masked-off access gets the offset `MASKED_OFFSET`, outside the resource: the
hardware returns 0 for it (a load then selects `other`) and drops a store,
so masks cost a `v_cndmask` instead of a branch, and the address needs one VGPR
instead of two.  Anything else (pointer tiles carried by loops, offsets of
unknown range such as `row * stride`, i1 tiles) declines: the generic 64-bit
rule of passes/gpu/memory.py runs, so offsets that may pass 2^31 stay correct.

The resource's fourth word is the CDNA (GFX9) one: 32-bit data format, no
swizzle, stride 0 (raw buffer: the offset is checked against `NUM_RECORDS`).

Nearest upstream analogue: Triton's AMD ConvertToBufferOps + BufferOpsEmitter
(buffer_load/store with an out-of-range offset for masked lanes).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from mlir import ir
from mlir.dialects import arith, llvm

from tilec.dialects import tile
from tilec.passes.analysis import axis_info
from tilec.passes.rules import RuleSet
from tilec.targets import Feature
from tilec.targets.amd.lane_range import split_pointer

if TYPE_CHECKING:
    from tilec.passes.gpu.context import FuncLowering, Rule

RULES: RuleSet[Rule] = RuleSet("amd.buffer")
NUM_RECORDS = 0x7FFFFFFE            # bytes the resource spans
MASKED_OFFSET = -(1 << 31)          # 0x80000000 >= NUM_RECORDS: out of range
_GFX9_DWORD3 = 0x27000              # DATA_FORMAT 32, NUM_FORMAT float (ignored by raw ops)
_DYNAMIC_INDEX = -2147483648        # kDynamicIndex of llvm.getelementptr
_RSRC_ADDRSPACE = 8


def _int(w: int) -> ir.Type:
    return ir.IntegerType.get_signless(w)


def _is_tile(t: ir.Type) -> bool:
    return isinstance(t, ir.RankedTensorType)


def _raw_type(nbytes: int) -> ir.Type:
    """The integer type a buffer access of `nbytes` moves (dwords where it can)."""
    if nbytes % 4 == 0:
        return _int(32) if nbytes == 4 else ir.VectorType.get([nbytes // 4], _int(32))
    return _int(8 * nbytes)


class _Plan:
    """What a buffer access of one tile needs: its resource and lane offsets."""

    def __init__(self, L: FuncLowering, ptr: ir.Value, elem: ir.Type, w: int) -> None:
        from mlir.dialects import rocdl   # (not loaded by compiles for other targets)
        self.L, self.eb, self.ok = L, axis_info.type_bytes(elem), False
        if isinstance(elem, ir.IntegerType) and ir.IntegerType(elem).width == 1:
            return
        sp = split_pointer(ptr, L.axis)
        if sp is None or sp.lane_range[0] < 0 \
                or (sp.lane_range[1] + w) * self.eb > NUM_RECORDS:
            return
        self.ok = True
        mem_t = elem
        base = L.get(sp.base)
        for u in sp.uniform:
            base = llvm.GEPOp(base.type, base, [L.get(u)], [_DYNAMIC_INDEX], mem_t,
                              llvm.GEPNoWrapFlags.none).result
        i16, i64 = _int(16), _int(64)
        self.rsrc = rocdl.MakeBufferRsrcOp(
            llvm.PointerType.get(_RSRC_ADDRSPACE), base,
            arith.ConstantOp(i16, ir.IntegerAttr.get(i16, 0)).result,
            arith.ConstantOp(i64, ir.IntegerAttr.get(i64, NUM_RECORDS)).result,
            L.const_i32(_GFX9_DWORD3)).result
        d = L.dist(ptr.type)
        lanes = [L.frag(t) for t in sp.lane]
        self.chunks: list[ir.Value | None] = []
        for ci in range(d.num_chunks):
            acc: ir.Value | None = None
            for frags in lanes:
                acc = frags[ci] if acc is None else arith.AddIOp(acc, frags[ci]).result
            if acc is not None and self.eb > 1:
                scale = L.const_vec(ir.VectorType(acc.type), [self.eb])
                acc = arith.MulIOp(acc, scale).result
            self.chunks.append(acc)
        self.zero = L.const_i32(0)
        self.masked = L.const_i32(MASKED_OFFSET)

    def offset(self, ci: int, j: int, pred: ir.Value | None) -> ir.Value:
        """The byte offset of the access at element j of chunk ci (out of range where
        `pred` is false)."""
        c = self.chunks[ci]
        off = self.zero if c is None else self.L.extract(c, j)
        return off if pred is None else arith.SelectOp(pred, off, self.masked).result


def _pred(L: FuncLowering, mask: ir.Value | None, mf: list[ir.Value] | None, ci: int,
          j: int) -> ir.Value | None:
    if mask is None:
        return None
    return L.extract(mf[ci], j) if mf is not None else L.get(mask)


@RULES.rule("hook.tile-access", feature=Feature.BUFFER_OPS)
def buffer_access(L: FuncLowering, op: ir.Operation) -> bool:
    """`op` (a tile load or store) as buffer instructions; False where it does not fit."""
    from mlir.dialects import rocdl
    seg = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    is_load = op.name == "tile.load"
    ptr = op.operands[0]
    mask_at = 1 if is_load else 2
    mask = op.operands[mask_at] if seg[mask_at] else None
    value = op.results[0] if is_load else op.operands[1]
    if not (_is_tile(ptr.type) and _is_tile(value.type)):
        return False
    elem = tile.pointee(ptr.type.element_type)
    d = L.dist(ptr.type)
    eb = axis_info.type_bytes(elem)
    w, _ = L.access(ptr, mask, d, eb)
    plan = _Plan(L, ptr, elem, w)
    if not plan.ok:
        return False
    mf = (L.frag(mask) if _is_tile(mask.type) else None) if mask is not None else None
    piece_t = ir.VectorType.get([w], elem) if w > 1 else elem
    raw_t = _raw_type(w * eb)
    if is_load:
        other = op.operands[1 + seg[1]] if seg[2] else None
        of = (L.frag(other) if _is_tile(other.type) else None) if other is not None else None
        out = []
        for ci in range(d.num_chunks):
            pieces = []
            for j in range(0, d.vec_len, w):
                pred = _pred(L, mask, mf, ci, j)
                raw = rocdl.RawPtrBufferLoadOp(raw_t, plan.rsrc, plan.offset(ci, j, pred),
                                               plan.zero, plan.zero).result
                v = llvm.BitcastOp(piece_t, raw).result if raw_t != piece_t else raw
                if pred is not None and other is not None:
                    if of is None:
                        s = L.get(other)
                        alt = L.splat(s, w) if w > 1 else s
                    else:
                        alt = L.slice(of[ci], j, w) if w > 1 else L.extract(of[ci], j)
                    v = arith.SelectOp(pred, v, alt).result
                pieces.append(v)
            chunk = L.concat(pieces)
            out.append(chunk if isinstance(chunk.type, ir.VectorType) else L.splat(chunk, 1))
        L.values[value] = out
        return True
    vf = L.frag(value)
    for ci in range(d.num_chunks):
        for j in range(0, d.vec_len, w):
            pred = _pred(L, mask, mf, ci, j)
            v = L.slice(vf[ci], j, w) if w > 1 else L.extract(vf[ci], j)
            raw = llvm.BitcastOp(raw_t, v).result if raw_t != piece_t else v
            rocdl.RawPtrBufferStoreOp(raw, plan.rsrc, plan.offset(ci, j, pred), plan.zero,
                                      plan.zero)
    return True

