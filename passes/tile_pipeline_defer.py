"""`tile-pipeline`, a deferred product: acc += P @ V of key block j - 1 runs
during the softmax of key block j (FlashAttention-3's intra-warpgroup order,
without issuing S early).

In the loop `tile_pipeline_multi` builds for attention, every product is
waited for in its own iteration: the matrix units idle while the softmax runs.
`tile_pipeline_early` overlaps them by issuing the next S = Q @ K.T early,
which carries a copy of the in-flight S round the back edge.  This module
rotates the loop the other way: the one product whose result only the yield
reads (acc += P @ V) moves to the next iteration, where it is issued right
after that iteration's S, so that the wait for S (`pending = 1`) leaves it in
flight through the softmax; its wait comes before its first reader (the
rescale acc * alpha).  The loop carries P (the product's register A operand,
16-bit wgmma fragments) and its accumulator input, never an in-flight value.

Input: a loop `tile_pipeline_multi.plan` accepted, with `tl.range(...,
overlap_dots=False)` (`tile.overlap_dots` false), or without `overlap_dots`
on a loop hinted `warp_specialize` (the default there: on the H200 the
attention forward (4, 32, 4096, 128) fp16 with the producer warpgroup ran at
579.3 TFLOP/s in this order against 537.6 with early S, the best before;
causal equal, 470.3 vs 473.9; without a producer no faster: 529.0 vs 539.7;
benchmarks/results/README.md), on a target with TMA (the
wgmma dots make that sm90), every tile tagged by `tile-tma-descriptors`, no
load-side iteration arguments, that may run more than once (not
`at_most_one_trip`), and exactly one dot D whose result only the yield reads,
whose A operand is in registers, whose B tile is loaded in the body and read
by D only, with at least one other tile loaded in the body.
Output: rings as `tile_pipeline_multi` allocates them (S slots per tile loaded
in the body, one per tile loaded before the loop); full and empty (one arrival
per warp) barriers per slot for the "prompt" tiles (read by the other dots)
and for D's tile (the "deferred" group); a one-slot barrier for the tiles
loaded before the loop.  Prologue: the copies of loads 0 .. S-1, the wait for
the tiles before the loop, then iteration 0 without D (its dots waited for at
once; its full waits flipped to a complete phase where the loop does not run
at all), after which every warp arrives on prompt slot 0 and one thread
refills it (load S).  The loop runs from lb + step (slot counter from 1);
iteration j:
  1. wait for the prompt tiles of j, issue the first prompt product (S_j);
  2. wait for D's tile of j - 1 and issue D of j - 1 (P_{j-1} @ V_{j-1} into
     the carried accumulator input);
  3. the rest of the body, each prompt product waited for before its first
     reader (`pending` = the products issued after it: S_j leaves D in
     flight); every warp arrives on prompt slot j % S after the wait that
     retires its readers, and one thread refills it (load j + S);
  4. D waited for before its first reader (the rescale of the accumulator);
     every warp then arrives on deferred slot (j - 1) % S and one thread
     refills it (load j - 1 + S);
  5. yield the other carried values, D's A operand and accumulator input.
After the loop: the wait for D's tile of the last iteration (flipped where
the loop does not run), D of the last iteration, waited for; where the loop
does not run at all (lb >= ub) the results are its initial values (`select`).
Then a barrier, the barriers invalidated and the rings released.  The loop
gets `tile.deferred_dot`.

Slot protocol: a slot's empty barrier completes a phase once every warp
arrived after its readers completed; the refill of load i waits for the
phase of load i - S.  Deferred slot (j - 1) % S is released only after D of
j - 1 was waited for (step 4), so no copy overwrites V_{j-1} while D reads it.
With a producer warpgroup (tile-warp-specialize moves the one-thread waits
and copies of steps 3 and 4 to it), producer iteration j waits for consumer
iteration j only, and consumer iteration j waits only for copies issued by
producer iterations <= j - S + 1 or the prologue: no cycle.

Persistent kernels: a loop hinted warp_specialize whose parent is an
`scf.for` directly in the kernel's body (`persistent_outer`: the loop over a
persistent kernel's tiles; examples/attention.py `_attn_fwd_persistent`).
The rings and barriers are allocated once before the outer loop and
invalidated and released once after it (after a barrier); the outer loop is
rebuilt (`pipeline_persistent.extend`, marked `tile.persistent = 2`) to
carry two indices from 0: `base`, the K/V load index of the tile's first key
block, and `qc`, the number of earlier tiles whose loop ran (the Q ring's
load index).  Where the loop of a tile runs T = ceil((ub - lb) / step) > 0
times (`runs`), its K/V
loads are the global indices base .. base + T - 1 (load g in slot g % S,
phase (g / S) & 1), and the next tile starts at base + T; where it runs no
time nothing is loaded or released and the indices stay.  So the loads of
all tiles form one sequence 0, 1, 2, ... with no gaps, and every slot
protocol argument of one long loop holds:
  * Q (a 1-slot ring, full barrier `Qf`, per-warp empty barrier `Qe`): where
    runs, one thread waits for Qe phase parity (qc & 1) ^ 1 (the previous
    tile's readers done; the first tile finds it complete) and copies Q on Qf;
    every consumer waits for Qf parity qc & 1 (where not runs the flipped
    parity, a complete phase: `wait_if`); after the tile's last P @ V is
    waited for (every Q @ K.T before it was), every warp arrives on Qe where
    runs.  One copy and one arrival per running tile: Qf and Qe complete
    phase qc each.
  * K/V prologue of a tile (s < S): where load base + s exists (lb + s step <
    ub), one thread waits for its slot's empty phase of load base + s - S
    (released by an earlier tile; before the first S loads the "previous"
    phase counts as complete) and copies it.  Order: the K fills and the V
    fills but the last (their slots were released inside the previous
    tile's loop: they run ahead during its last iterations), then Q and the
    last V fill (released at the previous tile's end).  The peeled
    iteration reads K slot base % S (full wait `wait_if`), every warp arrives
    on K empty for load base only where runs, and load base + S is refilled
    where it exists, after its free-slot wait.  The loop's counter starts at
    base + 1: its waits, arrivals and refills are the ones above with
    absolute indices (in-loop arrivals are for loads base + 1 .. base + T - 1,
    all of which exist).  After the loop the last V load (base + T - 1) is
    released where runs (every warp arrives once the last P @ V is waited
    for): each existing K and V load gets exactly one arrival of every warp,
    and a load that does not exist gets no wait, no copy and no arrival (the
    waits are inside `scf.if` on its existence, marked `tile.producer_issue`).
  * No wait needs a later one of its own thread: a consumer's full wait for
    load g needs the copy of g, which needs only the arrivals for load g - S
    (done by the consumers before they reach g); a producer's free-slot wait
    for g needs those arrivals only.  Every copy that is issued is waited for
    by the consumers, so when they pass the barrier after the outer loop no
    copy is in flight and the producer has passed all its waits (its last
    wait precedes a copy the consumers waited for): invalidating the
    barriers there is safe.  A program that gets no tile runs neither loop:
    nothing is waited for, the barriers are initialized and invalidated.
The rings live through every tile's epilogue, whose layout conversions or
store buffer cannot reuse them: the largest of those comes out of the ring
budget (`fit_stages`).  tile-warp-specialize moves the `tile.producer_issue`
branches (with the scalar arithmetic they read) to a clone of the outer
loop in the producer warpgroup (passes/tile_warp_specialize.py).  Without a
split (e.g. num_warps not a multiple of 4) the consumers' elected thread runs
them in place, which the same argument covers.

Nearest upstream analogue: FlashAttention-3's consumer main loop (Shah et al.,
2024, Algorithm 2: S_next issued, then O += P_cur V, `warpgroup_wait<1>`
before the softmax, `warpgroup_wait<0>` before the rescale).
"""
from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import arith, scf

