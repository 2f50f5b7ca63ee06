"""AMD matrix cores for `tile.dot`: the `hook.dot-mma` target hook where the
record has `Feature.MFMA` (CDNA, wave64: `amdgpu.mfma` -> `v_mfma_f32_*`) or
`Feature.WMMA` (RDNA3, wave32: `amdgpu.wmma` -> `v_wmma_f32_16x16x16_*`).

Input: a `tile.dot` that `tile-accelerate-dot` gave `tile.mma = "mfma"/"wmma"`
and whose result has the layout `matrix_tiling.choose(...).layout()` (else the
hook declines and the FMA loop runs).  passes/gpu/dot.py stages a [M, K] and
b [K, N] row-major into LDS, each row padded by 16 bytes (`_PAD_BYTES`: rows a
lane group reads at once start in different banks; unpadded when the padded
operands would not fit the LDS, e.g. 256x256x64 f16 on 64 KiB).  Then per warp, for each
k-group of `kpack` instruction steps:
  * A: one `kpack * kpl`-element read per lane and M-tile at
    `MatrixTiling.a_offset` (16 bytes for f16 MFMA: `ds_read_b128`);
  * B: per N-group, `kpl` reads of `nv` contiguous elements per lane at
    `b_offset` (the `nv` interleaved instruction tiles' columns), regrouped
    into each tile's operand vector;
  * one `amdgpu.mfma` / `amdgpu.wmma` per (M-tile, N-tile, step) whose C/D
    vector is the accumulator registers of that tile (`chunk_key`), so the
    accumulator stays in registers across an enclosing K loop.
A last barrier lets the buffers be reused (passes/gpu/dot.py releases them:
later staging, e.g. the epilogue's, takes the same bytes).  The offsets are
computed by the same `MatrixTiling` formulas the simulation tests run on
integers: here on i32 values (`_Idx`), lane terms once per dot, tile terms as
constants.

Nearest upstream analogue: Triton's MFMA/WMMA `DotOpToLLVM` (third_party/amd),
IREE's `amdgpu.mfma` lowering of `vector.contract`.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Union

from mlir import ir
from mlir.dialects import arith, gpu, llvm, vector

from tilec.errors import CompilerBugError
from tilec.passes.analysis import axis_info
from tilec.passes.analysis.layouts import log2
from tilec.passes.analysis.matrix_tiling import (
    MatrixTiling, a_static, b_static, choose, operand_name,
)
from tilec.passes.analysis.register_operands import bt_coords
from tilec.passes.rules import RuleSet
from tilec.passes.tile_expand_fp8 import Fp8Format
from tilec.passes.tile_pipeline_lds import xor_chunk_bytes
from tilec.targets import Feature
from tilec.targets.amd.fp8_decode import decode_f16

if TYPE_CHECKING:
    from tilec.passes.gpu.context import FuncLowering, Rule
    from tilec.passes.gpu.dot import MmaPlan, Staged

RULES: RuleSet[Rule] = RuleSet("amd.mfma")
I = Any          # an int (the simulations) or an _Idx (the lowering), as in matrix_tiling
# Bytes after each staged LDS row.
_PAD_BYTES = 16
_DYNAMIC_INDEX = -2147483648   # kDynamicIndex of llvm.getelementptr
XOR_CHUNK_BYTES = 16           # the unit the LDS rings' "xor" layout permutes


class _Idx:
    """A non-negative i32 index value with the operators `MatrixTiling`'s
    formulas use (+, * by a constant, // and % by powers of two)."""

    def __init__(self, L: FuncLowering, v: ir.Value) -> None:
        self.L, self.v = L, v

    def _of(self, o: Union["_Idx", int]) -> ir.Value:
        return o.v if isinstance(o, _Idx) else self.L.const_i32(o)

    def __add__(self, o: Union["_Idx", int]) -> "_Idx":
        if isinstance(o, int) and o == 0:
            return self
        return _Idx(self.L, arith.AddIOp(self.v, self._of(o)).result)

    __radd__ = __add__

    def __mul__(self, o: int) -> Union["_Idx", int]:
        if o == 0:
            return 0
        if o == 1:
            return self
        if o & (o - 1) == 0:
            return _Idx(self.L, arith.ShLIOp(self.v, self.L.const_i32(log2(o))).result)
        return _Idx(self.L, arith.MulIOp(self.v, self.L.const_i32(o)).result)

    __rmul__ = __mul__

    def __floordiv__(self, o: int) -> "_Idx":
        if o == 1:
            return self
        return _Idx(self.L, arith.ShRUIOp(self.v, self.L.const_i32(log2(o))).result)

    def __mod__(self, o: int) -> Union["_Idx", int]:
        if o == 1:
            return 0
        log2(o)
        return _Idx(self.L, arith.AndIOp(self.v, self.L.const_i32(o - 1)).result)


def _tiling(L: FuncLowering, op: ir.Operation, kind: str) -> MatrixTiling | None:
    a, b, res = op.operands[0].type, op.operands[1].type, op.results[0].type
    if "tile.mma" not in op.attributes or ir.StringAttr(op.attributes["tile.mma"]).value != kind:
        return None
    (m, k), n = tuple(a.shape), tuple(b.shape)[1]
    tiling = choose(L.target, kind, m, n, k, operand_name(op, a.element_type),
                    str(res.element_type), L.num_warps)
    d = L.dist(res)
    if tiling is None or d.sliced_dim is not None or d.blocked != tiling.layout():
        return None
    return tiling


def _plan(L: FuncLowering, op: ir.Operation, kind: str) -> MmaPlan | None:
    tiling = _tiling(L, op, kind)
    if tiling is None:
        return None
    eb = axis_info.type_bytes(L.scalar_type(op.operands[0].type.element_type))
    (m, k), n = tuple(op.operands[0].type.shape), tuple(op.operands[1].type.shape)[1]
    pad = _PAD_BYTES // eb
    if L.shared_bytes + (m * (k + pad) + k * (n + pad)) * eb > L.target.shared_bytes:
        pad = 0     # the padded rows do not fit the LDS: unpadded (bank conflicts)
    return pad, lambda staged: _emit(L, op, tiling, pad, staged)


@RULES.rule("hook.dot-mma", feature=Feature.MFMA)
def _dot_mfma(L: FuncLowering, op: ir.Operation) -> MmaPlan | None:
    return _plan(L, op, "mfma")


@RULES.rule("hook.dot-mma", feature=Feature.WMMA)
def _dot_wmma(L: FuncLowering, op: ir.Operation) -> MmaPlan | None:
    return _plan(L, op, "wmma")


def _load(L: FuncLowering, buf: ir.Value, base: ir.Value, offset: int, elem: ir.Type,
          count: int, align: int) -> ir.Value:
    idx = arith.AddIOp(base, L.const_i32(offset)).result if offset else base
    ptr = llvm.GEPOp(buf.type, buf, [idx], [_DYNAMIC_INDEX], elem, llvm.GEPNoWrapFlags.none).result
    return llvm.LoadOp(ir.VectorType.get([count], elem), ptr, alignment=align).result


def _emit(L: FuncLowering, op: ir.Operation, tiling: MatrixTiling, pad: int,
          staged: Staged) -> None:
    (m_dim, k_dim, n_dim) = staged[0]
    res = op.results[0]
    L.values[res] = product(L, tiling, staged, (k_dim + pad, n_dim + pad), False,
                            L.frag(op.operands[2]), res.type)
    gpu.BarrierOp()     # the buffers are dead: passes/gpu/dot.py releases them


def _xor_rows(L: FuncLowering, base: ir.Value, lda: int, chunk: int) -> ir.Value:
    """`base` (row * lda + col) with col's `chunk`-element groups permuted by
    row % 8 (the LDS rings' "xor" slot layout)."""
    row7 = arith.AndIOp(arith.ShRUIOp(base, L.const_i32(log2(lda))).result,
                        L.const_i32(7)).result
    return arith.XOrIOp(base, arith.ShLIOp(row7, L.const_i32(log2(chunk))).result).result


def xor_rows(base: int, lda: int, chunk: int) -> int:
    """The integer model of `_xor_rows`."""
    return base ^ (((base // lda) % 8) * chunk)


def xor_read_parts(tiling: MatrixTiling, t: int, pair: int, lda: int) -> tuple[int, int]:
    """(column bits to XOR, elements to add) that take a lane's "xor" A read of
    M-tile 0, k-group 0 to that of M-tile t, k-group `pair`: the lane's column
    bits lie below `kpack * k` (a power of two) and the tile's rows are a
    multiple of 8, so the permutation moves only the pair's column bits."""
    off = a_static(tiling, t, pair, lda)
    row_off, col_off = off - off % lda, off % lda
    step_k = tiling.instr.k * tiling.kpack
    if (row_off // lda) % 8 or col_off % step_k or step_k & (step_k - 1):
        raise CompilerBugError(f"no xor-layout read for tile {t}, k-group {pair}")
    return col_off, row_off


def xor_t_mask(col: int) -> int:
    """The chunk permutation of row `col` of a K-major slot: 8 consecutive
    columns (the lanes of a read) and columns 8 apart (the lanes of a write)
    both fall on different 16-byte chunks."""
    return (col ^ (col >> 3)) & 7


def xor_t_base(L: FuncLowering, col: ir.Value, k: ir.Value, ld: int, chunk: int) -> ir.Value:
    """col * ld + (k ^ xor_t_mask(col) * chunk), emitted."""
    mask = arith.AndIOp(arith.XOrIOp(col, arith.ShRUIOp(col, L.const_i32(3)).result).result,
                        L.const_i32(7)).result
    kx = arith.XOrIOp(k, arith.ShLIOp(mask, L.const_i32(log2(chunk))).result).result
    return arith.AddIOp(arith.ShLIOp(col, L.const_i32(log2(ld))).result, kx).result


def product(L: FuncLowering, tiling: MatrixTiling, staged: Staged, lds: tuple[int, int],
            a_xor: bool, frag: list[ir.Value], res_t: ir.Type,
            b_kmajor: str | None = None,
            decode: tuple[Fp8Format, Fp8Format] | None = None,
            a_given: dict[tuple[int, int], ir.Value] | None = None,
            b_given: dict[tuple[int, int, int, int], ir.Value] | None = None
            ) -> list[ir.Value]:
    """acc + A @ B on the matrix units, A [M, K] and B [K, N] read from the
    workgroup-memory arrays of `staged` with row strides `lds` (A's rows in
    the "xor" layout when `a_xor`; B stored K-major when `b_kmajor`, "xor"
    (the "xor_t" slot: stride K, chunks permuted) or "pad" ("pad_t": stride K
    plus 16 bytes), the stride then that of B's columns; "xor" chunks of
    `xor_chunk_bytes(K bytes)`); `decode`: the arrays hold fp8 bytes of these
    formats (A's, B's), each operand vector decoded to f16 after its read
    (fp8_decode.py); `a_given` / `b_given`: A's operand reads per (M-tile,
    k-group), B's operands per (N-group, tile, k-group, step), made before
    (`a_fragments`, `b_fragments`: not read here); `frag` is the accumulator's fragment, the
    result fragment is returned (in registers: the caller orders the reads
    before later writes of the arrays)."""
    from mlir.dialects import amdgpu   # (not loaded by compiles for other targets)
    ins = tiling.instr
    (m_dim, k_dim, n_dim), elem, buf_a, buf_b = staged
    lda, ldb = lds
    eb = axis_info.type_bytes(elem)
    kpl, width = ins.operand_elems, ins.operand_elems * tiling.kpack
    assert L.tid is not None
    ws = L.target.warp_size
    lane = _Idx(L, arith.AndIOp(L.tid, L.const_i32(ws - 1)).result)
    warp = _Idx(L, arith.ShRUIOp(L.tid, L.const_i32(log2(ws))).result)
    a_base = tiling.a_offset(lane, warp, 0, 0, lda)
    b_base = tiling.b_offset(lane, warp, 0, 0, 0, 0, ldb)
    a_base_v = a_base.v if isinstance(a_base, _Idx) else L.const_i32(a_base)
    b_base_v = b_base.v if isinstance(b_base, _Idx) else L.const_i32(b_base)
    step_k = ins.k * tiling.kpack        # A columns per k-group: a power of two
    a_pair_bases: dict[int, ir.Value] = {}
    chunk = max(1, xor_chunk_bytes(k_dim * eb) // eb)   # the "xor" slots' chunk
    if a_xor:
        a_base_v = _xor_rows(L, a_base_v, lda, chunk)

    def a_read(t: int, pair: int) -> ir.Value:
        off = a_static(tiling, t, pair, lda)
        if not a_xor:
            return _load(L, buf_a, a_base_v, off, elem, width, a_align)
        col_off, row_off = xor_read_parts(tiling, t, pair, lda)
        pieces = []
        for h in range(0, width, chunk):      # runs longer than a chunk: chunk by chunk
            c = col_off + h
            if c not in a_pair_bases:
                a_pair_bases[c] = arith.XOrIOp(a_base_v, L.const_i32(c)).result \
                    if c else a_base_v
            pieces.append(_load(L, buf_a, a_pair_bases[c], row_off, elem, min(width, chunk),
                                eb * min(width, chunk)))
        return L.concat(pieces)
    a_align = eb * math.gcd(width, lda)
    b_align = eb * math.gcd(tiling.nv, ldb)
    bt_bases: dict[tuple[int, int], ir.Value] = {}
    b_t = b_kmajor is not None
    if b_t:
        for g_n in range(tiling.tiles(m_dim, n_dim)[1]):
            for u in range(tiling.nv):
                col, k0 = bt_coords(tiling, lane, warp, g_n, u)
                assert isinstance(col, _Idx) and isinstance(k0, (_Idx, int))
                if b_kmajor == "xor":
                    k0v = k0.v if isinstance(k0, _Idx) else L.const_i32(k0)
                    bt_bases[(g_n, u)] = xor_t_base(L, col.v, k0v, ldb, chunk)
                else:
                    base = col * ldb + k0
                    assert isinstance(base, _Idx)
                    bt_bases[(g_n, u)] = base.v

    def bt_read(g_n: int, u: int, pair: int) -> ir.Value:
        base = bt_bases[(g_n, u)]
        if b_kmajor == "pad":      # the k-group is a constant offset
            return _load(L, buf_b, base, pair * step_k, elem, width,
                         eb * math.gcd(width, ldb))
        pieces = []
        for h in range(0, width, chunk):      # runs longer than a chunk: chunk by chunk
            c = pair * step_k + h
            addr = arith.XOrIOp(base, L.const_i32(c)).result if c else base
            pieces.append(_load(L, buf_b, addr, 0, elem, min(width, chunk),
                                eb * min(width, chunk)))
        return L.concat(pieces)
    f32 = L.scalar_type(res_t.element_type)
    d = L.dist(res_t)
    mt, ng = tiling.tiles(m_dim, n_dim)
    regs = range(tiling.acc_regs)
    tiles = [(t, g, u) for t in range(mt) for g in range(ng) for u in range(tiling.nv)]
    cvec = ir.VectorType.get([tiling.acc_regs], f32)
    accs = {(t, g, u): vector.FromElementsOp(cvec, [
        L.extract(frag[d.chunk_index(tiling.chunk_key(t, g, r))], u) for r in regs]).result
        for t, g, u in tiles}
    opvec = ir.VectorType.get([kpl], elem)
    # fp8 operands arrive as bytes (`tile.mma_fp8`): the instruction wants its format.
    fp8 = ir.VectorType.get([kpl], ir.Type.parse(ins.a)) if ins.a.startswith("f8") else None

    def operand(v: ir.Value) -> ir.Value:
        return arith.BitcastOp(fp8, v).result if fp8 is not None else v

    def decoded(v: ir.Value, which: int) -> ir.Value:
        return decode_f16(v, decode[which]) if decode is not None else v
    for pair in range(k_dim // step_k):
        a_reads = [a_given[(t, pair)] if a_given is not None else a_read(t, pair)
                   for t in range(mt)]
        b_reads = {(g, u): bt_read(g, u, pair) for g in range(ng) for u in range(tiling.nv)} \
            if b_t and b_given is None else {}
        for s in range(tiling.kpack):
            a_ops = [decoded(L.slice(r, s * kpl, kpl) if tiling.kpack > 1 else r, 0)
                     for r in a_reads]
            for g in range(ng):
                rows = [] if b_t or b_given is not None else [
                    _load(L, buf_b, b_base_v, b_static(tiling, g, pair, s, e, ldb), elem,
                          tiling.nv, b_align) for e in range(kpl)]
                for u in range(tiling.nv):
                    if b_given is not None:
                        b_op = b_given[(g, u, pair, s)]
                    elif b_t:
                        r = b_reads[(g, u)]
                        b_op = L.slice(r, s * kpl, kpl) if tiling.kpack > 1 else r
                    else:
                        b_op = vector.FromElementsOp(opvec, [L.extract(r, u)
                                                             for r in rows]).result
                    b_op = decoded(b_op, 1)
                    for t in range(mt):
                        c = accs[(t, g, u)]
                        if ins.kind == "mfma":
                            accs[(t, g, u)] = amdgpu.mfma(ins.m, ins.n, ins.k,
                                                          operand(a_ops[t]), operand(b_op), c,
                                                          blocks=1)
                        else:
                            accs[(t, g, u)] = amdgpu.wmma(ins.m, ins.n, ins.k, a_ops[t], b_op, c)
    chunks: list[list[ir.Value | None]] = [[None] * tiling.nv for _ in range(d.num_chunks)]
    for (t, g, u), c in accs.items():
        for r in regs:
            chunks[d.chunk_index(tiling.chunk_key(t, g, r))][u] = L.extract(c, r)
    chunk_t = ir.VectorType.get([tiling.nv], f32)
    return [vector.FromElementsOp(chunk_t, [x for x in ch if x is not None]).result
            for ch in chunks]
