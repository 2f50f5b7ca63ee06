"""Test helper: a lane-by-lane simulation of matrix_dot's transposed MFMA /
WMMA lowering (targets/amd/matrix_dot.py), each instruction multiplying as the
ISA documents (test_amd_matrix's `_documented_operand` / `_documented_out`)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from test_amd_matrix import _documented_operand, _documented_out
from tilec.passes.analysis.layouts import Distribution
from tilec.passes.analysis.matrix_tiling import transpose_layout

# (warp, lane, g, u, pair, s, e) -> the instruction's B operand element e of that lane.
BSource = Callable[[int, int, int, int, int, int, int], int]


def simulate_transposed(tt: Any, warps: int, rows: int, cols: int, k: int, ld: int,
                        a_buf: np.ndarray, b_elem: BSource) -> np.ndarray:
    """The [rows, cols] result of a transposed product of depth k: each
    instruction's A source read from `a_buf` at `tt.a_offset` (rows `ld`
    apart), its B source from `b_elem`; the results land through the
    [cols, rows] tiling's chunk keys, swapped (C's element (key_b + u, key_a))."""
    ins, ws = tt.instr, tt.warp_size
    kpl, step_k = ins.operand_elems, ins.k * tt.kpack
    dc = Distribution.of(transpose_layout(tt.layout()), (rows, cols))
    out = np.full((rows, cols), 10 ** 9, np.int64)
    mt, ng = tt.tiles(cols, rows)
    for warp in range(warps):
        for t in range(mt):
            for g in range(ng):
                for u in range(tt.nv):
                    acc = np.zeros((ins.m, ins.n), np.int64)
                    for pair in range(k // step_k):
                        for s in range(tt.kpack):
                            ta = np.zeros((ins.m, ins.k), np.int64)
                            tb = np.zeros((ins.k, ins.n), np.int64)
                            for ln in range(ws):
                                oa = tt.a_offset(ln, warp, t, pair, ld) + s * kpl
                                for e in range(kpl):
                                    i, kk = _documented_operand(ins, ln, e)
                                    ta[i, kk] = a_buf[oa + e]
                                    tb[kk, i] = b_elem(warp, ln, g, u, pair, s, e)
                            acc += ta @ tb
                    for ln in range(ws):
                        coords = dc.thread_coords(warp * ws + ln, ws)
                        for r in range(tt.acc_regs):
                            i, j = _documented_out(ins, ln, r)
                            key_a, key_b = tt.chunk_key(t, g, r)
                            row, col = coords[(key_b + u, key_a)]
                            out[row, col] = acc[i, j]
    return out
