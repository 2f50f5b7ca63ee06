"""AMD matrix products in the transposed layout and with operands read before their loop.

A dot whose result is reduced along its rows (attention's scores) is computed
as C^T = B^T A^T (`choose_transposed`): the accumulator of that [N, M] product,
read through `transpose_layout`, is C's layout, so a row of C lies in one
lane's registers (Triton's transposed MFMA layout).  The product itself is the
[N, M] product test_amd_matrix.py simulates; here the relabeling is checked by
simulation (every thread's elements and chunks), and the generated code
statically: attention's forward at d = 128 on every AMD target."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from tilec.passes.analysis.layouts import Distribution
from tilec.passes.analysis.matrix_tiling import choose, choose_transposed, transpose_layout
from tilec.targets import TARGETS

ROOT = Path(__file__).resolve().parents[1]

# (target, M, N, K, dtype, num_warps)
DOTS = [("gfx942", 128, 64, 128, "f16", 8), ("gfx942", 128, 64, 128, "f16", 4),
        ("gfx942", 64, 32, 64, "bf16", 4), ("gfx90a", 64, 64, 32, "f16", 2),
        ("gfx950", 128, 64, 128, "f16", 8), ("gfx1100", 128, 64, 128, "f16", 8),
        ("gfx1100", 64, 32, 32, "f16", 4)]


def _kind(target: str) -> str:
    return "mfma" if TARGETS[target].warp_size == 64 else "wmma"


@pytest.mark.parametrize("target,m,n,k,a,warps", DOTS)
def test_transposed_layout_holds_the_transpose(target: str, m: int, n: int, k: int, a: str,
                                               warps: int) -> None:
    """Every thread owns under `transpose_layout(T.layout())` on [M, N] exactly
    the transposes of its elements under T's layout on [N, M]; its chunks are
    the same vectors with their keys swapped (what mfma._permuted relies on)."""
    tt = choose_transposed(TARGETS[target], _kind(target), m, n, k, a, "f32", warps)
    assert tt is not None
    d_t = Distribution.of(tt.layout(), (n, m))
    d = Distribution.of(transpose_layout(tt.layout()), (m, n))
    assert d.vec_len == d_t.vec_len and d.num_chunks == d_t.num_chunks
    assert sorted(d.chunk_keys) == sorted((j, i) for i, j in d_t.chunk_keys)
    seen = set()
    for tid in range(tt.warp_size * warps):
        mine, theirs = d.thread_coords(tid, tt.warp_size), d_t.thread_coords(tid, tt.warp_size)
        assert len(mine) == len(theirs)
        for (i, j), (r, c) in theirs.items():
            assert mine[(j, i)] == (c, r)
            seen.add((c, r))
        # A chunk's vector: consecutive elements along M in both.
        for i, j in d_t.chunk_keys:
            for u in range(d.vec_len):
                assert mine[(j + u, i)] == (theirs[(i, j + u)][1], theirs[(i, j + u)][0])
    assert len(seen) == m * n


@pytest.mark.parametrize("target,m,n,k,a,warps", DOTS)
def test_transposed_product_reads_compute_the_product(target: str, m: int, n: int, k: int,
                                                      a: str, warps: int) -> None:
    """Simulate matrix_dot's transposed lowering: b stored K-major (B^T
    row-major, row stride K + pad) is the instruction's A source, read at
    `a_offset`; a stored as it is (row stride K + pad) its B source, read
    K-major at `bt_coords` (one run per lane); each instruction multiplies as
    the ISA documents; results land through the [N, M] tiling's chunk keys,
    then C's keys swapped: the whole must equal A @ B."""
    sys.path.insert(0, str(ROOT / "tests"))
    from amd_simulation import simulate_transposed
    from tilec.targets.amd.mfma import bt_coords
    tt = choose_transposed(TARGETS[target], _kind(target), m, n, k, a, "f32", warps)
    assert tt is not None
    ins = tt.instr
    kpl, step_k, pad = ins.operand_elems, ins.k * tt.kpack, 8
    ld = k + pad
    rng = np.random.default_rng(2)
    av = rng.integers(-4, 5, (m, k))
    bv = rng.integers(-4, 5, (k, n))
    buf_x = np.full(n * ld, 10 ** 6)            # B^T [n, k] rows, padded
    buf_y = np.full(m * ld, 10 ** 6)            # A [m, k] rows: A^T read K-major
    for nn in range(n):
        buf_x[nn * ld:nn * ld + k] = bv[:, nn]
    for mm in range(m):
        buf_y[mm * ld:mm * ld + k] = av[mm]

    def b_elem(warp: int, ln: int, g: int, u: int, pair: int, s: int, e: int) -> int:
        col, k0 = bt_coords(tt, ln, warp, g, u)
        return int(buf_y[col * ld + k0 + pair * step_k + s * kpl + e])
    out = simulate_transposed(tt, warps, m, n, k, ld, buf_x, b_elem)
    np.testing.assert_array_equal(out, av @ bv)


