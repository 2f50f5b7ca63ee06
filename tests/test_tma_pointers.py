"""tile-tma-pointers: pointer-tile loads and stores copied through tensor maps
inferred from the pointer arithmetic (the FileCheck tests in
tests/lit/tile-tma-pointers/ show which accesses qualify); here the index
polynomials, the generated code for sm90 / sm100 / sm80, the runtime's
bounds for inferred maps, and common variants of the tutorial's source (hints,
cache keywords, a row mask beside the `% M` wrap) on sm90 and on the CPU
against NumPy.  The copies run on the H200 (scripts/gpu_suite.py, "inferred
tensor maps")."""
from __future__ import annotations

import importlib.util
import pathlib
import re
import sys
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import tilec
from tilec.errors import TilecError
from tilec.passes.analysis.index_poly import Poly
from tilec.passes.analysis.map_blocks import split_batch, split_rows
from tilec.runtime import tensormap

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "benchmarks"))
from matmul_kernels import mm_tutorial  # noqa: E402

SIG = "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1"
CX = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}
V = [Poly.atom(("v", i)) for i in range(4)]
I, J = Poly.atom(("lane", 0)), Poly.atom(("lane", 1))


def test_polynomials_are_canonical() -> None:
    p = (V[0] + Poly.const(3)) * (V[1] - V[0])
    q = V[0] * V[1] + V[1].scale(3) - V[0] * V[0] - V[0].scale(3)
    assert p == q and p - q == Poly()
    assert (V[0].scale(Fraction(1, 64)) * Poly.const(64)) == V[0]
    assert (I * V[2] + J).lane_coefficient(0) == V[2]
    assert (I * J).lane_coefficient(0) is None
    assert (I + J).renumber_lanes({0: 1, 1: 0}) == I + J
    assert Poly.const(0).const_value() == 0 and V[0].const_value() is None


def test_rows_split_off_the_row_stride() -> None:
    # 128 pid_m * stride + 64 k: row 128 pid_m, column 64 k
    r = Poly.const(128) * V[0] * V[3] + V[1].scale(64)
    assert split_rows(r, V[3]) == (V[0].scale(128), V[1].scale(64))
    # a constant stride is ambiguous (rows and columns both constants)
    assert split_rows(r, Poly.const(64)) is None


def _compile(target: str, sig: str = SIG) -> Any:
    return mm_tutorial.compile(target=target, signature=sig, num_warps=8, num_stages=3,
                               constexprs=CX)


def test_tutorial_loads_and_store_become_tma_on_sm90() -> None:
    k = _compile("sm90")
    ptx = k.asm["ptx"]
    assert "cp.async.cg" not in ptx
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global") >= 5
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in ptx
    a, b, c = k.metadata["tensormaps"]
    assert a["inferred"] and a["base"] == 0 and a["block"] == [128, 64]
    assert a["shape"] == [["arg", 3], ["arg", 5]] and a["strides"] == [["arg", 6], ["const", 1]]
    assert b["base"] == 1 and b["shape"] == [["arg", 5], ["arg", 4]] and b["block"] == [64, 256]
    assert c["store"] and c["shape"] == [["arg", 3], ["arg", 4]]
    if k.asm.get("cubin"):
        assert k.metadata["spill_stores"] == 0


def test_unaligned_rows_are_not_maps() -> None:
    # K and stride_am not known to be multiples of 16 elements: A's rows may
    # not be 16-byte aligned, so no load is a TMA copy (a ring is filled one
    # way).
    sig = SIG.replace("i32:16,i32:16,i32=1,i32:16,i32=1", "i32,i32,i32=1,i32:16,i32=1", 1)
    k = _compile("sm90", sig)
    assert "cp.async.bulk.tensor.2d.shared::cluster.global" not in k.asm["ptx"]
    assert all(m.get("store") for m in k.metadata.get("tensormaps", []))


def test_sm100_takes_the_maps_and_sm80_does_not() -> None:
    k = _compile("sm100")
    assert "tcgen05.mma" in k.asm["ptx"] and "cp.async.bulk.tensor" in k.asm["ptx"]
    k80 = _compile("sm80")
    assert "cp.async.bulk.tensor" not in k80.asm["ptx"] and not k80.metadata.get("tensormaps")


