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

from tilec.dialects.tile import Blocked, Layout, Slice


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
