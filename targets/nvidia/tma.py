"""NVIDIA tensor-memory-accelerator copies (`Feature.TMA`, sm90): the
pipeliner's `tile.tma_*` and `tile.mbarrier_*` ops (dialects/memory_ops.py).

| key | feature | lowering |
|---|---|---|
| `tile.tma_coords` | `TMA` | nothing (a hint for the pipeliner) |
| `tile.mbarrier_alloc` | `TMA` | S x 8 bytes of workgroup memory; thread 0 `mbarrier.init` (count 1) each, then `fence.mbarrier_init` and a barrier after the last of consecutive allocations |
| `tile.mbarrier_inval` | `TMA` | thread 0 `mbarrier.inval` each; the bytes are released |
| `tile.tma_expect` | `TMA` | `@p mbarrier.arrive.expect_tx.shared.b64 _, [bar], bytes`, p = the `elect.sync` lane of warp 0 and live |
| `tile.tma_copy` | `TMA` | where live, the `elect.sync` lane of warp 0: one `cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes` per box (more than 4 boxes: lane q of warp 0 box q, q + 32, ...), `.3d`-`.5d` with a batched map's coordinates (box [1, .., r, c], the batch coordinates last, outermost last); the expect and copies of one refill share one `elect.sync`, consecutive copies one branch |
| `tile.tma_copy {tile.multicast = n}` | `TMA` | the CTA's 1/n of the rows, one box per column atom, `.multicast::cluster` to every CTA of the cluster (mask 2^n - 1) at the same slot offset |
| `tile.mbarrier_wait` | `TMA` | `mbarrier.try_wait.parity` in a loop (every thread; with `tile.one_thread` the first warp, whose lanes issue the copies) |
| `tile.mbarrier_arrive` | `TMA` | where live, lane 0 of every warp `mbarrier.arrive` (count: the warps) |

Boxes: a ring slot (`layouts.SwizzledTile`) is a row of 128-byte column
atoms, each [rows, 128 bytes] with the 128-byte swizzle, which is what a TMA
box of [r, 128 / elem_bytes] elements with `CU_TENSOR_MAP_SWIZZLE_128B` writes
at a 1024-byte-aligned address.  A ring whose rows are permuted for the wgmma
accumulator (operand A) takes one box per 8-row block (the blocks move as a
whole: `row_position` keeps a row's place in its block); other rings one box
per atom and 256 rows (TMA's largest box).  The box is recorded for the tensor
map (`FuncLowering.tensormap_boxes`): the host encodes the map with it.
The boxes of one copy (up to `_ELECTED_BOXES`) are issued one after the other
by the lane of the first warp that `elect.sync` picks (which also arrives
with the expect-tx), their addresses constants apart: ptxas keeps the slot,
the coordinates and the barrier in uniform registers.  The 8-row blocks of an
A ring (16 boxes for 128 rows) are issued by one lane each, as before: 16
unrolled copies raised the attention backward's spills (dkdv d=128, 3 stages:
8 -> 68 bytes).  Issued by lane q for box q, or by a lane
picked as `tid == 0`, the operands were per-thread values, and ptxas looped
over the active lanes' values (`R2UR` in a `BRA.U.ANY` loop, one box per
trip) around every copy.  A copy may complete before the slot's expect-tx (the transaction count may go
below zero); the phase cannot complete before the arrival that carries it.
Coordinates are innermost first (column, row), as the instruction takes them;
a map of rank 3-5 (tile-tma-pointers' batched accesses: `tile.tma_copy` with
three to five coordinates, batches first) adds the batch coordinates last
(outermost last) and a box dimension 1 per batch first ([1, .., r, c] in the
recipe): each box of the 2-D copy is the
same box of one batch, so the slot, the expect-tx bytes and the wgmma
operands are those of the 2-D copy.

Nearest upstream analogue: `nvgpu.tma.async.load` + `nvgpu.mbarrier.*`
(NVGPUToNVVM); Triton's `AsyncTMACopyGlobalToLocal` and barrier lowering.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from mlir import ir
from mlir.dialects import arith, gpu, llvm, nvvm, scf

from tilec.dialects import tile_memory
from tilec.errors import CompilerBugError
from tilec.passes.analysis import axis_info
from tilec.passes.analysis.layouts import SwizzledTile
from tilec.passes.rules import RuleSet
from tilec.targets import Feature
from tilec.targets.nvidia.wgmma import byte_address, ring_tile

if TYPE_CHECKING:
    from tilec.passes.gpu.context import FuncLowering, Rule

RULES: RuleSet[Rule] = RuleSet("nvidia-tma")
MAX_BOX_ROWS = 256
_EXCHANGE_BYTES = 160 * 1024
_ELECTED_BOXES = 4   # copies of more boxes are issued by one lane per box


def _i32() -> ir.IntegerType:
    return ir.IntegerType.get_signless(32)


def _c(v: int) -> ir.Value:
    return arith.ConstantOp(_i32(), v).result


def thread0(L: FuncLowering) -> ir.Value:
    assert L.tid is not None
    return arith.CmpIOp(arith.CmpIPredicate.eq, L.tid, _c(0)).result


def fresh_tid() -> ir.Value:
    """The thread index, read here: values derived from `L.tid` alone are loop
    invariant, and LLVM would keep them (a copy's box, a store's addresses) in
    registers through an enclosing K loop, where the accumulators need them."""
    return llvm.InlineAsmOp(_i32(), [], "mov.u32 $0, %tid.x;", "=r",
                            has_side_effects=True).result


def elected(L: FuncLowering) -> ir.Value:
    """One lane of the first warp (`elect.sync`, executed by every thread, so
    every warp converges on it): ptxas then knows a single lane is active and
    keeps the issue's operands in uniform registers, where a lane chosen by
    `tid == 0` made it loop over the active lanes' values (`R2UR` in a
    `BRA.U.ANY` loop) on every copy."""
    assert L.tid is not None
    warp0 = arith.CmpIOp(arith.CmpIPredicate.ult, L.tid, _c(L.target.warp_size)).result
    return arith.AndIOp(warp0, nvvm.ElectSyncOp(ir.IntegerType.get_signless(1)).result).result


def _issuer(L: FuncLowering, live: ir.Value) -> ir.Value:
    """The elected lane of the first warp, where the copy is live: one
    `elect.sync` for the expect and the copies of one refill (issued in one
    block under one live predicate), not one each (a dQ kernel's K and V
    refill elected three times: 2 ELECT, 3 VOTEU and their predicate
    arithmetic per iteration in SASS)."""
    key = (ir.InsertionPoint.current.block, L.get(live))
    if key not in L.issuers:
        L.issuers[key] = arith.AndIOp(elected(L), L.get(live)).result
    return L.issuers[key]


def _issue_block(L: FuncLowering, live: ir.Value) -> ir.InsertionPoint:
    """Where a copy's issue goes: inside the `scf.if` of the copy just before
    it in this block when that one has the same issuer (one branch around a
    refill's copies), else in a new one."""
    pred = _issuer(L, live)
    ops = ir.InsertionPoint.current.block.operations
    last = ops[len(ops) - 1] if len(ops) else None
    if last is not None and last.operation.name == "scf.if" and \
            last.operation.operands[0] == pred and not last.operation.results:
        then = last.operation.regions[0].blocks[0]
        return ir.InsertionPoint.at_block_terminator(then)
    if_op = scf.IfOp(pred)
    with ir.InsertionPoint(if_op.then_block):
        scf.YieldOp([])
    return ir.InsertionPoint.at_block_terminator(if_op.then_block)


def _bar(L: FuncLowering, bars: ir.Value, slot: ir.Value | int) -> ir.Value:
    off = _c(8 * slot) if isinstance(slot, int) else arith.ShLIOp(L.get(slot), _c(3)).result
    return byte_address(L.get(bars), off)


def box(t: SwizzledTile) -> tuple[int, int]:
    """(rows, columns) of the TMA box that fills a slot of layout `t`."""
    if t.permute_rows:
        return 8, t.atom_cols
    return min(t.rows, MAX_BOX_ROWS), t.atom_cols


@RULES.rule("tile.tma_coords", feature=Feature.TMA)
def _coords(L: FuncLowering, op: ir.Operation) -> None:
    """A hint for the pipeliner: nothing to emit."""


@RULES.rule("tile.mbarrier_alloc", feature=Feature.TMA)
def _alloc(L: FuncLowering, op: ir.Operation) -> None:
    slots = int(ir.IntegerAttr(op.attributes["slots"]).value)
    buf = L.shared_buffer(ir.IntegerType.get_signless(64), slots, align=8)
    L.values[op.results[0]] = buf
    t0 = thread0(L)
    arrivals = ir.StringAttr(op.attributes["tile.arrivals"]).value \
        if "tile.arrivals" in op.attributes else None
    count = {"warps": L.num_warps, "ctas": cluster_ctas(L), None: 1}[arrivals]
    for i in range(slots):
        nvvm.MBarrierInitOp(byte_address(buf, _c(8 * i)), _c(count), predicate=t0)
    # One fence and CTA barrier after a run of allocations (a pipelined loop
    # has two to five barrier arrays): nothing between them uses a barrier.
    if not _next_is_alloc(op):
        nvvm.FenceMbarrierInitOp()
        gpu.BarrierOp()


def _next_is_alloc(op: ir.Operation) -> bool:
    """Whether the op right after `op` in its block is another `tile.mbarrier_alloc`."""
    ops = list(op.operation.block.operations)
    i = next(k for k, o in enumerate(ops) if o.operation == op.operation)
    return i + 1 < len(ops) and ops[i + 1].operation.name == "tile.mbarrier_alloc"


@RULES.rule("tile.mbarrier_inval", feature=Feature.TMA)
def _inval(L: FuncLowering, op: ir.Operation) -> None:
    bars = op.operands[0]
    slots = int(ir.IntegerAttr(bars.owner.attributes["slots"]).value)
    if_op = scf.IfOp(thread0(L))
    with ir.InsertionPoint(if_op.then_block):
        for i in range(slots):
            nvvm.MBarrierInvalOp(_bar(L, bars, i))
        scf.YieldOp([])
    L.release_shared(L.get(bars))


@RULES.rule("tile.tma_expect", feature=Feature.TMA)
def _expect(L: FuncLowering, op: ir.Operation) -> None:
    bars, slot, live = op.operands
    nbytes = int(ir.IntegerAttr(op.attributes["bytes"]).value)
    nvvm.MBarrierArriveExpectTxOp(None, _bar(L, bars, slot), _c(nbytes),
                                  predicate=_issuer(L, live))


@RULES.rule("tile.tma_copy", feature=Feature.TMA)
def _copy(L: FuncLowering, op: ir.Operation) -> None:
    ring_v, slot, bars, live, *coords = op.operands
    tma = int(ir.IntegerAttr(op.attributes["tma"]).value)
    t, _slots = ring_tile(L, ring_v)
    if not isinstance(t, SwizzledTile) or len(coords) not in tile_memory.TMA_COORDS:
        raise CompilerBugError("tile.tma_copy needs a 2-D ring with the 128-byte swizzle")
    rows, cols = box(t)
    ctas = int(ir.IntegerAttr(op.attributes["tile.multicast"]).value) \
        if "tile.multicast" in op.attributes else 1
    if ctas > 1:   # each CTA copies its 1/ctas of the rows for all of them
        rows = t.rows // ctas
        if t.permute_rows or rows % 8 or rows > MAX_BOX_ROWS or len(coords) != 2:
            raise CompilerBugError(f"a multicast copy of a {t.rows}-row ring over {ctas} CTAs")
    lead = [1] * (len(coords) - 2)   # a batched map's box: one batch
    if L.tensormap_boxes.setdefault(tma, [*lead, rows, cols]) != [*lead, rows, cols]:
        raise CompilerBugError(f"tensor map {tma} is copied with two box shapes")
    tmap = L.tensormaps[tma]
    ring = L.get(ring_v)
    *outer, row0, col0 = (L.get(c) for c in coords)
    n = (t.rows // rows) * (t.cols // t.atom_cols)
    evict_first = "tile.l2_evict_first" in op.attributes
    if ctas > 1:
        with _issue_block(L, live):
            _multicast(L, t, ring, tmap, bars, slot, [row0, col0], ctas, _l2_hint(evict_first))
        return
    if n > _ELECTED_BOXES:   # (an A ring's 8-row blocks: one lane each)
        base = arith.MulIOp(L.get(slot), _c(t.nbytes)).result
        for first in range(0, n, L.target.warp_size):
            _copy_lanes(L, t, ring, tmap, bars, slot, live, base, [*outer, row0, col0], rows, n,
                        first, evict_first)
        return
    with _issue_block(L, live):
        base = arith.MulIOp(L.get(slot), _c(t.nbytes)).result
        hint = _l2_hint(evict_first)   # one policy for the copy's boxes
        for q in range(n):
            _copy_box(L, t, ring, tmap, bars, slot, base, [*outer, row0, col0], rows, q, hint)


def _l2_hint(evict_first: bool) -> ir.Value | None:
    """The L2 cache-hint operand of a copy under an evict-first policy (the
    64-bit policy of `createpolicy.fractional.L2::evict_first.b64 p, 1.0`,
    inline PTX: NVVM has no op for it), or None."""
    if not evict_first:
        return None
    return llvm.InlineAsmOp(ir.IntegerType.get_signless(64), [],
                            "createpolicy.fractional.L2::evict_first.b64 $0, 1.0;", "=l").result


def _copy_lanes(L: FuncLowering, t: SwizzledTile, ring: ir.Value, tmap: ir.Value,
                bars: ir.Value, slot: ir.Value, live: ir.Value, base: ir.Value,
                coords: list[ir.Value], rows: int, n: int, first: int,
                evict_first: bool = False) -> None:
    """Lane q of the first warp copies box first + q (of n), where live
    (`coords`: the block's, outermost first)."""
    *outer, row0, col0 = coords
    assert L.tid is not None
    per_atom = t.rows // rows
    lane_live = arith.AndIOp(arith.CmpIOp(arith.CmpIPredicate.ult, L.tid,
                                          _c(min(L.target.warp_size, n - first))).result,
                             L.get(live)).result
    if_op = scf.IfOp(lane_live)
    with ir.InsertionPoint(if_op.then_block):
        q = fresh_tid()   # the lane's box, recomputed on every issue
        if L.thread_offset:   # a producer warpgroup's lanes
            q = arith.SubIOp(q, _c(L.thread_offset)).result
        if first:
            q = arith.AddIOp(q, _c(first)).result
        atom = arith.DivUIOp(q, _c(per_atom)).result
        block = arith.RemUIOp(q, _c(per_atom)).result
        row = arith.MulIOp(block, _c(rows)).result
        pos = permuted_row(L, t.rows, block) if t.permute_rows else row
        dst = arith.AddIOp(base, arith.AddIOp(arith.MulIOp(atom, _c(t.atom_bytes)).result,
                                              arith.MulIOp(pos, _c(128)).result).result).result
        col = arith.AddIOp(col0, arith.MulIOp(atom, _c(t.atom_cols)).result).result
        nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp(
            _cluster(byte_address(ring, dst)), tmap,
            [col, arith.AddIOp(row0, row).result, *reversed(outer)], _bar(L, bars, slot), [],
            l2CacheHint=_l2_hint(evict_first))
        scf.YieldOp([])


def _copy_box(L: FuncLowering, t: SwizzledTile, ring: ir.Value, tmap: ir.Value, bars: ir.Value,
              slot: ir.Value, base: ir.Value, coords: list[ir.Value], rows: int, q: int,
              hint: ir.Value | None = None) -> None:
    """Box q of the copy: 8-row block q % per_atom of column atom q // per_atom
    (`coords`: the block's, outermost first)."""
    *outer, row0, col0 = coords
    per_atom = t.rows // rows
    atom, block = divmod(q, per_atom)
    pos = permuted_row(L, t.rows, _c(block)) if t.permute_rows else _c(block * rows)
    dst = arith.AddIOp(base, arith.AddIOp(_c(atom * t.atom_bytes),
                                          arith.MulIOp(pos, _c(128)).result).result).result
    col = arith.AddIOp(col0, _c(atom * t.atom_cols)).result
    nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp(
        _cluster(byte_address(ring, dst)), tmap,
        [col, arith.AddIOp(row0, _c(block * rows)).result, *reversed(outer)],
        _bar(L, bars, slot), [], l2CacheHint=hint)


def _multicast(L: FuncLowering, t: SwizzledTile, ring: ir.Value, tmap: ir.Value,
               bars: ir.Value, slot: ir.Value, coords: list[ir.Value], ctas: int,
               hint: ir.Value | None) -> None:
    """This CTA's rows [r R / n, (r + 1) R / n) of the block (r: its place in
    the cluster), one box per column atom, written at the same slot offsets
    in every CTA of the cluster (`.multicast::cluster`, mask of all n) and
    completing on each one's barrier `slot`.  A part starts at a multiple of
    1024 bytes (8 rows), where the 128-byte swizzle's pattern starts again."""
    row0, col0 = coords
    part = t.rows // ctas
    first = arith.MulIOp(nvvm.BlockInClusterIdXOp(_i32()).result, _c(part)).result
    base = arith.AddIOp(arith.MulIOp(L.get(slot), _c(t.nbytes)).result,
                        arith.MulIOp(first, _c(128)).result).result
    mask = arith.ConstantOp(ir.IntegerType.get_signless(16), (1 << ctas) - 1).result
    for atom in range(t.cols // t.atom_cols):
        dst = arith.AddIOp(base, _c(atom * t.atom_bytes)).result
        nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp(
            _cluster(byte_address(ring, dst)), tmap,
            [arith.AddIOp(col0, _c(atom * t.atom_cols)).result, arith.AddIOp(row0, first).result],
            _bar(L, bars, slot), [], multicastMask=mask, l2CacheHint=hint)


def cluster_ctas(L: FuncLowering) -> int:
    """The CTAs of the kernel's cluster (`tile.num_ctas`, tile-split-ctas), or 1."""
    attrs = L.func.attributes
    return int(ir.IntegerAttr(attrs["tile.num_ctas"]).value) if "tile.num_ctas" in attrs else 1


def permuted_row(L: FuncLowering, rows: int, block: ir.Value) -> ir.Value:
    """`SwizzledTile.row_position(8 * block)` of a permuted `rows`-row ring,
    computed (the 8-row block `block` of operand A in its wgmma ring: warp
    w = block % W, repetition block // W)."""
    nw = L.num_warps
    assert nw % 4 == 0 and nw & (nw - 1) == 0
    w = arith.AndIOp(block, _c(nw - 1)).result
    rep = arith.ShRUIOp(block, _c(nw.bit_length() - 1)).result
    wg = arith.ShRUIOp(w, _c(2)).result
    wq = arith.AndIOp(w, _c(3)).result
    i = arith.ShRUIOp(rep, _c(1)).result
    r = arith.AndIOp(rep, _c(1)).result
    terms = [arith.MulIOp(wg, _c(rows // (nw // 4))).result, arith.MulIOp(i, _c(64)).result,
             arith.MulIOp(wq, _c(16)).result, arith.MulIOp(r, _c(8)).result]
    out = terms[0]
    for x in terms[1:]:
        out = arith.AddIOp(out, x).result
    return out


@RULES.rule("tile.row_exchange", feature=Feature.TMA)
def _row_exchange(L: FuncLowering, op: ir.Operation) -> None:
    """Every thread writes its elements (l, c) to row `row_position(l)` of a
    workgroup-memory tile (rows padded by 8 elements against bank conflicts) and
    reads (l, c) back.  After the loop the rings' memory is free, so a 128 x
    256 f32 tile goes at once (at most 160 KiB).  The accumulator layout
    (`wgmma_accumulator_layout`) gives each thread rows base + s with base < 8
    W and s a multiple of 8 W (W warps), so row_position(base + s) =
    row_position(base) + row_position(s): one computed base per thread, every
    element at a constant offset from it."""
    src = op.operands[0]
    rows, cols = ir.RankedTensorType(src.type).shape
    d = L.dist(src.type)
    elem = L.scalar_type(ir.RankedTensorType(src.type).element_type)
    eb = axis_info.type_bytes(ir.RankedTensorType(src.type).element_type)
    pitch = cols + 8
    span = 8 * L.num_warps
    if rows * pitch * eb > _EXCHANGE_BYTES or d.fast != 1 or d.sliced_dim is not None:
        raise CompilerBugError(f"tile.row_exchange of a {rows}x{cols} tile in {d.blocked}")
    t = SwizzledTile(rows, 64, 2, permute_rows=True, num_warps=L.num_warps)  # row_position
    base_r, base_c = L.thread_base(d, 0), L.thread_base(d, 1)
    if isinstance(base_r, int) or isinstance(base_c, int):
        raise CompilerBugError("tile.row_exchange needs thread-dependent coordinates")
    pos = arith.AddIOp(permuted_row(L, rows, arith.ShRUIOp(base_r, _c(3)).result),
                       arith.AndIOp(base_r, _c(7)).result).result
    buf = L.shared_buffer(elem, rows * pitch, align=16)
    put = _element(buf, _index(pos, base_c, pitch), elem)
    get = _element(buf, _index(base_r, base_c, pitch), elem)
    vt = ir.VectorType.get([d.vec_len], elem)
    offsets = []
    for key in d.chunk_keys:
        sr, sc = d.static_offset(0, key[0]), d.static_offset(1, key[1])
        if sr % span:
            raise CompilerBugError(f"tile.row_exchange: row offset {sr} is not a multiple "
                                   f"of {span}")
        offsets.append(((t.row_position(sr)) * pitch + sc, sr * pitch + sc))
    gpu.BarrierOp()
    for v, (w, _r) in zip(L.frag(src), offsets):
        llvm.StoreOp(v, _element(put, _c(w), elem), alignment=eb * d.vec_len)
    gpu.BarrierOp()
    out = [llvm.LoadOp(vt, _element(get, _c(r), elem), alignment=eb * d.vec_len).result
           for _w, r in offsets]
    gpu.BarrierOp()
    L.release_shared(buf)
    L.values[op.results[0]] = out


def _index(row: ir.Value, col: ir.Value, pitch: int) -> ir.Value:
    return arith.AddIOp(arith.MulIOp(row, _c(pitch)).result, col).result


def _element(buf: ir.Value, index: ir.Value, elem: ir.Type) -> ir.Value:
    return llvm.GEPOp(buf.type, buf, [index], [-2147483648], elem,
                      llvm.GEPNoWrapFlags.none).result


def _cluster(p: ir.Value) -> ir.Value:
    """A CTA shared-memory address as the shared::cluster address (space 7)
    the copy's destination takes: the block's own window of the cluster."""
    return llvm.AddrSpaceCastOp(llvm.PointerType.get(7), p).result


def try_wait(bar: ir.Value, phase: ir.Value) -> None:
    """Spin on `mbarrier.try_wait.parity` until the phase with parity `phase`
    of `bar` has completed.  No suspend-time hint: with one (upstream's
    `nvvm.mbarrier.try_wait.parity` takes it), ptxas puts a `NANOSLEEP.SYNCS`
    into the retry path; this loop retries at once, as Triton and CUTLASS do."""
    text = ("{\n\t.reg .pred P1;\n\tLAB_WAIT:\n\t"
            "mbarrier.try_wait.parity.shared::cta.b64 P1, [$0], $1;\n\t"
            "@P1 bra.uni DONE;\n\tbra.uni LAB_WAIT;\n\tDONE:\n\t}")
    addr = llvm.PtrToIntOp(_i32(), bar).result
    llvm.InlineAsmOp(None, [addr, phase], text, "r,r", has_side_effects=True)


@RULES.rule("tile.mbarrier_wait", feature=Feature.TMA)
def _wait(L: FuncLowering, op: ir.Operation) -> None:
    bars, slot, phase = op.operands
    if "tile.one_thread" not in op.attributes:
        try_wait(_bar(L, bars, slot), L.get(phase))
        return
    # Every lane that issues copies waits itself (the first warp: `_copy`):
    # lanes of a warp need not reconverge after a branch, so a copy issued
    # by lane q > 0 while lane 0 still waited would overwrite a slot that
    # another warp is reading.
    assert L.tid is not None
    warp0 = arith.CmpIOp(arith.CmpIPredicate.ult, L.tid, _c(L.target.warp_size)).result
    if_op = scf.IfOp(warp0)
    with ir.InsertionPoint(if_op.then_block):
        try_wait(_bar(L, bars, slot), L.get(phase))
        scf.YieldOp([])


@RULES.rule("tile.mbarrier_arrive", feature=Feature.TMA)
def _arrive(L: FuncLowering, op: ir.Operation) -> None:
    """Lane 0 of each warp arrives once its warp is past the op before (the
    warp's `wgmma.wait_group` is `.aligned`: every lane has executed it)."""
    bars, slot, live = op.operands
    assert L.tid is not None
    lane0 = arith.CmpIOp(arith.CmpIPredicate.eq,
                         arith.AndIOp(L.tid, _c(L.target.warp_size - 1)).result, _c(0)).result
    if_op = scf.IfOp(arith.AndIOp(lane0, L.get(live)).result)
    with ir.InsertionPoint(if_op.then_block):
        nvvm.MBarrierArriveOp(ir.IntegerType.get_signless(64), _bar(L, bars, slot))
        scf.YieldOp([])


def mark_parameters(module: ir.Module) -> None:
    """Make the tensor-map parameters of every lowered kernel (the last
    len(`tilec.tensormaps`) of an `llvm.func` that has the attribute)
    128-byte grid-constant parameters: `.param .align 64 .b8 p[128]`, whose
    generic address (`cvta.param`) the copies read.  Thread 0 prefetches
    each map (`prefetch.tensormap`) first thing in the kernel, so the map's
    fetch overlaps the barrier set-up instead of delaying the first copy."""
    import json
    byval = ir.TypeAttr.get(ir.Type.parse("!llvm.array<128 x i8>"))
    i64 = ir.IntegerType.get_signless(64)

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "llvm.func" and "tilec.tensormaps" in op.attributes:
            n = len(json.loads(ir.StringAttr(op.attributes["tilec.tensormaps"]).value))
            nargs = len(op.regions[0].blocks[0].arguments)
            attrs = list(ir.ArrayAttr(op.attributes["arg_attrs"])) if "arg_attrs" in \
                op.attributes else [ir.DictAttr.get({})] * nargs
            for i in range(len(attrs) - n, len(attrs)):
                old = {a.name: a.attr for a in ir.DictAttr(attrs[i])}
                attrs[i] = ir.DictAttr.get({**old, "llvm.byval": byval,
                                            "llvm.align": ir.IntegerAttr.get(i64, 64),
                                            "nvvm.grid_constant": ir.UnitAttr.get()})
            op.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)
            _prefetch_maps(op, list(op.regions[0].blocks[0].arguments)[nargs - n:])
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)


def _prefetch_maps(func: ir.Operation, maps: list[ir.Value]) -> None:
    """`prefetch.tensormap` of each map by thread 0, at the kernel's entry
    (CUTLASS prefetches its descriptors the same way)."""
    if not maps:
        return
    entry = func.regions[0].blocks[0]
    text = "\n\t".join(["{", ".reg .pred %tmp_p;", ".reg .b32 %tmp_t;", "mov.u32 %tmp_t, %tid.x;",
                         "setp.eq.u32 %tmp_p, %tmp_t, 0;",
                         *(f"@%tmp_p prefetch.tensormap [${i}];" for i in range(len(maps))),
                         "}"])
    with ir.InsertionPoint.at_block_begin(entry), func.location:
        llvm.InlineAsmOp(None, maps, text, ",".join(["l"] * len(maps)), has_side_effects=True)
