"""`tile-pipeline`: software pipelining of `tl.dot` loops through shared-memory rings.

A K loop of a matmul loads its operand tiles and multiplies them; run as
written, every iteration waits out the memory latency.  With `num_stages` = S
(the launch option, or `tl.range(..., num_stages=S)` recorded as the loop's
`tile.num_stages`), this pass keeps the loads of the next S - 1 iterations in
flight as asynchronous copies into a ring of S shared-memory slots while the
matrix units work on the current one, as Triton's pipeliner does.

Input: tiled IR (after `tile-layout`).  A `scf.for` is transformed when
  * its body holds exactly one `tile.dot` whose family (`tile.mma`,
    `tile-accelerate-dot`) reads operands from shared memory (wgmma, or
    mma_sync through `ldmatrix`), whose
    accumulator is an iteration argument that the loop yields the dot's result
    for, and whose a and b are `tile.load`s in the body used only by the dot,
    with no `other` or a zero `other`;
  * the loads' operands are computed in the body ("the load side") from the
    induction variable, values from outside the loop and iteration arguments
    that only the load side uses and updates (loop-carried pointer tiles), by
    pure region-free ops; the step is a positive constant;
  * each load moves at least 4 bytes per thread and access along the tile's
    contiguous dimension (what `cp.async` can copy; the axis analysis says),
    or both are tensor-map blocks TMA copies (below: whatever their masks).
Output: before the loop, two rings (`tile.local_alloc`, 128-byte swizzle, A's
rows permuted for the wgmma accumulator layout) and a prologue: the load side
of iterations 0 .. S-2 cloned (induction variable lb + p * step), each issuing
`tile.async_copy` of both tiles into slot p with the mask `and`-ed with
`iv < ub`, and a `tile.async_commit`.  The new loop carries the load side's
iteration arguments S - 1 iterations ahead and a slot counter j (with cp.async
into wgmma or mma.sync the slot itself, wrapping at S, so `j % S` below is j;
TMA and tcgen05 loops count iterations, for the barriers' phase); its body:
`tile.async_wait {pending = S-2}` and `tile.barrier` (iteration j's slot is
filled), the original ops with the dot replaced by `tile.mma` on slot j % S and
`tile.mma_wait {pending = 1}` (one product stays in flight), a `tile.barrier`
when several warpgroups share the slots, then the load side of iteration
j + S - 1 into slot (j + S - 1) % S (the slot the product of iteration j - 1
read, now finished) and a commit.  A cp.async ring of S >= `LAG_MIN_STAGES`
slots read by several warpgroups' wgmma products of >= `LAG_MIN_MACS`
multiply-adds per iteration is refilled one iteration later, without the
second barrier: a prologue of iterations 0 .. S-3, the wait `{pending = S-3}`,
and iteration j refills slot (j - 2) % S with iteration j + S - 2 (each
warpgroup waited for its product of j - 2 before the barrier at the top of
j).  After the loop: `tile.mma_wait {pending = 0}` on the result,
`tile.async_wait {pending = 0}`, a barrier and
`tile.local_dealloc` of both rings (the epilogue may reuse their memory).
On targets with TMA, a wgmma or tcgen05 loop whose two loads `tile-tma-descriptors`
tagged copies them with the tensor memory accelerator (passes/pipeline_tma.py;
B multicast to a 2-CTA cluster: passes/pipeline_cluster.py): S `mbarrier`s; each issue is a
`tile.tma_expect` of the slot's bytes and one `tile.tma_copy` per tile (the
tiles' coordinates cloned for the iteration; B's under an L2 evict-first
policy outside flattened loops: `pipeline_tma.b_evict_first`); an iteration starts with
`tile.mbarrier_wait` on its slot (no cp.async wait and no barrier), and for
wgmma the barrier after the product's wait is there at every warp count (one
thread overwrites the slot every warp read; a tcgen05 product's reads are over
once the issuing thread's own wait on its mbarrier returns).  Where the accumulator starts as a splat
and only chains the products, A's ring keeps its rows in order (one TMA box
rather than one per 8-row block, which cost a sixth of the loop) and
`tile.row_exchange` after the loop puts the accumulator's rows in place.
On targets with TMA, a store that `tile-tma-descriptors` tagged and that
writes a wgmma loop's accumulator (or its `arith.truncf`) of at least
`pipeline_tma.TMA_STORE_MIN_ACC_PER_THREAD` elements per thread becomes
`tile.tma_store` from a swizzled buffer of its own (passes/pipeline_tma.py
`store_plan`): it places the rows itself (`row_permutation = "wgmma"` where
A's ring keeps them in order; no row exchange), and in a flattened loop its
buffer is allocated with the rings (a buffer of fewer columns, the tile
written in passes, where the whole tile's would cost a ring slot:
`pipeline_tma.fit_store`) and released after the loop's last
`tile.tma_store_wait`.
A tcgen05 dot is pipelined as a wgmma one, except that A's rows are not
permuted (`row_permutation = "none"`: TMEM lane = row) and no barrier follows
the wait (every thread waits on the product's mbarrier itself).
For an mma_sync dot the rings are row-major with rows padded by 16 bytes
(`swizzle = 0`, `row_permutation = "none"`: `layouts.PaddedTile`, A [M, K] and
B [K, N] as loaded; a `b.T` operand is not taken) and the product is
`tile.mma {kind = "mma_sync"}`, which is synchronous: no `tile.mma_wait`, and
no barrier after it, because every warp has finished reading slot j % S when
it reaches the barrier at the top of iteration j + 1, before anyone issues the
copies that overwrite that slot (iteration j + 1 writes slot j % S).  Loops that
do not qualify, and S = 1, are left as they are (the dot then stages its
register operands itself).  Every new op carries the location of the op it
comes from (the loop's for the ring and waits).  Where S rings would not fit
in the target's shared memory (less a reserve for the rest of the kernel), the
deepest ring that fits is used and the loop says so (`tile.num_stages_note`).

Nearest upstream analogue: `scf::pipelineForLoop` (modulo scheduling with a
prologue); Triton's `tritongpu-pipeline` (`AssignLatencies`, `LowerLoops`).
"""
from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, scf

