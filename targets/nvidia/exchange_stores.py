"""NVIDIA matrix stores for layout exchanges (`Feature.STMATRIX`, sm90/sm100):
the stores of a layout conversion through workgroup memory
(passes/gpu/shape.py `_through_memory`, the target hook below) as
`stmatrix.sync.aligned.m8n8.x4.shared.b16` where the source's layout allows.

| key | feature | lowering |
|---|---|---|
| `hook.exchange-store` | `STMATRIX` | 16-bit elements in an mma/wgmma accumulator layout: four 8 x 8 matrices per `stmatrix.x4` into the exchange buffer (padded or swizzled rows); other layouts: False (the generic stores) |

A matmul epilogue converts the accumulator (`acc.to(tl.float16)` after the
cast) from the layout of the matrix instruction to the store's coalesced one.
The source layout ([1, 2] per thread, [8, 4] lanes, order [1, 0]: both
`layouts.wgmma_accumulator_layout` and `mma_accumulator_layout`) gives a warp,
for each static offset (sr, sc) of a chunk, an 8 x 8 matrix in `stmatrix`'s
fragment order: lane 4 g + t holds row g, columns 2 t and 2 t + 1.  Four such
chunks go out as one `stmatrix.x4` (a 128 x 256 f16 tile of 8 warps: 16
instructions per thread instead of 64 32-bit `st.shared`), register q holding
matrix q, lane L giving the address of row L % 8 of matrix L // 8.

Addressing (`matrix_plan`, `lane_position`): a group is gc x gr matrices
(gc = min(4, chunks per row of the thread), gr = 4 / gc) at the static offset
(sr, sc) of its first; lane L = 8 q + i of the warp whose first element is at
(wr, wc) addresses the matrix row at R = wr + i + (q // gc) * cover_r,
C = wc + (q % gc) * cover_c, plus (sr, sc).  In a padded buffer (row pitch P
elements, passes/gpu/shape.py) the element index is R * P + C + (sr * P + sc):
one base per thread and a constant per group.  In a swizzled buffer (pitch
= the row, 16-byte chunk j of row r at j ^ (r % 8)) R % 8 = i (wr, cover_r and
sr are multiples of 8), and the XOR touches only bits below the swizzle span
S = 128 bytes, so with sc = lo + hi (lo = sc % S) the index is
R * P + ((C + lo) ^ (i * 16 / eb)) + (hi + sr * P): one base per distinct lo.
Bank groups: a matrix's 8 rows are 16 bytes each; padded rows are P * eb = 16
(mod 128) * odd bytes apart (the padding is 16 bytes on rows of a multiple of
32 bytes), swizzled rows put row i's chunk at (j ^ i): in both, 8 distinct
16-byte groups of the 128 banks, so each 8-lane phase is conflict-free.
The readers' loads (`_through_memory`) are unchanged: whole 16-byte vectors
where the new layout's elements run along the row.

Nearest upstream analogue: Triton's `ConvertLayoutOpToLLVM` shared-memory
path with `stmatrix` (`lowerLdStMatrix`, NVIDIA TargetInfo).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mlir import ir
from mlir.dialects import arith, llvm, nvvm

from tilec.passes.analysis import axis_info
from tilec.passes.analysis.layouts import Distribution
from tilec.passes.rules import RuleSet
from tilec.targets import Feature
from tilec.targets.nvidia.tma import fresh_tid
from tilec.targets.nvidia.wgmma import byte_address

if TYPE_CHECKING:
    from tilec.passes.gpu.context import FuncLowering, Rule

RULES: RuleSet[Rule] = RuleSet("nvidia-exchange-stores")

SWIZZLE_BYTES = 128     # a swizzled exchange permutes the 16-byte chunks of 128 bytes
CHUNK_BYTES = 16


@dataclass(frozen=True)
class MatrixPlan:
    """How a thread's fragment goes out as `stmatrix.x4` (module docstring).

    gc, gr: a group's matrices along the columns and the rows (gc * gr = 4).
    cover: the layout's cover (rows, columns): the static step between a
        thread's chunks.
    groups: per instruction, (sr, sc, chunks): the static offset of matrix 0
        and the fragment's chunk indices of matrices 0-3.
    """

    gc: int
    gr: int
    cover: tuple[int, int]
    groups: tuple[tuple[int, int, tuple[int, ...]], ...]


def matrix_plan(d: Distribution, elem_bytes: int) -> MatrixPlan | None:
    """The `stmatrix.x4` groups of a 2-D distribution of `elem_bytes`-byte
    elements whose warps hold 8 x 8 matrices in the fragment order, else None."""
    b = d.blocked
    if elem_bytes != 2 or d.rank != 2 or d.sliced_dim is not None or b.per_thread != (1, 2) \
            or b.lanes != (8, 4) or b.order != (1, 0) or d.needs_wrap(0) or d.needs_wrap(1):
        return None
    nr, nc = d.local[0], d.local[1] // 2
    gc = min(4, nc)
    gr = 4 // gc
    if nc % gc or nr % gr:
        return None
    index = {k: i for i, k in enumerate(d.chunk_keys)}
    groups = []
    for rb in range(0, nr, gr):
        for cb in range(0, nc, gc):
            chunks = tuple(index[(rb + q // gc, 2 * (cb + q % gc))] for q in range(4))
            groups.append((d.static_offset(0, rb), d.static_offset(1, 2 * cb), chunks))
    return MatrixPlan(gc, gr, (d.cover[0], d.cover[1]), tuple(groups))


def _warp_origin(d: Distribution, warp: int) -> tuple[int, int]:
    """(row, column) of the first element of warp `warp` (no lane offset)."""
    out = []
    for dim, (_ls, lanes, wshift, warps) in enumerate(d.lane_split()):
        out.append(((warp >> wshift) % warps) * lanes * d.blocked.per_thread[dim])
    return out[0], out[1]


def lane_position(plan: MatrixPlan, d: Distribution, tid: int, warp_size: int,
                  group: int) -> tuple[int, int]:
    """The (row, column) whose 8 elements lane `tid % warp_size` of warp
    `tid // warp_size` addresses in `plan.groups[group]` (the model of
    `_lane_origin` plus the group's offset)."""
    lane, warp = tid % warp_size, tid // warp_size
    wr, wc = _warp_origin(d, warp)
    q, i = lane // 8, lane % 8
    sr, sc, _chunks = plan.groups[group]
    return (wr + i + (q // plan.gc) * plan.cover[0] + sr,
            wc + (q % plan.gc) * plan.cover[1] + sc)


def group_address(plan: MatrixPlan, group: int, pitch: int, swizzled: bool,
                  elem_bytes: int) -> tuple[int, int]:
    """(lo, const) of a group: a lane's element index in the buffer is
    base(lo) + const, base(lo) = R * pitch + (C + lo), with the swizzle
    ((C + lo) ^ (i * 16 / eb)) where `swizzled` (module docstring)."""
    sr, sc, _chunks = plan.groups[group]
    lo = sc % (SWIZZLE_BYTES // elem_bytes) if swizzled else 0
    return lo, (sc - lo) + sr * pitch


def lane_index(plan: MatrixPlan, d: Distribution, tid: int, warp_size: int, group: int,
               pitch: int, swizzled: bool, elem_bytes: int) -> int:
    """The element index lane `tid` gives `stmatrix` for `group` (what the
    lowering computes: `group_address` on the lane's R, C)."""
    sr, sc, _chunks = plan.groups[group]
    r, c = lane_position(plan, d, tid, warp_size, group)
    big_r, big_c = r - sr, c - sc
    lo, const = group_address(plan, group, pitch, swizzled, elem_bytes)
    col = big_c + lo
    if swizzled:
        col ^= ((tid % warp_size) % 8) * (CHUNK_BYTES // elem_bytes)
    return big_r * pitch + col + const


def _c(v: int) -> ir.Value:
    return arith.ConstantOp(ir.IntegerType.get_signless(32), v).result


def _log2(n: int) -> int:
    return n.bit_length() - 1


def _lane_origin(L: FuncLowering, plan: MatrixPlan, d: Distribution,
                 tid: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(R, C, i) of the calling lane (`lane_position` without the group's offset)."""
    ws = L.target.warp_size
    lane = arith.AndIOp(tid, _c(ws - 1)).result
    warp = arith.ShRUIOp(tid, _c(_log2(ws))).result
    q = arith.ShRUIOp(lane, _c(3)).result
    i = arith.AndIOp(lane, _c(7)).result
    origin = []
    for dim, (_ls, lanes, wshift, warps) in enumerate(d.lane_split()):
        v = _c(0)
        if warps > 1:
            w = arith.AndIOp(arith.ShRUIOp(warp, _c(wshift)).result, _c(warps - 1)).result
            v = arith.ShLIOp(w, _c(_log2(lanes * d.blocked.per_thread[dim]))).result
        origin.append(v)
    big_r = arith.AddIOp(origin[0], i).result
    if plan.gr > 1:
        qr = arith.ShRUIOp(q, _c(_log2(plan.gc))).result
        big_r = arith.AddIOp(big_r, arith.MulIOp(qr, _c(plan.cover[0])).result).result
    qc = arith.AndIOp(q, _c(plan.gc - 1)).result
    big_c = arith.AddIOp(origin[1], arith.MulIOp(qc, _c(plan.cover[1])).result).result
    return big_r, big_c, i


@RULES.rule("hook.exchange-store", feature=Feature.STMATRIX)
def _exchange_store(L: FuncLowering, src: ir.Value, buf: ir.Value, pitch: int,
                    swizzled: bool) -> bool:
    """Every thread's fragment of `src` into the exchange buffer `buf` (rows of
    `pitch` elements, swizzled or padded) by `stmatrix.x4`; False (nothing
    emitted) where the layout does not hold 8 x 8 matrices."""
    eb = axis_info.type_bytes(ir.RankedTensorType(src.type).element_type)
    d = L.dist(src.type)
    plan = matrix_plan(d, eb)
    if plan is None:
        return False
    big_r, big_c, i = _lane_origin(L, plan, d, fresh_tid())
    row = arith.MulIOp(big_r, _c(pitch)).result
    swz = arith.ShLIOp(i, _c(_log2(CHUNK_BYTES // eb))).result
    frag = L.frag(src)
    shape = ir.Attribute.parse("#nvvm.ld_st_matrix_shape<m = 8, n = 8>")
    i32 = ir.IntegerType.get_signless(32)
    bases: dict[int, ir.Value] = {}
    for g, (_sr, _sc, chunks) in enumerate(plan.groups):
        lo, const = group_address(plan, g, pitch, swizzled, eb)
        if lo not in bases:
            col = arith.AddIOp(big_c, _c(lo)).result if lo else big_c
            if swizzled:
                col = arith.XOrIOp(col, swz).result
            idx = arith.AddIOp(row, col).result
            bases[lo] = byte_address(buf, arith.MulIOp(idx, _c(eb)).result)
        words = [llvm.BitcastOp(i32, frag[c]).result for c in chunks]
        nvvm.StMatrixOp(byte_address(bases[lo], _c(const * eb)), words, nvvm.MMALayout.row,
                        shape, nvvm.LdStMatrixEltType.B16)
    return True
