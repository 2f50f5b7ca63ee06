"""How a `tile.dot` is cut into AMD matrix instructions (MFMA, WMMA).

One `MatrixTiling` is the contract between `tile-accelerate-dot` (does the dot
fit?), `tile-layout` (the accumulator's layout, `layout()`) and the lowering in
targets/amd/mfma.py (which LDS elements each lane reads, `a_offset` /
`b_offset`).  It is a pure function of the target's instruction table, the dot's
shape and dtypes and `num_warps` (`choose`), so the three agree without passing
anything through the IR.

The instruction's documented register mappings (`MatrixInstr`, AMD CDNA3 ISA
"Matrix Arithmetic Instructions", RDNA3 ISA "WMMA"): lane l, accumulator
register r holds element (i, j) of the instruction's m x n tile with
j = l % n and i = lanes_m * run * (r // run) + run * (l // n) + r % run
(`out_coord`); A's register e of lane l is element (l % m, kpl * g + e), B's is
(kpl * g + e, l % n), g = (l // m) % (k // kpl) (`a_coord`, `b_coord`).

tilec's placement of the instruction tiles over the [M, N] result:
  * warps form a wm x wn grid (warp w: wm_i = w // wn, wn_i = w % wn);
  * rows: instruction row i of the warp's M-tile t is result row
    `m * wm * t + P * (wm * (i // P) + wm_i) + i % P`, P = run * lanes_m;
  * columns: `nv` instruction tiles side by side interleave column by column:
    instruction column j of tile u in N-group g is result column
    `(wn_i * n + j) * nv + u + g * n * nv * wn`;
so the accumulator is exactly the blocked layout
`Blocked((run, nv), (lanes_m, n), (wm, wn), order (1, 0))`, whose chunks are the
`nv` columns of one lane (one vector of nv elements), and B's reads are `nv`
contiguous elements.  Along K, `kpack` consecutive instructions are fed by one
read of `kpack * kpl` contiguous A elements per lane: instruction s of k-group
`pair` reads k = pair * kpack * k + g * kpack * kpl + s * kpl + e (a
permutation of each group's k range, applied to A and B alike).

Nearest upstream analogue: Triton's `#ttg.amd_mfma` / `#ttg.amd_wmma`
encodings and `AccelerateAMDMatmul`'s warp and instruction choice.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tilec.dialects.tile import Blocked
from tilec.targets import MatrixInstr, Target


# An index: an `int` in the simulations, in the lowering a value builder that
# emits arith ops (+, * by a constant, // and % by powers of two).
I = Any


@dataclass(frozen=True)
class MatrixTiling:
    instr: MatrixInstr
    warp_size: int
    wm: int
    wn: int
    nv: int
    kpack: int

    @property
    def lanes_m(self) -> int:
        return self.warp_size // self.instr.n

    @property
    def block_rows(self) -> int:
        """P: consecutive result rows one warp's lanes hold together."""
        return self.instr.acc_run * self.lanes_m

    @property
    def kgroups(self) -> int:
        return self.instr.k // self.instr.operand_elems

    @property
    def acc_regs(self) -> int:
        return self.instr.m * self.instr.n // self.warp_size

    def layout(self) -> Blocked:
        return Blocked((self.instr.acc_run, self.nv), (self.lanes_m, self.instr.n),
                       (self.wm, self.wn), (1, 0))

    def tiles(self, m_dim: int, n_dim: int) -> tuple[int, int]:
        """(M-tiles, N-groups) of one warp."""
        return m_dim // (self.instr.m * self.wm), n_dim // (self.instr.n * self.nv * self.wn)

    # -- the instruction's documented mappings
    def out_coord(self, lane: int, reg: int) -> tuple[int, int]:
        run = self.instr.acc_run
        n = self.instr.n
        return self.lanes_m * run * (reg // run) + run * (lane // n) + reg % run, lane % n

    def a_coord(self, lane: int, e: int) -> tuple[int, int]:
        kpl = self.instr.operand_elems
        return lane % self.instr.m, kpl * ((lane // self.instr.m) % self.kgroups) + e

    def b_coord(self, lane: int, e: int) -> tuple[int, int]:
        kpl = self.instr.operand_elems
        return kpl * ((lane // self.instr.n) % self.kgroups) + e, lane % self.instr.n

    # -- tilec's placement
    def chunk_key(self, t: int, g: int, reg: int) -> tuple[int, int]:
        """The accumulator chunk (its `Distribution` key) holding register `reg`
        of M-tile t, N-group g (element u of the chunk: tile u of the group)."""
        run = self.instr.acc_run
        a = run * (t * (self.instr.m // self.block_rows) + reg // run) + reg % run
        return a, self.nv * g

    def a_offset(self, lane: I, warp: I, t: int, pair: int, lda: int) -> I:
        """Index (row * lda + k) of the first of the `kpack * kpl` contiguous A
        elements the lane reads for M-tile t and k-group `pair`."""
        m, p, kpl = self.instr.m, self.block_rows, self.instr.operand_elems
        i = lane % m
        g = (lane // m) % self.kgroups
        row = ((i // p) * self.wm + warp // self.wn) * p + i % p + m * self.wm * t
        return row * lda + g * (self.kpack * kpl) + pair * self.kpack * self.instr.k

    def b_offset(self, lane: I, warp: I, g_n: int, pair: int, s: int, e: int, ldb: int) -> I:
        """Index (k * ldb + col) of the first of the `nv` contiguous B elements the
        lane reads as register e of instruction s of k-group `pair`, N-group g_n."""
        n, kpl = self.instr.n, self.instr.operand_elems
        g = (lane // n) % self.kgroups
        krow = g * (self.kpack * kpl) + pair * self.kpack * self.instr.k + s * kpl + e
        col = ((warp % self.wn) * n + lane % n) * self.nv + g_n * n * self.nv * self.wn
        return col + krow * ldb


FP8_NAMES = {"e4m3": "f8E4M3FN", "e5m2": "f8E5M2"}


def operand_name(op: Any, element: Any) -> str:
    """The operand dtype a matrix instruction is chosen for: `element`'s name,
    or the fp8 format a dot (or tile.mma) `op` keeps as raw bytes (`tile.mma_fp8`,
    gfx950's fp8 MFMA)."""
    if "tile.mma_fp8" in op.attributes:
        return FP8_NAMES[str(op.attributes["tile.mma_fp8"]).strip('"')]
    return str(element)


def choose(target: Target, kind: str, m: int, n: int, k: int, a: str, acc: str,
           num_warps: int) -> MatrixTiling | None:
    """The tiling of the first `kind` instruction of the target's table that the
    dot fits, or None."""
    return choose_from(target.matrix_instrs, target.warp_size, kind, m, n, k, a, acc, num_warps)


def choose_transposed(target: Target, kind: str, m: int, n: int, k: int, a: str, acc: str,
                      num_warps: int) -> MatrixTiling | None:
    """The tiling of the transposed product C^T = B^T A^T ([n, m]) for a dot
    whose result is reduced along its rows: as `choose` for [n, m], but the
    grid with the fewest warps along n first (a row of C then lies in one
    lane's registers and as few warps as the instruction allows).  C's layout
    is `transpose_layout` of the tiling's (Triton's transposed MFMA layout)."""
    return choose_from(target.matrix_instrs, target.warp_size, kind, n, m, k, a, acc,
                       num_warps, few_row_warps=True)


def transpose_layout(b: Blocked) -> Blocked:
    """The layout of the transpose of a 2-D tile laid out by `b`: a thread holds
    the transposed elements (its chunks the same vectors, keys swapped)."""
    return Blocked(b.per_thread[::-1], b.lanes[::-1], b.warps[::-1],
                   tuple(1 - d for d in b.order))


def choose_from(instrs: tuple[MatrixInstr, ...], warp_size: int, kind: str, m: int, n: int,
                k: int, a: str, acc: str, num_warps: int,
                few_row_warps: bool = False) -> MatrixTiling | None:
    """`choose` over an instruction table.  Warps: the grid (wm, wn) dividing
    the tiles that reads the fewest operand rows and columns per warp
    (M / wm + N / wn; `few_row_warps`: the smallest wm first), then the one with
    the most instruction tiles side by side along N (`nv` = 4, 2, 1: wider
    accumulator chunks and B reads);
    `kpack` 2 where a lane's operands of two k-steps fit one 16-byte read."""
    for ins in instrs:
        if ins.kind != kind or ins.a != a or ins.acc != acc or k % ins.k:
            continue
        best: tuple[tuple[int, int, int], int, int, int] | None = None
        wm = 1
        while wm <= num_warps:
            wn = num_warps // wm
            if m % (ins.m * wm) == 0 and n % (ins.n * wn) == 0:
                nv = next(v for v in (4, 2, 1) if n % (ins.n * wn * v) == 0)
                cost = (wm if few_row_warps else 0, m // wm + n // wn, -nv)
                if best is None or cost < best[0]:
                    best = (cost, wm, wn, nv)
            wm *= 2
        if best is None:
            continue
        _, wm, wn, nv = best
        eb = 1 if a in ("i8", "f8E4M3FN", "f8E5M2") else 2
        kpack = 2 if (k // ins.k) % 2 == 0 and 2 * ins.operand_elems * eb <= 16 else 1
        return MatrixTiling(ins, warp_size, wm, wn, nv, kpack)
    return None


def a_static(tiling: MatrixTiling, t: int, pair: int, lda: int) -> int:
    """The lane-independent part of `a_offset`: a_offset(l, w, t, p) =
    a_offset(l, w, 0, 0) + a_static(t, p) (the formula adds lane terms and
    tile terms; the tests check it for every lane)."""
    return tiling.a_offset(0, 0, t, pair, lda) - tiling.a_offset(0, 0, 0, 0, lda)


def b_static(tiling: MatrixTiling, g: int, pair: int, s: int, e: int, ldb: int) -> int:
    """The lane-independent part of `b_offset`, as `a_static`."""
    return tiling.b_offset(0, 0, g, pair, s, e, ldb) - tiling.b_offset(0, 0, 0, 0, 0, 0, ldb)
