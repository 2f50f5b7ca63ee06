"""The facts the cp.async lowering (targets/nvidia/async_copy.py) reuses values by:

* `Distribution.run_key`: two local elements with one key hold equal values in
  every thread, for a tile whose values come in aligned runs of `constancy[k]`
  along k (checked with the pure-Python ownership model over every thread, for
  the B and A operand layouts of the tutorial matmul and wrapped / sliced
  ones); and it does share where the runs allow (the B operand's 8 row chunks
  of a 16-row K run give 4 predicates, as Triton's code has);
* `SwizzledTile.delta` / `PaddedTile.delta`: where they give a number, it is the
  byte distance between the two elements' offsets at every position.
"""
from __future__ import annotations

import itertools

import pytest

from tilec.dialects.tile import Blocked
from tilec.passes.analysis.layouts import Distribution, PaddedTile, SwizzledTile

LAYOUTS = [
    # (layout, shape): B of 128x256x64 with 8 warps, A of it, 4-warp variants, a wrap
    (Blocked((1, 8), (1, 32), (8, 1), (1, 0)), (64, 256)),
    (Blocked((1, 8), (8, 4), (8, 1), (1, 0)), (128, 64)),
    (Blocked((1, 8), (2, 16), (4, 1), (1, 0)), (64, 128)),
    (Blocked((2, 4), (4, 8), (2, 2), (1, 0)), (32, 64)),
    (Blocked((1, 8), (8, 4), (8, 1), (1, 0)), (16, 32)),      # cover 64 rows > 16: wraps
]


def _value(coord: tuple[int, ...], constancy: tuple[int, ...]) -> tuple[int, ...]:
    """A tile whose values are equal exactly within aligned runs of `constancy`."""
    return tuple(c // k for c, k in zip(coord, constancy))


@pytest.mark.parametrize("layout,shape", LAYOUTS)
@pytest.mark.parametrize("constancy", [(1, 1), (16, 1), (8, 256), (64, 1), (16, 8), (32, 4096)])
def test_run_key_is_sound(layout: Blocked, shape: tuple[int, int],
                          constancy: tuple[int, int]) -> None:
    d = Distribution.of(layout, shape)
    threads = 32 * layout.warps[0] * layout.warps[1]
    for tid in range(threads):
        coords = d.thread_coords(tid, 32)
        seen: dict[tuple[int, ...], tuple[int, ...]] = {}
        for local, coord in coords.items():
            v = _value(coord, constancy)
            key = d.run_key(constancy, local)
            assert seen.setdefault(key, v) == v, (tid, local, key)


def test_run_key_shares_the_b_operands_k_runs() -> None:
    layout, shape = LAYOUTS[0]
    d = Distribution.of(layout, shape)
    keys = {d.run_key((16, 256), local) for local in itertools.product(range(8), range(8))}
    assert len(keys) == 4          # rows r, r+8 | r+16, r+24 | ...: one predicate each
    assert len({d.run_key((1, 256), local) for local in
                itertools.product(range(8), range(8))}) == 8


def test_run_key_sliced_shares_nothing_without_its_runs() -> None:
    from tilec.dialects.tile import Slice
    d = Distribution.of(Slice(1, Blocked((1, 8), (8, 4), (8, 1), (1, 0))), (64,))
    locals_ = [(r, 0) for r in range(d.local[0])]
    # constancy of another rank than the sliced tile's: nothing is shared
    assert len({d.run_key((64, 64), loc) for loc in locals_}) == len(locals_)


# A wgmma accumulator-like parent (2 columns per thread, 4 lanes across, 8 down)
# and the tutorial's A operand layout; the 1-D tiles sliced from them.
SLICED = [(Blocked((1, 2), (8, 4), (4, 1), (1, 0)), 0, 64),
          (Blocked((1, 2), (8, 4), (4, 1), (1, 0)), 0, 128),
          (Blocked((1, 2), (8, 4), (4, 1), (1, 0)), 1, 64),
          (Blocked((1, 8), (8, 4), (8, 1), (1, 0)), 1, 128),
          (Blocked((1, 8), (8, 4), (8, 1), (1, 0)), 0, 16)]   # 32 columns cover 16: wraps


@pytest.mark.parametrize("parent,dim,size", SLICED)
@pytest.mark.parametrize("run", [1, 2, 4, 8, 16, 64, 4096])
def test_run_key_sliced_is_sound(parent: Blocked, dim: int, size: int, run: int) -> None:
    """A 1-D tile (`offs < n`: runs of `run` equal values) in a slice layout:
    two local elements with one key hold equal values in every thread."""
    from tilec.dialects.tile import Slice
    d = Distribution.of(Slice(dim, parent), (size,))
    kept = 1 - dim
    threads = 32 * parent.warps[0] * parent.warps[1]
    for tid in range(threads):
        seen: dict[tuple[int, ...], int] = {}
        for local, coord in d.thread_coords(tid, 32).items():
            v = coord[kept] // run
            key = d.run_key((run,), local)
            assert seen.setdefault(key, v) == v, (tid, local, key)


def test_run_key_sliced_shares_the_mask_runs() -> None:
    """The column mask of a wgmma accumulator row (16 columns of a 64-column
    tile per thread, n a multiple of 16): one comparison per 16 columns."""
    from tilec.dialects.tile import Slice
    d = Distribution.of(Slice(0, Blocked((1, 2), (8, 4), (4, 1), (1, 0))), (64,))
    locals_ = [(0, c) for c in range(d.local[1])]
    assert len(locals_) == 16
    assert len({d.run_key((16,), loc) for loc in locals_}) == 4
    assert len({d.run_key((1,), loc) for loc in locals_}) == 16


@pytest.mark.parametrize("tile", [SwizzledTile(64, 256, 2), SwizzledTile(128, 64, 2),
                                  SwizzledTile(64, 128, 1), PaddedTile(32, 64, 2),
                                  SwizzledTile(128, 64, 2, permute_rows=True, num_warps=8)])
def test_delta_is_the_offset_difference(tile: SwizzledTile | PaddedTile) -> None:
    step = 8 // tile.elem_bytes if isinstance(tile, SwizzledTile) else 1
    rows = range(0, tile.rows, 3)
    cols = range(0, tile.cols, step)
    for drow in (0, 1, 8, 16, 24, tile.rows // 2):
        for dcol in (0, step, 64 // tile.elem_bytes, 128 // tile.elem_bytes):
            delta = tile.delta(drow, dcol)
            if delta is None:
                continue
            for r, c in itertools.product(rows, cols):
                if r + drow < tile.rows and c + dcol < tile.cols:
                    assert tile.offset(r + drow, c + dcol) - tile.offset(r, c) == delta
    if isinstance(tile, SwizzledTile) and not tile.permute_rows:
        assert tile.delta(8, 0) == 1024 and tile.delta(1, 0) is None