def test_inferred_maps_clamp_negative_bounds_descriptors_refuse_them() -> None:
    recipe = {"base": 0, "elem_bytes": 2, "shape": [["arg", 1], ["arg", 2]],
              "strides": [["arg", 2], ["const", 1]], "block": [128, 64], "box": [128, 64]}
    args = [1 << 20, 100, -64]
    addr, shape, strides = tensormap.fields(recipe, args)
    inferred = {**recipe, "inferred": True}
    assert tensormap.map_shape(inferred, shape) == (100, 0)   # `idx < -64` holds nowhere
    tensormap.check_fields(inferred, addr, tensormap.map_shape(inferred, shape), (4096,))
    assert tensormap.map_shape(recipe, shape) == (100, -64)
    with pytest.raises(TilecError, match="negative shape"):
        tensormap.check_fields(recipe, addr, tensormap.map_shape(recipe, shape), strides)


def test_k_major_b_is_the_transpose_of_a_map_block() -> None:
    """B given as a [K, N] view of an [N, K] tensor (stride_bk = 1): its map is
    the [N, K] tensor with row stride stride_bn, a [BN, BK] block, and the
    product reads it K-major (fp8: fp8 wgmma)."""
    sig = SIG.replace("i32:16,i32=1,i32:16,i32=1", "i32:16,i32=1,i32=1,i32:16", 1)
    k = mm_tutorial.compile(target="sm90", signature=sig.replace("*fp16:16,*fp16:16",
                                                                  "*fp8e4nv:16,*fp8e4nv:16"),
                            num_warps=8, num_stages=3,
                            constexprs={**CX, "BLOCK_N": 128, "BLOCK_K": 128})
    ptx = k.asm["ptx"]
    assert "cp.async.cg" not in ptx and "m64n128k32.f32.e4m3.e4m3" in ptx
    b = k.metadata["tensormaps"][1]
    assert b["shape"] == [["arg", 4], ["arg", 5]] and b["strides"] == [["arg", 9], ["const", 1]]
    assert b["block"] == [128, 128] and b["elem_bytes"] == 1


def _kernels() -> Any:
    """tests/lit/tile-tma-pointers/kernels.py (the FileCheck tests' kernels)."""
    path = pathlib.Path(__file__).resolve().parent / "lit" / "tile-tma-pointers" / "kernels.py"
    spec = importlib.util.spec_from_file_location("tma_pointer_kernels", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


KERNELS = _kernels()
VARIANT_CX = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64}
# Triton sources the tutorial's maps should survive: hints on the offsets and
# strides, cache / eviction keywords, A's row conjunct `offs_am < M` on top of
# its `% M` wrap (written three ways).
TMA_VARIANTS = [{"HINTS": 1}, {"CACHE": 1}, {"ROW_MASK": 1}, {"ROW_MASK": 2}, {"ROW_MASK": 3},
                {"HINTS": 1, "CACHE": 1, "ROW_MASK": 1}]