from tilec.dialects import tile, tile_memory
from tilec.options import CompileOptions
from tilec.passes import pipeline_support as ps
from tilec.passes import (pipeline_cluster, pipeline_persistent, pipeline_tma,
                          tile_pipeline_defer, tile_pipeline_early, tile_pipeline_multi)
from tilec.passes.analysis import axis_info
from tilec.targets import Feature, Target

NAME = "tile-pipeline"
# Families whose product reads swizzled rings asynchronously and is waited for
# (`tile.mma_wait`); tcgen05's A rows are not permuted (TMEM lane = row).
_ASYNC = ("wgmma", "tcgen05")
# `_lagged`; H200, tutorial-03 fp16 4096^3, 8 warps, ncu's locked clock
# (benchmarks/results/README.md, session 20): 128x256x64, 4 slots: lagged
# 297,943 cycles, unlagged 301,305 (3 slots: 301,870); 128x128x64, 4 slots:
# lagged 346,500, unlagged 340,668 (the shorter iteration hides less of the
# copies' latency); 3 slots lagged (one iteration in flight): 416,500.
LAG_MIN_STAGES = 4
LAG_MIN_MACS = 128 * 256 * 64


@dataclass
class _Plan:
    dot: ir.Operation
    loads: tuple[ir.Operation, ir.Operation]
    acc_index: int                 # iteration-argument index of the accumulator
    side: list[ir.Operation]       # the load side, in body order
    carried: list[int]             # iteration-argument indices the load side carries
    b_trans: ir.Operation | None = None   # b = tile.trans(load): B is K-major in its ring
    tail: ir.Operation | None = None      # a flattened loop's epilogue `scf.if`
    copyable: bool = True          # cp.async can copy both loads (else only TMA may)


