"""Layout math shared by `tile-layout` and `convert-tile-to-gpu`.

A `Distribution` answers, for one tile shape and one `#tile.blocked`/`#tile.slice`
layout, which elements a thread owns and how they are grouped into per-thread
vectors.  Slices are handled by working on the *expanded* shape (the sliced
dimension reinserted with size 1): the elements a thread owns in
`tensor<64xi32, #tile.slice<1, P>>` are exactly those it owns in
`tensor<64x1xi32, P>`, so `tile.expand_dims` moves no data.

Along dimension d a thread owns `ept[d] = min(per_thread[d], shape[d])`
contiguous elements, repeated `reps[d]` times at a stride of the layout's
coverage `per_thread[d] * lanes[d] * warps[d]`.  Its first element is
`base[d] = ((warp[d] * lanes[d] + lane[d]) * per_thread[d]) mod shape[d]`, where
the lane and warp ids are split over dimensions in `order` (fastest first);
the `mod` is what makes tiles smaller than the coverage wrap (replicate).

A thread's fragment is a list of 1-D vectors ("chunks"), each holding `ept` elements
that are contiguous along the layout's fastest dimension `order[0]`.  Chunks are
listed in row-major order of their keys; a key gives, per dimension, the local
index (0 <= l < ept*reps) of the chunk's first element.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cached_property
from typing import Sequence

from mlir import ir

from tilec.dialects.tile import Blocked, Layout, Slice, layout_of


def log2(v: int) -> int:
    if v <= 0 or v & (v - 1):
        raise ValueError(f"{v} is not a power of two")
    return v.bit_length() - 1


def make_blocked(shape: tuple[int, ...], order: tuple[int, ...], vec: int,
                 warp_size: int, num_warps: int) -> Blocked:
    """A blocked layout giving each thread `vec` contiguous elements along
    `order[0]`, spreading lanes then warps over the dimensions in `order`.
    Lanes or warps left over once the tile is covered wrap (replicate) along
    `order[0]`."""
    rank = len(shape)
    per_thread = [1] * rank
    per_thread[order[0]] = max(1, min(vec, shape[order[0]]))
    lanes, warps = [1] * rank, [1] * rank
    left = warp_size
    for d in order:
        lanes[d] = min(left, max(1, shape[d] // per_thread[d]))
        left //= lanes[d]
    lanes[order[0]] *= left
    left = num_warps
    for d in order:
        warps[d] = min(left, max(1, shape[d] // (per_thread[d] * lanes[d])))
        left //= warps[d]
    warps[order[0]] *= left
    return Blocked(tuple(per_thread), tuple(lanes), tuple(warps), tuple(order))


def mma_accumulator_layout(m: int, n: int, k: int, warp_size: int,
                           num_warps: int) -> Blocked | None:
    """The blocked layout that *is* the accumulator fragment of NVIDIA's
    `mma.sync.m16n8k16` for an [m, n] result with the warps side by side along n:
    a thread (lane = 4 * g + t) of warp w holds rows g + 8 r and columns
    8 w + 2 t + {0, 1} + 8 * num_warps * j, which for every 16 x 8 tile the warp
    covers are exactly its c0..c3 registers.  None when the shape does not fit
    (m, k multiples of 16; n a multiple of 8 * num_warps; 32-lane warps)."""
    if warp_size != 32 or m % 16 or k % 16 or n % (8 * num_warps):
        return None
    return Blocked((1, 2), (8, 4), (1, num_warps), (1, 0))


def wgmma_accumulator_layout(m: int, n: int, k: int, warp_size: int,
                             num_warps: int) -> Blocked | None:
    """The blocked layout tilec gives the accumulator of NVIDIA's warpgroup MMA
    (`wgmma.mma_async.m64nNk16`): warps stacked along m, a thread (lane
    4 * g + t) of warp w holding rows 8 w + g + 8 * num_warps * r and columns
    2 t + {0, 1} + 8 j.  wgmma itself gives warp w % 4 of warpgroup w // 4 the
    rows 16 (w % 4) + g + {0, 8} of each 64-row block; the operand staging
    (`SwizzledTile` with `permute_rows`) permutes A's 8-row blocks in shared
    memory so that the instruction's rows land where this layout says.  None
    when the shape does not fit (32-lane warps, whole warpgroups, m a multiple
    of 16 * num_warps, n of 8, k of 16)."""
    if warp_size != 32 or num_warps % 4 or m % (16 * num_warps) or n % 8 or k % 16:
        return None
    return Blocked((1, 2), (8, 4), (num_warps, 1), (1, 0))


def wgmma_register_a(a: ir.Type, result: ir.Type) -> bool:
    """Whether a wgmma dot takes its A tile from registers: 16-bit elements,
    and A [m, k] laid out as the accumulator (so a product computed from
    another dot's result, attention's P @ V, needs no trip through shared
    memory: the PTX ISA's A register fragment of m64k16 is the accumulator
    fragment of a 16-column slice)."""
    from tilec.passes.analysis import axis_info
    if not isinstance(a, ir.RankedTensorType) or a.shape[1] % 16:
        return False
    if axis_info.type_bytes(a.element_type) != 2 or isinstance(a.element_type, ir.IntegerType):
        return False
    la, lr = layout_of(a), layout_of(result)
    return la is not None and la == lr


def tcgen05_accumulator_layout(m: int, n: int, k: int, warp_size: int,
                               num_warps: int) -> Blocked | None:
    """The blocked layout that *is* what `tcgen05.ld.32x32b` gives each thread
    of an [m = 128, n] f32 accumulator in tensor memory (`tcgen05.mma`
    cta_group::1, M = 128: row i of D is TMEM lane i).  Warp w may read only
    lanes 32 (w % 4) .. 32 (w % 4) + 31, so thread t of warp w holds row
    32 (w % 4) + t.  4 warps: every column, in chunks of 8 (order (1, 0), so
    stores go out without a conversion); 8 warps: warps w and w + 4 share the
    rows and split the columns in halves [n/2 (w // 4), n/2 (w // 4 + 1)),
    which needs the warp id split row-fastest (order (0, 1)).  None when the
    shape does not fit (32-lane warps, 4 or 8 warps, m = 128, n a multiple
    of 16 up to 256, k of 16)."""
    if warp_size != 32 or num_warps not in (4, 8) or m != 128 or n % 16 or not 16 <= n <= 256 \
            or k % 16:
        return None
    if num_warps == 4:
        return Blocked((1, 8), (32, 1), (4, 1), (1, 0))
    return Blocked((1, n // 2), (32, 1), (4, 2), (0, 1))


@dataclass(frozen=True)
class SwizzledTile:
    """A [rows, cols] tile of `elem_bytes`-byte elements in shared memory in the
    layout NVIDIA's wgmma reads through a matrix descriptor with the 128-byte
    swizzle: `cols` is the contiguous dimension (K of A, N of B), cut into
    column atoms of 128 bytes; atom c holds every row's 128 bytes of it, rows
    128 bytes apart, and the 16-byte chunk j of row r lies at chunk j ^ (r % 8)
    (PTX's Swizzle<3,4,3>, so the base must be 1024-byte aligned).  With
    `permute_rows` (operand A of a wgmma whose accumulator has
    `wgmma_accumulator_layout`), logical row l is stored at row `row_position(l)`.
    """

    rows: int
    cols: int
    elem_bytes: int
    permute_rows: bool = False
    num_warps: int = 4

    @property
    def atom_cols(self) -> int:
        return 128 // self.elem_bytes

    @property
    def atom_bytes(self) -> int:
        """Bytes between column atoms."""
        return self.rows * 128

    @property
    def nbytes(self) -> int:
        return self.rows * self.cols * self.elem_bytes

    def delta(self, drow: int, dcol: int) -> int | None:
        """The constant byte distance from element (r, c) to (r + drow, c + dcol)
        for every (r, c), or None where it depends on (r, c): rows a multiple of
        the swizzle's 8-row period apart and columns whole atoms apart, rows not
        permuted."""
        if self.permute_rows or drow % 8 or dcol % self.atom_cols:
            return None
        return drow * 128 + dcol // self.atom_cols * self.atom_bytes

    def row_position(self, row: int) -> int:
        if not self.permute_rows:
            return row
        nw = self.num_warps
        groups = nw // 4
        g, block = row % 8, row // 8
        w, rep = block % nw, block // nw
        wg, wq = divmod(w, 4)
        i, r = divmod(rep, 2)
        return wg * (self.rows // groups) + 64 * i + 16 * wq + 8 * r + g

    def offset(self, row: int, col: int) -> int:
        """Byte offset of element (row, col)."""
        p = self.row_position(row)
        atom, c = divmod(col, self.atom_cols)
        return atom * self.atom_bytes + p * 128 + ((c * self.elem_bytes) ^ ((p % 8) << 4))


@dataclass(frozen=True)
class PaddedTile:
    """A [rows, cols] tile of `elem_bytes`-byte elements in shared memory stored
    row-major, each row followed by `pad` unused bytes (16: the 8 rows one
    `ldmatrix` phase reads then start in different 16-byte bank groups whenever
    a row is a multiple of 16 bytes).  The ring layout of the mma.sync pipeline;
    the same `offset`/`nbytes` interface as `SwizzledTile`."""

    rows: int
    cols: int
    elem_bytes: int
    pad: int = 16

    @property
    def row_bytes(self) -> int:
        """Bytes between the starts of consecutive rows."""
        return self.cols * self.elem_bytes + self.pad

    @property
    def nbytes(self) -> int:
        return self.rows * self.row_bytes

    def offset(self, row: int, col: int) -> int:
        """Byte offset of element (row, col)."""
        return row * self.row_bytes + col * self.elem_bytes

    def delta(self, drow: int, dcol: int) -> int | None:
        """The byte distance from element (r, c) to (r + drow, c + dcol) (the
        layout is linear: the same for every (r, c))."""
        return drow * self.row_bytes + dcol * self.elem_bytes


@dataclass(frozen=True)
class Distribution:
    """One tile shape distributed by one layout (see the module docstring)."""

    blocked: Blocked
    shape: tuple[int, ...]          # expanded to the rank of `blocked`
    sliced_dim: int | None = None   # the dim a slice layout removed

    @staticmethod
    def of(layout: Layout, shape: tuple[int, ...]) -> "Distribution":
        if isinstance(layout, Slice):
            full = list(shape)
            full.insert(layout.dim, 1)
            return Distribution(layout.parent, tuple(full), layout.dim)
        if layout.rank != len(shape):
            raise ValueError(f"layout of rank {layout.rank} on a tile of shape {shape}")
        return Distribution(layout, tuple(shape))

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def fast(self) -> int:
        return self.blocked.order[0]

    @cached_property
    def ept(self) -> tuple[int, ...]:
        return tuple(min(p, s) for p, s in zip(self.blocked.per_thread, self.shape))

    @cached_property
    def cover(self) -> tuple[int, ...]:
        b = self.blocked
        return tuple(p * l * w for p, l, w in zip(b.per_thread, b.lanes, b.warps))

    @cached_property
    def reps(self) -> tuple[int, ...]:
        return tuple(max(1, s // c) for s, c in zip(self.shape, self.cover))

    @cached_property
    def local(self) -> tuple[int, ...]:
        """Elements per thread along each dimension."""
        return tuple(e * r for e, r in zip(self.ept, self.reps))

    @property
    def vec_len(self) -> int:
        return self.ept[self.fast]

    @cached_property
    def chunk_keys(self) -> tuple[tuple[int, ...], ...]:
        ranges = [range(0, self.local[d], self.ept[d]) if d == self.fast else range(self.local[d])
                  for d in range(self.rank)]
        return tuple(itertools.product(*ranges))

    @cached_property
    def _key_index(self) -> dict[tuple[int, ...], int]:
        return {k: i for i, k in enumerate(self.chunk_keys)}

    def chunk_index(self, key: tuple[int, ...]) -> int:
        return self._key_index[key]

    @property
    def num_chunks(self) -> int:
        return len(self.chunk_keys)

    def static_offset(self, d: int, local: int) -> int:
        """Coordinate of local element `local` along d, minus the thread's base."""
        rep, i = divmod(local, self.ept[d])
        return rep * self.cover[d] + i

    def run_key(self, constancy: Sequence[int], local: Sequence[int]) -> tuple[int, ...]:
        """For the local element `local` of a tile whose values come in runs of
        `constancy[k]` equal values along k (aligned at multiples of it, as the
        axis analysis states): a key that two local elements share only where
        their values are equal in every thread.  Along k a thread's coordinate
        is its base b (a multiple of `per_thread[k]`, below `cover[k]`, reduced
        modulo the tile where it wraps) plus the static offset rep * cover + j
        (j < per_thread).  With a power-of-two run length c and power-of-two
        sizes, floor((b + s) / c) = floor(b / c) + floor(s / c) (the low bits
        of b and s do not overlap below c), so `s // c` is the key; a run as long
        as the tile covers all of it; other run lengths share nothing.  A slice
        distribution takes the runs of the tile it distributes (one rank less:
        the sliced dimension, of size 1, is one run)."""
        if self.sliced_dim is not None:
            if len(constancy) != self.rank - 1:
                return tuple(local)
            constancy = (*constancy[:self.sliced_dim], 1, *constancy[self.sliced_dim:])
        out = []
        for k in range(self.rank):
            c = constancy[k]
            if c >= self.shape[k]:
                out.append(0)
            elif c > 1 and c & (c - 1) == 0:
                out.append(self.static_offset(k, local[k]) // c)
            else:
                out.append(local[k])
        return tuple(out)

    def needs_wrap(self, d: int) -> bool:
        """True when a thread's base must be reduced modulo the tile size."""
        return self.cover[d] > self.shape[d]

    def lane_split(self) -> list[tuple[int, int, int, int]]:
        """Per dim: (lane shift, lanes, warp shift, warps) of the id decomposition."""
        b = self.blocked
        out = [(0, 1, 0, 1)] * self.rank
        lshift = wshift = 0
        for d in b.order:
            out[d] = (lshift, b.lanes[d], wshift, b.warps[d])
            lshift += log2(b.lanes[d])
            wshift += log2(b.warps[d])
        return out

    def thread_coords(self, tid: int, warp_size: int) -> dict[tuple[int, ...], tuple[int, ...]]:
        """Pure-Python model of the ownership `convert-tile-to-gpu` emits: for the
        thread `tid`, local element coordinates -> coordinates in the tile
        (expanded shape).  Used to check index math without a GPU."""
        lane, warp = tid % warp_size, tid // warp_size
        bases = []
        for d, (lshift, lanes, wshift, warps) in enumerate(self.lane_split()):
            idx = ((warp >> wshift) % warps) * lanes + (lane >> lshift) % lanes
            bases.append((idx * self.blocked.per_thread[d]) % self.shape[d])
        out = {}
        for local in itertools.product(*(range(n) for n in self.local)):
            out[local] = tuple(b + self.static_offset(d, l) for d, (b, l) in enumerate(zip(bases, local)))
        return out


@dataclass(frozen=True)
class AxisSpan:
    """How the threads of a distribution spread over one dimension.

    The thread position along the dimension is `(warp_d << log2(lanes_d)) | lane_d`
    reduced modulo the number of distinct positions, so only its low bits tell
    threads apart: `lane_bits` bits of the lane id starting at `lane_shift`,
    then `warp_bits` bits of the warp id starting at `warp_shift`.  The other
    lane/warp bits of that dimension select replicas (same elements)."""

    lane_shift: int
    lane_bits: int
    warp_shift: int
    warp_bits: int

    @property
    def lane_positions(self) -> int:
        return 1 << self.lane_bits

    @property
    def warp_positions(self) -> int:
        return 1 << self.warp_bits

    def xor_offsets(self) -> list[int]:
        """Butterfly lane offsets, largest first (16, 8, 4, 2, 1 for a full warp of 32)."""
        return [1 << (self.lane_shift + k) for k in reversed(range(self.lane_bits))]


def axis_span(d: Distribution, axis: int) -> AxisSpan:
    lshift, lanes, wshift, _ = d.lane_split()[axis]
    positions = max(1, d.shape[axis] // d.ept[axis] // d.reps[axis])
    bits = log2(positions)
    lane_bits = min(log2(lanes), bits)
    return AxisSpan(lshift, lane_bits, wshift, bits - lane_bits)


def replica_masks(d: Distribution) -> tuple[int, int]:
    """(lane-id mask, warp-id mask) of the bits that only select replicas: a
    thread whose id has these bits clear holds the canonical copy of its
    elements."""
    lane_mask = warp_mask = 0
    for dim, (lshift, lanes, wshift, warps) in enumerate(d.lane_split()):
        s = axis_span(d, dim)
        for b in range(s.lane_bits, log2(lanes)):
            lane_mask |= 1 << (lshift + b)
        for b in range(s.warp_bits, log2(warps)):
            warp_mask |= 1 << (wshift + b)
    return lane_mask, warp_mask
