"""NVIDIA warpgroup MMA rules (`Feature.WGMMA`, sm_90a): `tile.dot` and the
pipeliner's `tile.mma` on `wgmma.mma_async`.

| key | feature | lowering |
|---|---|---|
| `hook.dot-wgmma` | `WGMMA` | a register-operand `tile.dot`: a and b stored into swizzled shared memory, then `wgmma`; the buffers are released after its wait and barrier |
| `hook.mma-wgmma` | `WGMMA` | `tile.mma {kind = "wgmma"}` (passes/gpu/dot.py dispatches on kind): operands already in a ring slot of swizzled shared memory (tile-pipeline) |
| `tile.mma_wait` | `WGMMA` | `wgmma.wait_group N` with the accumulators tied through it |

Operands in shared memory (`layouts.SwizzledTile`, 128-byte swizzle, base
1024-byte aligned): A [M, K] K-major (rows 128 bytes apart, column atoms of 64
f16 `M * 128` bytes apart, 8-row blocks permuted so the instruction's rows are
those of `layouts.wgmma_accumulator_layout`); B [K, N] N-major (the same with
K rows and N columns).  Matrix descriptors (PTX ISA, "Matrix Descriptor
Format"): start address >> 4 in bits 0-13, leading byte offset >> 4 in bits
16-29, stride byte offset >> 4 in 32-45, swizzle mode 1 (128 B) in 62-63.
A (K-major, swizzled): LBO unused (1), SBO 1024 (8 rows).  B (MN-major,
swizzled): LBO = bytes between 64-column atoms (K * 128), SBO 1024 (8 K rows).
A k-step of 16 moves A's start by 32 bytes inside the atom (or to the next
atom) and B's by 16 rows (2048 bytes).

Warpgroup g (threads 128 g .. 128 g + 127) computes rows [g M / G, (g+1) M / G)
of the positions, one `m64nNk16` per 64 rows and per N <= 256 columns, for
each k-step; the accumulator registers of instruction (i, s) are the thread's
fragment chunks (2 i + r, 2 (s N_i / 8 + j)) for register 4 j + 2 r + e.
`nvvm.wgmma.mma_async` is upstream's op (lowered by convert-nvvm-to-llvm);
the wait is inline PTX here because the accumulators must pass *through* it
(tied operands), or LLVM could read them before the MMA has written them.

Nearest upstream analogue: MLIR's `nvgpu.warpgroup.mma` lowering; Triton's
`WGMMA.cpp` (MMAv3 to LLVM).
"""
from __future__ import annotations

import math

from typing import TYPE_CHECKING, Sequence

from mlir import ir
from mlir.dialects import arith, gpu, llvm, nvvm

from tilec.passes.analysis import axis_info
from tilec.passes.analysis.layouts import (
    Distribution, PaddedTile, SwizzledTile, wgmma_register_a,
)
from tilec.passes.rules import RuleSet
from tilec.targets import Feature

if TYPE_CHECKING:
    from tilec.passes.gpu.context import FuncLowering, Rule

RULES: RuleSet[Rule] = RuleSet("nvidia-wgmma")
_WG_THREADS = 128
_MAX_N = 256


def _i32() -> ir.IntegerType:
    return ir.IntegerType.get_signless(32)


def _i64() -> ir.IntegerType:
    return ir.IntegerType.get_signless(64)


def operand_tiles(m: int, n: int, k: int, elem_bytes: int,
                  num_warps: int) -> tuple[SwizzledTile, SwizzledTile]:
    """The shared-memory layouts of A [m, k] and B [k, n] for a wgmma dot."""
    return (SwizzledTile(m, k, elem_bytes, permute_rows=True, num_warps=num_warps),
            SwizzledTile(k, n, elem_bytes))


def _c(L: FuncLowering, v: int) -> ir.Value:
    return L.const_i32(v)