def _plan(for_op: ir.Operation, info: axis_info.AxisInfoMap) -> _Plan | None:
    body = for_op.regions[0].blocks[0]
    ops = ps.ops(body)
    dots = [op for op in ops if op.name == "tile.dot"]
    if len(dots) != 1:
        return None
    dot = dots[0]
    kind = ps.kind(dot)
    if kind not in (*_ASYNC, "mma_sync"):
        return None
    if (ps.const_int(list(for_op.operands)[2]) or 0) <= 0:
        return None
    args = list(body.arguments)
    acc = dot.operands[2]
    if acc not in args[1:]:
        return None
    acc_index = args.index(acc) - 1
    # A flattened loop (tile-flatten-loops) yields the product through its
    # epilogue branch.  tcgen05's branch puts the next tile's init into TMEM
    # (targets/nvidia/tcgen05.py): it must be defined before the loop.
    tail = ps.epilogue(for_op, acc_index, dot.results[0])
    # (A flattened loop's per-tile coordinates are pure `scf.if`s of its load side.)
    regions = [op for op in ops if op.regions and not ps.pure_if(op)]
    if tail is not None:
        if regions != [tail[0]] or ops.index(tail[0]) < ops.index(dot):
            return None
        then_y = ps.ops(tail[0].regions[0].blocks[0])[-1].operands[tail[1]]
        if kind == "tcgen05" and (isinstance(then_y.owner, ir.Block) or
                                  then_y.owner.operation in set(ps.region_ops(for_op))):
            return None
    elif regions or ops[-1].operands[acc_index] != dot.results[0]:
        return None
    loads = []
    b_trans: ir.Operation | None = None
    copyable = True
    for idx, v in enumerate(list(dot.operands)[:2]):
        owner = v.owner
        if idx == 1 and kind in _ASYNC and isinstance(owner, ir.OpView) and \
                owner.operation.name == "tile.trans" \
                and owner.operation.block == body and len(list(v.uses)) == 1:
            # b = x.T of an [N, K] load: the ring holds it K-major as loaded.
            b_trans = owner.operation
            v = b_trans.operands[0]
            owner = v.owner
        if not isinstance(owner, ir.OpView) or owner.operation.name != "tile.load" or \
                owner.operation.block != body or len(list(v.uses)) != 1:
            return None
        ptr, mask, other = ps.load_parts(owner.operation)
        if other is not None and not ps.is_zero(other):
            return None
        if not ps.copyable(ptr, mask, info):
            if pipeline_tma.tma_id(owner.operation) is None:
                return None
            copyable = False   # a tagged load: TMA copies it whatever its mask
        loads.append(owner.operation)
    found = ps.load_side(body, loads, forbidden=acc_index)
    if found is None:
        return None
    side, carried = found
    return _Plan(dot, (loads[0], loads[1]), acc_index, side, carried, b_trans,
                 tail[0] if tail else None, copyable)


def _wrap(v: ir.Value, stages: int) -> ir.Value:
    """`v` - S where v >= S, else v (for 0 <= v < 2S: a slot index; a mask
    where S is a power of two)."""
    if stages & (stages - 1) == 0:
        return arith.AndIOp(v, ps.i32(stages - 1)).result
    over = arith.CmpIOp(arith.CmpIPredicate.uge, v, ps.i32(stages)).result
    return arith.SelectOp(over, arith.SubIOp(v, ps.i32(stages)).result, v).result


def _issue(plan: _Plan, rings: tuple[ir.Value, ir.Value], slot: ir.Value, iv: ir.Value,
           ub: ir.Value, mapping: dict[ir.Value, ir.Value],
           bars: ir.Value | None = None) -> dict[ir.Value, ir.Value]:
    """Clone the load side at the current insertion point with `mapping`
    (induction variable and carried arguments of the iteration wanted), then
    copy both tiles into `slot` and commit (with `bars`: TMA copies completing
    on the slot's barrier).  Returns the extended mapping."""
    ps.clone_side(plan.side, mapping)
    if bars is not None:
        with plan.dot.location:
            live = arith.CmpIOp(arith.CmpIPredicate.slt, iv, ub).result
        pipeline_tma.issue(list(plan.loads), list(rings), bars, slot, live, mapping,
                           pipeline_tma.b_evict_first(plan.tail is not None))
        return mapping
    for load, ring in zip(plan.loads, rings):
        ptr, mask, _other = (mapping.get(v, v) if v is not None else None
                             for v in ps.load_parts(load))
        assert ptr is not None
        with load.location:
            live = arith.CmpIOp(arith.CmpIPredicate.slt, iv, ub).result
            tile_memory.async_copy(ring, slot, ptr, ps.live_mask(mask, ptr, live),
                                   loc=load.location)
    tile_memory.async_commit(loc=plan.dot.location)
    return mapping