def _ids(cx: dict[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in cx.items())


@pytest.mark.parametrize("cx", TMA_VARIANTS, ids=_ids)
def test_source_variants_become_tma_on_sm90(cx: dict[str, int]) -> None:
    k = KERNELS.variants.compile(target="sm90", signature=SIG, num_warps=8, num_stages=3,
                                 constexprs={**VARIANT_CX, **cx})
    ptx = k.asm["ptx"]
    assert "cp.async.cg" not in ptx
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global") >= 5
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in ptx
    a, b, c = k.metadata["tensormaps"]
    assert a["inferred"] and a["base"] == 0 and a["shape"] == [["arg", 3], ["arg", 5]]
    assert b["base"] == 1 and c["base"] == 2 and c["store"]


@pytest.mark.parametrize("row_mask", [4, 5, 6, 7])
def test_row_conjuncts_other_than_the_wrap_keep_a_on_pointers(row_mask: int) -> None:
    """`offs_am < N`, `< M - 1`, a polynomial equal to the remainder's x but
    not the remainder, a remainder by N: A is no map (nor B: a ring is filled
    one way); only the store is."""
    k = KERNELS.variants.compile(target="sm90", signature=SIG, num_warps=8, num_stages=3,
                                 constexprs={**VARIANT_CX, "ROW_MASK": row_mask})
    assert "cp.async.bulk.tensor.2d.shared::cluster.global" not in k.asm["ptx"]
    assert [m["base"] for m in k.metadata["tensormaps"]] == [2]


def _row_kept(row_mask: int, m: int, n: int) -> np.ndarray:
    """Which of C's rows (all < M, so unwrapped) A's row conjunct keeps."""
    rows = np.arange(m)
    return {4: rows < n, 5: rows < m - 1}.get(row_mask, np.ones(m, bool))


@pytest.mark.parametrize("cx", TMA_VARIANTS + [{"ROW_MASK": r} for r in (4, 5, 6, 7)], ids=_ids)
def test_source_variants_on_the_cpu(cx: dict[str, int]) -> None:
    """The variants' pointer semantics on the CPU against NumPy: ragged M and
    N (rows and columns wrapped), K not a multiple of BLOCK_K."""
    rng = np.random.default_rng(7)
    m, n, k = 45, 38, 70
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float16)
    KERNELS.variants[(tilec.cdiv(m, 32), tilec.cdiv(n, 16))](
        a, b, c, m, n, k, k, 1, n, 1, n, 1, BLOCK_M=32, BLOCK_N=16, BLOCK_K=16, **cx)
    kept = _row_kept(cx.get("ROW_MASK", 0), m, n)
    want = (a.astype(np.float64) * kept[:, None]) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), want, rtol=2e-2, atol=2e-2 * k ** 0.5)



def test_batch_terms_split_off_the_columns() -> None:
    # V[0]: pid_b, V[1]: stride_ab (an argument), V[2]: pid_n, V[3]: stride_am
    # (an argument): pid_b stride_ab + 64 pid_n -> batch pid_b, column 64 pid_n
    def is_arg(a: Any) -> bool:
        return a in (("v", 1), ("v", 3))

    rest = V[0] * V[1] + V[2].scale(64)
    assert split_batch(rest, V[3], is_arg) == ([(V[0], V[1])], V[2].scale(64))
    # (pid_b + 1) stride_ab: batch coordinate pid_b + 1
    assert split_batch(rest + V[1], V[3], is_arg) == ([(V[0] + Poly.const(1), V[1])],
                                                     V[2].scale(64))
    # a constant batch coordinate (an argument offset), a batch stride dividing
    # another's, no argument at all, a batch stride dividing the row stride:
    # ambiguous or not a batch
    assert split_batch(V[1] + V[2], V[3], is_arg) is None
    assert split_batch(V[0] * V[1] + V[0] * V[3] * V[1], V[3] * V[3], is_arg) is None
    assert split_batch(V[2].scale(64), V[3], is_arg) is None
    assert split_batch(V[0] * V[1], V[1] * V[3], is_arg) is None


def test_two_and_three_batch_terms_are_batch_dimensions() -> None:
    # V[0]: off_z, V[1]: stride_z, V[2]: off_h, V[3]: stride_h, V[4]: stride_m,
    # V[5]: pid_n, V[6]: extra stride (V[1], V[3], V[4], V[6] arguments):
    # off_z stride_z + off_h stride_h + 64 pid_n -> batches (off_z, stride_z),
    # (off_h, stride_h), column 64 pid_n (an attention kernel's head offset)
    w = [Poly.atom(("v", i)) for i in range(10)]

    def is_arg(a: Any) -> bool:
        return a in (("v", 1), ("v", 3), ("v", 4), ("v", 6), ("v", 8))

    rest = w[0] * w[1] + w[2] * w[3] + w[5].scale(64)
    assert split_batch(rest, w[4], is_arg) == ([(w[0], w[1]), (w[2], w[3])], w[5].scale(64))
    three = rest + (w[7] + Poly.const(2)) * w[6]
    assert split_batch(three, w[4], is_arg) == (
        [(w[0], w[1]), (w[2], w[3]), (w[7] + Poly.const(2), w[6])], w[5].scale(64))
    # four batch terms: a map has rank <= 5
    assert split_batch(three + w[9] * w[8], w[4], is_arg) is None
    # off_h (H stride_h): the batch strides stride_h and H stride_h divide
    assert split_batch(w[0] * w[1] * w[3] + w[2] * w[3], w[4], is_arg) is None


BSIG = ("*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32:16,"
        "i32=1,i32:16,i32:16,i32=1,i32")


