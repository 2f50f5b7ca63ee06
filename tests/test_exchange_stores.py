"""The `stmatrix` stores of a layout exchange (targets/nvidia/exchange_stores.py),
checked exhaustively without a GPU: for every thread of the ownership model
(`Distribution.thread_coords`), the matrices its warp's `stmatrix.x4` write
(lane L addressing row L % 8 of matrix L // 8, whose row j is register q of
lanes 4 j .. 4 j + 3) put each element where the exchange's readers
(passes/gpu/shape.py `_through_memory`: padded rows r * P + c, or swizzled
r * C + (c ^ ((r % 8) << 3))) look for it, every position once, and every
8-lane phase writes 8 distinct 16-byte bank groups."""
from __future__ import annotations

import pytest

from tilec.passes.analysis.layouts import (
    Blocked, Distribution, mma_accumulator_layout, wgmma_accumulator_layout,
)
from tilec.targets import TARGETS, Feature
from tilec.targets.nvidia import exchange_stores
from tilec.targets.nvidia.exchange_stores import lane_index, lane_position, matrix_plan

WS = 32
# (layout kind, rows, cols, warps): wgmma accumulators (warps along rows) and
# mma.sync ones (warps along columns; groups of 2 x 2 matrices where a thread
# has two chunks per row).
CASES = [("wgmma", 64, 64, 4), ("wgmma", 64, 128, 4), ("wgmma", 128, 128, 4),
         ("wgmma", 128, 128, 8), ("wgmma", 128, 256, 8), ("wgmma", 256, 128, 8),
         ("wgmma", 64, 32, 4), ("mma", 64, 64, 4), ("mma", 128, 128, 8), ("mma", 32, 256, 4),
         ("mma", 64, 256, 8)]


def _source(kind: str, rows: int, cols: int, warps: int) -> Distribution:
    layout = (wgmma_accumulator_layout if kind == "wgmma" else mma_accumulator_layout)(
        rows, cols, 16, WS, warps)
    assert layout is not None
    return Distribution.of(layout, (rows, cols))


def _reader(rows: int, cols: int, warps: int) -> Distribution:
    """A coalesced store layout: 8 halves per thread along the row."""
    along = min(WS, cols // 8)
    return Distribution.of(Blocked((1, 8), (WS // along, along), (warps, 1), (1, 0)),
                           (rows, cols))


def _position(r: int, c: int, cols: int, pitch: int, swizzled: bool) -> int:
    """Where the exchange's readers look for element (r, c) (passes/gpu/shape.py)."""
    return r * cols + (c ^ ((r % 8) << 3)) if swizzled else r * pitch + c


def _check(d: Distribution, reader: Distribution, pitch: int, swizzled: bool) -> None:
    rows, cols = d.shape
    plan = matrix_plan(d, 2)
    assert plan is not None and len(plan.groups) * 4 == d.num_chunks
    coords = [d.thread_coords(tid, WS) for tid in range(d.blocked.warps[0] *
                                                        d.blocked.warps[1] * WS)]
    buf: dict[int, tuple[int, int]] = {}
    for tid in range(len(coords)):
        lane, w = tid % WS, tid // WS
        q = lane // 8
        for g, (_sr, _sc, chunks) in enumerate(plan.groups):
            at = lane_index(plan, d, tid, WS, g, pitch, swizzled, 2)
            assert at % 8 == 0, (tid, g)          # a 16-byte row of the matrix
            r0, c0 = lane_position(plan, d, tid, WS, g)
            key = d.chunk_keys[chunks[q]]
            for e in range(8):   # element e of the row: register q of lane 4 (L % 8) + e // 2
                owner = coords[WS * w + 4 * (lane % 8) + e // 2]
                rc = owner[(key[0], key[1] + e % 2)]
                assert rc == (r0, c0 + e), (tid, g, e)
                assert at + e not in buf, (tid, g, e)
                buf[at + e] = rc
        if lane % 8 == 7:        # the phase of lanes 8 q .. 8 q + 7: one matrix's rows
            for g in range(len(plan.groups)):
                groups = {(2 * lane_index(plan, d, t, WS, g, pitch, swizzled, 2) // 16) % 8
                          for t in range(tid - 7, tid + 1)}
                assert len(groups) == 8, (tid, g, groups)
    assert len(buf) == rows * cols
    for r in range(rows):
        for c in range(cols):
            assert buf[_position(r, c, cols, pitch, swizzled)] == (r, c), (r, c)
    for tid in range(len(coords)):       # every reader finds its elements
        for rc in reader.thread_coords(tid, WS).values():
            assert buf[_position(*rc, cols, pitch, swizzled)] == rc, (tid, rc)


@pytest.mark.parametrize("kind,rows,cols,warps", CASES)
@pytest.mark.parametrize("swizzled", [False, True])
def test_matrix_stores_land_where_the_readers_look(kind: str, rows: int, cols: int,
                                                   warps: int, swizzled: bool) -> None:
    if swizzled and cols * 2 < 128:
        pytest.skip("a swizzled exchange needs rows of 8 chunks")
    pitch = cols if swizzled else cols + 8
    _check(_source(kind, rows, cols, warps), _reader(rows, cols, warps), pitch, swizzled)


@pytest.mark.parametrize("chunk,span", [(32, 128), (16, 64), (8, 128)])
def test_a_wrong_swizzle_is_caught(monkeypatch: pytest.MonkeyPatch, chunk: int,
                                   span: int) -> None:
    """The check above fails for an address rule whose XOR is of the wrong
    chunk size, or whose split of the column offset crosses the swizzle."""
    monkeypatch.setattr(exchange_stores, "CHUNK_BYTES", chunk)
    monkeypatch.setattr(exchange_stores, "SWIZZLE_BYTES", span)
    with pytest.raises(AssertionError):
        _check(_source("wgmma", 128, 256, 8), _reader(128, 256, 8), 256, True)


def test_a_wrong_padding_is_caught() -> None:
    """Rows of 256 + 16 halves put two rows of a matrix in one bank group."""
    with pytest.raises(AssertionError):
        _check(_source("wgmma", 128, 256, 8), _reader(128, 256, 8), 256 + 64, False)


def test_other_layouts_keep_the_generic_stores() -> None:
    """f32 elements (stmatrix is b16), the store layout, a layout that wraps
    around the tile: no plan."""
    d = _source("wgmma", 128, 256, 8)
    assert matrix_plan(d, 4) is None
    assert matrix_plan(_reader(128, 256, 8), 2) is None
    layout = wgmma_accumulator_layout(64, 64, 16, WS, 4)
    assert layout is not None
    assert matrix_plan(Distribution.of(layout, (16, 64)), 2) is None


def test_the_records_with_stmatrix() -> None:
    assert [n for n, t in TARGETS.items() if t.has(Feature.STMATRIX)] == ["sm90", "sm100"]
