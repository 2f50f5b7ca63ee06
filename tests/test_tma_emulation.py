"""tile-tma-pointers against TMA's semantics on the CPU (tests/tma_emulation.py):
each kernel runs plain and with the pass's tagged accesses rewritten into
the map blocks their recipes describe, on the same random data (fp16, bf16,
fp32), and the two must agree bitwise on every byte of every buffer (the
outputs' untouched regions prefilled with NaN).  Shapes are ragged (M, N, K
not multiples of the blocks, K = 0, K < BLOCK_K), operands are strided and
sliced NumPy or torch views, batched B may have batch stride 0, and 2-D
grids have programs beyond the tile grid; K-major cases also compare the
pass's untagged IR (its own block load and transposition).  Each case also
asserts how many accesses the pass tagged (the FileCheck tests in
tests/lit/tile-tma-pointers/ say which), so that no case passes vacuously;
`matmul_persistent`'s accesses are descriptor blocks that
tile-tma-descriptors takes on sm90, and their lowered CPU form (with
`idx >= 0` conjuncts) is no pointer map: none is tagged.  Blocks are small
(32 x 64 x 64 for 16-bit types: a map's rows are whole 128-byte lines) to
keep the CPU builds cheap."""
from __future__ import annotations

import json
import pathlib
import sys
from typing import Any, Callable

import numpy as np
import pytest
import torch
from mlir import ir
from mlir.dialects import arith

import tilec
import tma_emulation as te
from tilec.passes import tile_tma_descriptors

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from matmul_kernels import mm_tutorial  # noqa: E402


# The FileCheck tests' kernels; the examples by path (examples/ on sys.path
# would shadow other modules of the same names).
KERNELS = te.load_module("tests/lit/tile-tma-pointers/kernels.py",
                         "tma_pointer_kernels_emulated")
matmul = te.load_module("examples/matmul.py", "example_matmul_emulated").matmul
matmul_persistent = te.load_module("examples/matmul_persistent.py",
                                   "example_matmul_persistent_emulated").matmul_persistent
