"""Attention's P @ V with P taken from registers (passes/analysis/register_operands.py).

P is an elementwise function of the scores S = Q K^T, laid out as S's
transposed MFMA/WMMA accumulator.  `chain_tiling` gives P @ V the transposed
layout too and a plan saying where each lane finds its B operand registers
(the instruction's B source is P^T): its own fragment on CDNA's 32x32x8
(kpack 1), its own or lane ^ 16's on RDNA3's WMMA (the operand is replicated
in both half-waves, the accumulator is not).  Checked by simulation (every
lane of every warp, each instruction multiplying as the ISA documents, the
product must be P @ V), and on the generated code of examples/attention.py."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from tilec.passes.analysis.layouts import Distribution
from tilec.passes.analysis.matrix_tiling import choose_transposed, transpose_layout
from tilec.passes.analysis.register_operands import chain_tiling
from tilec.targets import TARGETS

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from amd_simulation import simulate_transposed  # noqa: E402

# (target, BLOCK_M, BLOCK_N (keys: P @ V's K), HEAD_DIM, num_warps)
CHAINS = [("gfx942", 128, 64, 128, 4), ("gfx90a", 128, 64, 128, 4), ("gfx942", 64, 32, 64, 2),
          ("gfx1100", 128, 64, 128, 8), ("gfx1100", 64, 32, 64, 4)]


def _kind(target: str) -> str:
    return "mfma" if TARGETS[target].warp_size == 64 else "wmma"


def _chain(target: str, bm: int, bn: int, d: int, warps: int):  # type: ignore[no-untyped-def]
    t = TARGETS[target]
    head = choose_transposed(t, _kind(target), bm, bn, d, "f16", "f32", warps)
    assert head is not None
    s_layout = transpose_layout(head.layout())
    return s_layout, chain_tiling(t, _kind(target), bm, d, bn, "f16", "f32", warps, s_layout)


@pytest.mark.parametrize("target,bm,bn,d,warps", CHAINS)
def test_registers_of_the_scores_compute_p_at_v(target: str, bm: int, bn: int, d: int,
                                                warps: int) -> None:
    """Simulate matrix_dot's chained lowering: V stored K-major (V^T rows,
    stride BLOCK_N + pad) read at `a_offset` as the instruction's A source; its
    B source from the plan (own or partner lane's fragment of P, positions
    given by P's layout); results through the transposed keys: = P @ V."""
    s_layout, chain = _chain(target, bm, bn, d, warps)
    assert chain is not None
    tt, plan = chain
    ws, pad = tt.warp_size, 8
    rng = np.random.default_rng(3)
    p = rng.integers(-4, 5, (bm, bn))
    v = rng.integers(-4, 5, (bn, d))
    ld = bn + pad
    buf_x = np.full(d * ld, 10 ** 6)
    for col in range(d):
        buf_x[col * ld:col * ld + bn] = v[:, col]
    dp = Distribution.of(s_layout, (bm, bn))
    p_coords = [dp.thread_coords(tid, ws) for tid in range(ws * warps)]

    def held(tid: int, chunk: int, elem: int) -> int:
        key = list(dp.chunk_keys[chunk])
        key[dp.fast] += elem
        i, j = p_coords[tid][tuple(key)]
        return int(p[i, j])
    d_t = Distribution.of(tt.layout(), (d, bm))
    dc = Distribution.of(transpose_layout(tt.layout()), (bm, d))
    assert d_t.num_chunks == dc.num_chunks

    def b_elem(warp: int, ln: int, g: int, u: int, pair: int, s: int, e: int) -> int:
        src = plan[(g, u, pair, s)][e]
        other = src.xor and (src.bit < 0 or (ln >> src.bit) & 1 == src.when)
        return held(warp * ws + (ln ^ src.xor if other else ln), src.chunk, src.elem)
    out = simulate_transposed(tt, warps, bm, d, bn, ld, buf_x, b_elem)
    np.testing.assert_array_equal(out, p @ v)


def test_plans_use_the_lane_itself_or_its_half_wave_partner() -> None:
    """CDNA 32x32x8: every register is the lane's own (no moves; kpack 1, as
    the accumulator's 4-element runs); RDNA3: half of them from lane ^ 16."""
    _, chain = _chain("gfx942", 128, 64, 128, 4)
    assert chain is not None and chain[0].kpack == 1
    assert all(s.xor == 0 for srcs in chain[1].values() for s in srcs)
    _, chain = _chain("gfx1100", 128, 64, 128, 8)
    assert chain is not None
    xors = [s.xor for srcs in chain[1].values() for s in srcs]
    assert set(xors) == {16} and all(s.bit == 4 for srcs in chain[1].values() for s in srcs)


def test_scores_split_over_warps_keep_the_staging() -> None:
    """At 8 warps the 32x32 instruction splits S's keys over two warps (a row
    is in two warps): P @ V's operand is not in one warp's registers, no plan
    (P is staged through LDS, as before)."""
    _, chain = _chain("gfx942", 128, 64, 128, 8)
    assert chain is None


def _attention_gcn(target: str, warps: int, stages: int) -> str:
    sys.path.insert(0, str(ROOT / "examples"))
    from attention import _SIG, _attn_fwd
    asm = _attn_fwd.compile(target=target, signature=_SIG.format(t="fp16"), num_warps=warps,
                            num_stages=stages, constexprs={"HEAD_DIM": 128, "BLOCK_M": 128,
                                                           "BLOCK_N": 64, "CAUSAL": False}).asm
    return str(asm["amdgcn"])


@pytest.mark.parametrize("target,warps,stages", [("gfx942", 4, 2), ("gfx1100", 8, 4)])
def test_attention_keeps_p_in_registers(target: str, warps: int, stages: int) -> None:
    """examples/attention.py's forward: LDS within Triton 3.9's 32768 bytes (K
    and V only in the loop, Q unpadded before it), no 16-bit LDS reads in the
    key loop (P is not staged, K^T is a relabelling of K's registers)."""
    from tilec.targets.amd.backend import parse_amdgpu_metadata
    from test_amd_transposed import _main_loop
    gcn = _attention_gcn(target, warps, stages)
    (meta,) = parse_amdgpu_metadata(gcn).values()
    assert meta["lds_bytes"] <= 32768 and meta["scratch_bytes"] == 0, meta
    loop = _main_loop(gcn)
    assert not re.findall(r"^\s*ds_(read|load)_u16", loop, re.M)
    if target == "gfx1100":      # the half-wave exchange: 4 words per 16x16 block of P
        assert len(re.findall(r"^\s*(ds_bpermute_b32|v_permlanex16_b32)", loop, re.M)) <= 40


@pytest.mark.parametrize("target,warps", [("gfx942", 4), ("gfx1100", 8)])
def test_kmajor_rows_give_runs_of_consecutive_k(target: str, warps: int) -> None:
    """V [64, 128] as loaded for the K-major store (`kmajor_rows`): 4 rows per
    thread where the rows repeated; every thread's elements (k + t, n), t < 4,
    are its locals (l0 + t, l1) at static offsets +t (what
    matrix_dot.store_kmajor writes as one 8-byte store), and the threads
    together cover V once."""
    from tilec.passes.analysis.layouts import make_blocked
    from tilec.passes.tile_layout_dots import kmajor_rows
    t = TARGETS[target]
    loaded = make_blocked((64, 128), (1, 0), 8, t.warp_size, warps)
    lay = kmajor_rows(loaded, (64, 128))
    assert lay.per_thread == (4, 8) and lay.lanes == loaded.lanes
    d = Distribution.of(lay, (64, 128))
    seen = set()
    for tid in range(t.warp_size * warps):
        coords = d.thread_coords(tid, t.warp_size)
        for (l0, l1), (k, n) in coords.items():
            seen.add((k, n))
            if l0 % 4 == 0:
                for r in range(4):
                    assert coords[(l0 + r, l1)] == (k + r, n)
                    assert d.static_offset(0, l0 + r) == d.static_offset(0, l0) + r
    assert len(seen) == 64 * 128
    # Rows that do not repeat keep the loaded layout.
    small = make_blocked((16, 128), (1, 0), 8, t.warp_size, warps)
    assert kmajor_rows(small, (16, 128)) == small


@pytest.mark.parametrize("shape,layout", [
    ((64, 128), ((1, 8), (4, 16), (4, 1), (1, 0))),     # attention's K as loaded
    ((64, 128), ((4, 8), (2, 16), (8, 1), (1, 0))),
    ((64, 16), ((2, 1), (16, 4), (1, 2), (0, 1)))])
def test_transpose_of_a_layout_is_a_relabelling(shape: tuple[int, int], layout: tuple) -> None:
    """passes/gpu/shape.py lowers `tile.trans` to `transpose_layout` of its
    source's layout without moving data: every thread owns the transposed
    elements, chunk (i, j) of the result being chunk (j, i) of the source."""
    from tilec.dialects.tile import Blocked
    src = Blocked(*layout)
    ds = Distribution.of(src, shape)
    dd = Distribution.of(transpose_layout(src), shape[::-1])
    assert sorted(dd.chunk_keys) == sorted((j, i) for i, j in ds.chunk_keys)
    assert dd.vec_len == ds.vec_len
    for tid in range(64 * 4):
        mine, theirs = dd.thread_coords(tid, 64), ds.thread_coords(tid, 64)
        for (i, j), (r, c) in theirs.items():
            assert mine[(j, i)] == (c, r)
