"""`tile-warp-specialize`: a producer warpgroup issues the TMA copies of a
pipelined loop written `tl.range(..., warp_specialize=True)`; the kernel's
`num_warps` warps only wait for the copies and compute (FlashAttention-3's
and Triton's producer/consumer split).

Why: in the loop `tile-pipeline` builds for TMA rings, the elected lane of
warp 0 waits for a free slot (`tile.mbarrier_wait {tile.one_thread}`) and
issues the next copies in the middle of the consumers' work: that warp, and
with it its warpgroup's wgmma, stalls whenever the ring is full, and the
issue's address and barrier arithmetic sits in the consumers' instruction
stream and registers.  A producer that does nothing else runs as far ahead as
the ring allows, and the consumers' registers grow (`setmaxnreg`).

Input: tiled IR after `tile-pipeline`, on a target with
`Feature.WARP_SPECIALIZE`, `num_warps` a multiple of 4.  A loop qualifies when
  * it has `tile.warp_specialize`, sits directly in the kernel's body, and
    its bounds do not say it runs at most once (a remainder or causal-diagonal
    loop: nothing to overlap);
  * its body has exactly one producer wait (`tile.mbarrier_wait
    {tile.one_thread}`) and TMA issues (`tile.tma_expect` / `tile.tma_copy`)
    on one "full" barrier, and no cp.async copies;
  * what the wait and the issues compute from (their backward slice in the
    body) is pure scalar arithmetic of the induction variable, the slot
    counter (the loop's last carried value) and values from before the loop;
  * it has no early products (tile_pipeline_early, two copy segments)
    narrower than 128 columns (with a producer, compute-sanitizer synccheck
    reported a missing mbarrier wait on 128 x 64 key blocks; not root-caused,
    and the default never makes them);
  * every op before the loop that stays where all warps run it (allocations,
    pure scalar arithmetic, the prologue's TMA issues, which only the elected
    lane of warp 0 executes) depends on no op that moves to the consumers.
Output:
    [allocations, scalar arithmetic, prologue TMA issues: every warp]
    %p = tile.producer_role {warps = 4}
    scf.if %p {                                  // tile.warp_roles
      scf.for (the loop's bounds, the counter)   // tile.producer
        { scf.if (the copies are live) { the producer wait, the expect,
                                         the copies } }
    } else {
      [the other ops before the loop]
      the loop without its wait and issues
      [the rest of the kernel]
    }
    return
A persistent kernel (a hinted loop nested in one outer `scf.for` of the
kernel's body that tile-pipeline's deferred schedule rebuilt, `tile.persistent
= n`: the outer loop carries n load indices last; passes/tile_pipeline_defer.py,
"Persistent kernels") is split around the outer loop when the inner loop
qualifies as above and what the producer needs in the outer body (the
`tile.producer_issue` branches, the inner loop's bounds and counter, its
copies' operands, the next values of the n indices) is pure scalar
arithmetic of the outer index, the n indices and values from before it:
    scf.if %p {
      scf.for (the outer bounds, the n indices) {   // tile.producer
        [that scalar arithmetic, the per-tile issues (Q, the prologue fills,
         the peeled iteration's refill), each waiting for its free slot]
        scf.for (the inner loop's bounds, its counter) { ...as above }
        yield (the next indices)
      }
    } else { [the ops before], the outer loop without the per-tile issues,
             [the rest] }
Both sides compute the indices from the same scalar arithmetic, so the
producer's tile t issues exactly the loads the consumers' tile t waits for.
The kernel gets `tile.producer_warps = 4`: it runs with num_warps + 4 warps.
At most one loop per kernel is split; other loops of the kernel drop the hint
and get `tile.warp_specialize_note`.  A loop that does not qualify keeps its
schedule (and may take warpgroup turns, passes/tile_pingpong.py) and gets the
note with the reason.

Deadlock freedom: the producer waits only on "empty" barriers (in a
persistent kernel also the Q ring's), which the
consumers complete after reading the slot's previous fill; the consumers wait
only on "full" barriers the producer's copies complete, and on named barriers
among themselves (targets/nvidia/warp_specialize.py): no wait of either side
needs the other side to pass a later wait first.

Nearest upstream analogue: Triton's `tritongpu-warp-specialize` (a
`ttg.warp_specialize` op whose partitions run on their own warps) and
CUTLASS's `PipelineTmaAsync` producer/consumer warpgroups.
"""
from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import arith, scf

