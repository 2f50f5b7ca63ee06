"""tile-pipeline-lds on AMD (passes/tile_pipeline_lds.py, targets/amd/lds_ring.py):
the "xor" slot layout simulated against A @ B for every MFMA/WMMA tiling it is
chosen for, and the generated code checked statically (no AMD GPU here): the
main loop issues the next tile's global loads before its MFMAs, writes the
next slot after them and has one barrier (two with one slot); the hsaco
links; registers stay at or under Triton 3.9's (128 for 128x128x64, 256 for
256x256x64 at 8 warps) with no scratch."""
from __future__ import annotations

import re

import numpy as np
import pytest

from tilec.passes.analysis.layouts import Distribution
from tilec.passes.analysis.matrix_tiling import MatrixTiling, b_static, choose
from tilec.passes.tile_pipeline_lds import slot_layouts, xor_chunk_bytes
from tilec.targets import TARGETS
from tilec.targets.amd.lds_ring import Slot, position
from tilec.targets.amd.mfma import bt_coords, xor_read_parts, xor_rows, xor_t_mask

from test_amd_matrix import _documented_operand, _documented_out, _kernel_meta


_BYTE_TYPES = ("i8", "f8E4M3FN", "f8E5M2")


def _xor_tilings() -> list[tuple[MatrixTiling, int, int, int, int]]:
    """(tiling, M, N, K, bytes per stored element) of every table entry whose A
    slot takes "xor": rows of 128 bytes, and for the f16 instructions also fp8
    bytes decoded after the reads (`tile.fp8_decoded`) with K = 64: 64-byte
    rows, 8-byte chunks."""
    out = []
    for target in ("gfx90a", "gfx942", "gfx950", "gfx1100"):
        for ins in TARGETS[target].matrix_instrs:
            eb = 1 if ins.a in _BYTE_TYPES else 2
            for warps in (4, 8):
                for store_eb, k in ((eb, 128 // eb),) + (((1, 64),) if ins.a == "f16" else ()):
                    m, n = 2 * ins.m * warps, 2 * ins.n * 4
                    t = choose(TARGETS[target], ins.kind, m, n, k, ins.a, ins.acc, warps)
                    if t is not None and t.instr == ins and \
                            slot_layouts(t, m, n, k, store_eb)[0] == "xor":
                        out.append((t, m, n, k, store_eb))
    return out


CASES = _xor_tilings()


def test_some_tilings_take_the_xor_layout() -> None:
    kinds = {t.instr.kind for t, *_ in CASES}
    assert "mfma" in kinds and len(CASES) >= 6
    # fp8 bytes of K = 64 for the f16 MFMA (gfx942's OCP fp8): 8-byte chunks.
    assert any(c[4] == 1 and c[0].instr.a == "f16" and c[0].instr.kind == "mfma" for c in CASES)


@pytest.mark.sample(3)        # the test command: each tiling with one of the B layouts
@pytest.mark.parametrize("b_layout", ["plain", "xor_t", "pad_t"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}x{c[2]}x{c[3]}-{c[4]}B")
def test_xor_slot_reads_compute_the_product(case: tuple[MatrixTiling, int, int, int, int],
                                            b_layout: str) -> None:
    """A written at `position` (what tile.local_store emits), read as the
    lowering does (the lane's base permuted once by `xor_rows`, then the
    constant parts of `xor_read_parts`); B from a plain slot (kpl reads of
    rows) or a K-major "xor_t" one (one run per lane at `bt_coords`, permuted
    by `xor_t_mask`, the k-group XORed in) or a K-major padded "pad_t" one:
    A @ B."""
    tiling, m_dim, n_dim, k_dim, eb = case
    ins = tiling.instr
    kpl = ins.operand_elems
    sa = Slot(m_dim, k_dim, eb, "xor")
    ldb = n_dim
    rng = np.random.default_rng(1)
    a = rng.integers(-4, 5, (m_dim, k_dim))
    b = rng.integers(-4, 5, (k_dim, n_dim))
    buf_a = np.full(sa.elems, 10 ** 6)
    for r in range(m_dim):
        for c in range(k_dim):
            buf_a[position(sa, r, c)] = a[r, c]
    assert (buf_a < 10 ** 6).all()              # a permutation: every place written once
    sb = Slot(k_dim, n_dim, eb, b_layout)
    buf_b = np.full(sb.elems, 10 ** 6)
    for r in range(k_dim):
        for c in range(n_dim):
            buf_b[position(sb, r, c)] = b[r, c]
    assert (buf_b < 10 ** 6).sum() == k_dim * n_dim      # no two elements share a place
    step_k = ins.k * tiling.kpack
    d = Distribution.of(tiling.layout(), (m_dim, n_dim))
    out = np.zeros((m_dim, n_dim), np.int64)
    mt, ng = tiling.tiles(m_dim, n_dim)
    chunk = xor_chunk_bytes(k_dim * eb) // eb
    assert chunk == sa.chunk and (b_layout != "xor_t" or chunk == sb.chunk)
    for warp in range(tiling.wm * tiling.wn):
        lanes = range(tiling.warp_size)
        coords = {ln: d.thread_coords(warp * tiling.warp_size + ln, tiling.warp_size)
                  for ln in lanes}
        # What depends on the lane alone (or on no lane), computed once: the
        # lane's A base (permuted once, as the lowering does), its B offset and
        # each register's (row, k) per the ISA; b_static per register below.
        base_of = [xor_rows(tiling.a_offset(ln, warp, 0, 0, k_dim), k_dim, chunk) for ln in lanes]
        b0_of = [tiling.b_offset(ln, warp, 0, 0, 0, 0, ldb) for ln in lanes]
        regs_of = [[_documented_operand(ins, ln, e) for e in range(kpl)] for ln in lanes]
        for t in range(mt):
            for g in range(ng):
                for u in range(tiling.nv):
                    acc = np.zeros((ins.m, ins.n), np.int64)
                    cols_of = [bt_coords(tiling, ln, warp, g, u) for ln in lanes]
                    for pair in range(k_dim // (ins.k * tiling.kpack)):
                        col_x, row_add = xor_read_parts(tiling, t, pair, k_dim)
                        for s in range(tiling.kpack):
                            ta = np.zeros((ins.m, ins.k), np.int64)
                            tb = np.zeros((ins.k, ins.n), np.int64)
                            bs = [b_static(tiling, g, pair, s, e, ldb) for e in range(kpl)]
                            for ln in lanes:
                                base = base_of[ln]
                                run0 = s * kpl       # position in the lane's run
                                b0 = b0_of[ln]
                                col, k0 = cols_of[ln]
                                bt = col * k_dim + (k0 ^ xor_t_mask(col) * chunk)
                                for e in range(kpl):
                                    i, kk = regs_of[ln][e]
                                    p = run0 + e
                                    h = p - p % chunk        # the chunk read separately
                                    ta[i, kk] = buf_a[(base ^ (col_x + h)) + row_add + p - h]
                                    ob = b0 + bs[e] + u
                                    if b_layout == "xor_t":
                                        ob = (bt ^ (pair * step_k + h)) + p - h
                                    elif b_layout == "pad_t":     # k-group as an offset
                                        ob = col * sb.stride + k0 + pair * step_k + s * kpl + e
                                    kk, j = regs_of[ln][e][::-1]
                                    tb[kk, j] = buf_b[ob]
                            acc += ta @ tb
                    for ln in lanes:
                        for r in range(tiling.acc_regs):
                            i, j = _documented_out(ins, ln, r)
                            a_key, b_key = tiling.chunk_key(t, g, r)
                            row, col = coords[ln][(a_key, b_key + u)]
                            out[row, col] = acc[i, j]
    np.testing.assert_array_equal(out, a @ b)


def test_xor_rows_spread_eight_rows_over_the_banks() -> None:
    """Lanes reading 16 bytes at column 0 of rows r .. r + 7 of a 128-byte-row
    slot hit eight different 16-byte bank groups (what the padding did)."""
    s = Slot(128, 64, 2, "xor")
    for r0 in range(0, 128, 8):
        groups = {(position(s, r, 0) * 2 // 16) % 8 for r in range(r0, r0 + 8)}
        assert len(groups) == 8
    # fp8 bytes with K = 64 (64-byte rows): eight rows start in eight 8-byte chunks.
    s8 = Slot(128, 64, 1, "xor")
    assert s8.chunk == 8
    for r0 in range(0, 128, 8):
        assert len({(position(s8, r, 0) // 8) % 8 for r in range(r0, r0 + 8)}) == 8
    # K-major B: the eight columns a read phase covers (consecutive n) and the
    # eight a write phase covers (n 8 apart) land on eight chunks each.
    t = Slot(64, 128, 2, "xor_t")
    for n0 in range(0, 128, 8):
        assert len({(position(t, 0, n) * 2 // 16) % 8 for n in range(n0, n0 + 8)}) == 8
    for j in range(8):
        assert len({(position(t, 0, 8 * ln + j) * 2 // 16) % 8 for ln in range(8)}) == 8


# -- generated code, statically ------------------------------------------------

def _mm(target: str, bm: int, bk: int, warps: int, stages: int) -> dict:
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
    from matmul_kernels import mm_tutorial
    sig = "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1"
    return dict(mm_tutorial.compile(target=target, signature=sig, num_warps=warps,
                                    num_stages=stages, constexprs={
                                        "BLOCK_M": bm, "BLOCK_N": bm, "BLOCK_K": bk,
                                        "GROUP_M": 8}).asm)


def _main_loop(gcn: str) -> str:
    """The text from the loop header to its backward branch (the block holding
    the MFMAs, rotated as LLVM lays it out: header loads, then the body)."""
    loops = []
    for m in re.finditer(r"^(\.LBB\w+):", gcn, re.M):
        back = re.search(rf"s_(?:cbranch_\w+|branch)\s+{re.escape(m.group(1))}\b",
                         gcn[m.end():])
        if back:
            loops.append(gcn[m.end():m.end() + back.start()])
    return max(loops, key=lambda s: s.count("v_mfma") + s.count("v_wmma"))


# (target, BM=BN, BK, warps, stages, LDS ring bytes, barriers per iteration, VGPR+AGPR
# bound: Triton 3.9's count for the gfx942 rows, benchmarks/results/static-amd-*.json)
CODE = [("gfx942", 128, 64, 8, 3, 65536, 1, 130),
        ("gfx942", 128, 64, 8, 2, 32768, 2, 128),
        ("gfx942", 256, 64, 8, 2, 65536, 2, 256),
        ("gfx942", 256, 64, 8, 3, 65536, 2, 256),     # two slots do not fit: one
        ("gfx90a", 128, 64, 8, 3, 65536, 1, 256),
        ("gfx950", 128, 64, 8, 3, 65536, 1, 256),
        ("gfx1100", 64, 32, 4, 3, 2 * (64 * 40 + 32 * 72) * 2, 1, 256)]


@pytest.mark.parametrize("target,bm,bk,warps,stages,ring,barriers,regs", CODE)
def test_stream_pipelined_loop(target: str, bm: int, bk: int, warps: int, stages: int,
                               ring: int, barriers: int, regs: int) -> None:
    asm = _mm(target, bm, bk, warps, stages)
    gcn = asm["amdgcn"]
    assert asm["hsaco"]
    meta = _kernel_meta(asm)
    assert meta["scratch_bytes"] == 0 and meta["vgpr_spill_count"] == 0, meta
    assert meta["vgpr_count"] + meta.get("agpr_count", 0) <= regs, meta
    assert meta["lds_bytes"] >= ring
    loop = _main_loop(gcn)
    assert loop.count("s_barrier") == barriers
    # LLVM rotates the loop: the header (the next tile's global loads) is laid
    # out after the body, so the loads come after the backward-branch target's
    # ds_writes in the text but before the MFMAs in program order.
    body = gcn[gcn.index(loop):]
    writes = [m.start() for m in re.finditer(r"ds_(?:write|store)_b", loop)]
    mmas = [m.start() for m in re.finditer(r"v_(?:mfma|wmma)", loop)]
    assert writes and mmas and max(writes) > min(mmas)      # writes after the first MFMA
    assert re.search(r"(?:global|buffer)_load_(?:dwordx4|b128)", body)
    assert "ds_read_b128" in loop or "ds_load_b128" in loop


def test_one_slot_reads_b_k_major_without_regrouping() -> None:
    """128x128x64 at num_stages=2 (one slot, B "xor_t"): every operand read is
    a ds_read_b128, no v_perm regroups B, and the main loop is no longer than
    Triton 3.9's (102 instructions, static-amd-2026-12-01-lds-pipeline.json)."""
    gcn = _mm("gfx942", 128, 64, 8, 2)["amdgcn"]
    loop = _main_loop(gcn)
    assert "v_perm_b32" not in loop and "ds_read2" not in loop
    assert loop.count("ds_read_b128") == 12 and loop.count("v_mfma") == 16
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
    from static_amd_vs_triton import amdgcn_stats
    assert amdgcn_stats(gcn)["loop_instructions"] <= 102


def test_one_slot_keeps_the_mfmas_before_the_slot_writes() -> None:
    """With one slot, a scheduling barrier after the product keeps LLVM from
    sinking the last MFMAs below the next tiles' LDS writes (their operands
    would stay live across them): gfx950 128x128x64 f16 at 8 warps needs no
    more VGPRs than Triton 3.9 (108; 128 without the barrier), with no
    scratch; two slots get no such barrier."""
    asm = _mm("gfx950", 128, 64, 8, 2)
    loop = _main_loop(asm["amdgcn"])
    meta = _kernel_meta(asm)
    assert meta["vgpr_count"] + meta.get("agpr_count", 0) <= 108, meta
    assert meta["scratch_bytes"] == 0
    # The last MFMA of the K step comes before the writes of the next tiles.
    assert loop.rindex("v_mfma") < loop.index("ds_write"), loop
    assert "llvm.amdgcn.sched.barrier(i32 0)" in asm["llir"]
    assert "sched.barrier" not in _mm("gfx942", 128, 64, 8, 3)["llir"]


# (operand type, the operand-format modifiers of gfx950's f8f6f4 MFMA: fp8
# e4m3 is format 0 (printed as none), bf8 e5m2 format 1 (cbsz:1 blgp:1))
FP8 = [("fp8e4nv", ""), ("fp8e5", " cbsz:1 blgp:1")]


@pytest.mark.parametrize("dtype,formats", FP8)
@pytest.mark.parametrize("stages", [1, 2])
def test_fp8_dot_on_gfx950_uses_fp8_mfma(dtype: str, formats: str, stages: int) -> None:
    """OCP fp8 operands (the frontend's float8e4nv / float8e5) on gfx950: the
    CDNA4 f8f6f4 MFMA (K 64, 32 bytes per lane), 2 per K step of 128x128x64
    at 8 warps, as Triton 3.9 issues (static-amd-2026-12-01-session5.json),
    the format in its modifiers, the bytes staged as they are (no f16
    widening in the loop), linked, no scratch; gfx942 (FNUZ-only fp8
    hardware) widens them to f16 and runs v_mfma_f32_32x32x8_f16."""
    instr = "v_mfma_f32_32x32x64_f8f6f4"
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
    from matmul_kernels import mm_tutorial
    sig = (f"*{dtype}:16,*{dtype}:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,"
           "i32:16,i32=1")
    cx = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}
    asm = dict(mm_tutorial.compile(target="gfx950", signature=sig, num_warps=8,
                                   num_stages=stages, constexprs=cx).asm)
    gcn = asm["amdgcn"]
    assert asm["hsaco"] and gcn.count(instr) == 2, gcn.count(instr)
    assert "v_mfma" not in gcn.replace(instr, "")
    for line in re.findall(rf"{instr} .*", gcn):
        assert line.endswith(formats) and ("cbsz" in line) == bool(formats), line
    loop = _main_loop(gcn)
    assert "v_cvt" not in loop and "v_perm" not in loop
    meta = _kernel_meta(asm)
    assert meta["scratch_bytes"] == 0 and meta["vgpr_spill_count"] == 0, meta
    old = dict(mm_tutorial.compile(target="gfx942", signature=sig, num_warps=8,
                                   num_stages=stages, constexprs=cx).asm)["amdgcn"]
    assert "_fp8" not in old and "_bf8" not in old and "v_mfma_f32_32x32x8_f16" in old


def test_gfx942_fp8_operands_stay_bytes_in_lds() -> None:
    """OCP fp8 on gfx942 (decoded to f16 by tile-expand-fp8): the rings hold the
    loaded bytes (16 KiB for 128x128x64: A "xor" with 8-byte chunks, B "xor_t"),
    each lane's operand bytes are read with ds_read_b64 and decoded after the
    read with integer and packed-f16 ops (no v_cvt, no per-element select),
    16 f16 MFMAs per K step, no scratch, no more VGPRs than Triton 3.9
    (156; static-amd-2026-12-01-session5.json) and its LDS; 256x256x64 is pipelined too
    (32 KiB of rings: Triton's LDS, 256 VGPRs and 72 bytes of scratch there),
    without scratch."""
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
    from matmul_kernels import mm_tutorial
    sig = ("*fp8e4nv:16,*fp8e4nv:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,"
           "i32:16,i32=1")

    def build(bm: int) -> dict:
        return dict(mm_tutorial.compile(target="gfx942", signature=sig, num_warps=8,
                                        num_stages=2, constexprs={
                                            "BLOCK_M": bm, "BLOCK_N": bm, "BLOCK_K": 64,
                                            "GROUP_M": 8}).asm)
    asm = build(128)
    assert 'tile.lds = "xor"} : () -> memref<1x128x64xi8, 3>' in asm["tiled"]
    assert 'tile.lds = "xor_t"} : () -> memref<1x64x128xi8, 3>' in asm["tiled"]
    loop = _main_loop(asm["amdgcn"])
    assert asm["hsaco"] and loop.count("v_mfma_f32_32x32x8_f16") == 16
    assert loop.count("ds_read_b64") == 12 and "ds_read_b128" not in loop
    assert "v_cvt" not in loop and "v_cndmask" not in loop and "v_pk_mul_f16" in loop
    assert loop.count("s_barrier") == 2
    meta = _kernel_meta(asm)
    assert meta["scratch_bytes"] == 0 and meta["vgpr_count"] <= 156, meta
    # The f16 result is stored from the accumulator (Feature.DIRECT_ACC_STORES:
    # its 32 KiB exchange would double the rings' LDS): the kernel's LDS is
    # the rings', Triton's 16 KiB.
    assert meta["lds_bytes"] <= 16384, meta
    assert "global_store_dword " in asm["amdgcn"]
    big = build(256)
    assert "memref<1x256x64xi8, 3>" in big["tiled"] and "memref<1x64x256xi8, 3>" in big["tiled"]
    meta = _kernel_meta(big)
    assert meta["scratch_bytes"] == 0 and meta["vgpr_spill_count"] == 0, meta
    assert meta["lds_bytes"] <= 32768, meta


class _Consts:
    """The one FuncLowering method the index emitters use."""

    def const_i32(self, v: int):
        from mlir import ir
        from mlir.dialects import arith
        return arith.ConstantOp(ir.IntegerType.get_signless(32), v).result


def _fold(build) -> int:
    """The i32 constant the emitted index arithmetic folds to (canonicalize)."""
    from mlir import ir, passmanager
    from mlir.dialects import func
    with ir.Context(), ir.Location.unknown():
        m = ir.Module.create()
        i32 = ir.IntegerType.get_signless(32)
        with ir.InsertionPoint(m.body):
            f = func.FuncOp("f", ir.FunctionType.get([], [i32]))
            with ir.InsertionPoint(f.add_entry_block()):
                func.ReturnOp([build(_Consts())])
        passmanager.PassManager.parse("builtin.module(canonicalize)").run(m.operation)
        ret = list(f.entry_block.operations)[-1]
        return int(ir.IntegerAttr(ret.operands[0].owner.attributes["value"]).value)


@pytest.mark.parametrize("layout", ["plain", "pad", "xor", "xor_t", "pad_t"])
def test_emitted_slot_index_is_the_model(layout: str) -> None:
    """tile.local_store's emitted index (`_index`) equals `position`, the
    integer model the read simulations fill the slots with."""
    from tilec.targets.amd.lds_ring import _index
    s = Slot(64, 128, 2, layout)
    rng = np.random.default_rng(4)
    for r, c in [(0, 0), (63, 127), *rng.integers(0, 64, (12, 2)) * [1, 2]]:
        got = _fold(lambda L: _index(L, s, L.const_i32(int(r)), L.const_i32(int(c))))
        assert got == position(s, int(r), int(c)), (layout, r, c)


def test_emitted_read_bases_are_the_models() -> None:
    """The MFMA reads' emitted permutations (`_xor_rows`, `xor_t_base`) equal
    the integer models the product simulations use."""
    from tilec.targets.amd.mfma import _xor_rows, xor_t_base
    for base in (0, 7, 64 * 9 + 8, 64 * 127 + 56):
        assert _fold(lambda L: _xor_rows(L, L.const_i32(base), 64, 8)) == xor_rows(base, 64, 8)
    for col, k in ((0, 0), (9, 8), (127, 48), (66, 24)):
        want = col * 64 + (k ^ xor_t_mask(col) * 8)
        assert _fold(lambda L: xor_t_base(L, L.const_i32(col), L.const_i32(k), 64, 8)) == want


@pytest.mark.parametrize("rows,cols,eb", [(128, 128, 2), (64, 64, 2), (32, 128, 4), (16, 256, 1)])
def test_swizzled_exchange_is_a_permutation_keeping_pieces(rows: int, cols: int, eb: int) -> None:
    """The epilogue exchange of Feature.SWIZZLED_EXCHANGE (passes/gpu/shape.py):
    the emitted position of (r, c) is the model r * C + (c ^ ((r % 8) * 16 / eb)),
    every element gets its own place inside the unpadded tile, and each aligned
    piece of up to 16 bytes along a row stays contiguous (a vector access)."""
    from tilec.passes.gpu.shape import swizzled_position
    per = 16 // eb
    model = np.array([[r * cols + (c ^ ((r % 8) * per)) for c in range(cols)]
                      for r in range(rows)])
    assert sorted(model.ravel()) == list(range(rows * cols))
    pieces = model.reshape(rows, cols // per, per)
    assert (np.diff(pieces, axis=2) == 1).all()
    rng = np.random.default_rng(5)
    for r, c in [(0, 0), (rows - 1, cols - 1), *zip(rng.integers(0, rows, 8),
                                                  rng.integers(0, cols, 8))]:
        got = _fold(lambda L: swizzled_position(L, L.const_i32(int(r)), L.const_i32(int(c)),
                                                cols, eb))
        assert got == model[r, c], (r, c)