def _lagged(kind: str, num_warps: int, stages: int, tma: bool, macs: int) -> bool:
    """Whether a cp.async ring read by several warpgroups' wgmma refills the
    slot of iteration j - 2 rather than j - 1 (`LAG_MIN_STAGES`)."""
    return kind == "wgmma" and num_warps > 4 and not tma and stages >= LAG_MIN_STAGES \
        and macs >= LAG_MIN_MACS


def _pipeline(for_op: ir.Operation, stages: int, num_warps: int, shared_bytes: int,
              info: axis_info.AxisInfoMap, has_tma: bool = False) -> bool:
    plan = _plan(for_op, info)
    if plan is None:
        multi = tile_pipeline_multi.plan(for_op, info)
        if multi is None:
            return False
        deferred = tile_pipeline_defer.deferred_dot(for_op, multi) if has_tma else None
        if deferred is not None and \
                tile_pipeline_defer.transform(for_op, multi, deferred, stages, shared_bytes):
            return True
        early = tile_pipeline_early.early_dots(for_op, multi, num_warps) if has_tma else []
        if early and tile_pipeline_early.transform(for_op, multi, early, stages, shared_bytes):
            return True
        return tile_pipeline_multi.transform(for_op, multi, stages, shared_bytes, has_tma)
    kind = ps.kind(plan.dot)
    use_tma = has_tma and kind in _ASYNC and pipeline_tma.all_tagged(list(plan.loads))
    if not (plan.copyable or use_tma):
        return False   # a load cp.async cannot copy, and no TMA copies for the pair
    pad = 16 if kind == "mma_sync" else 0   # bytes after each row (PaddedTile)
    per_stage = sum((axis_info.type_bytes(ld.results[0].type.element_type) *
                     ld.results[0].type.shape[1] + pad) * ld.results[0].type.shape[0]
                    for ld in plan.loads)
    # A flattened loop's epilogue runs while the rings hold the next tile's
    # blocks: its layout conversion's bytes come out of the rings' budget.
    extra = ps.conversion_bytes(plan.tail) if plan.tail is not None else 0
    fit = (shared_bytes - ps.RESERVED_SHARED - extra) // per_stage
    # A tagged store of the accumulator (or its cast) goes through a swizzled
    # buffer and TMA (pipeline_tma.store_plan); a flattened loop's buffer sits
    # beside the rings in place of the store's layout conversion, in column
    # passes where the whole tile's would cost a stage (fit_store).
    store = pipeline_tma.store_plan(_acc_readers(for_op, plan), num_warps) \
        if has_tma and kind == "wgmma" and pipeline_tma.wide(plan.dot, num_warps) else None
    if store is not None and plan.tail is not None:
        store, fit = pipeline_tma.fit_store(for_op, store, plan.tail, stages, per_stage,
                                            shared_bytes, fit)
    if fit < 2:
        return False
    if fit < stages:
        for_op.attributes["tile.num_stages_note"] = ir.StringAttr.get(
            f"num_stages={stages} needs {stages * per_stage} bytes of shared memory; "
            f"pipelined with {fit}")
        stages = fit
    body = for_op.regions[0].blocks[0]
    args = list(body.arguments)
    ub, step = list(for_op.operands)[1:3]
    a_t, b_t = (ld.results[0].type for ld in plan.loads)
    macs = a_t.shape[0] * b_t.shape[0] * b_t.shape[1]   # BM x (BK x BN)
    lag = _lagged(kind, num_warps, stages, use_tma, macs)
    ahead = stages - 2 if lag else stages - 1
    loc = for_op.location
    # With TMA, A's rows stay in order (one box, not one per 8-row block) where
    # the accumulator only chains products from a splat start: its rows are
    # then put in place once, after the loop (`tile.row_exchange`), or by the
    # TMA store as it writes its buffer.
    in_order = use_tma and kind == "wgmma" and \
        pipeline_tma.rows_in_order_ok(for_op, plan.acc_index, plan.dot, plan.tail)
    if in_order and plan.tail is not None and store is None:
        # In a flattened loop the exchange runs next to the rings.
        # (The exchange runs after the epilogue's cast where that is the
        # product's only reader besides the branch's yield: `_exchange_rows`.)
        cast = _cast_reader([u for u in plan.dot.results[0].uses
                             if not (isinstance(u.owner, ir.OpView) and
                                     u.owner.operation.name == "scf.yield")])
        eb = 4 if cast is None else \
            axis_info.type_bytes(ir.RankedTensorType(cast.results[0].type).element_type)
        need = stages * per_stage + max(extra, pipeline_tma.exchange_bytes(plan.dot, eb))
        in_order = need + ps.RESERVED_SHARED <= shared_bytes
    bars = empty = None
    with loc, ir.InsertionPoint(for_op):
        swizzle = ps.SWIZZLE if kind in _ASYNC else 0
        rings = (tile_memory.local_alloc(stages, a_t.shape, a_t.element_type, swizzle=swizzle,
                                         row_permutation="wgmma" if kind == "wgmma"
                                         and not in_order else "none",
                                         loc=loc),
                 tile_memory.local_alloc(stages, b_t.shape, b_t.element_type, swizzle=swizzle,
                                         row_permutation="none", loc=loc))
        cbuf = pipeline_tma.store_buffer(store, loc) \
            if store is not None and plan.tail is not None else None
        if use_tma:   # (and with B multicast to a cluster, its "slot is free" barriers)
            bars, empty = pipeline_cluster.barriers(list(plan.loads), kind, stages, loc)
        new_for = ps.prologue_loop(for_op, plan.carried, ahead,
                                   lambda slot, iv, m: _issue(plan, rings, slot, iv, ub, m, bars))
    new_body = new_for.body
    new_args = list(new_body.arguments)
    counter = new_args[-1]
    # With cp.async into wgmma or mma.sync the counter is the slot itself (it
    # wraps at S: a mask, or a compare and select, per iteration, where `j % S`
    # cost a multiply-high and put a multiply into every copy's destination).
    # TMA waits and tcgen05's product barriers need the phase: there it counts
    # iterations.
    wraps = bars is None and kind != "tcgen05"
    # A wgmma loop's TMA counter wraps at 2S: slot and phase by a compare and
    # select (no multiply-high per division by S, three of them per iteration).
    phased = bars is not None and kind == "wgmma"
    with loc, ir.InsertionPoint(new_body):
        if phased:
            slot = _wrap(counter, stages)
            first = pipeline_tma.wait_phased(bars, counter, slot, stages, loc)
        elif bars is not None:
            first = pipeline_tma.wait(bars, counter, stages, loc)
        else:
            tile_memory.async_wait(ahead - 1, loc=loc)
            first = tile.barrier(loc=loc)
        sentinel = scf.YieldOp([])
    prev = first
    for op in ps.ops(body):
        op.move_after(prev)
        prev = op
    sentinel.operation.erase()
    for old, new in zip(args, new_args[:-1]):
        old.replace_all_uses_with(new)
    dot = plan.dot
    with dot.location, ir.InsertionPoint(dot):
        s = ps.i32(stages)

        def refill_at() -> tuple[ir.Value, ir.Value, ps.Mapping]:
            """The slot, induction variable and mapping of iteration j + ahead."""
            write = _wrap(arith.AddIOp(counter, ps.i32(ahead)).result, stages) if wraps \
                else _wrap(arith.AddIOp(slot, ps.i32(ahead)).result, stages) if phased \
                else arith.RemUIOp(arith.AddIOp(counter, ps.i32(ahead)).result, s).result
            iv_w = arith.AddIOp(new_args[0], arith.MulIOp(step, ps.i32(ahead)).result).result
            return write, iv_w, {new_args[0]: iv_w,
                                 **{new_args[i + 1]: new_args[i + 1] for i in plan.carried}}
        if bars is not None:
            # The refill's coordinates and predicate (pure scalars) before the
            # product: they compute while the tensor cores work, and only the
            # expect and the copies follow the barrier (as Triton's loop does).
            write, iv_w, m = refill_at()
            ps.clone_side(plan.side, m)
            live = arith.CmpIOp(arith.CmpIPredicate.slt, iv_w, ub).result
        read = counter if wraps else slot if phased else arith.RemUIOp(counter, s).result
        started = tile_memory.mma(rings[0], read, rings[1], read, dot.operands[2], kind,
                                  loc=dot.location)
        if plan.b_trans is not None:
            started.owner.attributes["tile.b_kmajor"] = ir.UnitAttr.get()
        if "tile.mma_fp8" in dot.attributes:
            started.owner.attributes["tile.mma_fp8"] = dot.attributes["tile.mma_fp8"]
        done = started   # mma_sync: complete once issued
        if kind in _ASYNC:
            done = tile_memory.mma_wait(started, 1, loc=dot.location)
            # Several warpgroups share the slots; one thread issues the TMA
            # copies for all of them: every warp must be done with the slot
            # (per-warp "empty" barriers, as the multi-dot pipeliner has,
            # measured 3-8% slower on the H200: the results README).
            if (num_warps > 4 or bars is not None) and kind == "wgmma" and not lag:
                tile.barrier(loc=dot.location)
        if bars is not None:
            pipeline_cluster.release(empty, write, counter, new_args[0], new_for.operands[0],
                                     live, stages, dot.location)
            pipeline_tma.issue(list(plan.loads), list(rings), bars, write, live, m,
                               pipeline_tma.b_evict_first(plan.tail is not None))
        else:
            write, iv_w, m = refill_at()
            m = _issue(plan, rings, write, iv_w, ub, m)
    dot.results[0].replace_all_uses_with(done)
    if plan.tail is not None:
        _finish_tile(plan.tail, done, kind, in_order, store, cbuf)
    pipeline_tma.drop_hints(list(plan.loads))
    dot.erase()
    if plan.b_trans is not None:
        plan.b_trans.erase()
    for ld in plan.loads:
        ld.erase()
    old_yield = ps.ops(new_body)[-1]
    outs = list(old_yield.operands)
    with loc, ir.InsertionPoint(old_yield):
        nxt = arith.AddIOp(counter, ps.i32(1)).result
        if wraps or phased:
            nxt = _wrap(nxt, 2 * stages if phased else stages)
        scf.YieldOp([m.get(v, v) if i in plan.carried else v for i, v in enumerate(outs)] +
                    [nxt])
    old_yield.erase()
    ps.dce(new_body)
    for old, new in zip(for_op.results, list(new_for.results)[:-1]):
        old.replace_all_uses_with(new)
    acc_out = new_for.results[plan.acc_index]
    uses = [u for u in acc_out.uses]
    with loc, ir.InsertionPoint.after(new_for.operation) if hasattr(
            ir.InsertionPoint, "after") else ir.InsertionPoint(ps.next_op(new_for.operation)):
        # A flattened loop's products were waited for in its epilogue branch,
        # but the wait stays: with a product in flight on the loop's exit path
        # (as far as ptxas can tell), ptxas waits for it in every iteration
        # (C7517).  tcgen05 reads the accumulator out of TMEM here and
        # invalidates the product barriers.
        final = tile_memory.mma_wait(acc_out, 0, loc=loc) if kind in _ASYNC else acc_out
        if bars is None:
            tile_memory.async_wait(0, loc=loc)
        if cbuf is not None:   # the last tile's store has read its buffer
            tile_memory.tma_store_wait(loc=loc)
        tile.barrier(loc=loc)
        if bars is not None:   # (and a multicast ring's cluster barrier)
            pipeline_cluster.finish(empty, bars, loc)
        if cbuf is not None:
            tile_memory.local_dealloc(cbuf, loc=loc)
        tile_memory.local_dealloc(rings[1], loc=loc)
        tile_memory.local_dealloc(rings[0], loc=loc)
    for u in uses:
        u.owner.operands[u.operand_number] = final
    if store is not None and plan.tail is None:
        pipeline_tma.store_through_tma(store, "wgmma" if in_order else "none", None)
    elif in_order and plan.tail is None:
        _exchange_rows(final, loc)
    block = for_op.block
    for_op.erase()
    if bars is not None:   # the prologue's clones of the pointer arithmetic are dead
        ps.dce(block)
    return True