from tilec.dialects import tile_memory
from tilec.options import CompileOptions
from tilec.passes import pipeline_support as ps
from tilec.passes.pipeline_persistent import ISSUE, PERSISTENT
from tilec.passes.tile_pipeline_early import at_most_one_trip
from tilec.targets import Feature, Target

NAME = "tile-warp-specialize"

PRODUCER_WARPS = 4      # one warpgroup: `setmaxnreg` acts per warpgroup
_MAX_WARPS = 32         # 1024 threads per block
# Loops with early products (two copy segments) of narrower products are not
# split (see `_reason`; the default never makes them: tile_pipeline_early).
_MIN_EARLY_COLUMNS = 128
_ISSUES = ("tile.tma_expect", "tile.tma_copy")
_ROOTS = ("tile.mbarrier_wait",) + _ISSUES
_COMMON = ("tile.local_alloc", "tile.mbarrier_alloc", "tile.tma_coords") + _ISSUES
_SCALAR_PURE = ("tile.program_id", "tile.num_programs")


def _scalar_pure(op: ir.Operation) -> bool:
    """Pure and scalar: safe for the producer's threads to compute."""
    if len(op.regions) or any(isinstance(r.type, ir.RankedTensorType) for r in op.results):
        return False
    return op.name.startswith(ps.PURE_PREFIXES) or op.name in _SCALAR_PURE


def _segments(body: ir.Block) -> list[list[ir.Operation]] | None:
    """The body's producer waits (`tile.mbarrier_wait {tile.one_thread}`),
    each with the TMA issues that follow it up to the next wait, all on one
    full barrier; None when an issue comes before every wait, a segment has
    no expect or its issues use two barriers."""
    out: list[list[ir.Operation]] = []
    for op in ps.ops(body):
        if op.name == "tile.mbarrier_wait" and "tile.one_thread" in op.attributes:
            out.append([op])
        elif op.name in _ISSUES:
            if not out:
                return None
            out[-1].append(op)
    for seg in out:
        issues = seg[1:]
        full = {op.operands[2] if op.name == "tile.tma_copy" else op.operands[0] for op in issues}
        if len(full) != 1 or issues[0].name != "tile.tma_expect":
            return None
    return out


def _slice(roots: list[ir.Operation], body: ir.Block) -> list[ir.Operation] | None:
    """The ops of `body` that `roots` compute from (roots included), in body
    order; None when one of them is not pure scalar arithmetic."""
    order = ps.ops(body)
    keep = [False] * len(order)
    work = [i for i, o in enumerate(order) if any(o == r for r in roots)]
    while work:
        i = work.pop()
        if keep[i]:
            continue
        keep[i] = True
        op = order[i]
        if not any(op == r for r in roots) and not _scalar_pure(op):
            return None
        for v in op.operands:
            d = ps.defining_op(v)
            if d is not None and d.block == body:
                work.extend(j for j, o in enumerate(order) if o == d)
    return [o for i, o in enumerate(order) if keep[i]]