def test_batched_loads_and_store_are_rank_3_maps_on_sm90() -> None:
    """A batched matmul (kernels.py `batched`): A, B and C are blocks of
    rank-3 maps, [2^31, rows, columns] with the batch stride outermost; the
    copies are `.3d` (batch coordinate last), ptxas takes them."""
    k = KERNELS.batched.compile(target="sm90", signature=BSIG, num_warps=8, num_stages=3,
                                constexprs={"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64})
    ptx = k.asm["ptx"]
    assert "cp.async.cg" not in ptx and "cp.async.bulk.tensor.2d" not in ptx
    assert ptx.count("cp.async.bulk.tensor.3d.shared::cluster.global") >= 5
    assert "cp.async.bulk.tensor.3d.global.shared::cta" in ptx
    a, b, c = k.metadata["tensormaps"]
    big = ["const", 2 ** 31]
    assert a["shape"] == [big, ["arg", 3], ["arg", 5]] and a["box"] == [1, 128, 64]
    assert a["strides"] == [["arg", 6], ["arg", 7], ["const", 1]] and a["block"] == [1, 128, 64]
    assert b["shape"] == [big, ["arg", 5], ["arg", 4]] and b["box"] == [1, 64, 64]
    assert b["strides"] == [["arg", 9], ["arg", 10], ["const", 1]]
    assert c["store"] and c["shape"] == [big, ["arg", 3], ["arg", 4]] and c["box"] == [1, 128, 64]
    assert c["strides"] == [["arg", 12], ["arg", 13], ["const", 1]]
    if k.asm.get("cubin"):
        assert k.metadata["spill_stores"] == 0
    k100 = KERNELS.batched.compile(target="sm100", signature=BSIG, num_warps=8, num_stages=3,
                                   constexprs={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64})
    assert "tcgen05.mma" in k100.asm["ptx"]
    assert "cp.async.bulk.tensor.3d.shared::cluster.global" in k100.asm["ptx"]


@pytest.mark.parametrize("a_batch", [1, 2, 3])
def test_batch_offsets_that_are_not_a_batch_keep_a_on_pointers(a_batch: int) -> None:
    """A's batch offset `pid_b * stride_am`, `pid_b * 64`, `pid_b * M *
    stride_am`: no map (nor B: a ring is filled one way); only C's store is."""
    k = KERNELS.batched.compile(target="sm90", signature=BSIG, num_warps=8, num_stages=3,
                                constexprs={"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64,
                                            "A_BATCH": a_batch})
    assert "cp.async.bulk.tensor.3d.shared::cluster.global" not in k.asm["ptx"]
    assert [m["base"] for m in k.metadata["tensormaps"]] == [2]


def test_rank_3_maps_on_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batched map's fields, its encoding (dimensions innermost first, the
    batch last) and its zero-size stand-in (a zeroed [1, r, c] box)."""
    recipe = {"base": 0, "elem_bytes": 2, "inferred": True,
              "shape": [["const", 2 ** 31], ["arg", 1], ["arg", 2]],
              "strides": [["arg", 3], ["arg", 4], ["const", 1]], "block": [1, 128, 64],
              "box": [1, 128, 64]}
    args = [1 << 20, 300, 1000, 300 * 1008, 1008]
    addr, shape, strides = tensormap.fields(recipe, args)
    assert (addr, shape, strides) == (1 << 20, (2 ** 31, 300, 1000), (300 * 1008 * 2, 2016))
    assert tensormap.map_shape(recipe, shape) == shape
    tensormap.check_fields(recipe, addr, shape, strides)
    with pytest.raises(TilecError, match="multiples of 16"):
        tensormap.check_fields(recipe, addr, shape, (300 * 1008 * 2 + 2, 2016))
    with pytest.raises(TilecError, match="below 2\\^40"):
        tensormap.check_fields(recipe, addr, shape, (2 ** 40, 2016))
    maps = tensormap.TensorMaps([recipe])
    seen: list[Any] = []
    monkeypatch.setattr(tensormap, "_encoder", lambda: lambda *a: seen.append(a) or 0)
    monkeypatch.setattr(maps, "_zero_buffer", lambda n, store=False: 0x90000 + n)
    maps.fill(args)
    rank, dims, strd, box = seen[0][2], seen[0][4], seen[0][5], seen[0][6]
    assert rank == 3 and list(dims) == [1000, 300, 2 ** 31] and list(box) == [64, 128, 1]
    assert list(strd) == [2016, 300 * 1008 * 2] and seen[0][3].value == 1 << 20
    maps.fill([1 << 20, 300, 0, 300 * 1008, 1008])   # K = 0: a zeroed box stands in
    rank, dims, strd = seen[1][2], seen[1][4], seen[1][5]
    assert rank == 3 and list(dims) == [64, 128, 1] and list(strd) == [128, 128 * 128]
    assert seen[1][3].value == 0x90000 + 128 * 64 * 2


def _batched_reference(a: np.ndarray, b: np.ndarray, a_batch: int, bk: int) -> np.ndarray:
    """C[p] of `batched`: A's batch p (p + 1 for A_BATCH 4; p + k for K step
    k for A_BATCH 5) times B's batch p, in float64."""
    nb, k = b.shape[0], b.shape[1]
    out = np.zeros((nb, a.shape[1], b.shape[2]))
    for p in range(nb):
        for s in range(0, k, bk):
            q = p + {4: 1, 5: s // bk}.get(a_batch, 0)
            out[p] += a[q, :, s:s + bk].astype(np.float64) @ b[p, s:s + bk].astype(np.float64)
    return out


@pytest.mark.parametrize("a_batch", [0, 4, 5, 1])
def test_batched_on_the_cpu(a_batch: int) -> None:
    """The batched kernel's pointer semantics on the CPU against NumPy: ragged
    M, N and K, 3 batches, every operand a strided view of a larger array
    (batch and row strides that are not the view's sizes)."""
    rng = np.random.default_rng(11)
    nb, m, n, k, bm, bn, bk = 3, 45, 38, 70, 32, 16, 16
    extra = {4: 1, 5: tilec.cdiv(k, bk) - 1}.get(a_batch, 0)
    big_a = rng.standard_normal((nb + extra, m + 3, k + 10)).astype(np.float16)
    big_b = rng.standard_normal((nb, k + 2, n + 6)).astype(np.float16)
    big_c = np.full((nb, m + 1, n + 4), np.nan, np.float16)
    a, b, c = big_a[:, :m, :k], big_b[:, :k, :n], big_c[:, :m, :n]
    sa, sb, sc = (np.array(x.strides) // 2 for x in (big_a, big_b, big_c))
    KERNELS.batched[(tilec.cdiv(m, bm), tilec.cdiv(n, bn), nb)](
        big_a, big_b, big_c, m, n, k, sa[0], sa[1], 1, sb[0], sb[1], 1, sc[0], sc[1], 1,
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, A_BATCH=a_batch)
    if a_batch == 1:   # A's batch p at p rows down (the row stride)
        a = np.stack([big_a[0, p:p + m, :k] for p in range(nb)])
    want = _batched_reference(a, b, a_batch, bk)
    np.testing.assert_allclose(c.astype(np.float64), want, rtol=2e-2, atol=2e-2 * k ** 0.5)
    assert np.isnan(big_c[:, m:]).all() and np.isnan(big_c[:, :, n:]).all()


def test_flattened_persistent_batched_matmul() -> None:
    """`batched_persistent` (the batch a quotient of the tile id, the tile
    loop hinted `flatten=True`; its K loop's bound is computed in the loop and
    it carries pointers, so the nest stays, pipelined per tile: rank-3 copies
    and stores on sm90, and the right product on the CPU."""
    sig = "*fp16:16,*fp16:16,*fp16:16,i32,i32:16,i32:16,i32,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16"
    k = KERNELS.batched_persistent.compile(
        target="sm90", signature=sig, num_warps=8, num_stages=3,
        constexprs={"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "NUM_SMS": 132})
    ptx = k.asm["ptx"]
    assert "tile.flattened" not in k.asm["tiled"]
    assert "cp.async.bulk.tensor.2d" not in ptx and "cp.async.cg" not in ptx
    assert ptx.count("cp.async.bulk.tensor.3d.shared::cluster.global") >= 5
    assert "cp.async.bulk.tensor.3d.global.shared::cta" in ptx
    assert [m["box"] for m in k.metadata["tensormaps"]] == [[1, 128, 64], [1, 64, 64],
                                                            [1, 128, 64]]
    rng = np.random.default_rng(5)
    nb, m, n, kk = 3, 45, 40, 80
    a = rng.standard_normal((nb, m, kk)).astype(np.float16)
    b = rng.standard_normal((nb, kk, n)).astype(np.float16)
    c = np.full((nb, m, n), np.nan, np.float16)
    KERNELS.batched_persistent[(4,)](a, b, c, m, n, kk, nb, m * kk, kk, kk * n, n, m * n, n,
                                     BLOCK_M=32, BLOCK_N=16, BLOCK_K=16, NUM_SMS=4)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), want, rtol=2e-2, atol=2e-2 * kk ** 0.5)


PSIG = "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1"


@pytest.mark.parametrize("bn,stages,warps", [(256, 3, 8), (128, 4, 8), (128, 3, 4)])
def test_triton_persistent_tutorial_takes_the_tensor_cores_through_its_hints(
        bn: int, stages: int, warps: int) -> None:
    """Triton's tutorial-09 kernel (`persistent_tutorial`): its clamped
    indices are contiguous only because its hints say so; taken (as Triton
    takes them), both operands are 16-byte cp.async copies into wgmma rings
    in the flattened loop, C a TMA store where it is wide; without them every
    B access is 2 bytes, and the dot fell back to an unpipelined mma.sync
    loop (the whole kernel, hints or not, before session 28)."""
    cx = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8,
          "NUM_SMS": 132}
    k = KERNELS.persistent_tutorial.compile(target="sm90", signature=PSIG, num_warps=warps,
                                            num_stages=stages, constexprs=cx)
    tiled, ptx = k.asm["tiled"], k.asm["ptx"]
    assert 'kind = "wgmma"' in tiled and "tile.flattened" in tiled
    assert f"memref<{stages}x128x64xf16, 3>" in tiled and "cp.async.cg.shared.global" in ptx
    assert "wgmma.mma_async" in ptx and "mma.sync" not in ptx
    if k.asm.get("cubin"):
        assert k.metadata["spill_stores"] == 0
    plain = KERNELS.persistent_tutorial.compile(target="sm90", signature=PSIG, num_warps=warps,
                                                num_stages=stages, constexprs={**cx, "HINTS": 0})
    assert "operand loads move 2 bytes per access" in plain.asm["tiled"]


@pytest.mark.parametrize("m,n,k,programs", [(100, 48, 70, 3), (64, 64, 64, 1), (33, 16, 96, 4),
                                            (130, 80, 33, 5)])
def test_triton_persistent_tutorial_on_the_cpu(m: int, n: int, k: int, programs: int) -> None:
    rng = np.random.default_rng(m + n + k)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float16)
    KERNELS.persistent_tutorial[(programs,)](
        a, b, c, m, n, k, k, 1, n, 1, n, 1, BLOCK_SIZE_M=32, BLOCK_SIZE_N=16, BLOCK_SIZE_K=32,
        GROUP_SIZE_M=2, NUM_SMS=programs)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), want, rtol=2e-2, atol=2e-2 * k ** 0.5)


