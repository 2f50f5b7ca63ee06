"""The epilogue's TMA store (sm90): which stores become `tile.tma_store`, the
buffer addressing the lowering emits (checked against `SwizzledTile`, the
layout the TMA box reads), the generated code and the store's tensor map.
The stores themselves run on the H200 (scripts/gpu_suite.py, "TMA store
epilogue")."""
from __future__ import annotations

import pathlib
import sys
from typing import Any

import pytest

import tilec
import tilec.language as tl
from tilec.passes import pipeline_tma
from tilec.passes.analysis.layouts import Distribution, SwizzledTile, wgmma_accumulator_layout
from tilec.runtime import tensormap
from tilec.targets.nvidia.tma_store import chunk_offsets, stmatrix_groups

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "examples"))
from matmul_persistent import matmul_persistent  # noqa: E402

F16 = "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16"
F8 = "*fp8e4nv:16,*fp8e4nv:16,*fp16:16,i32:16,i32:16,i32:16"


@pytest.mark.parametrize("warps,rows,cols,eb", [
    (4, 64, 64, 2), (4, 128, 256, 2), (8, 128, 128, 2), (8, 128, 256, 2), (8, 256, 128, 2),
    (4, 64, 64, 4), (8, 128, 128, 4), (8, 128, 64, 4)])