def _reason(loop: ir.Operation, num_warps: int) -> tuple[str | None, list[ir.Operation]]:
    """Why `loop` cannot be split (None if it can) and the producer's ops."""
    if num_warps % PRODUCER_WARPS or num_warps + PRODUCER_WARPS > _MAX_WARPS:
        return (f"a producer warpgroup needs num_warps a multiple of {PRODUCER_WARPS} and at "
                f"most {_MAX_WARPS - PRODUCER_WARPS}"), []
    if at_most_one_trip(loop):
        return "the loop runs at most once (a remainder or diagonal block): nothing to overlap", []
    body = loop.regions[0].blocks[0]
    order = ps.ops(body)
    if any(op.name == "tile.async_copy" for op in order):
        return "the loop's copies are cp.async, not TMA", []
    segments = _segments(body)
    if segments is None:
        return "the loop's copies are not issued after a wait for a free slot", []
    if not segments:
        return "the loop has no TMA ring (tile-pipeline did not pipeline it with TMA)", []
    if len(segments) > 1 and any(ir.RankedTensorType(op.results[0].type).shape[-1] <
                                 _MIN_EARLY_COLUMNS for op in order if op.name == "tile.mma"):
        return ("early products (tile-pipeline's overlap_dots) of fewer than "
                f"{_MIN_EARLY_COLUMNS} columns keep the consumers' copies: with a producer, "
                "compute-sanitizer synccheck reported a missing mbarrier wait there"), []
    roots = [op for seg in segments for op in seg]
    group = _slice(roots, body)
    if group is None:
        return "the copies' coordinates are not scalar arithmetic of the loop's index", []
    args = list(body.arguments)
    allowed = {args[0], args[-1]}
    for op in group:
        for v in op.operands:
            if isinstance(v, ir.BlockArgument) and v.owner == body and v not in allowed:
                return "the copies depend on a value carried by the loop", []
    return None, group


def _moving(entry: ir.Block, loop: ir.Operation, group: list[ir.Operation],
            needed: list[ir.Value] | None = None) -> list[ir.Operation] | None:
    """The ops before `loop` that move to the consumers (the others stay where
    every warp runs them); None when the loop's bounds or the producer's ops
    use a moving one."""
    move: list[ir.Operation] = []
    effects = False

    def moved(v: ir.Value) -> bool:
        d = ps.defining_op(v)
        return d is not None and d.block == entry and any(d == m for m in move)

    for op in ps.ops(entry):
        if op == loop:
            break
        if any(moved(v) for v in op.operands):
            move.append(op)
        elif not (_scalar_pure(op) or (op.name in _COMMON and
                                       not (effects and op.name in _ISSUES))):
            # (a copy issued after a moved op with effects keeps its place after it)
            move.append(op)
            effects = effects or not ps.pure(op)
    if needed is None:
        needed = list(loop.operands)[:3] + [list(loop.operands)[-1]]
        needed += [v for op in group for v in op.operands]
    if any(moved(v) for v in needed):
        return None
    return move


def _producer_loop(loop: ir.Operation, group: list[ir.Operation]) -> ir.Operation:
    """At the current insertion point: a loop over `loop`'s bounds that
    carries only the slot counter and runs `group` (cloned)."""
    lb, ub, step = list(loop.operands)[:3]
    counter0 = list(loop.operands)[-1]
    body = loop.regions[0].blocks[0]
    args = list(body.arguments)
    with loop.location:
        new = scf.ForOp(lb, ub, step, [counter0])
        new.operation.attributes["tile.producer"] = ir.UnitAttr.get()
        with ir.InsertionPoint(new.body):
            mapping: ps.Mapping = {args[0]: new.induction_variable,
                                   args[-1]: new.inner_iter_args[0]}
            ps.clone_side([op for op in group if op.name not in _ROOTS], mapping)
            # Only the iterations whose copies exist wait: a wait for a slot
            # that no copy refills could still spin when the consumers, done,
            # invalidate the barriers.
            for seg in _segments(body) or []:
                live = mapping.get(seg[1].operands[2], seg[1].operands[2])
                issue = scf.IfOp(live)
                with ir.InsertionPoint(issue.then_block):
                    ps.clone_side(seg, mapping)
                    scf.YieldOp([])
            nxt = arith.AddIOp(new.inner_iter_args[0], ps.i32(1)).result
            scf.YieldOp([nxt])
    return new.operation