from tilec.dialects import tile, tile_memory
from tilec.passes import pipeline_persistent, pipeline_tma
from tilec.passes import pipeline_support as ps
from tilec.passes.tile_pipeline_early import (_fill, _Group, _iv_at, _release, _set_pending,
                                              _user_op, _wait_first_use,
                                              alloc_rings, at_most_one_trip,
                                              first_wait_after, tma_stages)
from tilec.passes.tile_pipeline_multi import _Plan
from tilec.passes.tile_unroll import FACTOR
from tilec.passes.tile_warp_specialize import _MIN_EARLY_COLUMNS

MARK = "tile.deferred_dot"


def deferred_dot(for_op: ir.Operation, p: _Plan) -> int | None:
    """The index (into `p.uses`) of the dot to defer, or None."""
    attr = for_op.attributes["tile.overlap_dots"] if "tile.overlap_dots" in \
        for_op.attributes else None
    # overlap_dots=False asks for this order; unset, a loop hinted
    # warp_specialize takes it too (the default there, module docstring);
    # True asks for early products.
    if attr is None and "tile.warp_specialize" not in for_op.attributes:
        return None
    if (attr is not None and bool(ir.BoolAttr(attr).value)) or p.carried or \
            at_most_one_trip(for_op):
        return None
    body = for_op.regions[0].blocks[0]
    yld = ps.ops(body)[-1]
    found = [ui for ui, u in enumerate(p.uses)
             if u.a is None and p.tiles[u.b].inside and
             [_user_op(x) for x in u.dot.results[0].uses] == [yld]]
    if len(found) != 1:
        return None
    di = found[0]
    b = p.uses[di].b
    if any(ui != di and b in (u.a, u.b) for ui, u in enumerate(p.uses)):
        return None
    if not any(t.inside and i != b for i, t in enumerate(p.tiles)):
        return None
    # Two copy segments with products narrower than 128 columns get no
    # producer warpgroup (tile_warp_specialize._reason): such a hinted loop
    # keeps tile_pipeline_multi's one-segment schedule, which does.
    if "tile.warp_specialize" in for_op.attributes and any(
            ir.RankedTensorType(u.dot.results[0].type).shape[-1] < _MIN_EARLY_COLUMNS
            for u in p.uses):
        return None
    return di


