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
  * it has `tile.warp_specialize`, sits directly in the kernel's body or in
    a branch of a result-less `scf.if` there (the guard tile-flatten-loops
    puts around a flattened persistent loop) after ops every warp may run,
    and its bounds do not say it runs at most once (a remainder or
    causal-diagonal loop: nothing to overlap);
  * its body has exactly one producer wait (`tile.mbarrier_wait
    {tile.one_thread}`) and TMA issues (`tile.tma_expect` / `tile.tma_copy`)
    on one "full" barrier, and no cp.async copies;
  * what the wait and the issues compute from (their backward slice in the
    body) is pure scalar arithmetic (and `scf.if`s of it) of the induction
    variable, values from before the loop and iteration arguments whose
    yielded values are such arithmetic in turn: the slot counter, and in a
    flattened loop the next tile's coordinates (the recurrence
    tile-flatten-loops carries);
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
      scf.for (the loop's bounds; the counter and the other iteration
               arguments the copies compute from)  // tile.producer
        { [what the copies read]
          scf.if (the copies are live) { the producer wait, the expect,
                                         the copies }
          [the carried values' updates] }
    } else {
      [the other ops before the loop]
      the loop without its wait and issues (it keeps its own recurrences)
      [the rest of the block]
    }
    return (or the guard's yield)
In a guard, the guard's other branch and the kernel's ops after the guard
go into the consumers' branch of a split of their own, whose producer
branch is empty (no `setmaxnreg`: they only keep the producer's warps out of
code distributed over the consumers' threads).  The consumers keep every op
of the epilogue (a flattened loop's TMA store): the producer runs ahead into
the next tile's blocks while they store.
The kernel gets `tile.producer_warps = 4`: it runs with num_warps + 4 warps.
At most one loop per kernel is split; other loops of the kernel drop the hint
and get `tile.warp_specialize_note`.  A loop that does not qualify keeps its
schedule (and may take warpgroup turns, passes/tile_pingpong.py) and gets the
note with the reason.

Deadlock freedom: the producer waits only on "empty" barriers, which the
consumers complete after reading the slot's previous fill; the consumers wait
only on "full" barriers the producer's copies complete, and on named barriers
among themselves (targets/nvidia/warp_specialize.py): no wait of either side
needs the other side to pass a later wait first.

Nearest upstream analogue: Triton's `tritongpu-warp-specialize` (a
`ttg.warp_specialize` op whose partitions run on their own warps) and
CUTLASS's `PipelineTmaAsync` producer/consumer warpgroups.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, scf

from tilec.dialects import tile_memory
from tilec.options import CompileOptions
from tilec.passes import pipeline_support as ps
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


def _owner(v: ir.Value) -> ir.Operation | None:
    o = v.owner
    return o.operation if isinstance(o, ir.OpView) else None


def _scalar_pure(op: ir.Operation) -> bool:
    """Pure and scalar: safe for the producer's threads to compute (a
    flattened loop's per-tile coordinates are `scf.if`s of such ops)."""
    if any(isinstance(r.type, ir.RankedTensorType) for r in op.results):
        return False
    if len(op.regions):
        return ps.pure_if(op) and all(_scalar_pure(inner) for inner in ps.region_ops(op)
                                      if inner.name != "scf.yield")
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


def _slice(roots: list[ir.Operation], body: ir.Block
           ) -> tuple[list[ir.Operation], list[int]] | None:
    """(the ops of `body` that `roots` compute from, roots included, in body
    order; the iteration arguments they carry, as indices into the body's
    arguments): an argument read by the slice brings in the slice of the
    value the loop yields for it (the slot counter, a flattened loop's
    per-tile coordinates).  None when an op of the slice, other than a root,
    is not pure scalar arithmetic, or a carried argument is a tensor."""
    order = ps.ops(body)
    args = list(body.arguments)
    yld = order[-1]
    index = {op: i for i, op in enumerate(order)}
    keep = [False] * len(order)
    carried: set[int] = set()
    work = [index[r] for r in roots]
    values: list[ir.Value] = []
    while work or values:
        while values:
            v = values.pop()
            if isinstance(v, ir.BlockArgument):
                if v.owner == body and v.arg_number > 0 and v.arg_number not in carried:
                    if isinstance(v.type, ir.RankedTensorType):
                        return None
                    carried.add(v.arg_number)
                    values.append(yld.operands[v.arg_number - 1])
                continue
            d = _owner(v)
            if d is not None and d.block == body:
                work.append(index[d])
        i = work.pop() if work else None
        if i is None or keep[i]:
            continue
        keep[i] = True
        op = order[i]
        if not any(op == r for r in roots) and not _scalar_pure(op):
            return None
        values.extend(ps.outer_operands(op))
    return [o for i, o in enumerate(order) if keep[i]], sorted(carried)


_Producer = tuple[list[ir.Operation], list[int]]   # the producer's ops, its carried arguments


def _reason(loop: ir.Operation, num_warps: int) -> str | _Producer:
    """Why `loop` cannot be split, or the producer's ops and the iteration
    arguments they carry (`_slice`)."""
    if num_warps % PRODUCER_WARPS or num_warps + PRODUCER_WARPS > _MAX_WARPS:
        return (f"a producer warpgroup needs num_warps a multiple of {PRODUCER_WARPS} and at "
                f"most {_MAX_WARPS - PRODUCER_WARPS}")
    if at_most_one_trip(loop):
        return "the loop runs at most once (a remainder or diagonal block): nothing to overlap"
    body = loop.regions[0].blocks[0]
    order = ps.ops(body)
    if any(op.name == "tile.async_copy" for op in order):
        return "the loop's copies are cp.async, not TMA"
    segments = _segments(body)
    if segments is None:
        return "the loop's copies are not issued after a wait for a free slot"
    if not segments:
        return "the loop has no TMA ring (tile-pipeline did not pipeline it with TMA)"
    if len(segments) > 1 and any(ir.RankedTensorType(op.results[0].type).shape[-1] <
                                 _MIN_EARLY_COLUMNS for op in order if op.name == "tile.mma"):
        return ("early products (tile-pipeline's overlap_dots) of fewer than "
                f"{_MIN_EARLY_COLUMNS} columns keep the consumers' copies: with a producer, "
                "compute-sanitizer synccheck reported a missing mbarrier wait there")
    found = _slice([op for seg in segments for op in seg], body)
    if found is None:
        return ("the copies' coordinates are not scalar arithmetic of the loop's index and "
                "of values the loop carries by scalar arithmetic")
    return found


def _all_warps(op: ir.Operation) -> bool:
    """An op outside the split that every warp, the producer's too, may run
    (a constant: a tensor one is a splat, no thread's position in it)."""
    return _scalar_pure(op) or op.name in _COMMON or op.name == "arith.constant"


def _moving(block: ir.Block, loop: ir.Operation, producer: _Producer
            ) -> list[ir.Operation] | None:
    """The ops before `loop` in its block that move to the consumers (the
    others stay where every warp runs them); None when the loop's bounds or
    the producer's ops (its carried arguments' initial values included) use
    a moving one."""
    move: list[ir.Operation] = []
    effects = False

    def moved(v: ir.Value) -> bool:
        d = _owner(v)
        return d is not None and d.block == block and any(d == m for m in move)

    for op in ps.ops(block):
        if op == loop:
            break
        if any(moved(v) for v in ps.outer_operands(op)):
            move.append(op)
        elif not (_scalar_pure(op) or (op.name in _COMMON and
                                       not (effects and op.name in _ISSUES))):
            # (a copy issued after a moved op with effects keeps its place after it)
            move.append(op)
            effects = effects or not ps.pure(op)
    group, carried = producer
    operands = list(loop.operands)
    needed = operands[:3] + [operands[2 + i] for i in carried]
    needed += [v for op in group for v in ps.outer_operands(op)]
    if any(moved(v) for v in needed):
        return None
    return move


def _producer_loop(loop: ir.Operation, producer: _Producer) -> None:
    """At the current insertion point: a loop over `loop`'s bounds that
    carries the iteration arguments the copies compute from (the slot
    counter; a flattened loop's next-tile coordinates) and runs the
    producer's ops (cloned): the scalar arithmetic (what the waits and copies
    read, the carried values' updates), then the guarded waits and copies."""
    group, carried = producer
    lb, ub, step = list(loop.operands)[:3]
    body = loop.regions[0].blocks[0]
    args = list(body.arguments)
    with loop.location:
        new = scf.ForOp(lb, ub, step, [list(loop.operands)[2 + i] for i in carried])
        new.operation.attributes["tile.producer"] = ir.UnitAttr.get()
        with ir.InsertionPoint(new.body):
            mapping: ps.Mapping = {args[0]: new.induction_variable}
            mapping.update({args[i]: a for i, a in zip(carried, new.inner_iter_args)})
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
            yld = ps.ops(body)[-1]
            scf.YieldOp([mapping.get(yld.operands[i - 1], yld.operands[i - 1])
                         for i in carried])


def _roles(before: ir.Operation) -> tuple[scf.IfOp, ir.Operation]:
    """Before `before`: `scf.if producer_role {} else {}` (`tile.warp_roles`);
    returns it and the else block's terminator."""
    loc = before.location
    with loc, ir.InsertionPoint(before):
        role = tile_memory.producer_role(PRODUCER_WARPS, loc=loc)
        split = scf.IfOp(role, [], has_else=True)
    split.operation.attributes["tile.warp_roles"] = ir.UnitAttr.get()
    with ir.InsertionPoint(split.else_block):
        sentinel = scf.YieldOp([])
    return split, sentinel.operation


def _consumers_only(ops: list[ir.Operation]) -> None:
    """Move `ops` (consecutive) into the consumers' branch of a split whose
    producer branch is empty (a flattened loop's zero-K branch)."""
    if not ops:
        return
    split, sentinel = _roles(ops[0])
    with ir.InsertionPoint(split.then_block):
        scf.YieldOp([])
    for op in ops:
        op.move_before(sentinel)


def _split(func: ir.Operation, loop: ir.Operation, producer: _Producer,
           move: list[ir.Operation]) -> None:
    block = loop.block
    order = ps.ops(block)
    after = order[order.index(loop) + 1:-1]
    split, sentinel = _roles(loop)
    with ir.InsertionPoint(split.then_block):
        _producer_loop(loop, producer)
        scf.YieldOp([])
    for op in move + [loop] + after:
        op.move_before(sentinel)
    # The consumers' loop no longer waits for free slots nor issues copies.
    for op in reversed(producer[0]):
        if op.name in _ROOTS:
            op.erase()
    ps.dce(loop.regions[0].blocks[0])
    del loop.attributes["tile.warp_specialize"]
    loop.attributes["tile.warp_specialized"] = ir.UnitAttr.get()
    func.attributes["tile.producer_warps"] = ir.IntegerAttr.get(
        ir.IntegerType.get_signless(32), PRODUCER_WARPS)
    guard = block.owner.operation if isinstance(block.owner, ir.OpView) else block.owner
    if guard != func:   # a guard `scf.if` in the kernel's body: its else branch, what follows
        for region in guard.regions:
            if region.blocks[0] != block:
                _consumers_only(ps.ops(region.blocks[0])[:-1])
        top = ps.ops(guard.block)
        _consumers_only(top[top.index(guard) + 1:-1])


def _candidates(func: ir.Operation) -> list[ir.Operation]:
    """The hinted loops a producer may take, in order: directly in the
    kernel's body, or in a branch of a result-less `scf.if` there whose
    operands and every kernel op before it every warp may run (the guard
    tile-flatten-loops puts around a flattened loop: K has blocks)."""
    out = []
    top = ps.ops(func.regions[0].blocks[0])
    for i, op in enumerate(top):
        inner: list[ir.Operation] = [op]
        if op.name == "scf.if" and not len(op.results) and all(_all_warps(o) for o in top[:i]):
            inner = [o for r in op.regions for b in r.blocks for o in ps.ops(b)]
        out += [o for o in inner if o.name == "scf.for" and "tile.warp_specialize" in o.attributes]
    return out


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    if not target.has(Feature.WARP_SPECIALIZE):
        return
    with module.context:
        for fop in list(module.body.operations):
            f = fop.operation
            if f.name != "func.func" or "tile.kernel" not in f.attributes:
                continue
            done = False
            for op in _candidates(f):
                found = _reason(op, options.num_warps)
                move = _moving(op.block, op, found) if not isinstance(found, str) else None
                if isinstance(found, str) or move is None:
                    op.attributes["tile.warp_specialize_note"] = ir.StringAttr.get(
                        found if isinstance(found, str) else "the loop's bounds or copies use "
                        "a value computed only by the consumer warps")
                    continue
                _split(f, op, found, move)
                done = True
                break
            if done:
                for loop in ps.loops(f):
                    if "tile.warp_specialize" in loop.attributes:
                        del loop.attributes["tile.warp_specialize"]
                        loop.attributes["tile.warp_specialize_note"] = ir.StringAttr.get(
                            "one loop per kernel gets a producer warpgroup; this loop's copies "
                            "are issued by the consumer warps")
