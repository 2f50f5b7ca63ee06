"""The sm90 tensor-core path: dot selection, the swizzled operand layouts the
wgmma descriptors assume, the accumulator layout, and the pipelined kernels'
machine code (ptxas: registers, spills).  Correctness on the GPU is checked by
scripts/gpu_mma_check.py on the H200 (CI has no GPU)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tilec.passes.analysis.layouts import Distribution, SwizzledTile, wgmma_accumulator_layout
from tilec.passes.tile_accelerate_dot import DotShape, select
from tilec.targets import TARGETS

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from kernels_for_tests import mm_clamped  # noqa: E402
from matmul_kernels import mm_tutorial  # noqa: E402
from matmul_persistent import matmul_persistent  # noqa: E402

SIG = "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1"


@pytest.mark.parametrize("rows,warps", [(64, 4), (128, 4), (128, 8), (256, 8), (256, 16)])
def test_row_permutation_puts_wgmma_rows_where_the_layout_says(rows: int, warps: int) -> None:
    """wgmma gives warp w % 4 of warpgroup w // 4 the rows 16 (w % 4) + g + {0, 8}
    of each 64-row block of its warpgroup's rows; the permuted A rows make those
    the rows the blocked accumulator layout gives the thread."""
    t = SwizzledTile(rows, 64, 2, permute_rows=True, num_warps=warps)
    assert sorted(t.row_position(r) for r in range(rows)) == list(range(rows))
    layout = wgmma_accumulator_layout(rows, 64, 16, 32, warps)
    assert layout is not None
    d = Distribution.of(layout, (rows, 64))
    groups = warps // 4
    for tid in range(32 * warps):
        w, g = tid // 32, (tid % 32) >> 2
        wg, wq = divmod(w, 4)
        held = sorted({r for (r, _c) in d.thread_coords(tid, 32).values()})
        hw = sorted(wg * (rows // groups) + 64 * i + 16 * wq + 8 * h + g
                    for i in range(rows // (64 * groups)) for h in range(2))
        assert sorted(t.row_position(r) for r in held) == hw


@pytest.mark.parametrize("rows,cols", [(64, 64), (128, 64), (64, 256), (128, 128)])
def test_swizzle_is_a_bijection_of_16_byte_chunks(rows: int, cols: int) -> None:
    t = SwizzledTile(rows, cols, 2)
    offs = {t.offset(r, c) for r in range(rows) for c in range(cols)}
    assert offs == set(range(0, t.nbytes, 2))
    for r in range(rows):
        for c in range(0, cols, 8):   # a 16-byte piece stays contiguous and aligned
            base = t.offset(r, c)
            assert base % 16 == 0
            assert [t.offset(r, c + i) for i in range(8)] == list(range(base, base + 16, 2))
    # Swizzle<3,4,3>: chunk j of row r (in its 1024-byte atom) lands at chunk j ^ (r % 8)
    assert t.offset(3, 8) == 3 * 128 + ((1 ^ 3) << 4)


def _shape(m: int, n: int, k: int, warps: int, a: str = "f16", access: int = 16) -> DotShape:
    return DotShape(m, n, k, a, "f32", warps, 32, "ieee", access)


def test_selection_follows_the_target_features() -> None:
    sm90, sm80, sm100, gfx = TARGETS["sm90"], TARGETS["sm80"], TARGETS["sm100"], TARGETS["gfx942"]
    assert select(_shape(128, 256, 64, 8), sm90) == ("wgmma", None)
    assert select(_shape(128, 256, 64, 8), sm80)[0] == "mma_sync"
    assert select(_shape(128, 128, 64, 8), sm100) == ("tcgen05", None)   # tests/test_tcgen05.py
    kind, why = select(_shape(128, 256, 64, 4), sm90)   # 256 accumulators per thread
    assert kind == "mma_sync" and why is not None and "spill" in why
    kind, why = select(_shape(64, 64, 32, 4), sm90)
    assert kind == "mma_sync" and why is not None and "multiples of 64" in why
    kind, why = select(_shape(64, 64, 32, 2), sm90)
    assert kind == "mma_sync" and why is not None and "warpgroups" in why
    assert select(_shape(128, 128, 64, 8, access=2), sm90)[0] == "mma_sync"
    assert select(_shape(64, 64, 32, 4, a="f32"), sm90)[0] == "fma"
    assert select(_shape(64, 64, 32, 4), gfx)[0] == "mfma"
    assert select(_shape(64, 64, 32, 4, a="f32"), gfx)[0] == "fma"


@pytest.mark.parametrize("bm,bn,bk,warps,stages", [
    (128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (128, 128, 64, 4, 4), (64, 128, 64, 4, 2),
    (128, 128, 128, 8, 3),
])
@pytest.mark.parametrize("tma", [False, True])
def test_pipelined_wgmma_kernels_assemble_without_spills(bm: int, bn: int, bk: int,
                                                         warps: int, stages: int,
                                                         tma: bool) -> None:
    """The tutorial's pointer tiles are tensor-map blocks (tile-tma-pointers:
    TMA copies); clamped rows are not (cp.async copies)."""
    kern = mm_tutorial if tma else mm_clamped
    k: Any = kern.compile(target="sm90", signature=SIG, num_warps=warps,
                          num_stages=stages,
                          constexprs={"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk,
                                      "GROUP_M": 8})
    ptx = k.asm["ptx"]
    assert f"wgmma.mma_async.sync.aligned.m64n{min(bn, 256)}k16.f32.f16.f16" in ptx
    assert "wgmma.wait_group.sync.aligned 1;" in ptx
    assert ("cp.async.cg.shared.global" in ptx) != tma
    assert ("cp.async.bulk.tensor.2d.shared::cluster.global" in ptx) == tma
    if not k.asm.get("cubin"):
        pytest.skip("no ptxas here")
    md = k.metadata
    assert md["spill_stores"] == 0 and md["spill_loads"] == 0 and md["stack_bytes"] == 0, md
    assert md["registers"] <= 255


@pytest.mark.parametrize("dtype,bm,bn,bk,warps,stages,instr", [
    # (128x256x64 with 8 warps: test_wide_persistent_tile_does_not_spill.)
    ("fp16", 128, 128, 64, 8, 4, "m64n128k16.f32.f16.f16"),
    ("fp8e4nv", 128, 128, 128, 8, 4, "m64n128k32.f32.e4m3.e4m3"),
])
def test_persistent_descriptor_kernel_uses_wgmma(dtype: str, bm: int, bn: int, bk: int,
                                                 warps: int, stages: int, instr: str) -> None:
    """B given as [N, K] through b.T is read K-major; fp8 runs on fp8 wgmma; the
    descriptor loads are TMA copies completing on transaction barriers."""
    k: Any = matmul_persistent.compile(
        target="sm90", signature=f"*{dtype}:16,*{dtype}:16,*fp16:16,i32:16,i32:16,i32:16",
        num_warps=warps, num_stages=stages,
        constexprs={"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "NUM_SMS": 132})
    ptx = k.asm["ptx"]
    assert f"wgmma.mma_async.sync.aligned.{instr}" in ptx
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes" \
        in ptx and "mbarrier.try_wait.parity.shared::cta.b64" in ptx
    assert "cp.async.cg.shared.global" not in ptx and ".param .align 64 .b8" in ptx
    # A's and B's maps only: a 128x128 accumulator of 8 warps keeps the pointer
    # store (the TMA store is for wider ones: tests/test_tma_store.py).
    assert [m.get("store", False) for m in k.metadata["tensormaps"]] == [False, False]
    if k.asm.get("cubin"):
        md = k.metadata
        assert md["spill_stores"] == 0 and md["stack_bytes"] == 0, md


def test_wide_persistent_tile_does_not_spill() -> None:
    """The benchmark's best fp16 config (128x256x64, 8 warps, 3 stages) in the
    flattened loop: with the TMA store epilogue (no row exchange, no layout
    conversion, no masked stores) 177 registers and no spill (before it: 255
    and a 4-byte spill)."""
    k: Any = matmul_persistent.compile(
        target="sm90", signature="*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16",
        num_warps=8, num_stages=3,
        constexprs={"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "NUM_SMS": 132})
    if not k.asm.get("cubin"):
        pytest.skip("no ptxas here")
    assert k.metadata["spill_stores"] == 0 and "C7517" not in k.metadata.get("ptxas_log", "")


def test_fp8_dot_with_n_major_b_stays_on_mma_sync() -> None:
    kind, why = select(_shape(128, 128, 128, 8, a="f8E4M3FN"), TARGETS["sm90"])
    assert kind == "mma_sync" and why is not None and "K-major" in why
    assert select(DotShape(128, 128, 128, "f8E4M3FN", "f32", 8, 32, "ieee", 16, True),
                  TARGETS["sm90"]) == ("wgmma", None)
