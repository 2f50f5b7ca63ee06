"""AMD matrix instructions (MFMA on gfx90a/gfx942/gfx950, WMMA on gfx1100).

No AMD GPU exists here, so the layouts are checked by simulation against the
documented register mappings (AMD CDNA3 ISA "Matrix Arithmetic Instructions";
RDNA3 ISA "WMMA": f32 D register v of lane l is row 2 v + l // 16), and the
generated code statically (v_mfma/v_wmma present, hsaco linked with
ld.lld --no-undefined, code-object metadata: no scratch, no spills)."""
from __future__ import annotations

import numpy as np
import pytest

from tilec.passes.analysis.layouts import Distribution
from tilec.passes.analysis.matrix_tiling import MatrixTiling, a_static, b_static, choose
from tilec.targets import TARGETS, MatrixInstr

# (target, M, N, K, dtype, num_warps)
DOTS = [("gfx942", 128, 128, 64, "f16", 8), ("gfx942", 256, 256, 64, "f16", 8),
        ("gfx942", 64, 64, 32, "bf16", 4), ("gfx90a", 32, 64, 16, "f16", 2),
        ("gfx942", 32, 32, 8, "f16", 1), ("gfx1100", 64, 64, 32, "f16", 4),
        ("gfx1100", 128, 64, 16, "bf16", 8), ("gfx1100", 16, 16, 16, "f16", 1),
        # int8 -> int32: CDNA3 8 bytes per lane, CDNA2 4, RDNA3 iu8 16.
        ("gfx942", 64, 64, 64, "i8", 4), ("gfx942", 16, 64, 64, "i8", 4),
        ("gfx90a", 64, 32, 32, "i8", 2), ("gfx90a", 16, 32, 32, "i8", 2),
        ("gfx1100", 32, 32, 32, "i8", 2),
        # OCP fp8 -> f32 on CDNA4 (gfx950): 8 bytes per lane, as int8 on CDNA3.
        ("gfx950", 128, 128, 64, "f8E4M3FN", 8), ("gfx950", 64, 64, 64, "f8E5M2", 4),
        ("gfx950", 16, 64, 64, "f8E4M3FN", 4),
        # CDNA4's f16/bf16 with twice the K (8 elements per lane).
        ("gfx950", 128, 128, 64, "f16", 8), ("gfx950", 16, 64, 64, "bf16", 4)]


def _tilings() -> list[MatrixTiling]:
    out = []
    for target, m, n, k, a, w in DOTS:
        t = TARGETS[target]
        kind = "mfma" if t.warp_size == 64 else "wmma"
        tiling = choose(t, kind, m, n, k, a, "i32" if a == "i8" else "f32", w)
        assert tiling is not None, (target, m, n, k)
        out.append(tiling)
    # Both MFMA shapes, whatever the table prefers.
    for d, kk in ((32, 8), (16, 16)):
        out.append(MatrixTiling(MatrixInstr("mfma", d, d, kk, "f16", "f32", 4, 4), 64, 2, 2, 2, 2))
    return out