def _acc_readers(for_op: ir.Operation, plan: _Plan) -> list[ir.OpOperand]:
    """What reads the accumulator's final value: in a flattened loop the
    product's readers in the epilogue branch (not the yields), else the
    loop result's readers."""
    v = plan.dot.results[0] if plan.tail is not None else for_op.results[plan.acc_index]
    return [u for u in v.uses if not (isinstance(u.owner, ir.OpView) and
                                      u.owner.operation.name == "scf.yield")]


def _finish_tile(tail: ir.Operation, done: ir.Value, kind: str, in_order: bool,
                 store: pipeline_tma.StorePlan | None = None,
                 cbuf: ir.Value | None = None) -> None:
    """In a flattened loop's epilogue branch: the tile's last product waited
    for (`mma_wait {pending = 0}`; rows put in place where A's ring keeps
    them in order, by the TMA store where there is one) before the epilogue
    reads it."""
    if kind not in _ASYNC:
        return
    then = tail.regions[0].blocks[0]
    inside = set(ps.region_ops(tail)) - set(ps.ops(tail.regions[1].blocks[0]))
    uses = [(u.owner, u.operand_number) for u in done.uses
            if (u.owner.operation if isinstance(u.owner, ir.OpView) else u.owner) in inside]
    with tail.location, ir.InsertionPoint(ps.ops(then)[0]):
        final = tile_memory.mma_wait(done, 0, loc=tail.location)
    for owner, i in uses:
        owner.operands[i] = final
    if store is not None:
        pipeline_tma.store_through_tma(store, "wgmma" if in_order else "none", cbuf)
    elif in_order:
        _exchange_rows(final, tail.location)