def _roles(func: ir.Operation, at: ir.Operation, producer: Callable[[], None],
           move: list[ir.Operation]) -> None:
    """At `at` (an op of the kernel's body): `%p = tile.producer_role`, and
    `scf.if %p` whose then block `producer()` fills and whose else block (the
    consumers) takes `move`, `at` and the rest of the body before its return."""
    entry = func.regions[0].blocks[0]
    ret = ps.ops(entry)[-1]
    after = [op for op in ps.ops(entry)[ps.ops(entry).index(at) + 1:] if op != ret]
    loc = at.location
    with loc, ir.InsertionPoint(at):
        role = tile_memory.producer_role(PRODUCER_WARPS, loc=loc)
        split = scf.IfOp(role, [], has_else=True)
    split.operation.attributes["tile.warp_roles"] = ir.UnitAttr.get()
    with loc, ir.InsertionPoint(split.then_block):
        producer()
        scf.YieldOp([])
    with ir.InsertionPoint(split.else_block):
        sentinel = scf.YieldOp([])
    for op in move + [at] + after:
        op.move_before(sentinel.operation)


def _consumers_only(func: ir.Operation, loop: ir.Operation, group: list[ir.Operation]) -> None:
    """The consumers' `loop` no longer waits for free slots nor issues copies;
    the loop and the kernel are marked split."""
    for op in reversed(group):
        if op.name in _ROOTS:
            op.erase()
    ps.dce(loop.regions[0].blocks[0])
    del loop.attributes["tile.warp_specialize"]
    loop.attributes["tile.warp_specialized"] = ir.UnitAttr.get()
    func.attributes["tile.producer_warps"] = ir.IntegerAttr.get(
        ir.IntegerType.get_signless(32), PRODUCER_WARPS)


def _split(func: ir.Operation, loop: ir.Operation, group: list[ir.Operation],
           move: list[ir.Operation]) -> None:
    def producer() -> None:
        _producer_loop(loop, group)
    _roles(func, loop, producer, move)
    _consumers_only(func, loop, group)


def _persistent_slice(outer: ir.Operation, inner: ir.Operation, group: list[ir.Operation]
                      ) -> tuple[list[ir.Operation], list[ir.Value]] | None:
    """For a loop nested in a persistent kernel's outer loop: the ops of the
    outer body the producer runs (the per-tile issues `tile.producer_issue`
    and the pure scalar arithmetic they, the inner loop's bounds and copies,
    and the carried load indices' next values compute from), in body order,
    and the values from before the outer loop they read; None when one of
    them is not pure scalar arithmetic or reads another carried value."""
    body = outer.regions[0].blocks[0]
    order = ps.ops(body)
    n = int(ir.IntegerAttr(outer.attributes[PERSISTENT]).value)
    args = list(body.arguments)
    allowed = {args[0], *args[-n:]}
    issues = [op for op in order if ISSUE in op.attributes]
    wanted = [v for op in issues for v in ps.outer_operands(op)]
    wanted += list(inner.operands)[:3] + [list(inner.operands)[-1]]
    wanted += [v for op in group for v in op.operands]
    wanted += list(order[-1].operands)[-n:]
    keep = set(issues)
    outside: list[ir.Value] = []
    work = list(wanted)
    while work:
        v = work.pop()
        if isinstance(v.owner, ir.Block):
            if v.owner == body:
                if v not in allowed:
                    return None
            elif v.owner == inner.regions[0].blocks[0]:
                continue
            else:
                outside.append(v)
            continue
        d = v.owner.operation
        if d.block != body:
            if d.parent is not None and d.block != inner.regions[0].blocks[0]:
                outside.append(v)
            continue
        if d in keep:
            continue
        if not _scalar_pure(d):
            return None
        keep.add(d)
        work.extend(d.operands)
    return [op for op in order if op in keep], outside