KSIG = ("*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,"
        "i32:16,i32:16,i32:16,i32=1,i32")


def test_batched_k_major_b_is_a_transposed_rank_3_map() -> None:
    """`batched` with B given K-major (stride_bk = 1): B's tile is the
    transpose of a rank-3 map's block [1, N-rows, K-columns]; both operands
    are `.3d` copies on sm90 (no cp.async left)."""
    k = KERNELS.batched.compile(target="sm90", signature=KSIG, num_warps=8, num_stages=3,
                                constexprs={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64})
    ptx = k.asm["ptx"]
    assert "cp.async.cg" not in ptx and "cp.async.bulk.tensor.2d" not in ptx
    assert ptx.count("cp.async.bulk.tensor.3d.shared::cluster.global") >= 4
    b = k.metadata["tensormaps"][1]
    assert b["base"] == 1 and b["shape"] == [["const", 2 ** 31], ["arg", 4], ["arg", 5]]
    assert b["strides"] == [["arg", 9], ["arg", 11], ["const", 1]] and b["box"] == [1, 128, 64]
    if k.asm.get("cubin"):
        assert k.metadata["spill_stores"] == 0


HSIG = ("*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32,i32,i32:16,i32:16,i32:16,i32:16,"
        "i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16")


@pytest.mark.parametrize("extra,target,warps", [(0, "sm90", 8), (1, "sm90", 4), (0, "sm100", 8),
                                                (1, "sm100", 8)])