def _emit(p: _Plan, body: ir.Block, di: int, rings: list[ir.Value], mapping: ps.Mapping,
          slot: ir.Value, full_wait: Callable[[], None],
          issue_d: Callable[[], ir.Value] | None = None) -> list[ir.Value]:
    """Clone `body` but its yield at the insertion point with `mapping`: D,
    the ring loads, their transposes and coordinate hints left out, the other
    dots as `tile.mma` on `slot` (`full_wait()` before the first), not waited
    for.  With `issue_d`, D of the previous iteration (its result, in flight,
    is what the accumulator argument maps to) is issued right after the first
    product, or before the first reader of that argument if that comes first."""
    acc_arg = body.arguments[1 + _yield_index(p, di)]
    skip = set(p.trans) | {t.load for t in p.tiles}
    started: list[ir.Value] = []
    for op in ps.ops(body)[:-1]:
        if op.name == "tile.tma_coords" or op in skip:
            continue
        if issue_d is not None and acc_arg not in mapping and \
                any(v == acc_arg for v in op.operands):
            mapping[acc_arg] = issue_d()
        ui = next((i for i, u in enumerate(p.uses) if u.dot == op), None)
        if ui == di:
            continue
        if ui is None:
            new = op.clone(ip=ir.InsertionPoint.current)
            ps.remap([new], mapping)
            for old, res in zip(op.results, new.results):
                mapping[old] = res
            continue
        if not started:
            full_wait()
        u = p.uses[ui]
        d = u.dot
        a_src = mapping.get(d.operands[0], d.operands[0]) if u.a is None else rings[u.a]
        a_slot = slot if u.a is not None and p.tiles[u.a].inside else ps.i32(0)
        b_slot = slot if p.tiles[u.b].inside else ps.i32(0)
        m = tile_memory.mma(a_src, a_slot, rings[u.b], b_slot,
                            mapping.get(d.operands[2], d.operands[2]), "wgmma", loc=d.location)
        if u.kmajor:
            m.owner.attributes["tile.b_kmajor"] = ir.UnitAttr.get()
        mapping[d.results[0]] = m
        started.append(m)
        if issue_d is not None and acc_arg not in mapping:
            mapping[acc_arg] = issue_d()
    return started


def _yield_index(p: _Plan, di: int) -> int:
    use = next(iter(p.uses[di].dot.results[0].uses))
    return use.operand_number