def _cast_reader(uses: list[ir.OpOperand]) -> ir.Operation | None:
    """The `arith.truncf` that is the only reader in `uses` (the epilogue's
    `acc.to(tl.float16)`), or None."""
    if len(uses) == 1 and isinstance(uses[0].owner, ir.OpView) and \
            uses[0].owner.operation.name == "arith.truncf":
        return uses[0].owner.operation
    return None


def _exchange_rows(acc: ir.Value, loc: ir.Location) -> None:
    """Put the accumulator's rows in place (`tile.row_exchange`) for its
    readers: after the cast that is its only reader where there is one (an
    elementwise op keeps rows where they are, and f16 rows move half the
    bytes through workgroup memory: what lets a 128 x 256 exchange sit beside
    a flattened loop's rings), else before `acc`'s first reader (after the
    rings' release: an f32 exchange may take their bytes)."""
    cast = _cast_reader(list(acc.uses))
    v = acc if cast is None else cast.results[0]
    owner = v.owner
    assert isinstance(owner, ir.OpView)
    users = [(u.owner, u.operand_number) for u in v.uses]
    at = ps.first_reader(v) if cast is None else None
    with loc, ir.InsertionPoint(at or ps.next_op(owner.operation)):
        placed = tile_memory.row_exchange(v, loc=loc)
    for user, i in users:
        user.operands[i] = placed


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    with module.context:
        # One analysis per kernel: a loop that qualifies holds no region, so
        # pipelining it adds no value a later (enclosing) candidate inspects.
        infos: dict[ir.Operation, axis_info.AxisInfoMap] = {}
        staged = ps.staged_loops(module, options.num_stages)
        # A persistent kernel's outer loop may be rebuilt by the schedule of
        # the loop inside it (pipeline_persistent.persistent_outer): it is
        # left out (it holds a loop: no schedule takes it).
        outers = [o for _, op, _ in staged if (o := pipeline_persistent.persistent_outer(op))
                  is not None]
        for func, op, stages in staged:
            if any(op == o for o in outers):
                continue
            if func not in infos:
                infos[func] = axis_info.analyze(func)
            _pipeline(op, stages, options.num_warps, target.shared_bytes, infos[func],
                      target.has(Feature.TMA))