@pytest.mark.parametrize("permute", [False, True])
def test_fragment_addresses_are_the_swizzled_tile_and_conflict_free(
        warps: int, rows: int, cols: int, eb: int, permute: bool) -> None:
    """Every element of the wgmma accumulator goes where `SwizzledTile` (rows
    placed by `row_position` when permuted) says, each byte once, with the
    lowering's one address per thread: P * 128 + (t ^ h) + c; and a warp's
    store of one chunk hits every bank at most as often as its bytes need."""
    layout = wgmma_accumulator_layout(rows, cols, 16, 32, warps)
    assert layout is not None
    d = Distribution.of(layout, (rows, cols))
    assert pipeline_tma.store_layout_ok(d, eb, permute, warps)
    t = SwizzledTile(rows, cols, eb)
    want_tile = SwizzledTile(rows, cols, eb, permute_rows=permute, num_warps=warps)
    plan = chunk_offsets(d, t, permute, warps)
    seen: set[int] = set()
    banks: dict[tuple[int, int], dict[int, set[int]]] = {}
    for tid in range(32 * warps):
        coords = d.thread_coords(tid, 32)
        base_r, base_c = coords[(0, 0)]
        p = want_tile.row_position(base_r) if permute else base_r
        lo = (base_c * eb) ^ ((p % 8) << 4)
        for ci, (key, (h, c)) in enumerate(zip(d.chunk_keys, plan)):
            at = p * 128 + (lo ^ h) + c
            for i in range(d.vec_len):
                r, col = coords[(key[0], key[1] + i)]
                assert at + i * eb == want_tile.offset(r, col), (tid, key, i)
                seen.add(at + i * eb)
            for w in range(0, d.vec_len * eb, 4):
                word = (at + w) // 4
                banks.setdefault((tid // 32, ci), {}).setdefault(word % 32, set()).add(word)
    assert seen == set(range(0, rows * cols * eb, eb))
    per_lane_words = max(1, d.vec_len * eb // 4)
    assert all(len(words) <= per_lane_words for b in banks.values() for words in b.values())


@pytest.mark.parametrize("warps,rows,cols", [(4, 64, 64), (4, 128, 256), (8, 128, 128),
                                             (8, 128, 256), (8, 256, 128)])
@pytest.mark.parametrize("permute", [False, True])
def test_stmatrix_rows_are_the_swizzled_tile(warps: int, rows: int, cols: int,
                                             permute: bool) -> None:
    """f16 in the wgmma accumulator layout goes out by `stmatrix.x4`: lane L
    of warp w addresses row L % 8 of matrix L // 8, which must be where
    `SwizzledTile` puts row 8 w + L % 8 (+ the group's row offset) at the
    matrix's columns; the matrix's row j is (per stmatrix) the chunk of lanes
    4 j .. 4 j + 3, which must be those elements; every 16-byte row once."""
    layout = wgmma_accumulator_layout(rows, cols, 16, 32, warps)
    assert layout is not None
    d = Distribution.of(layout, (rows, cols))
    t = SwizzledTile(rows, cols, 2)
    want_tile = SwizzledTile(rows, cols, 2, permute_rows=permute, num_warps=warps)
    groups = stmatrix_groups(d, t, permute, warps)
    assert groups is not None and len(groups) * 4 == d.num_chunks
    coords = [d.thread_coords(tid, 32) for tid in range(32 * warps)]
    seen: set[int] = set()
    for tid in range(32 * warps):
        lane, w = tid % 32, tid // 32
        p = want_tile.row_position(8 * w + lane % 8)
        lo = (16 * (lane // 8)) ^ ((p % 8) << 4)
        for hi, const, chunks in groups:
            key = d.chunk_keys[chunks[lane // 8]]
            sr, sc = d.static_offset(0, key[0]), d.static_offset(1, key[1])
            row = 8 * w + lane % 8 + sr
            at = p * 128 + (lo ^ hi) + const
            assert at == want_tile.offset(row, sc), (tid, key)
            seen.add(at)
            for e in range(8):     # element e of the row: lane 4 (L % 8) + e // 2's chunk
                owner = coords[32 * w + 4 * (lane % 8) + e // 2]
                assert owner[(key[0], key[1] + e % 2)] == (row, sc + e)
    assert seen == set(range(0, rows * cols * 2, 16))
    assert stmatrix_groups(d, SwizzledTile(rows, cols, 4), permute, warps) is None


def _compile(sig: str, bm: int, bn: int, bk: int, stages: int, target: str = "sm90",
             warps: int = 8, **cx: Any) -> Any:
    return matmul_persistent.compile(
        target=target, signature=sig, num_warps=warps, num_stages=stages,
        constexprs={"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "NUM_SMS": 132,
                    **cx})


@pytest.mark.parametrize("sig,stages", [(F16, 4), (F8, 3)])
def test_narrow_accumulators_keep_the_row_exchange(sig: str, stages: int) -> None:
    """128x128 tiles of 8 warps (64 accumulator elements per thread, under
    pipeline_tma.TMA_STORE_MIN_ACC_PER_THREAD) keep the row exchange and the
    pointer store: measured 3-5% faster there than the TMA store."""
    k = _compile(sig, 128, 128, 64 if sig == F16 else 128, stages)
    tiled = k.asm["tiled"]
    assert '"tile.tma_store"(' not in tiled and '"tile.row_exchange"' in tiled
    assert not any(m.get("store") for m in k.metadata.get("tensormaps", []))


@pytest.mark.parametrize("sig,bm,bn,bk,stages,programs,warps", [
    (F16, 128, 256, 64, 3, 132, 8), (F16, 128, 128, 64, 4, 132, 4),
    (F8, 128, 256, 128, 3, 132, 8), (F16, 128, 256, 64, 3, 5, 8), (F16, 128, 128, 64, 4, 3, 4),
    (F8, 128, 256, 128, 3, 1, 8)])
def test_the_benchmarked_configs_store_c_with_tma(sig: str, bm: int, bn: int, bk: int,
                                                  stages: int, programs: int,
                                                  warps: int) -> None:
    """The benchmarks' wide configs (and the GPU suite's, few programs), whose
    accumulator takes 128 registers per thread: the flattened loop's epilogue
    stores C with TMA from a buffer beside the rings (written by stmatrix), one
    box per 64-column atom, with no pointer store or row exchange left on that
    path and no spills."""
    k = _compile(sig, bm, bn, bk, stages, warps=warps, NUM_SMS=programs)
    tiled, ptx = k.asm["tiled"], k.asm["ptx"]
    assert tiled.count('"tile.tma_store"(') == 1 and '"tile.row_exchange"' not in tiled
    assert f"memref<1x{bm}x{bn}xf16, 3>" in tiled
    c = k.metadata["tensormaps"][-1]
    assert c["store"] and c["base"] == 2 and c["block"] == [bm, bn] and c["box"] == [bm, 64]
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group") == bn // 64
    assert ptx.count("cp.async.bulk.commit_group;") == 1
    assert ptx.count("cp.async.bulk.wait_group.read") == 2   # before each store, at the end
    assert "fence.proxy.async.shared::cta;" in ptx
    # The f16 tile goes into the buffer as 8x8 matrices, four per stmatrix;
    # as many again write the layout exchange of the pointer store in the
    # flattened loop's K = 0 nest (Feature.STMATRIX, targets/nvidia/exchange_stores.py).
    assert ptx.count("stmatrix.sync.aligned.m8n8.x4.shared.b16") == 2 * bm * bn // (256 * warps)
    if k.asm.get("cubin"):
        assert k.metadata["spill_stores"] == 0 and k.metadata["stack_bytes"] == 0


@pytest.mark.parametrize("sig,bk,stages,programs", [
    (F16, 64, 4, 132), (F8, 128, 4, 132), (F16, 64, 5, 132), (F8, 128, 4, 3)])
def test_the_asked_depth_keeps_its_rings_and_stores_in_column_passes(
        sig: str, bk: int, stages: int, programs: int) -> None:
    """128x256 at 4 stages: four 48 KiB ring slots leave no room for the whole
    64 KiB f16 tile beside them (it cost a stage before: the loop was
    pipelined with 3), so the store goes through a 16 KiB buffer in four
    column passes (one 64-column atom each: wait for the previous pass's copy
    to read the buffer, barrier, four stmatrix, fence, barrier, one box,
    commit), and the loop keeps 4 slots and says why.  num_stages=5 gets the
    deepest depth that fits with the store, 4, and both notes."""
    k = _compile(sig, 128, 256, bk, stages, NUM_SMS=programs)
    tiled, ptx = k.asm["tiled"], k.asm["ptx"]
    slot = "128x64xf16" if sig == F16 else "128x128xi8"
    assert f"memref<4x{slot}, 3>" in tiled and "memref<1x128x64xf16, 3>" in tiled
    assert "memref<1x128x256xf16, 3>" not in tiled and '"tile.row_exchange"' not in tiled
    assert ("the TMA store writes its 128x256 tile in 4 column passes through a "
            "16384-byte buffer, so that num_stages=4 fits") in tiled
    assert ("pipelined with 4" in tiled) == (stages > 4)
    assert k.metadata["tensormaps"][-1]["box"] == [128, 64]
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group") == 4
    assert ptx.count("cp.async.bulk.commit_group;") == 4
    assert ptx.count("cp.async.bulk.wait_group.read") == 5   # before each pass, at the end
    assert ptx.count("fence.proxy.async.shared::cta;") >= 4
    # 4 stmatrix.x4 per pass (a 128x64 atom over 256 threads), and as many as
    # the whole tile's again for the K = 0 nest's pointer store (as above).
    assert ptx.count("stmatrix.sync.aligned.m8n8.x4.shared.b16") == 2 * 128 * 256 // (256 * 8)
    if k.asm.get("cubin"):
        assert k.metadata["spill_stores"] == 0 and k.metadata["stack_bytes"] == 0
        per_stage = (128 + 256) * bk * (2 if sig == F16 else 1)
        assert 4 * per_stage + 16384 <= k.metadata["dynamic_shared"] <= 232448


@pytest.mark.parametrize("stages,passes", [(3, 2), (4, 8)])
def test_an_f32_tile_beside_the_rings_goes_out_in_passes(stages: int, passes: int) -> None:
    """The persistent example storing C in f32 (`C_F32=True`): at 128x256
    the 128 KiB tile never fit beside 3 slots of 48 KiB, the store stayed a
    pointer store whose conversion left room for one slot, and the loop was
    not pipelined at all (255 registers, 784 bytes of spills); now it goes
    out in 2 column passes of 64 KiB (8 of 16 KiB at 4 slots) and the loop is
    pipelined with the asked depth."""
    k = _compile("*fp16:16,*fp16:16,*fp32:16,i32:16,i32:16,i32:16", 128, 256, 64, stages,
                 C_F32=True)
    tiled, ptx = k.asm["tiled"], k.asm["ptx"]
    assert f"memref<{stages}x128x64xf16, 3>" in tiled and "tile.flattened" in tiled
    assert f"memref<1x128x{256 // passes}xf32, 3>" in tiled
    assert f"tile.store_note = \"the TMA store writes its 128x256 tile in {passes} column" in tiled
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group") == 8
    assert ptx.count("cp.async.bulk.commit_group;") == passes
    if k.asm.get("cubin"):
        assert k.metadata["spill_stores"] == 0 and k.metadata["stack_bytes"] == 0


def test_a_store_tma_cannot_write_stays_a_pointer_store() -> None:
    """N not known to be a multiple of 16: C's rows may be unaligned for a
    tensor map, so the store keeps its masked pointer store (the loads, whose
    rows are K long, still copy with TMA)."""
    k = _compile("*fp16:16,*fp16:16,*fp16:16,i32:16,i32,i32:16", 128, 128, 64, 3)
    assert '"tile.tma_store"' not in k.asm["tiled"]
    assert [m.get("store", False) for m in k.metadata["tensormaps"]] == [False, False]
    assert "st.global" in k.asm["ptx"] and "global.shared::cta" not in k.asm["ptx"]


def test_tcgen05_and_targets_without_tma_keep_their_stores() -> None:
    """sm100's tcgen05 accumulator is not the wgmma layout the store writes:
    its store stays (only the loads' maps are passed); sm80 has no TMA."""
    k = _compile(F16, 128, 128, 64, 3, target="sm100", warps=4, NUM_SMS=148)
    assert '"tile.tma_store"' not in k.asm["tiled"] and len(k.metadata["tensormaps"]) == 2
    k = _compile(F16, 128, 128, 64, 3, target="sm80")
    assert "tile.tma" not in k.asm["tiled"] and not k.metadata.get("tensormaps")


@tilec.kernel
def _mm_f32(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
            BK: tl.constexpr):
    a_d = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_d = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    c_d = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BM, BN), tl.float32)
    for ki in range(tl.cdiv(K, BK)):
        a = a_d.load([pid_m * BM, ki * BK])
        b = b_d.load([ki * BK, pid_n * BN])
        acc = tl.dot(a, b, acc)
    c_d.store([pid_m * BM, pid_n * BN], acc)


def test_an_f32_accumulator_stored_as_is_after_an_ordinary_loop() -> None:
    """No cast, no flattened loop: the f32 tile goes through a buffer of its
    own after the loop (32-column atoms: four boxes of [128, 32]), waited for
    and released right after."""
    k = _mm_f32.compile(target="sm90", signature="*fp16:16,*fp16:16,*fp32:16,i32:16,i32:16,i32:16",
                        num_warps=4, num_stages=3, constexprs={"BM": 128, "BN": 128, "BK": 64})
    tiled = k.asm["tiled"]
    store = tiled.split('"tile.tma_store"(', 1)[1]
    assert "memref<1x128x128xf32, 3>" in tiled and '"tile.tma_store_wait"' in store
    assert k.metadata["tensormaps"][-1]["box"] == [128, 32]
    assert k.asm["ptx"].count("cp.async.bulk.tensor.2d.global.shared::cta") == 4
    if k.asm.get("cubin"):
        assert k.metadata["spill_stores"] == 0


def test_the_store_map_is_encoded_from_its_recipe(monkeypatch: pytest.MonkeyPatch) -> None:
    """The recipe -> cuTensorMapEncodeTiled arguments of C's map: dimensions
    and box innermost first, the row stride in bytes, the 128-byte swizzle;
    a store map over nothing points at a scratch buffer, not the loads' zeros."""
    c = _compile(F16, 128, 256, 64, 3).metadata["tensormaps"][-1]
    addr, m, n, k = 0x7F0000000000, 333, 400, 256
    args = [0x1000, 0x2000, addr, m, n, k]
    assert tensormap.fields(c, args) == (addr, (m, n), (n * 2,))
    seen: list[Any] = []
    monkeypatch.setattr(tensormap, "_encoder", lambda: lambda *a: seen.append(a) or 0)
    maps = tensormap.TensorMaps([c])
    maps.fill(args)
    (_, dtype, rank, base, dims, strides, box, elem_strides, inter, swizzle, _l2, _oob), = seen
    assert (dtype, rank, base.value) == (1, 2, addr)
    assert list(dims) == [n, m] and list(strides) == [n * 2] and list(box) == [64, 128]
    assert list(elem_strides) == [1, 1] and (inter, swizzle) == (0, 3)
    asked: list[Any] = []
    monkeypatch.setattr(maps, "_zero_buffer", lambda nbytes, store=False: asked.append(
        (nbytes, store)) or 0x90000)
    maps.fill([0x1000, 0x2000, addr, 0, n, k])
    assert asked == [(128 * 64 * 2, True)]