def swizzled_offset(L: FuncLowering, t: SwizzledTile | PaddedTile, row: ir.Value,
                    col: ir.Value) -> ir.Value:
    """The byte offset of element (row, col) of `t`, as i32 arithmetic
    (the same function as `SwizzledTile.offset` / `PaddedTile.offset`)."""
    if isinstance(t, PaddedTile):
        return arith.AddIOp(arith.MulIOp(row, _c(L, t.row_bytes)).result,
                            arith.MulIOp(col, _c(L, t.elem_bytes)).result).result
    if t.permute_rows:
        nw = t.num_warps
        g = arith.AndIOp(row, _c(L, 7)).result
        block = arith.ShRUIOp(row, _c(L, 3)).result
        w = arith.AndIOp(block, _c(L, nw - 1)).result
        rep = arith.ShRUIOp(block, _c(L, nw.bit_length() - 1)).result
        wg = arith.ShRUIOp(w, _c(L, 2)).result
        wq = arith.AndIOp(w, _c(L, 3)).result
        i = arith.ShRUIOp(rep, _c(L, 1)).result
        r = arith.AndIOp(rep, _c(L, 1)).result
        p = arith.MulIOp(wg, _c(L, t.rows // (nw // 4))).result
        for v, s in ((i, 64), (wq, 16), (r, 8)):
            p = arith.AddIOp(p, arith.MulIOp(v, _c(L, s)).result).result
        p = arith.AddIOp(p, g).result
    else:
        p = row
    atom = arith.ShRUIOp(col, _c(L, t.atom_cols.bit_length() - 1)).result
    c = arith.AndIOp(col, _c(L, t.atom_cols - 1)).result
    cb = arith.MulIOp(c, _c(L, t.elem_bytes)).result
    sw = arith.ShLIOp(arith.AndIOp(p, _c(L, 7)).result, _c(L, 4)).result
    off = arith.AddIOp(arith.MulIOp(atom, _c(L, t.atom_bytes)).result,
                       arith.MulIOp(p, _c(L, 128)).result).result
    return arith.AddIOp(off, arith.XOrIOp(cb, sw).result).result


_DYNAMIC_INDEX = -2147483648   # kDynamicIndex of llvm.getelementptr


def const_byte_address(buf: ir.Value, off: int) -> ir.Value:
    """`buf` + `off` bytes, a constant (kept apart from the dynamic part, so
    it becomes the instruction's immediate offset)."""
    if off == 0:
        return buf
    return llvm.GEPOp(buf.type, buf, [], [off], ir.IntegerType.get_signless(8),
                      llvm.GEPNoWrapFlags.none).result


def byte_address(buf: ir.Value, off: ir.Value) -> ir.Value:
    """`buf` + `off` bytes (a shared-memory pointer)."""
    return llvm.GEPOp(buf.type, buf, [off], [_DYNAMIC_INDEX], ir.IntegerType.get_signless(8),
                      llvm.GEPNoWrapFlags.none).result


def stage_registers(L: FuncLowering, src: ir.Value, buf: ir.Value, t: SwizzledTile,
                    transpose: bool = False) -> None:
    """Every thread stores its elements of the [rows, cols] tile `src` into
    `buf` in the layout `t` (16-byte pieces where its chunks run along cols);
    with `transpose`, element (r, c) of `src` goes to (c, r) of `t`."""
    d = L.dist(src.type)
    eb = t.elem_bytes
    rows = L.coordinates(d, 0, 0)
    cols = L.coordinates(d, 1, 0)
    if transpose:
        rows, cols = cols, rows
    along_cols = d.fast == (0 if transpose else 1) and d.sliced_dim is None
    piece = min(d.vec_len, 16 // eb) if along_cols else 1
    for chunk, rv, cv in zip(L.frag(src), rows, cols):
        for i in range(0, d.vec_len, piece):
            off = swizzled_offset(L, t, L.extract(rv, i), L.extract(cv, i))
            v = L.slice(chunk, i, piece) if piece > 1 else L.extract(chunk, i)
            llvm.StoreOp(v, byte_address(buf, off), alignment=piece * eb)


def ring_tile(L: FuncLowering, ring: ir.Value) -> tuple[SwizzledTile | PaddedTile, int]:
    """The slot layout of a `tile.local_alloc` ring and its slot count:
    `swizzle` 128 is `SwizzledTile`, 0 is `PaddedTile` (rows padded by 16 bytes)."""
    t = ir.MemRefType(ring.type)
    slots, rows, cols = t.shape
    op = ring.owner
    assert isinstance(op, ir.OpView)
    perm = ir.StringAttr(op.attributes["row_permutation"]).value == "wgmma"
    eb = axis_info.type_bytes(t.element_type)
    if int(ir.IntegerAttr(op.attributes["swizzle"]).value) == 0:
        return PaddedTile(rows, cols, eb), slots
    return SwizzledTile(rows, cols, eb, permute_rows=perm, num_warps=L.num_warps), slots


def fence_async_shared() -> None:
    """Make this thread's ordinary shared-memory writes visible to the async
    proxy (wgmma, TMA): `fence.proxy.async.shared::cta`."""
    llvm.InlineAsmOp(None, [], "fence.proxy.async.shared::cta;", "", has_side_effects=True)


def _descriptor_base(L: FuncLowering, buf: ir.Value, lbo: int, sbo: int) -> ir.Value:
    addr = llvm.PtrToIntOp(_i32(), buf).result
    enc = arith.ShRUIOp(arith.AndIOp(addr, _c(L, 0x3FFFF)).result, _c(L, 4)).result
    bits = ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (1 << 62)
    return arith.OrIOp(arith.ExtUIOp(_i64(), enc).result,
                       arith.ConstantOp(_i64(), bits).result).result


def _here(L: FuncLowering, desc: ir.Value) -> ir.Value:
    """`desc`, read again where the product is issued (a side-effecting move
    LLVM does not hoist): the descriptors of its k-steps are then computed
    from it there, in uniform registers, where those of an operand the loop
    does not change (the attention backward's Q, dO, K, V) were hoisted out of
    the loop, kept in 16 vector registers and moved to uniform ones (R2UR)
    before every product (dQ kernel: 24 R2UR per iteration, 2 with the move;
    dK/dV: 255 registers, 240).  Not in a kernel with a producer warpgroup:
    there ptxas computed the moved bases in vector registers (the forward's
    consumer loop: 22 R2UR per iteration, 36 with the move)."""
    if "tile.producer_warps" in L.func.attributes:
        return desc
    return llvm.InlineAsmOp(_i64(), [desc], "mov.b64 $0, $1;", "=l,l",
                            has_side_effects=True).result


def _plus(base: ir.Value, byte_off: ir.Value | int) -> ir.Value:
    """A descriptor moved by `byte_off` bytes (a multiple of 16)."""
    if isinstance(byte_off, int):
        if byte_off == 0:
            return base
        return arith.AddIOp(base, arith.ConstantOp(_i64(), byte_off >> 4).result).result
    return arith.AddIOp(base, arith.ExtUIOp(
        _i64(), arith.ShRUIOp(byte_off, arith.ConstantOp(_i32(), 4).result).result).result).result


def _offset_sum(L: FuncLowering, a: ir.Value | int, b: ir.Value | int) -> ir.Value | int:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    return arith.AddIOp(a if not isinstance(a, int) else _c(L, a),
                        b if not isinstance(b, int) else _c(L, b)).result


def _acc_keys(m: int, n: int, num_warps: int) -> list[list[tuple[tuple[int, int], int]]]:
    """Per instruction (i, s) in issue order: [(chunk key, element), ...] of its
    accumulator registers in register order."""
    groups = num_warps // 4
    m_instr = m // (64 * groups)
    n_instr = min(n, _MAX_N)
    out = []
    for i in range(m_instr):
        for s in range(n // n_instr):
            regs = []
            for j in range(n_instr // 8):
                for r in range(2):
                    for e in range(2):
                        regs.append(((2 * i + r, 2 * (s * n_instr // 8 + j)), e))
            out.append(regs)
    return out


def register_a(L: FuncLowering, a: ir.Value, m: int, k: int) -> list[list[list[ir.Value]]]:
    """A's fragment as wgmma's register operand: [i][k-step] -> four i32
    (f16x2) registers.  `a` [m, k] must have the accumulator layout (the PTX
    ISA's A register fragment of m64k16 is the accumulator fragment of a
    16-column slice: a0 = (row, 2q..2q+1), a1 = row + 8, a2/a3 = columns + 8)."""
    d = L.dist(a.type)
    frag = L.frag(a)
    keys = _acc_keys(m, k, L.num_warps)
    n_instr = min(k, _MAX_N)
    per_s = k // n_instr
    i16x2 = ir.VectorType.get([2], L.scalar_type(ir.RankedTensorType(a.type).element_type))
    out: list[list[list[ir.Value]]] = []
    for i in range(len(keys) // per_s):
        steps = []
        for kk in range(k // 16):
            s, j0 = divmod(16 * kk, n_instr)
            regs = keys[i * per_s + s][4 * (j0 // 8): 4 * (j0 // 8) + 8]
            vals = [L.extract(frag[d.chunk_index(key)], e) for key, e in regs]
            packed = []
            for p in range(4):
                v = llvm.UndefOp(i16x2).result
                for e in range(2):
                    v = llvm.InsertElementOp(v, vals[2 * p + e], _c(L, e)).result
                packed.append(llvm.BitcastOp(_i32(), v).result)
            steps.append(packed)
        out.append(steps)
    return out


def _is_zero(v: ir.Value) -> bool:
    """Whether `v` is a constant whose every element is +0.0 (a product added
    to it is the product itself)."""
    owner = v.owner
    if not isinstance(owner, ir.OpView) or owner.operation.name not in (
            "arith.constant", "llvm.mlir.constant"):
        return False
    value = owner.operation.attributes["value"]
    if isinstance(value, ir.DenseFPElementsAttr) and value.is_splat:
        value = value.get_splat_value()
    if not isinstance(value, ir.FloatAttr):
        return False
    x = float(value.value)
    return x == 0.0 and math.copysign(1.0, x) > 0


def _wgmma_register_a(n: int, kind: str, regs: list[ir.Value], a: list[ir.Value],
                      db: ir.Value, b_kmajor: bool, scale_d: int = 1) -> list[ir.Value]:
    """One `wgmma.mma_async` m64nNk16 with A in registers (inline PTX: upstream's
    op takes A only as a shared-memory descriptor); accumulators tied through."""
    f32 = ir.F32Type.get()
    nd = len(regs)
    st = llvm.StructType.get_literal([f32] * nd)
    d_list = ", ".join(f"${j}" for j in range(nd))
    a_list = ", ".join(f"${2 * nd + j}" for j in range(4))   # after outputs and tied inputs
    text = ("{\n.reg .pred p;\n"
            f"setp.ne.b32 p, {scale_d}, 0;\n"
            f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{kind}.{kind} {{{d_list}}}, "
            f"{{{a_list}}}, ${2 * nd + 4}, p, 1, 1, {0 if b_kmajor else 1};\n}}")
    cons = ",".join(["=f"] * nd + [str(j) for j in range(nd)] + ["r"] * 4 + ["l"])
    out = llvm.InlineAsmOp(st, list(regs) + a + [db], text, cons, has_side_effects=True).result
    return [llvm.ExtractValueOp(f32, out, [j]).result for j in range(nd)]


def issue(L: FuncLowering, elem: ir.Type, a_buf: ir.Value | None, a_off: ir.Value | int,
          b_buf: ir.Value, b_off: ir.Value | int, shape: tuple[int, int, int],
          acc_chunks: Sequence[ir.Value], d: Distribution,
          b_kmajor: bool = False, fp8: str | None = None,
          a_regs: list[list[list[ir.Value]]] | None = None) -> list[ir.Value]:
    """fence; every `wgmma.mma_async` of one [m, n, k] dot (A at byte `a_off` of
    `a_buf`, or in registers `a_regs` (`register_a`), B at `b_off` of `b_buf`,
    [k, n] N-major, or with `b_kmajor` an [n, k] K-major tile); commit.
    Returns the accumulator values (f32 scalars, `_acc_keys` order), valid
    only after a wait.  `fp8` ("e4m3"/"e5m2"): byte operands, k = 32 per
    instruction, B K-major."""
    m, n, k = shape
    eb = 1 if fp8 else 2
    k_instr = 32 if fp8 else 16
    ta, tb = operand_tiles(m, n, k, eb, L.num_warps)
    if b_kmajor:
        tb = SwizzledTile(n, k, eb)
    groups = L.num_warps // 4
    n_instr = min(n, _MAX_N)
    assert L.tid is not None
    # The warpgroup from a warp-uniform thread index: the descriptors are
    # then computed in uniform registers (no R2UR before each wgmma).
    wg_off: ir.Value | int = 0
    if groups > 1:
        wg = arith.ShRUIOp(L.warp_first_thread(), _c(L, 7)).result
        wg_off = arith.MulIOp(wg, _c(L, (m // groups) * 128)).result
    a_start = _offset_sum(L, wg_off, a_off)
    da0 = None if a_buf is None else _plus(_here(L, _descriptor_base(L, a_buf, 16, 1024)),
                                           a_start)
    db_base = _descriptor_base(L, b_buf, 16 if b_kmajor else tb.atom_bytes, 1024)
    db0 = _plus(_here(L, db_base), b_off)
    kind = fp8 or ("bf16" if isinstance(elem, ir.BF16Type) else "f16")
    attr = ir.Attribute.parse
    keys = _acc_keys(m, n, L.num_warps)
    f32 = ir.F32Type.get()
    values = [[L.extract(acc_chunks[d.chunk_index(key)], e) for key, e in regs] for regs in keys]
    # A zero accumulator is not read: the first k-step runs with scale-d = 0 on
    # undefined inputs (no registers written for it, none of them between the
    # fence and the instruction, where ptxas would have to fence again).
    fresh = all(_is_zero(c) for c in acc_chunks)
    if fresh:
        values = [[llvm.UndefOp(f32).result for _ in regs] for regs in values]
    nvvm.WgmmaFenceAlignedOp()
    for kk in range(k // k_instr):
        k0 = k_instr * kk
        a_k = (k0 // ta.atom_cols) * ta.atom_bytes + (k0 % ta.atom_cols) * eb
        for idx, regs in enumerate(values):
            i, s = divmod(idx, n // n_instr)
            if b_kmajor:   # rows are n, 128 bytes apart; k steps like A's
                db = _plus(db0, s * n_instr * 128 + (k0 // tb.atom_cols) * tb.atom_bytes +
                           (k0 % tb.atom_cols) * eb)
            else:
                db = _plus(db0, (s * n_instr // 64) * tb.atom_bytes + k0 * 128)
            scale_d = 0 if fresh and kk == 0 else 1
            if a_regs is not None:
                values[idx] = _wgmma_register_a(n_instr, kind, regs, a_regs[i][kk], db,
                                                b_kmajor, scale_d)
                continue
            assert da0 is not None
            da = _plus(da0, i * 64 * 128 + a_k)
            st = llvm.StructType.get_literal([f32] * len(regs))
            packed = llvm.UndefOp(st).result
            for j, v in enumerate(regs):
                packed = llvm.InsertValueOp(packed, v, [j]).result
            out = nvvm.WgmmaMmaAsyncOp(
                st, packed, da, db, attr(f"#nvvm.shape<m = 64, n = {n_instr}, k = {k_instr}>"),
                attr(f"#nvvm.wgmma_type<{kind}>"), attr(f"#nvvm.wgmma_type<{kind}>"),
                attr("#nvvm.wgmma_type<f32>"),
                attr(f"#nvvm.wgmma_scale_out<{'one' if scale_d else 'zero'}>"),
                attr("#nvvm.wgmma_scale_in<one>"), attr("#nvvm.wgmma_scale_in<one>"),
                attr("#nvvm.mma_layout<row>"),
                attr(f"#nvvm.mma_layout<{'col' if b_kmajor else 'row'}>")).result
            values[idx] = [llvm.ExtractValueOp(f32, out, [j]).result for j in range(len(regs))]
    nvvm.WgmmaGroupSyncAlignedOp()
    return [v for regs in values for v in regs]


def wait(pending: int, values: list[ir.Value]) -> list[ir.Value]:
    """`wgmma.wait_group pending` with `values` tied through it (so nothing
    reads them before the MMAs that write them are done)."""
    f32 = ir.F32Type.get()
    n = len(values)
    st = llvm.StructType.get_literal([f32] * n)
    cons = ",".join(["=f"] * n + [str(j) for j in range(n)])
    out = llvm.InlineAsmOp(st, values, f"wgmma.wait_group.sync.aligned {pending};", cons,
                           has_side_effects=True).result
    return [llvm.ExtractValueOp(f32, out, [j]).result for j in range(n)]


def rebuild(L: FuncLowering, d: Distribution, m: int, n: int,
            values: list[ir.Value]) -> list[ir.Value]:
    """The accumulator fragment (chunks in `d`'s order) from `issue`'s values."""
    flat = [ke for regs in _acc_keys(m, n, L.num_warps) for ke in regs]
    per_chunk: dict[tuple[int, ...], dict[int, ir.Value]] = {}
    for (key, e), v in zip(flat, values):
        per_chunk.setdefault(key, {})[e] = v
    return [L.concat([per_chunk[key][e] for e in range(d.vec_len)]) for key in d.chunk_keys]


@RULES.rule("hook.dot-wgmma", feature=Feature.WGMMA)
def _dot_wgmma(L: FuncLowering, op: ir.Operation) -> bool:
    a, b, acc = op.operands
    res = op.results[0]
    (m, k), n = tuple(a.type.shape), tuple(b.type.shape)[1]
    elem = L.scalar_type(a.type.element_type)
    fp8 = ir.StringAttr(op.attributes["tile.mma_fp8"]).value \
        if "tile.mma_fp8" in op.attributes else None
    eb = 1 if fp8 else 2
    ta, tb = operand_tiles(m, n, k, eb, L.num_warps)
    if fp8:   # B K-major: the [K, N] tile is stored as [N, K]
        tb = SwizzledTile(n, k, eb)
    a_regs = register_a(L, a, m, k) if fp8 is None and wgmma_register_a(a.type, res.type) \
        else None
    buf_a = None if a_regs is not None else \
        L.shared_buffer(ir.IntegerType.get_signless(8), ta.nbytes, align=1024)
    buf_b = L.shared_buffer(ir.IntegerType.get_signless(8), tb.nbytes, align=1024)
    gpu.BarrierOp()
    if buf_a is not None:
        stage_registers(L, a, buf_a, ta)
    stage_registers(L, b, buf_b, tb, transpose=fp8 is not None)
    fence_async_shared()
    gpu.BarrierOp()
    d = L.dist(res.type)
    values = issue(L, elem, buf_a, 0, buf_b, 0, (m, n, k), L.frag(acc), d,
                   b_kmajor=fp8 is not None, fp8=fp8, a_regs=a_regs)
    values = wait(0, values)
    gpu.BarrierOp()
    L.release_shared(buf_b)     # read: the next dot's staging takes the bytes
    if buf_a is not None:
        L.release_shared(buf_a)
    L.values[res] = rebuild(L, d, m, n, values)
    return True


@RULES.rule("hook.mma-wgmma", feature=Feature.WGMMA)
def _mma(L: FuncLowering, op: ir.Operation) -> None:
    ring_a, slot_a, ring_b, slot_b, acc = op.operands
    res = op.results[0]
    tb, _ = ring_tile(L, ring_b)
    b_off = arith.MulIOp(L.get(slot_b), _c(L, tb.nbytes)).result
    d = L.dist(res.type)
    kmajor = "tile.b_kmajor" in op.attributes
    n = tb.rows if kmajor else tb.cols
    fp8 = ir.StringAttr(op.attributes["tile.mma_fp8"]).value \
        if "tile.mma_fp8" in op.attributes else None
    if isinstance(ring_a.type, ir.RankedTensorType):   # A in registers
        m, k = tuple(ring_a.type.shape)
        elem = L.scalar_type(ring_a.type.element_type)
        values = issue(L, elem, None, 0, L.get(ring_b), b_off, (m, n, k), L.frag(acc), d,
                       b_kmajor=kmajor, a_regs=register_a(L, ring_a, m, k))
    else:
        ta, _ = ring_tile(L, ring_a)
        m, k = ta.rows, ta.cols
        a_off = arith.MulIOp(L.get(slot_a), _c(L, ta.nbytes)).result
        elem = ir.MemRefType(ring_a.type).element_type
        values = issue(L, elem, L.get(ring_a), a_off, L.get(ring_b), b_off,
                       (m, n, k), L.frag(acc), d, b_kmajor=kmajor, fp8=fp8)
    L.pending[res] = values
    L.values[res] = rebuild(L, d, m, n, values)


@RULES.rule("tile.mma_wait", feature=Feature.WGMMA)
def _mma_wait(L: FuncLowering, op: ir.Operation) -> None:
    src = op.operands[0]
    res = op.results[0]
    pending = int(ir.IntegerAttr(op.attributes["pending"]).value)
    d = L.dist(res.type)
    m, n = tuple(res.type.shape)
    values = L.pending.get(src)
    if values is None:  # an accumulator carried through a loop: its fragment's scalars
        flat = [ke for regs in _acc_keys(m, n, L.num_warps) for ke in regs]
        frag = L.frag(src)
        values = [L.extract(frag[d.chunk_index(key)], e) for key, e in flat]
    L.values[res] = rebuild(L, d, m, n, wait(pending, values))