def test_permuted_fragments_follow_the_keys() -> None:
    from tilec.targets.amd.matrix_dot import _permuted
    tt = choose_transposed(TARGETS["gfx942"], "mfma", 128, 64, 128, "f16", "f32", 8)
    assert tt is not None
    d_t = Distribution.of(tt.layout(), (64, 128))
    d = Distribution.of(transpose_layout(tt.layout()), (128, 64))
    frag = list(range(d_t.num_chunks))          # chunk i of the [N, M] fragment
    out = _permuted(frag, d_t, d)               # type: ignore[arg-type]
    for pos, key in enumerate(d.chunk_keys):
        assert d_t.chunk_keys[out[pos]] == key[::-1]  # type: ignore[index]
    assert _permuted(out, d, d_t) == frag       # type: ignore[arg-type]


def test_transposed_choice_keeps_rows_in_few_warps() -> None:
    """Attention's QK^T [128, 64] (K = 128): 4 warps put all of a row in one
    warp; at 8 warps the 32x32 instruction allows no fewer than 2; the
    instruction is the table's first (Triton's 32x32x8 on gfx942)."""
    t942 = TARGETS["gfx942"]
    tt = choose_transposed(t942, "mfma", 128, 64, 128, "f16", "f32", 4)
    assert tt is not None and (tt.instr.shape, tt.wm, tt.wn) == ("32x32x8", 1, 4)
    tt = choose_transposed(t942, "mfma", 128, 64, 128, "f16", "f32", 8)
    assert tt is not None and (tt.instr.shape, tt.wm, tt.wn) == ("32x32x8", 2, 4)
    # The untransposed choice is unchanged.
    t = choose(t942, "mfma", 128, 128, 64, "f16", "f32", 8)
    assert t is not None and (t.wm, t.wn, t.nv) == (4, 2, 2)


def _attention_fwd(target: str, warps: int, stages: int, dtype: str = "fp16") -> dict:
    sys.path.insert(0, str(ROOT / "examples"))
    from attention import _SIG, _attn_fwd
    return dict(_attn_fwd.compile(target=target, signature=_SIG.format(t=dtype),
                                  num_warps=warps, num_stages=stages, constexprs={
                                      "HEAD_DIM": 128, "BLOCK_M": 128, "BLOCK_N": 64,
                                      "CAUSAL": False}).asm)


def _main_loop(gcn: str) -> str:
    """The loop body (label to backward branch) holding the most matrix instructions."""
    best = ""
    for lab in re.finditer(r"^(\.LBB\w+):", gcn, re.M):
        back = re.search(rf"s_c?branch\w*\s+{re.escape(lab.group(1))}\b", gcn[lab.end():])
        if back:
            seg = gcn[lab.end():lab.end() + back.start()]
            if len(re.findall(r"v_(mfma|wmma)", seg)) > len(re.findall(r"v_(mfma|wmma)", best)):
                best = seg
    return best


# (target, warps, stages, instruction, per key block per warp, most main-loop
# instructions, Triton 3.9's for the same source: gfx942 473 / 483, gfx1100 1845)
ATTENTION = [("gfx942", 8, 4, "v_mfma_f32_32x32x8_f16", 32, 700),
             ("gfx942", 4, 2, "v_mfma_f32_32x32x8_f16", 64, 1200),
             ("gfx90a", 8, 4, "v_mfma_f32_32x32x8f16", 32, 700),
             ("gfx950", 8, 4, "v_mfma_f32_32x32x16_f16", 16, 700),
             ("gfx1100", 8, 4, "v_wmma_f32_16x16x16_f16", 64, 1700)]


@pytest.mark.parametrize("target,warps,stages,instr,per_step,most", ATTENTION)
def test_attention_forward_keeps_scores_in_lanes(target: str, warps: int, stages: int,
                                                  instr: str, per_step: int, most: int) -> None:
    """examples/attention.py's forward at d = 128: both dots on the matrix
    cores, Q's operand registers read once before the key loop (no Q stores
    in it), the row max and sum without a five-step lane butterfly, the LDS
    within Triton 3.9's (49152 bytes at 8 warps), no scratch (gfx1100 too:
    Triton 3.9 spills 3756 bytes there), hsaco linked."""
    from tilec.targets.amd.backend import parse_amdgpu_metadata
    asm = _attention_fwd(target, warps, stages)
    gcn = asm["amdgcn"]
    assert asm["hsaco"]
    loop = _main_loop(gcn)
    assert len(re.findall(rf"^\s*{instr}\b", loop, re.M)) == per_step
    n_loop = len([ln for ln in loop.splitlines() if re.match(r"\s+[a-z_][0-9a-z_]*\b", ln)])
    assert n_loop <= most, n_loop
    # 128-bit LDS writes of K and V only (64 x 128 f16 each): Q is not staged.
    threads = warps * TARGETS[target].warp_size
    assert len(re.findall(r"^\s*ds_(write|store)_b128", loop, re.M)) <= 2 * 64 * 128 * 2 // (
        16 * threads)
    assert len(re.findall(r"^\s*ds_swizzle_b32", loop, re.M)) <= 16
    (meta,) = parse_amdgpu_metadata(gcn).values()
    assert meta["lds_bytes"] <= 49152, meta
    assert meta["scratch_bytes"] == 0 and meta["vgpr_spill_count"] == 0, meta
