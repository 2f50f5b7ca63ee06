"""Tensor descriptors with a per-program base (`make_tensor_descriptor(x_ptr +
pid_b * stride_b, ...)`, attention's per-head descriptors): tile-tma-descriptors
makes them blocks of maps of rank 3 to 5 whose leading dimensions are the base
offset's batch terms (passes/tile_tma_descriptors.py, `map_blocks.split_offset`).

On the CPU each kernel runs plain and with the sm90 tags emulated under TMA's
semantics (tests/tma_emulation.py: the descriptor pass runs for sm90 there
too), and the two must agree bitwise; on sm90 / sm100 the loads are `.3d`-`.5d`
TMA copies, with no spill.  The FileCheck tests (tests/lit/tile-tma-descriptors/
bases.py) show the recipes; the GPU suite runs the kernels on the H200
("batched tensor maps")."""
from __future__ import annotations

import re
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import tilec
import tma_emulation as te
from tilec.errors import TilecError
from tilec.passes.analysis.index_poly import Poly
from tilec.passes.analysis.map_blocks import split_offset
from tilec.runtime import tensormap

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from matmul_kernels import mm_tutorial  # noqa: E402

KERNELS = te.load_module("tests/lit/tile-tma-descriptors/kernels.py",
                         "tma_descriptor_kernels")
matmul_persistent = te.load_module("examples/matmul_persistent.py",
                                   "example_matmul_persistent_bases").matmul_persistent