def _issue_d(p: _Plan, di: int, rings: list[ir.Value], a: ir.Value, c: ir.Value,
             slot: ir.Value) -> ir.Value:
    """D (A `a` in registers, B from `slot` of its ring, accumulator `c`), started."""
    u = p.uses[di]
    m = tile_memory.mma(a, ps.i32(0), rings[u.b], slot, c, "wgmma", loc=u.dot.location)
    if u.kmajor:
        m.owner.attributes["tile.b_kmajor"] = ir.UnitAttr.get()
    return m


def _fill_free(p: _Plan, g: _Group, rings: list[ir.Value], index: ir.Value, iv: ir.Value,
               ub: ir.Value, stages: int, iv0: ir.Value, loc: ir.Location) -> None:
    """Where load `index` (at `iv`) exists: wait until its slot is free, then
    copy it (the persistent schedule's prologue fills and peeled refill)."""
    m = ps.clone_side(p.side, {iv0: iv})
    live = arith.CmpIOp(arith.CmpIPredicate.slt, iv, ub).result

    def emit() -> None:
        pipeline_tma.wait_free(g.empty, index, stages, loc)
        _fill(p, g, rings, arith.RemUIOp(index, ps.i32(stages)).result, iv, ub, m)
    pipeline_persistent.guarded(live, emit)