def test_heads_are_rank_4_and_5_maps(extra: int, target: str, warps: int) -> None:
    """`heads` (Q K^T per batch and head, as attention kernels address them):
    two batch terms give rank-4 maps, a third rank 5 (TMA's largest): `.4d` /
    `.5d` copies (coordinates innermost first, batches last), K read K-major;
    with 4 warps O is a `.5d` TMA store.  ptxas takes them for sm_90a and
    sm_100a."""
    k = KERNELS.heads.compile(target=target, signature=HSIG, num_warps=warps, num_stages=3,
                              constexprs={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_D": 64,
                                          "EXTRA": extra})
    ptx, rank = k.asm["ptx"], 4 + extra
    assert "cp.async.cg" not in ptx and "cp.async.bulk.tensor.2d" not in ptx
    assert ptx.count(f"cp.async.bulk.tensor.{rank}d.shared::cluster.global") >= 4
    maps = k.metadata["tensormaps"]
    assert [m["box"] for m in maps[:2]] == [[1] * (rank - 2) + [128, 64]] * 2
    assert maps[0]["shape"][:rank - 2] == [["const", 2 ** 31]] * (rank - 2)
    assert maps[1]["strides"] == [["arg", 12], ["arg", 13], *([["arg", 14]] if extra else []),
                                  ["arg", 15], ["const", 1]]
    if warps == 4:
        assert f"cp.async.bulk.tensor.{rank}d.global.shared::cta" in ptx
    if k.asm.get("cubin"):
        assert k.metadata["spill_stores"] == 0