def _split_persistent(func: ir.Operation, outer: ir.Operation, inner: ir.Operation,
                      group: list[ir.Operation], producer: list[ir.Operation],
                      move: list[ir.Operation]) -> None:
    """`_split` for a loop nested in a persistent kernel's outer loop: the
    producer branch runs a clone of the outer loop (carrying the load
    indices only) with `producer` (the per-tile issues and their scalar
    arithmetic) and, where the inner loop was, the producer loop; the
    consumers keep the outer loop without the per-tile issues."""
    body, args, lb, ub, step, inits = ps.loop_parts(outer)
    n = int(ir.IntegerAttr(outer.attributes[PERSISTENT]).value)

    def clone_outer() -> None:
        clone = scf.ForOp(lb, ub, step, inits[-n:])
        clone.operation.attributes["tile.producer"] = ir.UnitAttr.get()
        mapping: ps.Mapping = {args[0]: clone.induction_variable,
                               **{a: c for a, c in zip(args[-n:], clone.inner_iter_args)}}
        with ir.InsertionPoint(clone.body):
            for op in ps.ops(body):
                if op == inner:
                    ps.remap([_producer_loop(inner, group)], mapping)
                elif any(op == x for x in producer):
                    ps.clone_side([op], mapping)
            scf.YieldOp([mapping.get(v, v) for v in list(ps.ops(body)[-1].operands)[-n:]])
    _roles(func, outer, clone_outer, move)
    for op in ps.ops(body):
        if ISSUE in op.attributes:
            op.erase()
    _consumers_only(func, inner, group)
    ps.dce(body)


def _try_persistent(func: ir.Operation, inner: ir.Operation, num_warps: int) -> str | None:
    """Split a hinted loop nested in a persistent outer loop; the reason when not."""
    outer_op = inner.parent
    outer = outer_op.operation if isinstance(outer_op, ir.OpView) else outer_op
    why, group = _reason(inner, num_warps)
    if why is not None:
        return why
    found = _persistent_slice(outer, inner, group)
    if found is None:
        return ("the per-tile copies of the persistent loop use a value that is not scalar "
                "arithmetic of its index and load indices")
    producer, outside = found
    needed = list(outer.operands) + outside
    move = _moving(func.regions[0].blocks[0], outer, group, needed)
    if move is None:
        return "the persistent loop's bounds or copies use a value computed only by the consumers"
    _split_persistent(func, outer, inner, group, producer, move)
    return None


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    if not target.has(Feature.WARP_SPECIALIZE):
        return
    with module.context:
        for f, hinted in ps.hinted_kernel_loops(module, "tile.warp_specialize"):
            entry = f.regions[0].blocks[0]
            done = False
            for op in hinted:
                if done:
                    continue
                why, group = _reason(op, options.num_warps)
                move = _moving(entry, op, group) if why is None else None
                if move is None:
                    op.attributes["tile.warp_specialize_note"] = ir.StringAttr.get(
                        why or "the loop's bounds or copies use a value computed only by the "
                        "consumer warps")
                    continue
                _split(f, op, group, move)
                done = True
            if not done:   # a persistent kernel's loop (pipeline_persistent.persistent_outer)
                for outer in [op for op in ps.ops(entry)
                              if op.name == "scf.for" and PERSISTENT in op.attributes]:
                    inner = [op for op in ps.ops(outer.regions[0].blocks[0])
                             if op.name == "scf.for" and "tile.warp_specialize" in op.attributes]
                    if done or len(inner) != 1:
                        continue
                    why = _try_persistent(f, inner[0], options.num_warps)
                    if why is not None:
                        inner[0].attributes["tile.warp_specialize_note"] = ir.StringAttr.get(why)
                    else:
                        done = True
            if done:
                for loop in ps.loops(f):
                    if "tile.warp_specialize" in loop.attributes:
                        del loop.attributes["tile.warp_specialize"]
                        loop.attributes["tile.warp_specialize_note"] = ir.StringAttr.get(
                            "one loop per kernel gets a producer warpgroup; this loop's copies "
                            "are issued by the consumer warps")