def transform(for_op: ir.Operation, p: _Plan, di: int, stages: int,
              shared_bytes: int) -> bool:
    """Pipeline `for_op` by plan `p` with dot `di` deferred to the next
    iteration (see the module docstring; nested in a persistent kernel's
    outer loop, its "Persistent kernels" section)."""
    outer = pipeline_persistent.persistent_outer(for_op)
    if outer is not None:
        # The rings live through the epilogue of every tile: its layout
        # conversions and store buffer cannot reuse them.
        shared_bytes -= max(ps.conversion_bytes(outer), pipeline_persistent.store_bytes(outer))
    fitted = tma_stages(for_op, p, stages, shared_bytes)
    if fitted is None:
        return False
    stages = fitted
    body, args, lb, ub, step, inits = ps.loop_parts(for_op)
    iv0 = args[0]
    r = _yield_index(p, di)
    d_dot = p.uses[di].dot
    d_a, d_c = d_dot.operands[0], d_dot.operands[2]
    keep = [i for i in range(len(inits)) if i != r]
    yld = ps.ops(body)[-1]
    v_tiles = [p.uses[di].b]
    k_tiles = [i for i, t in enumerate(p.tiles) if t.inside and i not in v_tiles]
    once = [i for i, t in enumerate(p.tiles) if not t.inside]
    loc = for_op.location
    q_empty = None
    with loc, ir.InsertionPoint(outer if outer is not None else for_op):
        if outer is None:
            runs = arith.CmpIOp(arith.CmpIPredicate.slt, lb, ub).result
        rings = alloc_rings(p, stages, loc)
        kg, vg = (_Group(ts, tile_memory.mbarrier_alloc(stages, loc=loc),
                         tile_memory.mbarrier_alloc(stages, loc=loc, per_warp=True))
                  for ts in (k_tiles, v_tiles))
        bars = [kg.full, kg.empty, vg.full, vg.empty]
        if once:
            bars.append(tile_memory.mbarrier_alloc(1, loc=loc))
            if outer is not None:
                q_empty = tile_memory.mbarrier_alloc(1, loc=loc, per_warp=True)
                bars.append(q_empty)
        once_full = bars[4] if once else None
    if outer is not None:
        # Carried through the tiles: the K/V load index of the tile's first
        # key block (`base`) and the number of tiles whose loop ran (`qc`, the
        # Q ring's load index).
        with loc, ir.InsertionPoint(outer):
            zeros = [ps.i32(0), ps.i32(0)]
        outer = pipeline_persistent.extend(outer, zeros)
        outer.attributes[pipeline_persistent.PERSISTENT] = ir.IntegerAttr.get(
            ir.IntegerType.get_signless(32), 2)
        ob = outer.regions[0].blocks[0]
        base, qc = list(ob.arguments)[-2:]
        with loc, ir.InsertionPoint(for_op):
            runs = arith.CmpIOp(arith.CmpIPredicate.slt, lb, ub).result
    # (Without an outer loop the indices start at constant 0, created where used.)
    base_at: Callable[[], ir.Value] = (lambda: base) if outer is not None else \
        (lambda: ps.i32(0))
    qc_at: Callable[[], ir.Value] = (lambda: qc) if outer is not None else (lambda: ps.i32(0))
    with loc, ir.InsertionPoint(for_op):
        def issue_once() -> None:   # copied where the loop runs (as in tile_pipeline_early)
            loads = [p.tiles[t].load for t in once]
            q_rings = [rings[t] for t in once]
            if q_empty is None:
                pipeline_tma.issue(loads, q_rings, once_full, ps.i32(0), runs, {})
                return
            empty = q_empty

            def issue_q() -> None:
                pipeline_tma.wait_free(empty, qc_at(), 1, loc)
                pipeline_tma.issue(loads, q_rings, once_full, ps.i32(0), runs, {})
            pipeline_persistent.guarded(runs, issue_q)

        if once and outer is None:
            issue_once()
        for s in range(stages):
            iv = _iv_at(lb, step, s)
            if outer is None:
                m = ps.clone_side(p.side, {iv0: iv})
                _fill(p, kg, rings, ps.i32(s), iv, ub, m)
                _fill(p, vg, rings, ps.i32(s), iv, ub, m)
                continue
            # Persistent: every K fill and the V fills but the last wait only
            # for slots the previous tile released inside its loop; Q's and
            # the last V fill's slots are released at its end.  Issued in
            # that order, the first ones run ahead during the previous tile.
            index = arith.AddIOp(base_at(), ps.i32(s)).result
            _fill_free(p, kg, rings, index, iv, ub, stages, iv0, loc)
            if s < stages - 1:
                _fill_free(p, vg, rings, index, iv, ub, stages, iv0, loc)
            else:
                if once:
                    issue_once()
                _fill_free(p, vg, rings, index, iv, ub, stages, iv0, loc)
        if once:
            pipeline_tma.wait_if(once_full, qc_at(), runs, 1, loc)
        # Iteration 0 without D, its products waited for at once.
        m0: ps.Mapping = {iv0: lb, **{args[i + 1]: inits[i] for i in range(len(inits))}}
        slot0 = arith.RemUIOp(base_at(), ps.i32(stages)).result if outer is not None \
            else ps.i32(0)
        first = _emit(p, body, di, rings, m0, slot0,
                      lambda: pipeline_tma.wait_if(kg.full, base_at(), runs, stages, loc))
        for m in first:
            if list(m.uses):
                _wait_first_use(m, for_op.block)
            else:
                tile_memory.mma_wait(m, 0, loc=loc)
        if outer is None:
            _release(p, kg, rings, ps.i32(stages), _iv_at(lb, step, stages), ub, stages, iv0,
                     loc)
        else:   # every warp arrives for K load `base` only where it exists
            tile_memory.mbarrier_arrive(kg.empty, slot0, runs, loc=loc)
            _fill_free(p, kg, rings, arith.AddIOp(base_at(), ps.i32(stages)).result,
                       _iv_at(lb, step, stages), ub, stages, iv0, loc)
        new_for = scf.ForOp(arith.AddIOp(lb, step).result, ub, step,
                            [m0.get(yld.operands[i], yld.operands[i]) for i in keep] +
                            [m0.get(d_a, d_a), m0.get(d_c, d_c),
                             arith.AddIOp(base_at(), ps.i32(1)).result if outer is not None
                             else ps.i32(1)])
        for name in ("tile.num_stages", "tile.num_stages_note", "tile.warp_specialize",
                     FACTOR):
            if name in for_op.attributes:
                new_for.operation.attributes[name] = for_op.attributes[name]
        new_for.operation.attributes[MARK] = ir.UnitAttr.get()
    new_body = new_for.body
    new_args = list(new_body.arguments)
    iv, counter = new_args[0], new_args[-1]
    a_prev, c_prev = new_args[len(keep) + 1], new_args[len(keep) + 2]
    in_flight: list[ir.Value] = []

    def issue_d() -> ir.Value:
        prev = arith.AddIOp(counter, ps.i32(-1)).result
        pipeline_tma.wait(vg.full, prev, stages, loc)
        m = _issue_d(p, di, rings, a_prev, c_prev, arith.RemUIOp(prev, ps.i32(stages)).result)
        in_flight.append(m)
        return m

    with loc, ir.InsertionPoint(new_body):
        read = arith.RemUIOp(counter, ps.i32(stages)).result
        m1: ps.Mapping = {iv0: iv, **{args[i + 1]: new_args[1 + k] for k, i in enumerate(keep)}}
        started = _emit(p, body, di, rings, m1, read,
                        lambda: pipeline_tma.wait(kg.full, counter, stages, loc), issue_d)
        if not in_flight:   # no dot and no reader of the accumulator: issue it last
            m1[args[r + 1]] = issue_d()
        scf.YieldOp([m1.get(yld.operands[i], yld.operands[i]) for i in keep] +
                    [m1.get(d_a, d_a), m1.get(d_c, d_c),
                     arith.AddIOp(counter, ps.i32(1)).result])
    for m in started + in_flight:
        if list(m.uses):
            _wait_first_use(m, new_body)
    waits = _set_pending(new_body)
    mmas = [op for op in ps.ops(new_body) if op.name == "tile.mma"]
    w_k = first_wait_after(waits, mmas, [rings[t] for t in k_tiles])
    with loc, ir.InsertionPoint(ps.next_op(w_k)):
        _release(p, kg, rings, arith.AddIOp(counter, ps.i32(stages)).result,
                 _iv_at(iv, step, stages), ub, stages, iv0, loc)
    w_v = first_wait_after(waits, mmas, [rings[t] for t in v_tiles])
    with loc, ir.InsertionPoint(ps.next_op(w_v)):
        _release(p, vg, rings, arith.AddIOp(counter, ps.i32(stages - 1)).result,
                 _iv_at(iv, step, stages - 1), ub, stages, iv0, loc)
    ps.dce(new_body)
    results = list(new_for.results)
    with loc, ir.InsertionPoint(ps.next_op(new_for.operation)):
        last = arith.AddIOp(results[-1], ps.i32(-1)).result
        pipeline_tma.wait_if(vg.full, last, runs, stages, loc)
        acc = tile_memory.mma_wait(
            _issue_d(p, di, rings, results[len(keep)], results[len(keep) + 1],
                     arith.RemUIOp(last, ps.i32(stages)).result), 0, loc=loc)
        outs = {i: results[k] for k, i in enumerate(keep)}
        outs[r] = acc
        final = [arith.SelectOp(runs, outs[i], inits[i]).result for i in range(len(inits))]
        if outer is not None:
            # The slots of V's last load and of Q are free once D is done;
            # the next tile's loads (other slots) continue the load indices.
            tile_memory.mbarrier_arrive(vg.empty, arith.RemUIOp(last, ps.i32(stages)).result,
                                        runs, loc=loc)
            if q_empty is not None:
                tile_memory.mbarrier_arrive(q_empty, ps.i32(0), runs, loc=loc)
            span = arith.SubIOp(ub, lb).result
            trips = arith.DivSIOp(arith.AddIOp(span, arith.AddIOp(step, ps.i32(-1)).result
                                               ).result, step).result
            ran = arith.ExtUIOp(ir.IntegerType.get_signless(32), runs).result
            oy = ps.ops(outer.regions[0].blocks[0])[-1]
            n = len(list(oy.operands))
            oy.operands[n - 2] = arith.AddIOp(base, arith.SelectOp(runs, trips, ps.i32(0)
                                                                   ).result).result
            oy.operands[n - 1] = arith.AddIOp(qc, ran).result
        else:
            pipeline_persistent.teardown(bars, rings, loc)
    if outer is not None:   # once, after the last tile
        with loc, ir.InsertionPoint(ps.next_op(outer)):
            pipeline_persistent.teardown(bars, rings, loc)
    for old, new in zip(for_op.results, final):
        old.replace_all_uses_with(new)
    block = for_op.block
    for_op.erase()
    gone = [p.tiles[t].load for t in once if not list(p.tiles[t].load.results[0].uses)]
    pipeline_tma.drop_hints(gone)
    for load in gone:
        load.erase()
    ps.dce(block)
    return True