@pytest.mark.parametrize("extra", [0, 1])
def test_heads_on_the_cpu(extra: int) -> None:
    """`heads`' pointer semantics on the CPU against NumPy: Z x H (x X) heads
    of ragged M, N and D, Q and O head-major views with padded rows, K a
    sequence-major [Z, N, H, D] tensor seen per head (its head stride is D,
    its row stride H D, as a packed QKV projection lays it out)."""
    rng = np.random.default_rng(3 + extra)
    z, h, x, m, n, d = 2, 3, 2 if extra else 1, 40, 37, 72
    big_q = rng.standard_normal((z, h, x, m + 2, d + 8)).astype(np.float16)
    big_k = rng.standard_normal((z, n, h, x, d + 8)).astype(np.float16)
    big_o = np.full((z, h, x, m + 1, n + 7), np.nan, np.float16)
    q, kk, o = big_q[..., :m, :d], big_k[..., :d], big_o[..., :m, :n]
    sq, sk, so = (np.array(t.strides) // 2 for t in (big_q, big_k, big_o))
    KERNELS.heads[(tilec.cdiv(m, 32), tilec.cdiv(n, 16), z * h * x)](
        big_q, big_k, big_o, m, n, d, h, x, sq[0], sq[1], sq[2], sq[3], sk[0], sk[2], sk[3],
        sk[1], so[0], so[1], so[2], so[3], BLOCK_M=32, BLOCK_N=16, BLOCK_D=16, EXTRA=extra)
    want = np.einsum("zhxmd,znhxd->zhxmn", q.astype(np.float64), kk.astype(np.float64))
    np.testing.assert_allclose(o.astype(np.float64), want, rtol=2e-2, atol=2e-2 * d ** 0.5)
    assert np.isnan(big_o[..., m:, :]).all() and np.isnan(big_o[..., n:]).all()


def test_b_copies_of_a_per_tile_loop_evict_first() -> None:
    """tutorial-03's B blocks are copied under an L2 evict-first policy
    (`createpolicy.fractional.L2::evict_first` + `.L2::cache_hint`), A's
    are not (tile_pipeline._b_evict_first, measured on the H200); a
    flattened persistent loop's copies keep the default policy."""
    for target in ("sm90", "sm100"):
        ptx = _compile(target).asm["ptx"]
        hinted = re.findall(r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.tile\."
                            r"mbarrier::complete_tx::bytes\.L2::cache_hint \[[^\]]*\], "
                            r"\[(%rd\d+),", ptx)
        plain = re.findall(r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.tile\."
                           r"mbarrier::complete_tx::bytes \[[^\]]*\], \[(%rd\d+),", ptx)
        assert "createpolicy.fractional.L2::evict_first.b64" in ptx
        assert hinted and plain and not set(hinted) & set(plain)   # B's map hinted, A's not
    persistent = _module("examples/matmul_persistent.py").matmul_persistent.compile(
        target="sm90", signature="*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16",
        num_warps=8, num_stages=3,
        constexprs={"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8,
                    "NUM_SMS": 132})
    assert "cp.async.bulk.tensor" in persistent.asm["ptx"]
    assert "cache_hint" not in persistent.asm["ptx"]


def _module(relative: str) -> Any:
    spec = importlib.util.spec_from_file_location(
        "evict_" + pathlib.Path(relative).stem,
        pathlib.Path(__file__).resolve().parent.parent / relative)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("target,bn", [("sm90", 256), ("sm90", 128), ("sm100", 256)])
def test_ragged_n_over_padded_rows_takes_the_matrix_units(target: str, bn: int) -> None:
    """N not known to be a multiple of 16, B's rows padded to one: `offs_bn %
    N` leaves B 2 bytes per pointer access, but both loads are map blocks the
    pipeliner copies with TMA, so tile-accelerate-dot picks wgmma / tcgen05
    (it took the mma_sync fallback, which spills at these tiles)."""
    sig = SIG.replace("i32:16,i32:16,i32:16,i32:16", "i32:16,i32,i32:16,i32:16", 1)
    k = mm_tutorial.compile(target=target, signature=sig, num_warps=8, num_stages=3,
                            constexprs={**CX, "BLOCK_N": bn})
    ptx = k.asm["ptx"]
    assert ("wgmma.mma_async" if target == "sm90" else "tcgen05.mma") in ptx
    assert "mma.sync" not in ptx and "cp.async.cg" not in ptx
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global") >= 2
    if k.asm.get("cubin"):
        assert k.metadata["spill_stores"] == 0


BIAS_SIG = "*fp16:16,*fp16:16,*fp16:16,*fp32:16,i32,i32,i32:16,i32:16,i32:16,i32:16"


@pytest.mark.parametrize("target,bn,stages", [("sm90", 256, 3), ("sm90", 128, 4),
                                              ("sm100", 128, 3)])
def test_an_f32_epilogue_exchanges_rows_in_the_rings_bytes(target: str, bn: int,
                                                           stages: int) -> None:
    """`bias_f32`: the accumulator's first reader is f32 arithmetic, so the
    rows are exchanged in f32 (128 KiB at 128 x 256) after the rings are
    released, in their bytes: the kernel fits (before: 282,656 bytes of
    workgroup memory at 128 x 256 x 64 / 3 stages, a compile error).  sm100
    keeps the rows in place (TMEM lane = row): no exchange there; at 128 x
    256 its f32 epilogue spills (124 bytes; not measured: no Blackwell)."""
    k = KERNELS.bias_f32.compile(target=target, signature=BIAS_SIG, num_warps=8,
                                 num_stages=stages,
                                 constexprs={"BLOCK_M": 128, "BLOCK_N": bn, "BLOCK_K": 64})
    assert ("wgmma.mma_async" if target == "sm90" else "tcgen05.mma") in k.asm["ptx"]
    if k.asm.get("cubin"):
        assert k.metadata["spill_stores"] == 0


def test_an_f32_epilogue_on_the_cpu() -> None:
    rng = np.random.default_rng(11)
    m, n, k = 45, 38, 70
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, 48)).astype(np.float16)[:, :n]
    bias = rng.standard_normal(n).astype(np.float32)
    c = np.full((m, n), np.nan, np.float16)
    KERNELS.bias_f32[(tilec.cdiv(m, 32), tilec.cdiv(n, 16))](
        a, b, c, bias, m, n, k, k, 48, n, BLOCK_M=32, BLOCK_N=16, BLOCK_K=16)
    want = (a.astype(np.float64) @ b.astype(np.float64)) * 0.5 + bias[None, :] + \
        (np.arange(m) % 7)[:, None]
    np.testing.assert_allclose(c.astype(np.float64), want, rtol=2e-2, atol=2e-2 * k ** 0.5)
