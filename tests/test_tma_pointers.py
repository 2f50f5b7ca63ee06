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
import sys
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import tilec
from tilec.errors import TilecError
from tilec.passes.analysis.index_poly import Poly
from tilec.passes.tile_tma_pointers import _split_rows
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
    assert _split_rows(r, V[3]) == (V[0].scale(128), V[1].scale(64))
    # a constant stride is ambiguous (rows and columns both constants)
    assert _split_rows(r, Poly.const(64)) is None


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