BLOCKS = {"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 64}
Array = Any   # a NumPy array or a torch tensor


def _matrix(g: np.random.Generator, rows: int, cols: int, dtype: str, lib: str = "numpy",
            at: tuple[int, int] = (0, 0), pad: tuple[int, int] = (3, 16)) -> Array:
    """A [rows, cols] view at `at` in a NaN-filled buffer `pad` larger (and
    `at` more), holding random values."""
    shape = (at[0] + rows + pad[0], at[1] + cols + pad[1])
    return _place(g, shape, (slice(at[0], at[0] + rows), slice(at[1], at[1] + cols)), dtype, lib)


def _place(g: np.random.Generator, shape: tuple[int, ...], where: tuple[slice, ...], dtype: str,
           lib: str) -> Array:
    """The view `where` of a NaN-filled `shape` buffer (its rows widened to a
    multiple of 16 elements: row strides a map can step), random inside."""
    shape = (*shape[:-1], -(-shape[-1] // 16) * 16)
    if lib == "numpy":
        buf = np.full(shape, np.nan, np.dtype(dtype))
        view = buf[where]
        view[...] = g.standard_normal(view.shape)
        return view
    t = torch.full(shape, float("nan"), dtype=getattr(torch, dtype))
    v = t[where]
    v.copy_(torch.from_numpy(g.standard_normal(tuple(v.shape))))
    return v


def _strides(x: Array) -> list[int]:
    if isinstance(x, np.ndarray):
        return [s // x.itemsize for s in x.strides]
    return list(x.stride())


def _empty(shape: tuple[int, ...], dtype: str, lib: str) -> Array:
    shape = (*shape[:-1], -(-shape[-1] // 16) * 16)
    if lib == "numpy":
        return np.full(shape, np.nan, np.dtype(dtype))
    return torch.full(shape, float("nan"), dtype=getattr(torch, dtype))


def _check(kernel: Any, grid: tuple[int, ...], make: Callable[[], te.Args], tagged: int,
           rewrite: te.Rewrite = te.emulate, transposed: bool = False) -> te.Pair:
    """The differential launch, `tagged` accesses tagged; `transposed`: one
    is a K-major load, whose untagged form (the pass's own block load and
    transposition) is compared too."""
    pair = te.differential(kernel, grid, make, rewrite)
    assert pair.tagged == tagged, (pair.signature, json.dumps(pair.recipes))
    assert pair.changed > 0, "the launch wrote nothing"
    if rewrite is te.emulate:
        assert ("untagged pass IR" in pair.variants) == transposed, pair.variants
    return pair


# ---------------------------------------------------------------- 2-D matmuls
def _mm(m: int, n: int, k: int, cx: dict[str, Any], dtype: str = "float16", lib: str = "numpy",
        kmajor: bool = False, a_at: tuple[int, int] = (0, 0), c_dtype: str = "float16",
        seed: int = 0) -> Callable[[], te.Args]:
    """The arguments of a tutorial-style (a, b, c, M, N, K, 6 strides) launch:
    A [M, K] (a view at `a_at`), B [K, N] (or K-major: a transposed [N, K]
    view), C [M, N] inside a larger NaN buffer (rows and columns beyond)."""
    def make() -> te.Args:
        g = np.random.default_rng(seed)
        a = _matrix(g, m, k, dtype, lib, at=a_at)
        b = _matrix(g, n, k, dtype, lib).T if kmajor else _matrix(g, k, n, dtype, lib)
        c = _matrix(g, m, n, c_dtype, lib, pad=(100, 80))   # STORE_ROWS=0 writes rows >= M
        if lib == "numpy":
            c[...] = np.nan
        else:
            c.fill_(float("nan"))
        return [a, b, c, m, n, k, *_strides(a), *_strides(b), *_strides(c)], dict(cx)
    return make


def _grid2(m: int, n: int, extra: int = 1) -> tuple[int, int]:
    """The tile grid and `extra` programs beyond it in each dimension."""
    return tilec.cdiv(m, BLOCKS["BLOCK_M"]) + extra, tilec.cdiv(n, BLOCKS["BLOCK_N"]) + extra


# Ragged shapes of one specialization (M, N, K none a multiple of 16): K <
# BLOCK_K, K just past it, M and N past a block by one.
RAGGED = [(45, 70, 77), (70, 45, 21), (33, 129, 130)]


@pytest.mark.parametrize("form", [0, 1, 2, 3])
def test_tutorial_mask_forms(form: int) -> None:
    """Tutorial-03 with A's K mask written as <, <=, >, >=: A, B and C are
    maps (3 tags), over ragged shapes with programs beyond the tile grid."""
    cx = {**BLOCKS, "ROW_SUM": 0, "OTHER": 0, "STORE_ROWS": 1, "MASK_FORM": form}
    for i, (m, n, k) in enumerate(RAGGED):
        _check(KERNELS.tutorial, _grid2(m, n), _mm(m, n, k, cx, seed=i), 3)


@pytest.mark.parametrize("cx, tagged", [
    ({"ROW_SUM": 1, "OTHER": 0, "STORE_ROWS": 1}, 1),   # wrapped rows reach live lanes: C only
    ({"ROW_SUM": 0, "OTHER": 1, "STORE_ROWS": 1}, 2),   # A's fill is 1, not the map's 0
    ({"ROW_SUM": 0, "OTHER": 0, "STORE_ROWS": 0}, 1),   # C stored without its row mask: B only
], ids=["row-sum", "other", "no-store-rows"])
def test_tutorial_near_misses(cx: dict[str, int], tagged: int) -> None:
    for i, (m, n, k) in enumerate(RAGGED[:2]):
        _check(KERNELS.tutorial, _grid2(m, n), _mm(m, n, k, {**BLOCKS, **cx}, seed=i), tagged)


def test_tutorial_k_zero_and_unaligned_views() -> None:
    """K = 0 (no K step: C is all zeros where stored); A a view 8 elements in
    (16 bytes: still a map) and 3 elements in (a base not 16-byte aligned:
    A stays a pointer load)."""
    cx = {**BLOCKS, "ROW_SUM": 0, "OTHER": 0, "STORE_ROWS": 1}
    _check(KERNELS.tutorial, _grid2(45, 70), _mm(45, 70, 0, cx), 3)
    _check(KERNELS.tutorial, _grid2(45, 70), _mm(45, 70, 77, cx, a_at=(2, 8)), 3)
    _check(KERNELS.tutorial, _grid2(45, 70), _mm(45, 70, 77, cx, a_at=(1, 3)), 2)


def test_tutorial_k_major_b_bf16_torch() -> None:
    """B a transposed torch view (K-major, stride_bk = 1): the transpose of
    a map block, bf16 operands."""
    cx = {**BLOCKS, "ROW_SUM": 0, "OTHER": 0, "STORE_ROWS": 1}
    for i, (m, n, k) in enumerate(RAGGED[:2]):
        _check(KERNELS.tutorial, _grid2(m, n),
               _mm(m, n, k, cx, "bfloat16", "torch", kmajor=True, seed=i), 3, transposed=True)


@pytest.mark.parametrize("row_mask, tagged", [(0, 3), (1, 3), (2, 3), (3, 3), (4, 2), (5, 2),
                                              (6, 2), (7, 2)])
def test_variants_row_masks(row_mask: int, tagged: int) -> None:
    """`variants`: the redundant row conjuncts 1-3 leave A a map; the near
    misses 4-7 keep it a pointer load.  Hints with row mask 0, cache keywords
    with 1 (both leave nothing in the IR)."""
    cx = {**BLOCKS, "ROW_MASK": row_mask, "HINTS": int(row_mask == 0), "CACHE": int(row_mask == 1)}
    for i, (m, n, k) in enumerate(RAGGED[:2]):
        _check(KERNELS.variants, _grid2(m, n), _mm(m, n, k, cx, seed=i), tagged)


def test_variants_bf16_k_major() -> None:
    cx = {**BLOCKS, "ROW_MASK": 1, "HINTS": 1, "CACHE": 1}
    _check(KERNELS.variants, _grid2(70, 45), _mm(70, 45, 21, cx, "bfloat16", "torch",
                                                 kmajor=True), 3, transposed=True)


def test_mm_tutorial() -> None:
    """The benchmark's tutorial (GROUP_M swizzled program ids; the grid is
    exactly the tile grid: a program beyond it divides by a group size of 0):
    fp16 NumPy, K-major bf16 torch, K = 0."""
    cx = {**BLOCKS, "GROUP_M": 2}
    for i, (m, n, k) in enumerate(RAGGED):
        grid = (tilec.cdiv(m, 32) * tilec.cdiv(n, 64),)
        _check(mm_tutorial, grid, _mm(m, n, k, cx, seed=i), 3)
        _check(mm_tutorial, grid, _mm(m, n, k, cx, "bfloat16", "torch", kmajor=True, seed=i), 3,
               transposed=True)
    _check(mm_tutorial, (6,), _mm(45, 70, 0, cx), 3)


def test_examples_matmul() -> None:
    """examples/matmul.py: rows and columns masked, pointers recomputed per K
    step (`k` the loop variable); fp32 at 32 x 32 x 32 (128-byte rows) and
    fp16 with a K-major B."""
    for i, (m, n, k) in enumerate(RAGGED[:2]):
        cx = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}
        _check(matmul, (tilec.cdiv(m, 32) + 1, tilec.cdiv(n, 32) + 1),
               _mm(m, n, k, cx, "float32", c_dtype="float32", seed=i), 3)
        _check(matmul, _grid2(m, n), _mm(m, n, k, BLOCKS, kmajor=True, seed=i), 3,
               transposed=True)


def test_matmul_persistent_descriptors_are_not_pointer_maps() -> None:
    """examples/matmul_persistent.py reads through tensor descriptors: on sm90
    tile-tma-descriptors takes them; on the CPU they reach tile-tma-pointers
    as masked pointer tiles whose masks bound each index from below too
    (`idx >= 0`), which the pass does not read: nothing is tagged."""
    def make() -> te.Args:
        g = np.random.default_rng(3)
        m, n, k = 45, 70, 77
        a, b = _matrix(g, m, k, "float16", pad=(0, 0)), _matrix(g, n, k, "float16", pad=(0, 0))
        c = np.full((m, n), np.nan, np.float16)
        return [np.ascontiguousarray(a), np.ascontiguousarray(b), c, m, n, k], \
            {**BLOCKS, "GROUP_M": 2, "NUM_SMS": 3}
    _check(matmul_persistent, (3,), make, 0)


# ---------------------------------------------------------------- batched
def _batched(nb: int, m: int, n: int, k: int, a_batch: int, dtype: str = "float16",
             lib: str = "numpy", b_stride0: bool = False, kmajor: bool = False,
             seed: int = 0) -> Callable[[], te.Args]:
    """`batched`'s arguments: [nb, M, K] A (more batches where A_BATCH reads
    ahead), [nb, K, N] B (one batch at stride 0 when `b_stride0`; K-major
    when `kmajor`), [nb, M, N] C, each a view inside a larger NaN buffer."""
    extra = {4: 1, 5: tilec.cdiv(k, BLOCKS["BLOCK_K"])}.get(a_batch, 0)

    def make() -> te.Args:
        g = np.random.default_rng(seed)
        a = _place(g, (nb + extra + 1, m + 3, k + 24), (slice(0, nb + extra), slice(0, m),
                                                        slice(0, k)), dtype, lib)
        nbb = 1 if b_stride0 else nb
        if kmajor:
            bt = _place(g, (nbb, n + 2, k + 8), (slice(None), slice(0, n), slice(0, k)), dtype, lib)
            b = bt.transpose(0, 2, 1) if lib == "numpy" else bt.transpose(1, 2)
        else:
            b = _place(g, (nbb, k + 2, n + 8), (slice(None), slice(0, k), slice(0, n)), dtype, lib)
        c = _empty((nb + 1, m + 5, n + 56), dtype, lib)[:nb, :m, :n]
        sb = _strides(b)
        if b_stride0:
            sb[0] = 0
        return [a, b, c, m, n, k, *_strides(a), *sb, *_strides(c)], \
            {**BLOCKS, "A_BATCH": a_batch}
    return make


@pytest.mark.parametrize("a_batch, tagged", [(0, 3), (4, 3), (5, 3), (1, 2), (2, 2), (3, 2)])
def test_batched(a_batch: int, tagged: int) -> None:
    """`batched`: rank-3 maps [2^31, rows, columns] (blocks [1, R, C]) for A,
    B and C; A_BATCH 4 and 5 move A's batch coordinate (pid_b + 1, pid_b +
    k); 1-3 are not a batch (A stays a pointer load).  Programs beyond the
    tile grid in M and N; B with batch stride 0 for A_BATCH 0."""
    nb, m, n, k = 3, 45, 70, 77
    grid = (*_grid2(m, n), nb)
    _check(KERNELS.batched, grid, _batched(nb, m, n, k, a_batch), tagged)
    _check(KERNELS.batched, grid, _batched(nb, 70, 45, 21, a_batch, seed=1), tagged)
    if a_batch == 0:
        _check(KERNELS.batched, grid, _batched(nb, m, n, k, 0, b_stride0=True, seed=2), 3)


def test_batched_bf16_torch_and_k_major() -> None:
    """bf16 torch views, K = 0; a K-major batched B: the transpose of a
    rank-3 map's block."""
    grid = (*_grid2(45, 70), 2)
    _check(KERNELS.batched, grid, _batched(2, 45, 70, 77, 0, "bfloat16", "torch"), 3)
    _check(KERNELS.batched, grid, _batched(2, 45, 70, 0, 0, "bfloat16", "torch"), 3)
    _check(KERNELS.batched, grid, _batched(2, 45, 70, 77, 0, kmajor=True), 3, transposed=True)


def test_batched_persistent() -> None:
    """The flattened persistent loop over every batch's tiles (the batch a
    quotient of the tile id): rank-3 maps; K < BLOCK_K and K ragged."""
    for i, (m, n, k) in enumerate(RAGGED[:2]):
        nb = 3

        def make(m: int = m, n: int = n, k: int = k, i: int = i) -> te.Args:
            g = np.random.default_rng(i)
            a = _place(g, (nb, m + 2, k + 24), (slice(None), slice(0, m), slice(0, k)),
                       "float16", "numpy")
            b = _place(g, (nb, k + 1, n + 8), (slice(None), slice(0, k), slice(0, n)),
                       "float16", "numpy")
            c = _empty((nb, m + 3, n + 56), "float16", "numpy")[:, :m, :n]
            sa, sb, sc = _strides(a), _strides(b), _strides(c)
            return [a, b, c, m, n, k, nb, sa[0], sa[1], sb[0], sb[1], sc[0], sc[1]], \
                {**BLOCKS, "NUM_SMS": 4}
        _check(KERNELS.batched_persistent, (4,), make, 3)


def _heads(z: int, h: int, x: int, m: int, n: int, d: int, extra: int, dtype: str = "float16",
           lib: str = "numpy", seed: int = 0) -> Callable[[], te.Args]:
    """`heads`' arguments: Q [Z, H, X, M, D], K [Z, H, X, N, D] (read K-major),
    O [Z, H, X, M, N], each a view inside a larger NaN buffer."""
    def make() -> te.Args:
        g = np.random.default_rng(seed)
        lead = (slice(None), slice(None), slice(0, x))
        q = _place(g, (z, h, x + 1, m + 3, d + 8), (*lead, slice(0, m), slice(0, d)), dtype, lib)
        k = _place(g, (z, h, x, n + 1, d + 24), (*lead, slice(0, n), slice(0, d)), dtype, lib)
        o = _empty((z, h, x, m + 2, n + 40), dtype, lib)[:, :, :, :m, :n]
        sq, sk, so = _strides(q), _strides(k), _strides(o)
        return [q, k, o, m, n, d, h, x, *sq[:4], *sk[:4], *so[:4]], {**BLOCKS_D, "EXTRA": extra}
    return make


BLOCKS_D = {"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_D": 64}


@pytest.mark.parametrize("extra", [0, 1])
def test_heads_rank_4_and_5(extra: int) -> None:
    """`heads` (attention-style Q K^T per batch and head, K read K-major):
    maps of rank 4 (z, h) and 5 (z, h, x), the K-major one transposed; D
    ragged, D = 0, programs beyond the tile grid."""
    z, h, x = 2, 3, 1 + extra
    for i, (m, n, d) in enumerate([(45, 70, 77), (70, 45, 0)]):
        grid = (tilec.cdiv(m, 32) + 1, tilec.cdiv(n, 64) + 1, z * h * x)
        pair = _check(KERNELS.heads, grid, _heads(z, h, x, m, n, d, extra, seed=i), 3,
                      transposed=True)
        assert [len(r["block"]) for r in pair.recipes] == [4 + extra] * 3


# ---------------------------------------------------------------- the harness itself
def _tampered(change: Callable[[dict[str, Any]], None]) -> te.Rewrite:
    """`emulate` after `change` edits every recipe of the module."""
    def rewrite(module: ir.Module) -> list[dict[str, Any]]:
        with module.context:
            for view in module.body.operations:
                func = view.operation
                if tile_tma_descriptors.ATTR not in func.attributes:
                    continue
                maps = tile_tma_descriptors.recipes(func)
                for recipe in maps.values():
                    change(recipe)
                func.attributes[tile_tma_descriptors.ATTR] = ir.StringAttr.get(
                    json.dumps({str(k): v for k, v in maps.items()}))
        return te.emulate(module)
    return rewrite


def _shrink_rows(r: dict[str, Any]) -> None:
    r["shape"][-2] = ["add", r["shape"][-2], ["const", -1]]


def _skew_strides(r: dict[str, Any]) -> None:
    r["strides"][-2] = ["add", r["strides"][-2], ["const", 16]]


def _misalign_strides(r: dict[str, Any]) -> None:
    r["strides"][-2] = ["add", r["strides"][-2], ["const", 1]]


def _rank5(r: dict[str, Any]) -> None:
    """The same blocks as rank-5 maps: leading dimensions of extent 1 whose
    coordinate is 0 (see `_lift_coords`)."""
    lead = 5 - len(r["block"])
    r["shape"] = [["const", 1]] * lead + r["shape"]
    r["strides"] = [["const", 64]] * lead + r["strides"]
    r["block"] = [1] * lead + r["block"]


def _lift_coords(module: ir.Module) -> list[dict[str, Any]]:
    """`_rank5` on every recipe, each access's coordinates led by zeros to
    match; then `emulate`."""
    with module.context:
        for block in te._blocks(module.operation):
            for view in list(block.operations):
                op = view.operation
                if op.name != "tile.tma_coords":
                    continue
                coords = list(op.operands)
                with ir.InsertionPoint(op), op.location:
                    zero = arith.constant(ir.IntegerType.get_signless(32), 0)
                    ir.Operation.create("tile.tma_coords", [], [zero] * (5 - len(coords)) + coords,
                                        attributes={"tma": op.attributes["tma"]})
                op.erase()
    return _tampered(_rank5)(module)


@pytest.mark.parametrize("change", [_shrink_rows, _skew_strides], ids=["rows", "strides"])
def test_the_harness_sees_a_wrong_recipe(change: Callable[[dict[str, Any]], None]) -> None:
    """A map one row short (its last row reads zeros / is not stored) or a
    row stride 16 elements off: the comparison fails."""
    cx = {**BLOCKS, "ROW_SUM": 0, "OTHER": 0, "STORE_ROWS": 1}
    with pytest.raises(te.Mismatch, match="differs between the plain and the emulated"):
        te.differential(KERNELS.tutorial, _grid2(45, 70), _mm(45, 70, 77, cx), _tampered(change))


def test_the_harness_sees_a_map_the_runtime_refuses() -> None:
    """A row stride one element off is no multiple of 16 bytes: the GPU
    runtime would refuse the map at launch (checked before comparing)."""
    cx = {**BLOCKS, "ROW_SUM": 0, "OTHER": 0, "STORE_ROWS": 1}
    with pytest.raises(te.Refused, match="multiples of 16 bytes"):
        te.differential(KERNELS.tutorial, _grid2(45, 70), _mm(45, 70, 77, cx),
                        _tampered(_misalign_strides))


def test_the_emulation_takes_rank_5_blocks() -> None:
    """The rank-2 and rank-3 maps written as rank-5 maps (leading extent-1
    dimensions at coordinate 0): the same results, blocks [1, 1, 1, R, C]."""
    cx = {**BLOCKS, "ROW_SUM": 0, "OTHER": 0, "STORE_ROWS": 1}
    pair = _check(KERNELS.tutorial, _grid2(45, 70), _mm(45, 70, 77, cx), 3, _lift_coords)
    assert all(len(r["block"]) == 5 for r in pair.recipes)
    pair = _check(KERNELS.batched, (*_grid2(45, 70), 2), _batched(2, 45, 70, 77, 0), 3,
                  _lift_coords)
    assert [r["block"][:3] for r in pair.recipes] == [[1, 1, 1]] * 3


@pytest.mark.parametrize("batch_mask, tagged", [(1, 3), (2, 3)])
def test_batched_with_a_batch_mask(batch_mask: int, tagged: int) -> None:
    """`batched` with `pid_b < NB` (1) or `pid_b < NB - 1` (2) in every mask:
    the maps' batch extent is NB (NB - 1), so the masked batches read zeros
    and store nothing; 4 batches of programs over 3 (and over 0) live ones;
    a K-major B with the mask stays a pointer load (its fallback block load
    would not mask the batch)."""
    nb, m, n, k = 3, 45, 70, 77
    grid = (*_grid2(m, n), nb + 1)

    def with_mask(make: Callable[[], te.Args], live: int) -> Callable[[], te.Args]:
        def made() -> te.Args:
            args, cx = make()
            return args, {**cx, "NB": live, "BATCH_MASK": batch_mask}
        return made
    _check(KERNELS.batched, grid, with_mask(_batched(nb + 1, m, n, k, 0), nb), tagged)
    none = te.differential(KERNELS.batched, grid, with_mask(_batched(nb + 1, m, n, k, 0, seed=3),
                                                            0), te.emulate)
    assert none.tagged == tagged and none.changed == 0   # no live batch: nothing stored
    _check(KERNELS.batched, grid, with_mask(_batched(nb + 1, m, n, k, 0, kmajor=True), nb), 2)
