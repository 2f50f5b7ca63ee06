"""A matrix dot's A operand taken from registers: the chained dot of attention.

attention's P @ V takes as A operand P = f(S), an elementwise function of the
scores S = Q K^T, a dot result in the transposed layout (`choose_transposed`).
When P @ V is laid out transposed too (C^T = V^T P^T), the instruction's B
source is P^T, and each lane's B registers are elements of P that the S
layout already put in that lane, or in one other lane of its wavefront:

  * MFMA 32x32x8 (wave64, kpack 1): lane l of S holds row l % 32 and columns
    8 i + 4 (l // 32) + 0..3, exactly the 4 k values of each k-step's operand;
  * WMMA 16x16x16 (wave32): S's lane l holds columns 2 r + l // 16 of each
    16-wide block, the B operand wants all 16 (replicated in both half-waves):
    every other element comes from lane l ^ 16.

`register_plan` proves this by simulation over every thread (the same integer
formulas the lowering emits: `bt_coords`, the layout's `Distribution`) and
returns, per operand vector and element, where it lives: (chunk, element) of
the thread's own fragment, or of lane `lane ^ xor` (a `gpu.shuffle xor`),
possibly only in the lanes whose bit `bit` is `when` (the others hold it).
`chain_tiling` is the tiling a dot uses then: the transposed one, with
`kpack` 1 where the k order of kpack 2 does not match the registers.
tile-layout asks it to give the chained dot its transposed layout;
targets/amd/matrix_dot.py asks it again to lower the dot without staging P.

Nearest upstream analogue: Triton's `ttg.convert_layout` from a transposed
`#ttg.amd_mfma` to `#ttg.dot_op<{opIdx = 0, kWidth = 4}>` that
`cvtNeedsSharedMemory` lets through as a register-only (or in-warp) move.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from tilec.dialects.tile import Blocked
from tilec.passes.analysis.layouts import Distribution
from tilec.passes.analysis.matrix_tiling import MatrixTiling, choose_transposed
from tilec.targets import Target

I = Any      # an int (the simulations) or an index value builder (the lowering)


def bt_coords(tiling: MatrixTiling, lane: I, warp: I, g_n: int, u: int) -> tuple[I, I]:
    """(column n, first k) of the `kpack * kpl` contiguous B elements the lane
    reads from a K-major slot for N-group g_n, tile u of the group, k-group 0
    (the columns `b_offset` reads, one k run instead of kpl rows)."""
    n, kpl = tiling.instr.n, tiling.instr.operand_elems
    g = (lane // n) % tiling.kgroups
    col = ((warp % tiling.wn) * n + lane % n) * tiling.nv + g_n * n * tiling.nv * tiling.wn + u
    return col, g * (tiling.kpack * kpl)


@dataclass(frozen=True)
class Source:
    """Where a lane finds one element of its operand: element `elem` of chunk
    `chunk` of the fragment of lane `lane ^ xor` (0: its own), where
    `bit` < 0 or the lane's bit `bit` is `when`; in the other lanes (bit >= 0)
    its own fragment holds it."""
    chunk: int
    elem: int
    xor: int = 0
    bit: int = -1
    when: int = 1


# (N-group, tile of the group, k-group, step) -> the kpl elements' sources
Plan = dict[tuple[int, int, int, int], tuple[Source, ...]]


def _holders(d: Distribution, warp_size: int, threads: int
             ) -> tuple[list[dict[tuple[int, int], tuple[int, int]]], dict[tuple[int, int], set[int]]]:
    """Per thread: tile coordinate -> (chunk, element); and coordinate -> threads."""
    fast, ept = d.fast, d.ept[d.fast]
    mine: list[dict[tuple[int, int], tuple[int, int]]] = []
    where: dict[tuple[int, int], set[int]] = {}
    for tid in range(threads):
        table = {}
        for local, coord in d.thread_coords(tid, warp_size).items():
            key = tuple(v - v % ept if dim == fast else v for dim, v in enumerate(local))
            c = (coord[0], coord[1])
            table[c] = (d.chunk_index(key), local[fast] % ept)
            where.setdefault(c, set()).add(tid)
        mine.append(table)
    return mine, where


def _source(needs: list[tuple[int, int]], mine: list[dict[tuple[int, int], tuple[int, int]]],
            warp_size: int) -> Source | None:
    """One uniform `Source` for the coordinates `needs[tid]` of every thread."""
    threads = len(needs)
    own = [mine[t].get(needs[t]) for t in range(threads)]
    # The position in the fragment must be the same in every thread.
    options: list[tuple[int, int]] = []
    for x in range(warp_size):
        pos = mine[x].get(needs[0])
        if pos is not None and pos not in options:
            options.append(pos)
    for pos in options:
        xors = []
        for t in range(threads):
            if own[t] == pos:
                xors.append(0)
                continue
            base = t - t % warp_size
            found = [x for x in range(1, warp_size) if mine[base + (t % warp_size ^ x)]
                     .get(needs[t]) == pos]
            if not found:
                break
            xors.append(found[0])
        else:
            kinds = set(xors)
            if kinds == {0}:
                return Source(*pos)
            if len(kinds) == 1:
                return Source(*pos, xor=xors[0])
            if len(kinds) == 2 and 0 in kinds:
                x = max(kinds)
                for bit in range(warp_size.bit_length() - 1):
                    for when in (0, 1):
                        if all((xors[t] == x) == ((t % warp_size >> bit) & 1 == when)
                               for t in range(threads)):
                            return Source(*pos, xor=x, bit=bit, when=when)
    return None


@lru_cache(maxsize=64)
def register_plan(tiling: MatrixTiling, a_layout: Blocked, m: int, k: int,
                  num_warps: int) -> Plan | None:
    """The sources of every B operand register of the transposed product
    C^T = B^T A^T (`tiling` of [N, M], its B source A^T, A [m, k] laid out by
    `a_layout`) in each lane's own fragment of A or one other lane's, or
    None where some element has no such uniform source."""
    ins, ws = tiling.instr, tiling.warp_size
    kpl, step_k = ins.operand_elems, ins.k * tiling.kpack
    threads = ws * num_warps
    d = Distribution.of(a_layout, (m, k))
    if d.rank != 2 or d.sliced_dim is not None:
        return None
    mine, _ = _holders(d, ws, threads)
    groups = m // (ins.n * tiling.nv * tiling.wn)      # the product's N-groups
    plan: Plan = {}
    for g, u, pair, s in itertools.product(range(groups), range(tiling.nv),
                                           range(k // step_k), range(tiling.kpack)):
        srcs = []
        for e in range(kpl):
            needs = []
            for tid in range(threads):
                col, k0 = bt_coords(tiling, tid % ws, tid // ws, g, u)
                needs.append((col, k0 + pair * step_k + s * kpl + e))
            src = _source(needs, mine, ws)
            if src is None:
                return None
            srcs.append(src)
        plan[(g, u, pair, s)] = tuple(srcs)
    return plan


def chain_tiling(target: Target, kind: str, m: int, n: int, k: int, a: str, acc: str,
                 num_warps: int, a_layout: Blocked) -> tuple[MatrixTiling, Plan] | None:
    """The transposed tiling of the dot [m, k] x [k, n] whose A operand is laid
    out by `a_layout` and the plan taking that operand from registers
    (`register_plan`), or None.  kpack 1 is tried after the table's choice:
    its k order (4 consecutive k per lane and k-step) is the MFMA
    accumulator's own."""
    tt = choose_transposed(target, kind, m, n, k, a, acc, num_warps)
    if tt is None:
        return None
    for cand in dict.fromkeys((tt, replace(tt, kpack=1))):
        plan = register_plan(cand, a_layout, m, k, num_warps)
        if plan is not None:
            return cand, plan
    return None
