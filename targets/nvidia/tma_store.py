"""NVIDIA TMA stores (`Feature.TMA`, sm90/sm100): `tile.tma_store` and
`tile.tma_store_wait` (dialects/memory_ops.py; `tile-pipeline` puts them in
place of the epilogue's store of a wgmma accumulator, passes/pipeline_tma.py).

| key | feature | lowering |
|---|---|---|
| `tile.tma_store` | `TMA` | per pass (one; or, where the buffer holds 1/p of the tile's column atoms, p passes of those atoms in turn): thread 0 `cp.async.bulk.wait_group.read 0` (the previous store or pass from the buffer has read it), a barrier; every thread writes its fragment's chunks of the pass into the swizzled buffer (`stmatrix.x4` for 2-byte elements in the wgmma accumulator layout, else `st.shared`; addresses computed once, in the first pass); `fence.proxy.async.shared::cta`; a barrier; thread 0 one `cp.async.bulk.tensor.2d.global.shared::cta.bulk_group` per box (`.3d`-`.5d` with a batched map's coordinates: box [1, .., r, c], the batch coordinates last) and `cp.async.bulk.commit_group` |
| `tile.tma_store_wait` | `TMA` | thread 0 `cp.async.bulk.wait_group.read 0` |

The buffer is a `layouts.SwizzledTile` of the stored tile: 128-byte column
atoms, [rows, 128 bytes] each, the 16-byte chunk j of row r at j ^ (r % 8),
which is what a TMA box of [rows, 128 / elem_bytes] elements with
`CU_TENSOR_MAP_SWIZZLE_128B` reads from a 1024-byte-aligned address (the
boxes of the loads, targets/nvidia/tma.py `box`, read the other way: one box
per atom and at most 256 rows).  Rows and columns past the tensor's edges are
not written by the copy (TMA clips the box), so the store needs no mask.

Addressing (`pipeline_tma.store_layout_ok` is what the pipeliner checks): a
thread's elements are (base_r + sr, base_c + sc) with sr a multiple of 8 (of
8 W for `row_permutation = "wgmma"`, where row_position(base_r + sr) =
row_position(base_r) + row_position(sr)) and sc a multiple of the layout's
column cover, whose bytes are a power of two of at most 128: the element's
row within its 8-row group and its byte within the cover come from the
thread's base alone, so its address is buf + P * 128 + (t ^ h) + c with P
the thread's (placed) row, t = (base_c bytes) ^ ((P % 8) << 4) per thread,
h the cover's byte offset inside the atom (at most 8 values) and c a
constant.  A warp's store of one chunk covers 8 rows in 8 distinct 16-byte
bank groups: conflict-free.  For 2-byte elements in the wgmma accumulator
layout a warp's chunk is one 8 x 8 matrix in `stmatrix`'s fragment order
(lane 4 g + t holds row g, columns 2 t, 2 t + 1), so four chunks of one
32-column group go out as one `stmatrix.x4` (a quarter of the instructions),
each lane addressing one 16-byte matrix row by the same P * 128 + (t ^ h) + c
rule (`stmatrix_groups`); each 8-lane phase writes 8 rows of one matrix in 8
distinct bank groups.

Nearest upstream analogue: Triton's `async_tma_copy_local_to_global` +
`async_tma_store_wait` (TMA store lowering in the NVIDIA backend).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from mlir import ir
from mlir.dialects import arith, gpu, llvm, nvvm, scf

from tilec.dialects import tile_memory
from tilec.errors import CompilerBugError
from tilec.passes import pipeline_tma
from tilec.passes.analysis import axis_info
from tilec.passes.analysis.layouts import Distribution, SwizzledTile
from tilec.passes.rules import RuleSet
from tilec.targets import Feature
from tilec.targets.nvidia.tma import MAX_BOX_ROWS, fresh_tid, permuted_row, thread0
from tilec.targets.nvidia.wgmma import byte_address

if TYPE_CHECKING:
    from tilec.passes.gpu.context import FuncLowering, Rule

RULES: RuleSet[Rule] = RuleSet("nvidia-tma-store")
# Stores of a thread's fragment chunks in some column atoms, at their offsets
# less a pass's base (`_fragment_writes`).
Writes = Callable[[range, int], None]


def _i32() -> ir.IntegerType:
    return ir.IntegerType.get_signless(32)


def _c(v: int) -> ir.Value:
    return arith.ConstantOp(_i32(), v).result


def _on_thread0(L: FuncLowering) -> scf.IfOp:
    return scf.IfOp(thread0(L))


def _wait_reads(L: FuncLowering) -> None:
    """Thread 0 waits until its bulk stores have read their shared memory."""
    if_op = _on_thread0(L)
    with ir.InsertionPoint(if_op.then_block):
        nvvm.CpAsyncBulkWaitGroupOp(ir.IntegerAttr.get(_i32(), 0), read=ir.UnitAttr.get())
        scf.YieldOp([])


def store_box(rows: int, elem_bytes: int) -> tuple[int, int]:
    """(rows, columns) of the TMA box that stores one atom of a [rows, ...] tile."""
    return min(rows, MAX_BOX_ROWS), 128 // elem_bytes


@RULES.rule("tile.tma_store_wait", feature=Feature.TMA)
def _store_wait(L: FuncLowering, op: ir.Operation) -> None:
    _wait_reads(L)


@RULES.rule("tile.tma_store", feature=Feature.TMA)
def _store(L: FuncLowering, op: ir.Operation) -> None:
    buf_v, value, *coords = op.operands
    tma = int(ir.IntegerAttr(op.attributes["tma"]).value)
    permute = ir.StringAttr(op.attributes["row_permutation"]).value == "wgmma"
    vt = ir.RankedTensorType(value.type)
    rows, cols = vt.shape
    eb = axis_info.type_bytes(vt.element_type)
    d = L.dist(value.type)
    if len(coords) not in tile_memory.TMA_COORDS or not pipeline_tma.store_layout_ok(d, eb, permute, L.num_warps):
        raise CompilerBugError(f"tile.tma_store of a {rows}x{cols} tile in {d.blocked}")
    box_rows, box_cols = store_box(rows, eb)
    lead = [1] * (len(coords) - 2)   # a batched map's box: one batch
    if L.tensormap_boxes.setdefault(tma, [*lead, box_rows, box_cols]) != \
            [*lead, box_rows, box_cols]:
        raise CompilerBugError(f"tensor map {tma} is copied with two box shapes")
    t = SwizzledTile(rows, cols, eb)
    per_pass = ir.MemRefType(buf_v.type).shape[2] // box_cols   # atoms the buffer holds
    buf = L.get(buf_v)
    tmap = L.tensormaps[tma]
    *outer, row0, col0 = (L.get(c) for c in coords)
    writes: Writes | None = None
    for first in range(0, cols // box_cols, per_pass):
        atoms = range(first, first + per_pass)
        _wait_reads(L)      # the previous store (pass) from the buffer has read it
        gpu.BarrierOp()
        writes = writes or _fragment_writes(L, value, buf, t, permute)
        writes(atoms, first * t.atom_bytes)
        nvvm.FenceProxyOp(nvvm.ProxyKind.async_shared, space=nvvm.SharedSpace.shared_cta)
        gpu.BarrierOp()
        if_op = _on_thread0(L)
        with ir.InsertionPoint(if_op.then_block):
            for atom in atoms:
                for rb in range(rows // box_rows):
                    src = byte_address(buf, _c((atom - first) * t.atom_bytes +
                                               rb * box_rows * 128))
                    col = arith.AddIOp(col0, _c(atom * box_cols)).result
                    row = arith.AddIOp(row0, _c(rb * box_rows)).result
                    nvvm.CpAsyncBulkTensorSharedCTAToGlobalOp(tmap, src,
                                                              [col, row, *reversed(outer)])
            nvvm.CpAsyncBulkCommitGroupOp()
            scf.YieldOp([])


def chunk_offsets(d: Distribution, t: SwizzledTile, permute: bool,
                  num_warps: int) -> list[tuple[int, int]]:
    """Per chunk of a thread's fragment (in `d.chunk_keys` order): (h, c) such
    that its byte offset in the buffer is P * 128 + (t ^ h) + c (the module
    docstring): h the chunk's byte offset inside its column atom (a multiple
    of the column cover's bytes), c its atom's offset plus its placed row
    offset times 128."""
    placed = SwizzledTile(t.rows, t.cols, t.elem_bytes, permute_rows=permute,
                          num_warps=num_warps)
    out = []
    for key in d.chunk_keys:
        sr, sc = d.static_offset(0, key[0]), d.static_offset(1, key[1])
        atom, within = divmod(sc, t.atom_cols)
        out.append((within * t.elem_bytes, atom * t.atom_bytes + placed.row_position(sr) * 128))
    return out


def stmatrix_groups(d: Distribution, t: SwizzledTile, permute: bool,
                    num_warps: int) -> list[tuple[int, int, list[int]]] | None:
    """For 2-byte elements in the wgmma accumulator layout ([1, 2] per thread,
    [8, 4] lanes, [W, 1] warps: a warp's chunk is one 8 x 8 matrix in
    `stmatrix`'s fragment order): per `stmatrix.x4`, (h, c, chunks) with
    `chunks` the fragment's chunk indices of its matrices 0-3 (the columns
    8 j of one 32-column group), lane L giving the address of row L % 8 of
    matrix L // 8, P * 128 + (t ^ h) + c with P that row's (placed) row and
    t = 16 (L // 8) ^ ((P % 8) << 4).  None for other layouts."""
    b = d.blocked
    if t.elem_bytes != 2 or b.per_thread != (1, 2) or b.lanes != (8, 4) or \
            b.warps != (num_warps, 1) or b.order != (1, 0) or t.cols % 32:
        return None
    placed = SwizzledTile(t.rows, t.cols, 2, permute_rows=permute, num_warps=num_warps)
    index = {(d.static_offset(0, k[0]), d.static_offset(1, k[1])): i
             for i, k in enumerate(d.chunk_keys)}
    out = []
    for sr in sorted({r for r, _c in index}):
        for col in range(0, t.cols, 32):
            atom, within = divmod(col, t.atom_cols)
            out.append((within * 2, atom * t.atom_bytes + placed.row_position(sr) * 128,
                        [index[(sr, col + 8 * j)] for j in range(4)]))
    return out


def _write_matrices(L: FuncLowering, value: ir.Value, buf: ir.Value, t: SwizzledTile,
                    permute: bool, groups: list[tuple[int, int, list[int]]]) -> Writes:
    """`stmatrix.x4` of four 8 x 8 matrices at a time (`stmatrix_groups`):
    the per-thread addresses now, the stores of the groups in some atoms
    (their offsets less the pass's base) when called."""
    tid = fresh_tid()
    lane = arith.AndIOp(tid, _c(31)).result
    warp = arith.ShRUIOp(tid, _c(5)).result
    g = arith.AndIOp(lane, _c(7)).result
    block = permuted_row(L, t.rows, warp) if permute else arith.ShLIOp(warp, _c(3)).result
    p = arith.AddIOp(block, g).result
    row_bytes = arith.MulIOp(p, _c(128)).result
    lo = arith.XOrIOp(arith.ShLIOp(arith.ShRUIOp(lane, _c(3)).result, _c(4)).result,
                      arith.ShLIOp(g, _c(4)).result).result
    frag = L.frag(value)
    shape = ir.Attribute.parse("#nvvm.ld_st_matrix_shape<m = 8, n = 8>")
    bases: dict[int, ir.Value] = {}

    def write(atoms: range, base: int) -> None:
        for hi, const, chunks in groups:
            if const // t.atom_bytes not in atoms:
                continue
            if hi not in bases:
                bases[hi] = byte_address(buf, arith.AddIOp(
                    row_bytes, arith.XOrIOp(lo, _c(hi)).result).result)
            words = [llvm.BitcastOp(_i32(), frag[i]).result for i in chunks]
            nvvm.StMatrixOp(byte_address(bases[hi], _c(const - base)), words,
                            nvvm.MMALayout.row, shape, nvvm.LdStMatrixEltType.B16)
    return write


def _fragment_writes(L: FuncLowering, value: ir.Value, buf: ir.Value, t: SwizzledTile,
                     permute: bool) -> Writes:
    """Every thread's stores of its chunks of `value` at their swizzled
    addresses (rows placed by `row_position` where `permute`; module
    docstring), four 8 x 8 matrices per `stmatrix` where the layout allows:
    the thread's addresses are computed now, and each call `(atoms, base)`
    stores the chunks in those column atoms at their offsets less `base` (a
    buffer of fewer columns than the tile, written in passes)."""
    d = L.dist(value.type)
    groups = stmatrix_groups(d, t, permute, L.num_warps)
    if groups is not None:
        return _write_matrices(L, value, buf, t, permute, groups)
    eb = t.elem_bytes
    kept, L.tid = L.tid, fresh_tid()     # (the thread's coordinates from a fresh read)
    base_r, base_c = L.thread_base(d, 0), L.thread_base(d, 1)
    L.tid = kept
    r = _c(base_r) if isinstance(base_r, int) else base_r
    c = _c(base_c) if isinstance(base_c, int) else base_c
    if permute:
        r = arith.AddIOp(permuted_row(L, t.rows, arith.ShRUIOp(r, _c(3)).result),
                         arith.AndIOp(r, _c(7)).result).result
    row_bytes = arith.MulIOp(r, _c(128)).result
    swz = arith.ShLIOp(arith.AndIOp(r, _c(7)).result, _c(4)).result
    lo = arith.XOrIOp(arith.MulIOp(c, _c(eb)).result, swz).result
    bases: dict[int, ir.Value] = {}
    chunks = list(zip(L.frag(value), chunk_offsets(d, t, permute, L.num_warps)))

    def write(atoms: range, base: int) -> None:
        for v, (hi, const) in chunks:
            if const // t.atom_bytes not in atoms:
                continue
            if hi not in bases:
                bases[hi] = byte_address(buf, arith.AddIOp(
                    row_bytes, arith.XOrIOp(lo, _c(hi)).result).result)
            llvm.StoreOp(v, byte_address(bases[hi], _c(const - base)), alignment=eb * d.vec_len)
    return write