def _documented_out(ins: MatrixInstr, lane: int, reg: int) -> tuple[int, int]:
    """The ISA's accumulator mapping, written out per instruction."""
    if (ins.kind, ins.m) == ("mfma", 32):     # 32x32: rows 8 (r/4) + 4 (l/32) + r%4
        return 8 * (reg // 4) + 4 * (lane // 32) + reg % 4, lane % 32
    if (ins.kind, ins.m) == ("mfma", 16):     # 16x16: rows 4 (l/16) + r
        return 4 * (lane // 16) + reg, lane % 16
    return 2 * reg + lane // 16, lane % 16    # gfx11 WMMA


@pytest.mark.parametrize("tiling", _tilings(), ids=str)
def test_accumulator_layout_is_the_instruction_fragment(tiling: MatrixTiling) -> None:
    """Every lane's accumulator chunks hold exactly the documented D registers of
    its warp's instruction tiles, placed where the tiling says."""
    ins = tiling.instr
    m_dim = ins.m * tiling.wm * 2
    n_dim = ins.n * tiling.wn * tiling.nv * 2
    d = Distribution.of(tiling.layout(), (m_dim, n_dim))
    mt, ng = tiling.tiles(m_dim, n_dim)
    seen = set()
    for tid in range(tiling.warp_size * tiling.wm * tiling.wn):
        lane, warp = tid % tiling.warp_size, tid // tiling.warp_size
        wmi, wni = warp // tiling.wn, warp % tiling.wn
        coords = d.thread_coords(tid, tiling.warp_size)
        for t in range(mt):
            for g in range(ng):
                for r in range(tiling.acc_regs):
                    i, j = _documented_out(ins, lane, r)
                    assert tiling.out_coord(lane, r) == (i, j)
                    a, b = tiling.chunk_key(t, g, r)
                    for u in range(tiling.nv):
                        row = ins.m * tiling.wm * t + tiling.block_rows * (
                            tiling.wm * (i // tiling.block_rows) + wmi) + i % tiling.block_rows
                        col = (wni * ins.n + j) * tiling.nv + u + g * ins.n * tiling.nv * tiling.wn
                        assert coords[(a, b + u)] == (row, col)
                        seen.add((row, col))
    assert len(seen) == m_dim * n_dim


def _documented_operand(ins: MatrixInstr, lane: int, e: int) -> tuple[int, int]:
    """(row of A / column of B, k) of register e of `lane` per the ISA."""
    if ins.kind == "wmma":                    # lanes 16-31 repeat 0-15, all 16 k
        return lane % 16, e
    return lane % ins.m, ins.operand_elems * (lane // ins.m) + e


@pytest.mark.parametrize("tiling", _tilings(), ids=str)
def test_operand_reads_compute_the_product(tiling: MatrixTiling) -> None:
    """Simulate the lowering: every lane reads its A and B registers at
    `a_offset` / `b_offset` of the row-major padded buffers, each instruction
    multiplies as the ISA documents (lane registers -> matrix elements), the
    results land through `chunk_key`/the layout; the whole must equal A @ B."""
    ins = tiling.instr
    kpl = ins.operand_elems
    m_dim = ins.m * tiling.wm * 2
    n_dim = ins.n * tiling.wn * tiling.nv
    k_dim = ins.k * tiling.kpack * 2
    pad = 8
    lda, ldb = k_dim + pad, n_dim + pad
    rng = np.random.default_rng(0)
    a = rng.integers(-4, 5, (m_dim, k_dim))
    b = rng.integers(-4, 5, (k_dim, n_dim))
    buf_a = np.full(m_dim * lda, 10 ** 6)
    buf_b = np.full(k_dim * ldb, 10 ** 6)            # padding poisons a wrong read
    for r in range(m_dim):
        buf_a[r * lda:r * lda + k_dim] = a[r]
    for r in range(k_dim):
        buf_b[r * ldb:r * ldb + n_dim] = b[r]
    d = Distribution.of(tiling.layout(), (m_dim, n_dim))
    out = np.zeros((m_dim, n_dim), np.int64)
    mt, ng = tiling.tiles(m_dim, n_dim)
    for warp in range(tiling.wm * tiling.wn):
        lanes = range(tiling.warp_size)
        coords = {ln: d.thread_coords(warp * tiling.warp_size + ln, tiling.warp_size)
                  for ln in lanes}
        for t in range(mt):
            for g in range(ng):
                for u in range(tiling.nv):
                    acc = np.zeros((ins.m, ins.n), np.int64)
                    for pair in range(k_dim // (ins.k * tiling.kpack)):
                        for s in range(tiling.kpack):
                            ta = np.zeros((ins.m, ins.k), np.int64)
                            tb = np.zeros((ins.k, ins.n), np.int64)
                            for ln in lanes:
                                # As the lowering: lane part + constant tile part.
                                oa = tiling.a_offset(ln, warp, 0, 0, lda) + \
                                    a_static(tiling, t, pair, lda)
                                assert oa == tiling.a_offset(ln, warp, t, pair, lda)
                                oa += s * kpl
                                b0 = tiling.b_offset(ln, warp, 0, 0, 0, 0, ldb)
                                for e in range(kpl):
                                    i, kk = _documented_operand(ins, ln, e)
                                    ta[i, kk] = buf_a[oa + e]
                                    ob = b0 + b_static(tiling, g, pair, s, e, ldb)
                                    assert ob == tiling.b_offset(ln, warp, g, pair, s, e, ldb)
                                    ob += u
                                    kk, j = _documented_operand(ins, ln, e)[::-1]
                                    tb[kk, j] = buf_b[ob]
                            acc += ta @ tb
                    for ln in lanes:
                        for r in range(tiling.acc_regs):
                            i, j = _documented_out(ins, ln, r)
                            a_key, b_key = tiling.chunk_key(t, g, r)
                            row, col = coords[ln][(a_key, b_key + u)]
                            out[row, col] = acc[i, j]
    np.testing.assert_array_equal(out, a @ b)


def test_choice_follows_the_table_and_the_warps() -> None:
    t942 = TARGETS["gfx942"]
    tiling = choose(t942, "mfma", 128, 128, 64, "f16", "f32", 8)
    assert tiling is not None and (tiling.instr.shape, tiling.wm, tiling.wn, tiling.nv,
                                   tiling.kpack) == ("32x32x8", 4, 2, 2, 2)
    tiling = choose(t942, "mfma", 256, 256, 64, "f16", "f32", 8)
    assert tiling is not None and (tiling.wm, tiling.wn, tiling.nv) == (4, 2, 4)
    tiling = choose(t942, "mfma", 16, 64, 32, "bf16", "f32", 4)      # M < 32: 16x16x16
    assert tiling is not None and tiling.instr.shape == "16x16x16"
    assert choose(t942, "mfma", 16, 16, 16, "f32", "f32", 1) is None    # no f32 entry
    assert choose(t942, "mfma", 8, 64, 16, "f16", "f32", 4) is None     # M < 16
    assert choose(TARGETS["gfx1100"], "mfma", 64, 64, 32, "f16", "f32", 4) is None
    assert choose(TARGETS["sm90"], "mfma", 64, 64, 32, "f16", "f32", 4) is None


# -- generated code, statically ------------------------------------------------

def _mm_tutorial(target: str, bm: int, bn: int, bk: int, warps: int) -> dict:
    import sys
    import pathlib
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
    from matmul_kernels import mm_tutorial
    sig = "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1"
    return dict(mm_tutorial.compile(target=target, signature=sig, num_warps=warps, constexprs={
        "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}).asm)


def _kernel_meta(asm: dict) -> dict:
    from tilec.targets.amd.backend import parse_amdgpu_metadata
    (meta,) = parse_amdgpu_metadata(asm["amdgcn"]).values()
    return meta


# (target, block M, N, K, warps, instruction, per K step per warp, spill-free)
TUTORIAL = [("gfx942", 128, 128, 64, 8, "v_mfma_f32_32x32x8_f16", 16, True),
            ("gfx942", 256, 256, 64, 8, "v_mfma_f32_32x32x8_f16", 64, True),
            ("gfx942", 64, 64, 32, 4, "v_mfma_f32_32x32x8_f16", 4, True),
            ("gfx90a", 128, 128, 64, 8, "v_mfma_f32_32x32x8f16", 16, True),
            ("gfx950", 128, 128, 64, 8, "v_mfma_f32_32x32x16_f16", 8, True),
            ("gfx1100", 64, 64, 32, 4, "v_wmma_f32_16x16x16_f16", 8, True)]


@pytest.mark.parametrize("target,bm,bn,bk,warps,instr,per_step,clean", TUTORIAL)
def test_tutorial_matmul_runs_on_the_matrix_cores(target: str, bm: int, bn: int, bk: int,
                                                   warps: int, instr: str, per_step: int,
                                                   clean: bool) -> None:
    """The tutorial-03 matmul: one instruction per (tile, k-step) of each warp
    (BM*BN*BK / (m*n*k*warps) per K iteration), all in the main loop, the
    accumulator never leaves registers; the hsaco links (--no-undefined)."""
    asm = _mm_tutorial(target, bm, bn, bk, warps)
    gcn = asm["amdgcn"]
    assert asm["hsaco"]
    assert gcn.count(instr) == per_step, gcn.count(instr)
    assert "v_mfma" not in gcn.replace(instr, "") and "v_wmma" not in gcn.replace(instr, "")
    assert "ds_read_b128" in gcn or "ds_load_b128" in gcn
    meta = _kernel_meta(asm)
    assert meta["wavefront_size"] == TARGETS[target].warp_size
    if clean:
        assert meta["scratch_bytes"] == 0 and meta["vgpr_spill_count"] == 0, meta


@pytest.mark.parametrize("target,instr", [("gfx942", "v_mfma_f32_32x32x8_f16"),
                                          ("gfx942", "v_mfma_f32_32x32x8_bf16"),
                                          ("gfx1100", "v_wmma_f32_16x16x16_f16")])
def test_examples_matmul_uses_the_matrix_cores(target: str, instr: str) -> None:
    from examples.matmul import SIG, matmul
    dtype = "fp16" if "f16" in instr and "bf16" not in instr else "bf16"
    asm = dict(matmul.compile(target=target, signature=SIG.format(t=dtype), constexprs={
        "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}).asm)
    assert asm["hsaco"] and instr in asm["amdgcn"]
    meta = _kernel_meta(asm)
    assert meta["scratch_bytes"] == 0 and meta["vgpr_spill_count"] == 0, meta


def test_f32_dot_stays_on_the_vector_units() -> None:
    from examples.matmul import SIG, matmul
    asm = dict(matmul.compile(target="gfx942", signature=SIG.format(t="fp32"), constexprs={
        "BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16}).asm)
    assert asm["hsaco"] and "v_mfma" not in asm["amdgcn"] and "v_fma" in asm["amdgcn"]


# (target, instruction, per K step of a 64x64x64 tile over 4 warps)
INT8 = [("gfx90a", "v_mfma_i32_32x32x8i8", 8), ("gfx942", "v_mfma_i32_32x32x16_i8", 4),
        ("gfx950", "v_mfma_i32_32x32x16_i8", 4), ("gfx1100", "v_wmma_i32_16x16x16_iu8", 16)]


@pytest.mark.parametrize("target,instr,per_step", INT8)
def test_int8_dot_uses_the_matrix_cores(target: str, instr: str, per_step: int) -> None:
    """examples/matmul.py's int8 x int8 -> int32 dot: the record's i8 entry,
    one instruction per (tile, k-step), linked, no scratch."""
    from examples.matmul import matmul_i8
    asm = dict(matmul_i8.compile(target=target, signature="*i8:16,*i8:16,*i32:16,i32:16,"
                                 "i32:16,i32:16", num_warps=4,
                                 constexprs={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64}).asm)
    gcn = asm["amdgcn"]
    assert asm["hsaco"] and gcn.count(instr) == per_step, (gcn.count(instr), per_step)
    if "wmma" in instr:     # signed operands: the iu8 instruction's sign bits set
        assert "v_wmma_i32_16x16x16_iu8" in gcn and "neg_lo:[1,1,0]" in gcn, gcn
    meta = _kernel_meta(asm)
    assert meta["scratch_bytes"] == 0 and meta["vgpr_spill_count"] == 0, meta


def test_int8_dot_on_the_cpu_matches_numpy() -> None:
    import numpy as np
    from examples.matmul import matmul_i8

    import tilec
    rng = np.random.default_rng(3)
    m, n, k = 37, 45, 70
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = rng.integers(-128, 128, (k, n), dtype=np.int8)
    c = np.zeros((m, n), np.int32)
    matmul_i8[(tilec.cdiv(m, 16), tilec.cdiv(n, 16))](a, b, c, m, n, k, BLOCK_M=16,
                                                        BLOCK_N=16, BLOCK_K=16)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))
