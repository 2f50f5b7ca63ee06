"""The sm100 tensor-core path (`tcgen05`): dot selection, the descriptor bit
packing against the PTX ISA tables, the shared-memory reads the descriptors
describe against the swizzled layout the rings are filled in, the TMEM ->
register mapping of `tcgen05.ld.32x32b` against the declared accumulator
layout, and the kernels' machine code (ptxas -arch=sm_100a: registers,
spills).  No Blackwell GPU exists on this project's machines: nothing here
runs the code; the emulation below stands in for the hardware."""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

import tilec
import tilec.language as tl

from tilec.passes.analysis.layouts import Distribution, SwizzledTile, tcgen05_accumulator_layout
from tilec.passes.tile_accelerate_dot import DotShape, select
from tilec.targets import TARGETS, Feature
from tilec.targets.nvidia.tcgen05_descriptors import (
    columns, instr_descriptor, k_step_offsets, mma_kind, smem_descriptor, strides,
    thread_tmem_start,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from kernels_for_tests import mm_clamped  # noqa: E402
from matmul_kernels import mm_tutorial  # noqa: E402
from matmul_persistent import matmul_persistent  # noqa: E402

SIG = "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1"


# -- descriptors: expected values computed by hand from the PTX ISA tables
def test_instruction_descriptor_matches_table_42() -> None:
    """PTX ISA 9.7.16.4.2, Table 42 (.kind::f16): dtype F32 = 1 at bits 4-5,
    atype/btype F16 = 0, BF16 = 1 at bits 7-9 / 10-12, transpose A/B at 15/16,
    N >> 3 at bits 17-22, M >> 4 at bits 24-28, everything else 0."""
    # f16, M=128, N=128, A K-major, B N-major (transposed):
    # 1<<4 = 0x10; 1<<16 = 0x10000; (128>>3=16)<<17 = 0x200000; (128>>4=8)<<24 = 0x8000000
    assert instr_descriptor("f16", 128, 128, False, True) == 0x0821_0010
    # bf16, M=128, N=256, both K-major: 0x10 | 1<<7 (0x80) | 1<<10 (0x400)
    # | 32<<17 (0x400000) | 8<<24 (0x8000000)
    assert instr_descriptor("bf16", 128, 256, False, False) == 0x0840_0490
    # f16, M=128, N=16: 2<<17 = 0x40000
    assert instr_descriptor("f16", 128, 16, False, False) == 0x0804_0010
    # .kind::f8f6f4: E4M3 = 0, E5M2 = 1 in the same fields; N=128 K-major B
    assert instr_descriptor("e4m3", 128, 128, False, False) == 0x0820_0010
    assert instr_descriptor("e5m2", 128, 128, False, True) == 0x0821_0490
    # .kind::tf32: TF32 = 2 in both fields: 2<<7 = 0x100, 2<<10 = 0x800
    assert instr_descriptor("tf32", 128, 128, False, True) == 0x0821_0910
    assert [mma_kind(t) for t in ("f16", "bf16", "e4m3", "e5m2", "tf32")] == \
        ["f16", "f16", "f8f6f4", "f8f6f4", "tf32"]


def test_smem_descriptor_matches_table_40() -> None:
    """PTX ISA 9.7.16.4.1, Table 40: encode(x) = (x & 0x3FFFF) >> 4 for the
    start address (bits 0-13), the leading (16-29) and stride (32-45) byte
    offsets; bits 46-48 the fixed 0b001; base offset at 49-51; swizzle mode at
    61-63 (2 = 128-byte swizzle).  Unlike sm90's wgmma descriptor (swizzle
    1 = 128 B at bits 62-63, no fixed field) the 1 at bit 46 is required."""
    # K-major operand at 0x400: start 0x40, LBO 16 -> 1 << 16, SBO 1024 -> 64 << 32,
    # 1 << 46 = 0x4000_0000_0000, 2 << 61 = 0x4000_0000_0000_0000
    assert smem_descriptor(0x400, 16, 1024) == 0x4000_4040_0001_0040
    # N-major B of 64 K rows: LBO = 64 * 128 = 8192 -> 512 << 16 = 0x200_0000
    assert smem_descriptor(0, 8192, 1024) == 0x4000_4040_0200_0000
    # the address wraps at 18 bits like the table's encode; base offset 3 -> 3 << 49
    assert smem_descriptor(0x40000 + 0x30, 16, 1024, base_offset=3) == \
        0x4000_4040_0001_0003 | (3 << 49)
    # same 128-byte swizzle bit as wgmma's mode 1 << 62, plus the version bit
    assert smem_descriptor(0, 16, 1024) >> 61 == 2 and (smem_descriptor(0, 16, 1024) >> 46) & 7 == 1


def _swizzle128(addr: int) -> int:
    """Swizzle<3,4,3>: the 16-byte chunk index (bits 4-6) xor the 128-byte row
    index within the 1024-byte atom (bits 7-9)."""
    return addr ^ (((addr >> 7) & 7) << 4)


def _read_kmajor(start: int, sbo: int, rows: int, elem: int) -> dict[tuple[int, int], int]:
    """Where one k-step (32 bytes of K) of a K-major SW128 operand reads
    element (row, k): canonical layout ((8, m), (T, 2)) : ((128 B, SBO), ...):
    rows 128 bytes apart inside an 8-row group, groups SBO apart."""
    return {(r, kk): _swizzle128(start + (r // 8) * sbo + (r % 8) * 128 + kk * elem)
            for r in range(rows) for kk in range(32 // elem)}


def _read_nmajor(start: int, lbo: int, sbo: int, n: int, elem: int) -> dict[tuple[int, int], int]:
    """An MN-major SW128 operand, ((T, 8, m), (8, k)) : ((1, T, LBO), (8T, SBO)):
    128 bytes of columns per row, column atoms LBO apart, K rows 128 bytes
    apart in groups of 8 that are SBO apart."""
    per = 128 // elem
    return {(kk, c): _swizzle128(start + (c // per) * lbo + (c % per) * elem +
                                 (kk // 8) * sbo + (kk % 8) * 128)
            for kk in range(32 // elem) for c in range(n)}


@pytest.mark.parametrize("n,k,b_kmajor,eb", [
    (128, 64, False, 2), (256, 64, False, 2), (64, 128, False, 2), (128, 64, True, 2),
    (16, 64, True, 2), (128, 128, True, 1), (256, 128, False, 1), (16, 256, True, 1),
    (128, 32, False, 4), (64, 64, True, 4),
])
def test_descriptors_read_the_ring_layout(n: int, k: int, b_kmajor: bool, eb: int) -> None:
    """Every k-step (16 f16/bf16, 32 fp8 or 8 tf32 elements) reads, through the
    LBO/SBO/start the lowering gives, exactly the bytes where `SwizzledTile`
    (what cp.async fills) put that element."""
    ta = SwizzledTile(128, k, eb)
    tb = SwizzledTile(n, k, eb) if b_kmajor else SwizzledTile(k, n, eb)
    (_, sbo_a), (lbo_b, sbo_b) = strides(ta, True), strides(tb, b_kmajor)
    for k0 in range(0, k, 32 // eb):
        oa, ob = k_step_offsets(ta, tb, k0, b_kmajor)
        for (r, kk), addr in _read_kmajor(oa, sbo_a, 128, eb).items():
            assert addr == ta.offset(r, k0 + kk)
        if b_kmajor:
            for (c, kk), addr in _read_kmajor(ob, sbo_b, n, eb).items():
                assert addr == tb.offset(c, k0 + kk)
        else:
            for (kk, c), addr in _read_nmajor(ob, lbo_b, sbo_b, n, eb).items():
                assert addr == tb.offset(k0 + kk, c)


# -- TMEM -> registers
@pytest.mark.parametrize("n,warps", [(128, 4), (64, 4), (16, 4), (256, 8), (128, 8), (32, 8)])
def test_tcgen05_ld_lanes_match_the_accumulator_layout(n: int, warps: int) -> None:
    """Emulate `tcgen05.ld.sync.aligned.32x32b.xC` (PTX ISA, tcgen05 "Matrix
    fragments for .32x32b"): thread t of warp w receives TMEM lane
    32 (w % 4) + t (a warp may touch only its quarter of the lanes) and C
    consecutive columns from the address's column; with M = 128 the MMA put
    D[i, j] in lane i, column j.  The fragment `tcgen05_accumulator_layout`
    declares must be exactly those elements, chunk by chunk in column order."""
    layout = tcgen05_accumulator_layout(128, n, 16, 32, warps)
    assert layout is not None
    d = Distribution.of(layout, (128, n))
    owners: dict[tuple[int, int], int] = {}
    for tid in range(32 * warps):
        w = tid // 32
        lane, col0, count = thread_tmem_start(tid, n, warps)
        assert 32 * (w % 4) <= lane < 32 * (w % 4) + 32, "lane outside the warp's quarter"
        received = [(lane, col0 + r) for r in range(count)]        # D[lane, column]
        coords = d.thread_coords(tid, 32)
        declared = [coords[tuple(key[i] + (e if i == d.fast else 0) for i in range(2))]
                    for key in d.chunk_keys for e in range(d.vec_len)]
        assert declared == received, tid
        for rc in received:
            assert rc not in owners, f"{rc} read by threads {owners[rc]} and {tid}"
            owners[rc] = tid
    assert len(owners) == 128 * n   # every accumulator element read once


def test_columns_are_a_power_of_two_of_at_least_32() -> None:
    assert [columns(n) for n in (16, 32, 48, 64, 128, 192, 256)] == [32, 32, 64, 64, 128, 256, 256]


# -- selection
def _shape(m: int, n: int, k: int, warps: int, a: str = "f16", access: int = 16,
           kmajor: bool = False) -> DotShape:
    return DotShape(m, n, k, a, "f32", warps, 32, "ieee", access, kmajor)


def test_only_sm100_has_tcgen05() -> None:
    assert [name for name, t in TARGETS.items() if t.has(Feature.TCGEN05)] == ["sm100"]


@pytest.mark.parametrize("shape,kind,reason", [
    (_shape(128, 128, 64, 4), "tcgen05", None),
    (_shape(128, 256, 64, 8), "tcgen05", None),
    (_shape(128, 128, 64, 8, a="bf16"), "tcgen05", None),
    (_shape(128, 16, 64, 4, kmajor=True), "tcgen05", None),
    (_shape(64, 128, 64, 4), "mma_sync", "M = 128 rows per program"),
    (_shape(128, 128, 32, 4), "mma_sync", "K a multiple of 64"),
    (_shape(128, 32, 64, 4), "mma_sync", "N a multiple of 64"),
    (_shape(128, 256, 64, 4), "mma_sync", "would spill"),
    (_shape(128, 128, 64, 8, access=2), "mma_sync", "2 bytes per access"),
    (_shape(128, 128, 64, 2), "mma_sync", "4 or 8 warps"),
    (_shape(128, 128, 128, 8, a="f8E4M3FN", kmajor=True), "tcgen05", None),
    (_shape(128, 128, 128, 4, a="f8E5M2"), "tcgen05", None),
    (_shape(128, 128, 64, 8, a="f8E4M3FN", kmajor=True), "mma_sync", "K a multiple of 128"),
    (DotShape(128, 128, 32, "f32", "f32", 8, 32, "tf32", 16), "tcgen05", None),
    (DotShape(128, 128, 16, "f32", "f32", 8, 32, "tf32", 16), "fma", "K a multiple of 32"),
    (_shape(64, 64, 32, 4, a="f32"), "fma", "not f32 -> f32"),
])
def test_selection_on_sm100(shape: DotShape, kind: str, reason: str | None) -> None:
    got, why = select(shape, TARGETS["sm100"])
    assert got == kind
    if reason is None:
        assert why is None
    else:
        assert why is not None and why.startswith("no tcgen05: ") and reason in why, why


# -- machine code (ptxas -arch=sm_100a)
_NAMES = ("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32",
          "tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned",
          "tcgen05.mma.cta_group::1.kind::f16",
          "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64",
          "mbarrier.try_wait.parity.shared.b64", "tcgen05.ld.sync.aligned.32x32b.x32.b32",
          "tcgen05.wait::ld.sync.aligned", "tcgen05.dealloc.cta_group::1.sync.aligned.b32",
          "cp.async.cg.shared.global", "fence.proxy.async.shared::cta")


def _check(k: Any, k_steps: int, kind: str = "f16", tma: bool = False) -> None:
    ptx = k.asm["ptx"]
    copies = ("cp.async.cg.shared.global", "fence.proxy.async.shared::cta")
    for name in _NAMES:
        if tma and name in copies:
            continue
        assert name.replace("kind::f16", f"kind::{kind}") in ptx, name
    if tma:   # descriptor loads: TMA copies on transaction barriers, no cp.async
        assert "cp.async.bulk.tensor.2d" in ptx and "cp.async.cg" not in ptx
    assert ptx.count("tcgen05.mma.") == k_steps and "mma.sync" not in ptx
    assert "wgmma" not in ptx
    if not k.asm.get("cubin"):
        pytest.skip("no ptxas here")
    md = k.metadata
    assert md["spill_stores"] == 0 and md["spill_loads"] == 0 and md["stack_bytes"] == 0, md
    assert md["registers"] <= 255


@pytest.mark.parametrize("bm,bn,bk,warps,stages", [
    (128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (128, 128, 64, 4, 4), (128, 128, 128, 8, 3),
])
@pytest.mark.parametrize("tma", [False, True])
def test_pipelined_tcgen05_kernels_assemble_without_spills(bm: int, bn: int, bk: int,
                                                          warps: int, stages: int,
                                                          tma: bool) -> None:
    """The tutorial's pointer tiles are tensor-map blocks (tile-tma-pointers:
    TMA copies); clamped rows are not (cp.async copies)."""
    kern = mm_tutorial if tma else mm_clamped
    k: Any = kern.compile(target="sm100", signature=SIG, num_warps=warps,
                          num_stages=stages,
                          constexprs={"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk,
                                      "GROUP_M": 8})
    _check(k, bk // 16, tma=tma)
    ptx = k.asm["ptx"]
    assert re.search(r"tcgen05\.st\.sync\.aligned\.32x32b\.x32\.b32", ptx)   # the init acc
    assert str(instr_descriptor("f16", 128, bn, False, True)) in ptx      # B N-major


@pytest.mark.parametrize("dtype,bm,bn,bk,warps,stages", [
    ("fp16", 128, 256, 64, 8, 4), ("fp16", 128, 128, 64, 4, 3),
    ("fp8e4nv", 128, 128, 128, 8, 4), ("fp8e4nv", 128, 256, 128, 8, 3),
    ("fp8e5", 128, 128, 128, 4, 3),
])
def test_persistent_descriptor_kernel_uses_tcgen05(dtype: str, bm: int, bn: int, bk: int,
                                                   warps: int, stages: int) -> None:
    """B given as [N, K] through b.T is read K-major (transpose-B bit 0); fp8
    runs on .kind::f8f6f4 (32 bytes of K per instruction); the descriptor loads
    are TMA copies; the barriers are initialised and invalidated around every
    tile's K loop."""
    k: Any = matmul_persistent.compile(
        target="sm100", signature=f"*{dtype}:16,*{dtype}:16,*fp16:16,i32:16,i32:16,i32:16",
        num_warps=warps, num_stages=stages,
        constexprs={"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "NUM_SMS": 148})
    atype = {"fp16": "f16", "fp8e4nv": "e4m3", "fp8e5": "e5m2"}[dtype]
    _check(k, bk * (2 if atype == "f16" else 1) // 32, mma_kind(atype), tma=True)
    ptx = k.asm["ptx"]
    assert str(instr_descriptor(atype, 128, bn, False, False)) in ptx
    assert "mbarrier.inval.shared.b64" in ptx and "mbarrier.init.shared.b64" in ptx


def test_fp8_tutorial_kernel_reads_n_major_b() -> None:
    """fp8 B given [K, N] (N-major): .kind::f8f6f4 with the transpose-B bit,
    128-byte atoms of 128 columns."""
    k: Any = mm_tutorial.compile(target="sm100", signature=SIG.replace("*fp16:16,*fp16:16",
                                                                       "*fp8e4nv:16,*fp8e4nv:16"),
                                 num_warps=8, num_stages=3,
                                 constexprs={"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 128,
                                             "GROUP_M": 8})
    _check(k, 4, "f8f6f4", tma=True)
    assert str(instr_descriptor("e4m3", 128, 256, False, True)) in k.asm["ptx"]


def test_register_operand_dot_without_pipeline() -> None:
    """num_stages=1: the dot stages its register operands into swizzled shared
    memory and runs the same product synchronously."""
    k: Any = mm_tutorial.compile(target="sm100", signature=SIG, num_warps=8, num_stages=1,
                                 constexprs={"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64,
                                             "GROUP_M": 8})
    ptx = k.asm["ptx"]
    assert ptx.count("tcgen05.mma.") == 4 and "cp.async" not in ptx
    assert "tcgen05.st.sync.aligned.32x32b" in ptx and "tcgen05.dealloc" in ptx
    if k.asm.get("cubin"):
        assert k.metadata["spill_stores"] == 0, k.metadata


@tilec.kernel
def mm_f32(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
           P: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc, input_precision=P)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


@pytest.mark.parametrize("precision,products", [("tf32", 1), ("tf32x3", 3), ("ieee", 0)])
def test_tf32_dots_run_on_kind_tf32(precision: str, products: int) -> None:
    """f32 dots asked for tf32 (operands already rounded by tile-dot-precision,
    tf32x3 split into three) take .kind::tf32, 8 elements of K per
    instruction; "ieee" stays exact on the FMA units."""
    k: Any = mm_f32.compile(target="sm100", signature="*fp32:16,*fp32:16,*fp32:16,i32:16",
                            num_warps=8, constexprs={"BM": 128, "BN": 128, "BK": 32,
                                                     "P": precision})
    ptx = k.asm["ptx"]
    assert ptx.count("tcgen05.mma.cta_group::1.kind::tf32") == 4 * products
    if products:
        assert str(instr_descriptor("tf32", 128, 128, False, True)) in ptx
    if k.asm.get("cubin"):
        assert k.metadata["spill_stores"] == 0 and k.metadata["stack_bytes"] == 0, k.metadata


@tilec.kernel
def mm_peek(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc)
        tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)    # read inside the loop
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


def test_accumulator_read_inside_the_pipelined_loop() -> None:
    """A product used in the loop (not only carried) is waited for and loaded
    from TMEM in that iteration; the accumulator stays in TMEM for the next."""
    k: Any = mm_peek.compile(target="sm100", signature="*fp16:16,*fp16:16,*fp32:16,i32:16",
                             num_warps=4, num_stages=3,
                             constexprs={"BM": 128, "BN": 64, "BK": 64})
    ptx = k.asm["ptx"]
    assert '"tile.mma"' in k.asm["tiled"] and "cp.async.wait_group" in ptx
    assert ptx.count("tcgen05.ld.sync.aligned.32x32b.x32.b32") == 4   # 2 in the loop, 2 after
    if k.asm.get("cubin"):
        assert k.metadata["spill_stores"] == 0, k.metadata