BLOCKS = {"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 64}
SIG = "*fp16:16,*fp16:16,*fp16:16," + ",".join(["i32:16"] * 9)
HSIG = "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32,i32," + ",".join(["i32:16"] * 8)
V = [Poly.atom(("v", i)) for i in range(4)]


def test_split_offset_groups_terms_by_their_arguments() -> None:
    # v0, v1 program values; v2, v3 integer arguments
    def is_arg(a: Any) -> bool:
        return a in (("v", 2), ("v", 3))
    z, h, sz, sh = V
    assert split_offset(z * sz + h * sh, is_arg) == [(z, sz), (h, sh)]
    # a constant factor goes into the stride (its alignment), the rest stays
    assert split_offset(z.scale(64) * sz + Poly.const(128) * sz, is_arg) == \
        [(z + Poly.const(2), sz.scale(64))]
    # terms free of arguments are one group: a constant stride
    assert split_offset(z.scale(24) + h.scale(36), is_arg) == [(z.scale(2) + h.scale(3),
                                                               Poly.const(12))]
    assert split_offset(z * sz + h * sh + z * sz * sh + z, is_arg) is None   # four groups
    assert split_offset(z.scale(Fraction(1, 2)), is_arg) is None


def _rand(g: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return g.standard_normal(shape).astype(np.float16)


def _batched(nb: int, m: int, n: int, k: int, base: int, seed: int = 0
             ) -> Callable[[], te.Args]:
    """`batched_desc`'s arguments: A laid out for BASE (every element of its
    buffer random: BASE 4 and 5 read rows at 24 / 20-element steps), [nb, K, N]
    B and [nb, M, N] C inside larger NaN buffers; row strides multiples of 16."""
    kp, np_ = -(-(k + 8) // 16) * 16, -(-(n + 8) // 16) * 16

    def make() -> te.Args:
        g = np.random.default_rng(seed)
        rows = {1: m, 2: 64}.get(base, m + 3)
        a_buf = _rand(g, (nb + 2, rows, kp))
        a = a_buf[:, :m, :k]
        sa = [s // 2 for s in a.strides]
        b = _rand(g, (nb, k + 2, np_))[:, :k, :n]
        c = np.full((nb + 1, m + 5, np_ + 48), np.nan, np.float16)[:nb, :m, :n]
        sb, sc = [s // 2 for s in b.strides], [s // 2 for s in c.strides]
        return [a, b, c, m, n, k, sa[0], sa[1], sb[0], sb[1], sc[0], sc[1]], \
            {**BLOCKS, "BASE": base}
    return make


def _grid(m: int, n: int, nb: int) -> tuple[int, int, int]:
    return tilec.cdiv(m, BLOCKS["BLOCK_M"]) + 1, tilec.cdiv(n, BLOCKS["BLOCK_N"]) + 1, nb


@pytest.mark.parametrize("base, tagged", [(0, 3), (1, 3), (2, 3), (3, 3), (4, 3), (5, 2)])
def test_batched_descriptors_on_the_cpu(base: int, tagged: int) -> None:
    """Per-batch descriptors (A's base offset in six forms: one or two
    arguments, a constant factor, the next batch, constant strides of 48 and
    40 bytes, the last not a map) against TMA's semantics: ragged M, N, K,
    K = 0, programs beyond the tile grid."""
    for i, (m, n, k) in enumerate([(45, 70, 77), (33, 129, 130), (45, 70, 0)]):
        pair = te.differential(KERNELS.batched_desc, _grid(m, n, 3),
                               _batched(3, m, n, k, base, seed=i))
        assert pair.tagged == tagged and pair.changed > 0, pair.recipes
        assert all(len(r["block"]) == 3 for r in pair.recipes)


def _heads(z: int, h: int, x: int, m: int, n: int, d: int, extra: int, seed: int = 0
           ) -> Callable[[], te.Args]:
    """`heads_desc`'s arguments: Q [Z, H, X, M, D] and K [Z, H, X, N, D]
    strided views (head-major Q, sequence-major K), O [Z H X, M, N] contiguous."""
    dp = -(-(d + 8) // 16) * 16

    def make() -> te.Args:
        g = np.random.default_rng(seed)
        q = _rand(g, (z, h, x + 1, m + 3, dp))[:, :, :x, :m, :d]
        kt = _rand(g, (n + 1, z, h, x, dp))[:n, :, :, :, :d]      # sequence-major
        k = kt.transpose(1, 2, 3, 0, 4)
        o = np.full((z * h * x + 1) * m * n, np.nan, np.float16)   # per head [M, N], stride N
        sq, sk = [s // 2 for s in q.strides], [s // 2 for s in k.strides]
        return [q, k, o, m, n, d, h, x, *sq[:4], *sk[:4]], \
            {"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_D": 64, "EXTRA": extra}
    return make


@pytest.mark.parametrize("extra", [0, 1])
def test_per_head_descriptors_are_rank_4_and_5_maps_on_the_cpu(extra: int) -> None:
    """Per-head Q and K descriptors (two or three batch terms: maps of rank 4
    and 5, K's blocks transposed for the product) and a per-head O of
    contiguous rows (`zh * M * N`: rank 3): D ragged and 0, programs beyond
    the tile grid; N = 64 makes O's rows 128 bytes (a map's), N = 72 not."""
    z, h, x = 2, 3, 1 + extra
    for i, (m, n, d, tagged) in enumerate([(45, 64, 77, 3), (70, 72, 0, 2), (33, 64, 130, 3)]):
        grid = (tilec.cdiv(m, 32) + 1, tilec.cdiv(n, 64) + 1, z * h * x)
        pair = te.differential(KERNELS.heads_desc, grid, _heads(z, h, x, m, n, d, extra, seed=i))
        assert pair.tagged == tagged and pair.changed > 0, pair.recipes
        ranks = sorted(len(r["block"]) for r in pair.recipes)
        assert ranks == ([3] if tagged == 3 else []) + [4 + extra] * 2


def test_matmul_persistent_descriptors_on_the_cpu() -> None:
    """examples/matmul_persistent.py with 16-element row strides: its three
    descriptors (argument bases) are tagged and emulated (the CPU's
    flattened loop stores C in two places: four accesses); K = 80, N = 64."""
    def make() -> te.Args:
        g = np.random.default_rng(5)
        m, n, k = 45, 64, 80
        return [_rand(g, (m, k)), _rand(g, (n, k)), np.full((m, n), np.nan, np.float16),
                m, n, k], {**BLOCKS, "GROUP_M": 2, "NUM_SMS": 3}
    pair = te.differential(matmul_persistent, (3,), make)
    assert pair.tagged == 4 and pair.changed > 0
    assert [r["base"] for r in pair.recipes] == [0, 1, 2, 2]


_COPY = re.compile(r"cp\.async\.bulk\.tensor\.(\d)d\.shared::cluster\.global")


@pytest.mark.parametrize("target", ["sm90", "sm100"])
def test_per_program_bases_are_tma_copies(target: str) -> None:
    """On sm90 / sm100 the per-batch and per-head descriptor loads are `.3d`,
    `.4d` and `.5d` TMA copies (no cp.async); a 40-byte batch stride keeps A
    on pointer loads, and with it B (the pipeliner copies both operands
    with TMA or neither); ptxas reports no spill in the TMA kernels."""
    k = KERNELS.batched_desc.compile(target=target, signature=SIG, num_warps=8, num_stages=3,
                                     constexprs={"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64})
    ptx = k.asm["ptx"]
    assert set(_COPY.findall(ptx)) == {"3"} and "cp.async.cg" not in ptx
    assert [r["block"] for r in k.metadata["tensormaps"]][:2] == [[1, 128, 64], [1, 64, 256]]
    k5 = KERNELS.batched_desc.compile(target=target, signature=SIG, num_warps=8, num_stages=3,
                                      constexprs={"BLOCK_M": 128, "BLOCK_N": 256,
                                                  "BLOCK_K": 64, "BASE": 5})
    assert "cp.async.cg" in k5.asm["ptx"] and not _COPY.findall(k5.asm["ptx"])   # both or none
    for extra in (0, 1):
        kh = KERNELS.heads_desc.compile(target=target, signature=HSIG, num_warps=8,
                                        num_stages=3,
                                        constexprs={"BLOCK_M": 128, "BLOCK_N": 128,
                                                    "BLOCK_D": 64, "EXTRA": extra})
        assert set(_COPY.findall(kh.asm["ptx"])) == {str(4 + extra)}
        for kk in (k, kh):   # (k5's cp.async ring spills 4 bytes on sm100, as before)
            if kk.asm.get("cubin"):
                assert kk.metadata["spill_stores"] == 0


RAGGED = "*fp16:16,*fp16:16,*fp16:16,i32,i32,i32," + ",".join(["i32:16"] * 6)


@pytest.mark.parametrize("target", ["sm90", "sm100"])
def test_ragged_bounds_pipeline_through_tma(target: str) -> None:
    """M, N and K not known to be multiples of 16 (padded rows: strides are):
    the descriptors' masks vary element by element, which no cp.async can
    copy, and the loop was left unpipelined; both loads are map blocks, so
    tile-pipeline copies them with TMA.  The tutorial-03 source with such a
    K (and N a multiple of 16, its `% N` wrap keeping B's rows contiguous)
    likewise."""
    k = KERNELS.batched_desc.compile(target=target, signature=RAGGED, num_warps=8, num_stages=3,
                                     constexprs={"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64})
    ptx = k.asm["ptx"]
    assert set(_COPY.findall(ptx)) == {"3"} and "mbarrier.try_wait" in ptx
    assert "ld.global" not in ptx and "cp.async.cg" not in ptx
    tut = mm_tutorial.compile(target=target, num_warps=8, num_stages=3,
                              signature="*fp16:16,*fp16:16,*fp16:16,i32,i32:16,i32,i32:16,i32=1,"
                                        "i32:16,i32=1,i32:16,i32=1",
                              constexprs={"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64,
                                          "GROUP_M": 8})
    assert set(_COPY.findall(tut.asm["ptx"])) == {"2"} and "cp.async.cg" not in tut.asm["ptx"]
    for kk in (k, tut):
        if kk.asm.get("cubin"):
            assert kk.metadata["spill_stores"] == 0


@pytest.mark.parametrize("form, tagged", [(0, 1), (1, 2)])
def test_a_base_inside_the_tensor_with_a_negative_batch_term(form: int, tagged: int) -> None:
    """`x_ptr + (NB - 1 - pid_b) * stride_xb` (found by the fuzzer's
    descriptor cases: it split into a batch coordinate -1 - pid_b, and TMA
    read zeros where X's batches are) stays a pointer access; written with
    one non-negative coordinate it is a map.  X's batches land reversed in Y."""
    nb, m, n = 3, 45, 70

    def make() -> te.Args:
        g = np.random.default_rng(form)
        x = _rand(g, (nb, m + 3, 80))[:, :m, :n]
        y = np.full((nb, m + 1, 80), np.nan, np.float16)[:, :m, :n]
        return [x, y, m, n, nb, *[s // 2 for s in x.strides[:2]],
                *[s // 2 for s in y.strides[:2]]], {"BLOCK_M": 32, "BLOCK_N": 64, "FORM": form}
    pair = te.differential(KERNELS.reversed_copy, (2, 2, nb), make)
    assert pair.tagged == tagged and pair.changed > 0, pair.recipes


def test_the_runtime_refuses_a_divisor_that_is_not_positive() -> None:
    """A map whose batch coordinate is a quotient by argument 6 (`positive`:
    [6]) is refused at launch unless that argument is positive."""
    recipe = {"base": 0, "elem_bytes": 2, "positive": [6], "block": [1, 64, 64],
              "shape": [["const", 2 ** 31], ["arg", 3], ["arg", 5]],
              "strides": [["arg", 8], ["arg", 11], ["const", 1]]}
    args = [1 << 20, 0, 0, 128, 128, 64, 4, 1, 8192, 0, 0, 64]
    assert tensormap.fields(recipe, args)[1] == (2 ** 31, 128, 64)
    for h in (0, -2):
        args[6] = h
        with pytest.raises(TilecError, match="argument 6"):
            tensormap.fields(recipe, args)
    assert 6 in tensormap.TensorMaps([recipe]).parameters()
