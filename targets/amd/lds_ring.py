"""AMD LDS rings of `tile-pipeline-lds` (passes/tile_pipeline_lds.py): the ring
ops where the record has `Feature.MFMA` (CDNA) or `Feature.WMMA` (RDNA3).

| key | lowering |
|---|---|
| `tile.local_alloc` | a 16-byte-aligned slice of the kernel's LDS: slots x slot bytes |
| `tile.local_dealloc` | the slice is released (the epilogue may reuse it) |
| `tile.local_store` | each thread writes its elements (pieces of <= 16 bytes along the row: `ds_write_b128`) at their places in the slot |
| `tile.mma {kind = mfma / wmma}` | `mfma.product` on the slot's arrays: `ds_read_b128` A, B rows, `v_mfma` / `v_wmma` on the accumulator registers; with `tile.fp8_decoded` the slots hold fp8 bytes, decoded to f16 after the reads (fp8_decode.py) |

A slot holds an [R, C] tile row-major in the layout the ring's `tile.lds`
names: "plain" (row stride C), "pad" (C + 16 bytes), "xor" (stride C, the
16-byte chunk c of row r stored at chunk c ^ (r % 8), chunks of an eighth of
a row where rows are shorter than 128 bytes, `Slot.chunk`: the eight rows a group
of lanes reads at once with `ds_read_b128` start in different banks, with no
padding) or "xor_t" (B stored K-major: column n of the tile is a stored row
of R elements, its chunk c at c ^ mfma.xor_t_mask(n), so a lane's operand
run along K is one `ds_read_b128` and needs no regrouping; the writes of a
row-major register tile are then element-wise, `ds_write_b16`) or "pad_t"
(K-major, each stored row padded by 16 bytes: where rows are shorter than the
eight chunks "xor_t" permutes, e.g. fp8 with K = 64).  Writes and reads use the same formula (`_index` here,
`mfma._xor_rows` for the reads).  The product is synchronous (the MFMA
results are registers): the pass's barriers order the reads of a slot before
its next writes; with one slot a scheduling barrier (`s_sched_barrier 0`)
follows the product, so LLVM does not sink its last MFMAs below the writes.

Nearest upstream analogue: Triton's AMD `LocalStore` / `LocalLoad` lowering
with a swizzled shared encoding (third_party/amd, `SharedToDotOperandMFMA`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mlir import ir
from mlir.dialects import arith, llvm

from tilec.errors import CompilerBugError
from tilec.passes.analysis import axis_info
from tilec.passes.analysis.layouts import log2
from tilec.passes.analysis.matrix_tiling import choose, operand_name
from tilec.passes.rules import RuleSet
from tilec.passes.tile_expand_fp8 import FORMATS
from tilec.passes.tile_pipeline_lds import CHUNK_BYTES, PAD_BYTES, xor_chunk_bytes
from tilec.targets import Feature
from tilec.targets.amd import mfma
from tilec.targets.amd.mfma import xor_t_mask

if TYPE_CHECKING:
    from tilec.passes.gpu.context import FuncLowering, Rule

RULES: RuleSet[Rule] = RuleSet("amd.lds-ring")
_DYNAMIC_INDEX = -2147483648   # kDynamicIndex of llvm.getelementptr
_FEATURES = (Feature.MFMA, Feature.WMMA)


@dataclass(frozen=True)
class Slot:
    rows: int
    cols: int
    eb: int
    layout: str          # "plain", "pad", "xor", "xor_t" or "pad_t"

    @property
    def stride(self) -> int:
        """Elements from one stored row to the next (a column of the tile in "xor_t")."""
        if self.layout == "xor_t":
            return self.rows
        if self.layout == "pad_t":
            return self.rows + PAD_BYTES // self.eb
        return self.cols + (PAD_BYTES // self.eb if self.layout == "pad" else 0)

    @property
    def chunk(self) -> int:
        """Elements of the chunks an "xor" / "xor_t" slot permutes (its stored rows: K)."""
        if self.layout not in ("xor", "xor_t"):
            return CHUNK_BYTES // self.eb       # the widest store piece
        k = self.rows if self.layout == "xor_t" else self.cols
        return max(1, xor_chunk_bytes(k * self.eb) // self.eb)

    @property
    def elems(self) -> int:
        """Elements of one slot."""
        return self.cols * self.stride if self.layout.endswith("_t") else self.rows * self.stride


def slot_of(ring: ir.Value) -> tuple[Slot, int, ir.Type]:
    """The slot layout, slot count and element type of a `tile.local_alloc` ring."""
    owner = ring.owner
    if not (isinstance(owner, ir.OpView) and owner.operation.name == "tile.local_alloc"
            and "tile.lds" in owner.attributes):
        raise CompilerBugError(f"an AMD LDS ring must come from tile-pipeline-lds: {ring.type}")
    t = ir.MemRefType(ring.type)
    slots, rows, cols = t.shape
    layout = ir.StringAttr(owner.attributes["tile.lds"]).value
    return Slot(rows, cols, axis_info.type_bytes(t.element_type), layout), slots, \
        t.element_type


def _slot_ptr(L: FuncLowering, ring: ir.Value, slot: ir.Value, s: Slot,
              elem: ir.Type) -> ir.Value:
    base = arith.MulIOp(L.get(slot), L.const_i32(s.elems)).result
    buf = L.get(ring)
    return llvm.GEPOp(buf.type, buf, [base], [_DYNAMIC_INDEX], elem,
                      llvm.GEPNoWrapFlags.none).result


def position(s: Slot, row: int, col: int) -> int:
    """Where element (row, col) of a slot lies (in elements): what `_index` emits."""
    if s.layout == "xor":
        col ^= (row % 8) * s.chunk
    if s.layout == "xor_t":
        return col * s.stride + (row ^ xor_t_mask(col) * s.chunk)
    if s.layout == "pad_t":
        return col * s.stride + row
    return row * s.stride + col


def _index(L: FuncLowering, s: Slot, row: ir.Value, col: ir.Value) -> ir.Value:
    if s.layout == "xor_t":
        return mfma.xor_t_base(L, col, row, s.stride, s.chunk)
    if s.layout == "pad_t":
        return arith.AddIOp(arith.MulIOp(col, L.const_i32(s.stride)).result, row).result
    if s.layout == "xor":
        phase = arith.AndIOp(row, L.const_i32(7)).result
        col = arith.XOrIOp(col, arith.ShLIOp(
            phase, L.const_i32(log2(s.chunk))).result).result
    return arith.AddIOp(arith.MulIOp(row, L.const_i32(s.stride)).result, col).result


def _local_alloc(L: FuncLowering, op: ir.Operation) -> None:
    s, slots, _elem = slot_of(op.results[0])
    L.values[op.results[0]] = L.shared_buffer(ir.IntegerType.get_signless(8),
                                              slots * s.elems * s.eb)


def _local_dealloc(L: FuncLowering, op: ir.Operation) -> None:
    L.release_shared(L.get(op.operands[0]))


def _local_store(L: FuncLowering, op: ir.Operation) -> None:
    ring, slot, value = op.operands
    s, _slots, elem = slot_of(ring)
    d = L.dist(value.type)
    if d.sliced_dim is not None or len(d.shape) != 2:
        raise CompilerBugError(f"tile.local_store of {value.type}: not a 2-D tile")
    buf = _slot_ptr(L, ring, slot, s, elem)
    # Pieces along the row stay contiguous in every layout (an "xor" chunk is
    # 16 bytes and the pieces are at most that, starting at their multiples).
    along = 0 if s.layout.endswith("_t") else 1     # the dimension contiguous in the slot
    piece = min(d.vec_len, s.chunk) if d.fast == along else 1
    rows, cols = L.coordinates(d, 0, 0), L.coordinates(d, 1, 0)
    # "pad_t": a chunk's elements (one row, consecutive columns) lie a stored
    # row apart, constant offsets from the first (`nuw`: the DS instructions'
    # immediate offsets take them, one address register per chunk).
    steps = s.layout == "pad_t" and d.fast == 1
    nuw = ir.Attribute.parse("#arith.overflow<nuw>")
    for chunk, rv, cv in zip(L.frag(value), rows, cols):
        first = _index(L, s, L.extract(rv, 0), L.extract(cv, 0)) if steps else None
        for i in range(0, d.vec_len, piece):
            if first is not None:
                idx = first if i == 0 else arith.AddIOp(
                    first, L.const_i32(i * s.stride), overflowFlags=nuw).result
            else:
                idx = _index(L, s, L.extract(rv, i), L.extract(cv, i))
            v = L.slice(chunk, i, piece) if piece > 1 else L.extract(chunk, i)
            ptr = llvm.GEPOp(buf.type, buf, [idx], [_DYNAMIC_INDEX], elem,
                             llvm.GEPNoWrapFlags.none).result
            llvm.StoreOp(v, ptr, alignment=piece * s.eb)


def _ring_mma(L: FuncLowering, op: ir.Operation) -> None:
    ring_a, slot_a, ring_b, slot_b, acc = op.operands
    res = op.results[0]
    kind = ir.StringAttr(op.attributes["kind"]).value
    sa, _slots_a, elem = slot_of(ring_a)
    sb, _, _ = slot_of(ring_b)
    m, k, n = sa.rows, sa.cols, sb.cols
    decode = [FORMATS[ir.StringAttr(f).value]
              for f in ir.ArrayAttr(op.attributes["tile.fp8_decoded"])] \
        if "tile.fp8_decoded" in op.attributes else None
    tiling = choose(L.target, kind, m, n, k, "f16" if decode else operand_name(op, elem),
                    str(ir.RankedTensorType(res.type).element_type), L.num_warps)
    d = L.dist(res.type)
    if tiling is None or sb.rows != k or sb.layout == "xor" or sa.layout.endswith("_t") \
            or d.sliced_dim is not None \
            or d.blocked != tiling.layout():
        raise CompilerBugError(f"tile.mma kind {kind} on rings {ring_a.type}, {ring_b.type} "
                               f"with result {res.type}: not a {kind} product")
    staged = ((m, k, n), elem, _slot_ptr(L, ring_a, slot_a, sa, elem),
              _slot_ptr(L, ring_b, slot_b, sb, elem))
    L.values[res] = mfma.product(L, tiling, staged, (sa.stride, sb.stride),
                                 sa.layout == "xor", L.frag(acc), res.type,
                                 b_kmajor={"xor_t": "xor", "pad_t": "pad"}.get(sb.layout),
                                 decode=(decode[0], decode[1]) if decode else None)
    if _slots_a == 1 and decode is None:
        # The slot's next writes follow a barrier: without a scheduling
        # barrier LLVM sinks the last MFMAs below them, keeping their operand
        # registers live across the writes (gfx950 128x128x64 f16: 128 VGPRs
        # instead of 104; with two slots or fp8 decoding it costs instead).
        from mlir.dialects import rocdl   # (not loaded by compiles for other targets)
        rocdl.sched_barrier(0)


for _f in _FEATURES:
    RULES.rule("tile.local_alloc", feature=_f)(_local_alloc)
    RULES.rule("tile.local_dealloc", feature=_f)(_local_dealloc)
    RULES.rule("tile.local_store", feature=_f)(_local_store)
    RULES.rule("tile.mma", feature=_f)(_ring_mma)
