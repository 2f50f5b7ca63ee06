"""`tile-pipeline`, early products: a dot of iteration j + 1 started during iteration j.

In an attention loop (S = Q @ K.T, the softmax of S, then acc += P @ V) each
product waits on the elementwise work before it, so within a warpgroup the
matrix units idle while the softmax runs and the other way round
(passes/tile_pipeline_multi.py: "none stays in flight").  FlashAttention-3's
intra-warpgroup overlap starts S of the next iteration before the softmax of
this one.  This module does that as a rotation of the software pipeline: the
product of an "early" dot for iteration j + 1 is issued at the top of
iteration j and runs on the matrix units while the body computes on the one
issued in iteration j - 1.

Input: a loop `tile_pipeline_multi.plan` accepted, on a target with TMA, every
tile tagged by `tile-tma-descriptors`, no load-side iteration arguments, that
may run more than once (`at_most_one_trip`: the bounds are not lb = X / c * c,
ub = X with c <= step, nor ub = min(lb + c, ..)).  A dot is early when
  * A and B are ring tiles (loaded in the body, or before the loop) and its
    accumulator is defined before the loop: nothing it reads depends on the
    values the loop carries;
  * its result is read only in the body, never by the yield;
  * the tiles it loads in the body are read by early dots only (their slot is
    released when the early product is done; a tile another dot reads would
    hold its slot across two iterations, one more than the ring has).
Which are rotated: `tl.range(..., overlap_dots=True)` (`tile.overlap_dots`)
every early dot, `False` none; by default (where passes/tile_pipeline_defer.py
does not take the loop first: a loop hinted warp_specialize) the body's first dot where it is
early (the product nothing overlaps otherwise: `tile_pipeline_multi` starts a
later independent product next to an earlier one), at least 128 long in K and
N (`MIN_EARLY_DIM`: smaller products measured slower), and the values live at
once fit in the registers (`REGISTER_BUDGET`).
Output: rings as `tile_pipeline_multi` allocates them (S slots per tile loaded
in the body, one per tile loaded before the loop); full and empty (one arrival
per warp) barriers per slot for the "early" tiles (read by early dots) and
for the "late" ones (the rest), and a one-slot barrier for the tiles loaded
before the loop.  Prologue: the copies of iterations 0 .. S-1; the wait for
the tiles loaded before the loop; the early products of iteration 0, waited
for; their slot released and refilled (iteration S).  Iteration j (slot
counter j, carrying the early products of j, complete):
  1. wait for the early tiles of j + 1, then issue their products (slot
     (j + 1) % S).  In the last iteration no copy was issued: the wait's phase
     is flipped (a phase already complete, or the initial one) and the
     products read a stale slot; they are never read.  (A branch around them
     makes ptxas serialize every product of the kernel, C7520; predicated
     instructions split the group, C7519.)
  2. the body, each early dot's result replaced by the carried product; a dot
     reading late tiles waits for them (slot j % S) and is issued as in
     `tile_pipeline_multi`, waited for before its first reader;
  3. the early products of j + 1 waited for before the yield (their registers
     go round the back edge: in flight there, the copy into the loop's
     iteration arguments would read them unfinished, C7514), then each warp
     arrives on early slot (j + 1) % S and one thread refills it (iteration
     j + 1 + S); after the wait that retires the late readers, likewise late
     slot j % S (iteration j + S).  Every wait's `pending` is the number of
     this iteration's products issued after its own: none is in flight at the
     back edge.
After the loop: a barrier, the barriers invalidated and the rings released.

Nearest upstream analogue: FlashAttention-3's consumer main loop (Shah et
al., 2024, "intra-warpgroup overlapping of GEMMs and softmax"); as a schedule,
MLIR's `scf::pipelineForLoop` with the early dot in stage 0 and the rest of
the body in stage 1.
"""
from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, scf

from tilec.dialects import tile, tile_memory
from tilec.passes import pipeline_support as ps
from tilec.passes import pipeline_tma
from tilec.passes.tile_pipeline_multi import _Plan, fit_stages
from tilec.passes.tile_unroll import FACTOR

# Registers per thread the values live at once may take: every product's
# accumulator, the early product's twice, the 16-bit A operands in registers,
# and 4 row statistics (softmax max, sum, new max, scale) per accumulator row
# the thread holds (2 per 64-row block of its warpgroup); the rest of ptxas's
# 255 is left to addresses, masks and barrier phases.  Measured with ptxas
# 13.0 on the attention forward: BLOCK_M 128, BLOCK_N 128, D 128, 8 warps,
# 64 + 64 + 64 + 32 + 8 = 232, 246 registers and no spills; 4 warps with D 64,
# BLOCK_N 64: 64 + 64 + 64 + 32 + 16 = 240, 255 registers and 4-52 bytes of
# spills (225-229 registers without the early product).
REGISTER_BUDGET = 232
# The default needs the early product's reduction (K) and columns (N) to be
# at least this long (see `early_dots`).
MIN_EARLY_DIM = 128


@dataclass
class _Group:
    """Tiles loaded in the body that share full/empty barriers."""
    tiles: list[int]
    full: ir.Value
    empty: ir.Value


def _acc_regs(dot: ir.Operation, num_warps: int) -> int:
    rows, cols = ir.RankedTensorType(dot.results[0].type).shape
    return rows * cols // (32 * num_warps)


def _defined_outside(v: ir.Value, for_op: ir.Operation) -> bool:
    owner = v.owner
    if isinstance(owner, ir.Block):
        return owner != for_op.regions[0].blocks[0]
    return owner.operation not in set(ps.region_ops(for_op))


def _op_of(v: ir.Value, name: str) -> ir.Operation | None:
    owner = v.owner
    if isinstance(owner, ir.OpView) and owner.operation.name == name:
        return owner.operation
    return None


def at_most_one_trip(for_op: ir.Operation) -> bool:
    """Whether the bounds say the loop runs at most once: ub = X and lb =
    (X / c) * c (a remainder loop) or ub = min(lb + c, ..), with c <= step."""
    lb, ub, step_v = list(for_op.operands)[:3]
    step = ps.const_int(step_v)
    if step is None:
        return False
    mul = _op_of(lb, "arith.muli")
    if mul is not None:
        div = _op_of(mul.operands[0], "arith.divsi")
        c = ps.const_int(mul.operands[1])
        if div is not None and div.operands[0] == ub and c is not None and \
                ps.const_int(div.operands[1]) == c and c <= step:
            return True
    low = _op_of(ub, "arith.minsi")
    for v in list(low.operands) if low is not None else []:
        add = _op_of(v, "arith.addi")
        if add is not None and lb in list(add.operands):
            other = add.operands[1] if add.operands[0] == lb else add.operands[0]
            c = ps.const_int(other)
            if c is not None and c <= step:
                return True
    return False


def early_dots(for_op: ir.Operation, p: _Plan, num_warps: int) -> list[int]:
    """The indices (into `p.uses`) of the dots to issue one iteration early."""
    choice = None
    if "tile.overlap_dots" in for_op.attributes:
        choice = bool(ir.BoolAttr(for_op.attributes["tile.overlap_dots"]).value)
    if choice is False or p.carried or at_most_one_trip(for_op):
        return []
    body = for_op.regions[0].blocks[0]
    yld = ps.ops(body)[-1]
    found = set()
    for ui, u in enumerate(p.uses):
        users = [_user_op(x) for x in u.dot.results[0].uses]
        if u.a is not None and _defined_outside(u.dot.operands[2], for_op) and users and \
                all(x != yld and x.block == body for x in users):
            found.add(ui)

    def loaded(ui: int) -> set[int]:
        u = p.uses[ui]
        return {t for t in (u.a, u.b) if t is not None and p.tiles[t].inside}

    changed = True
    while changed:   # drop early dots that share a body tile with another dot
        changed = False
        for ui in sorted(found):
            others = set().union(*(loaded(x) for x in range(len(p.uses)) if x not in found))
            if not loaded(ui) or loaded(ui) & others:
                found.discard(ui)
                changed = True
    if len(found) == len(p.uses):
        return []
    if choice:
        return sorted(found)
    if 0 not in found:
        return []
    first = p.uses[0].dot
    # A product smaller than 128 x 128 x 128 per warpgroup pair does not hide
    # the softmax it overlaps, and its in-flight registers and waits cost
    # more than it saves (H200, attention forward: D = 64 10-22% slower, 128 x
    # 64 key blocks at D = 128 slower; 128 x 128 x 128: 3-6% faster; the
    # results README's attention-variants probe).
    k_dim = ir.RankedTensorType(first.operands[0].type).shape[-1]
    n_dim = ir.RankedTensorType(first.results[0].type).shape[-1]
    if k_dim < MIN_EARLY_DIM or n_dim < MIN_EARLY_DIM:
        return []
    regs = sum(_acc_regs(u.dot, num_warps) for u in p.uses) + _acc_regs(first, num_warps)
    regs += sum(_acc_regs(u.dot, num_warps) * u.dot.operands[0].type.shape[1] //
                u.dot.results[0].type.shape[1] // 2 for u in p.uses if u.a is None)
    rows = ir.RankedTensorType(first.results[0].type).shape[0] // max(1, num_warps // 4)
    regs += 4 * 2 * max(1, rows // 64)
    return [0] if regs <= REGISTER_BUDGET else []


def _fill(p: _Plan, g: _Group, rings: list[ir.Value], slot: ir.Value, iv: ir.Value,
          ub: ir.Value, mapping: ps.Mapping) -> None:
    """Copies of group `g`'s tiles for the iteration at `iv` into `slot`."""
    with p.uses[0].dot.location:
        live = arith.CmpIOp(arith.CmpIPredicate.slt, iv, ub).result
    pipeline_tma.issue([p.tiles[t].load for t in g.tiles], [rings[t] for t in g.tiles],
                       g.full, slot, live, mapping)


def _refill(p: _Plan, g: _Group, rings: list[ir.Value], index: ir.Value, iv: ir.Value,
            ub: ir.Value, stages: int, iv0: ir.Value, loc: ir.Location) -> None:
    """One thread waits until slot index % S of group `g` is free, then copies
    the group's tiles of load `index` (induction variable `iv`; the load side
    cloned with `iv0` mapped to it) into it."""
    pipeline_tma.wait_free(g.empty, index, stages, loc)
    slot = arith.RemUIOp(index, ps.i32(stages)).result
    _fill(p, g, rings, slot, iv, ub, ps.clone_side(p.side, {iv0: iv}))


def _release(p: _Plan, g: _Group, rings: list[ir.Value], index: ir.Value, iv: ir.Value,
             ub: ir.Value, stages: int, iv0: ir.Value, loc: ir.Location) -> None:
    """Every warp arrives on slot index % S of group `g` (its readers of load
    index - S are done; also where that load was not copied, so that every
    phase completes), then the slot takes load `index` (at `iv`)."""
    true = arith.ConstantOp(ir.IntegerType.get_signless(1), 1).result
    tile_memory.mbarrier_arrive(g.empty, arith.RemUIOp(index, ps.i32(stages)).result, true,
                                loc=loc)
    _refill(p, g, rings, index, iv, ub, stages, iv0, loc)


def _issue(p: _Plan, early: list[int], rings: list[ir.Value], slot: ir.Value) -> list[ir.Value]:
    """The early products reading `slot` (their tiles loaded before the loop: slot 0)."""
    out = []
    for ui in early:
        u = p.uses[ui]
        d = u.dot
        assert u.a is not None
        sa = slot if p.tiles[u.a].inside else ps.i32(0)
        sb = slot if p.tiles[u.b].inside else ps.i32(0)
        m = tile_memory.mma(rings[u.a], sa, rings[u.b], sb, d.operands[2], "wgmma",
                            loc=d.location)
        if u.kmajor:
            m.owner.attributes["tile.b_kmajor"] = ir.UnitAttr.get()
        out.append(m)
    return out


def _user_op(use: ir.OpOperand) -> ir.Operation:
    return use.owner.operation if isinstance(use.owner, ir.OpView) else use.owner


def _wait_first_use(v: ir.Value, body: ir.Block) -> None:
    """`tile.mma_wait` on the in-flight `v` right before its first reader in
    `body`, which every reader then reads (pending set by `_set_pending`)."""
    uses = list(v.uses)
    order = ps.ops(body)
    first = min((_user_op(u) for u in uses), key=order.index)
    with first.location, ir.InsertionPoint(first):
        waited = tile_memory.mma_wait(v, 0, loc=first.location)
    for use in uses:
        use.owner.operands[use.operand_number] = waited


def _set_pending(body: ir.Block) -> list[tuple[ir.Operation, int]]:
    """Every wait leaves in flight this iteration's products issued after its
    own (`wgmma.wait_group N` keeps the N latest groups); a wait on a product
    from the previous iteration leaves none (ptxas cannot order groups across
    the back edge: N > 0 there serializes every product, C7514).  Returns each
    wait with the number of this iteration's products (in issue order) that
    are complete after it."""
    started: list[ir.Value] = []
    out = []
    i32 = ir.IntegerType.get_signless(32)
    for op in ps.ops(body):
        if op.name == "tile.mma":
            started.append(op.results[0])
        elif op.name == "tile.mma_wait":
            src = op.operands[0]
            n = len(started) - 1 - started.index(src) if src in started else 0
            op.attributes["pending"] = ir.IntegerAttr.get(i32, n)
            out.append((op, len(started) - n))
    return out


def _iv_at(iv: ir.Value, step: ir.Value, k: int) -> ir.Value:
    return arith.AddIOp(iv, arith.MulIOp(step, ps.i32(k)).result).result


def first_wait_after(waits: list[tuple[ir.Operation, int]], mmas: list[ir.Operation],
                     rings: list[ir.Value]) -> ir.Operation:
    """The first of `waits` (`_set_pending`'s (wait, products done) pairs)
    after which every product of `mmas` reading one of `rings` is done."""
    last = max(i + 1 for i, op in enumerate(mmas)
               if op.operands[0] in rings or op.operands[2] in rings)
    return next(w for w, done in waits if done >= last)


def tma_stages(for_op: ir.Operation, p: _Plan, stages: int, shared_bytes: int) -> int | None:
    """The ring depth a TMA schedule of plan `p` gets (`fit_stages`), or None
    where a tile is not a TMA copy or no depth fits."""
    if not pipeline_tma.all_tagged([t.load for t in p.tiles]):
        return None
    return fit_stages(for_op, p, stages, shared_bytes)


def alloc_rings(p: _Plan, stages: int, loc: ir.Location) -> list[ir.Value]:
    """One shared buffer per tile of plan `p`, at the insertion point: S slots
    for a tile loaded in the body, one for a tile loaded before the loop."""
    rings = []
    for t in p.tiles:
        rt = t.load.results[0].type
        rings.append(tile_memory.local_alloc(
            stages if t.inside else 1, rt.shape, rt.element_type, swizzle=ps.SWIZZLE,
            row_permutation="wgmma" if t.role == "a" else "none", loc=loc))
    return rings


def transform(for_op: ir.Operation, p: _Plan, early: list[int], stages: int,
              shared_bytes: int) -> bool:
    """Pipeline `for_op` by plan `p` with the dots `early` issued one iteration
    ahead (see the module docstring)."""
    fitted = tma_stages(for_op, p, stages, shared_bytes)
    if fitted is None:
        return False
    stages = fitted
    body, args, lb, ub, step, inits = ps.loop_parts(for_op)
    yld = ps.ops(body)[-1]
    e_tiles = sorted({t for ui in early for t in (p.uses[ui].a, p.uses[ui].b)
                      if t is not None and p.tiles[t].inside})
    l_tiles = [i for i, t in enumerate(p.tiles) if t.inside and i not in e_tiles]
    once = [i for i, t in enumerate(p.tiles) if not t.inside]
    loc = for_op.location
    with loc, ir.InsertionPoint(for_op):
        live = arith.CmpIOp(arith.CmpIPredicate.slt, lb, ub).result
        rings = alloc_rings(p, stages, loc)
        groups = [_Group(ts, tile_memory.mbarrier_alloc(stages, loc=loc),
                         tile_memory.mbarrier_alloc(stages, loc=loc, per_warp=True))
                  for ts in (e_tiles, l_tiles) if ts]
        eg, lg = groups[0], (groups[1] if len(groups) > 1 else None)
        bars = [b for g in groups for b in (g.full, g.empty)]
        if once:
            # Tiles loaded before the loop are copied only where it runs (a
            # masked tail loop often does not); the wait then returns at once.
            bars.append(tile_memory.mbarrier_alloc(1, loc=loc))
            pipeline_tma.issue([p.tiles[t].load for t in once], [rings[t] for t in once],
                               bars[-1], ps.i32(0), live, {})
        for s in range(stages):
            iv = _iv_at(lb, step, s)
            m = ps.clone_side(p.side, {args[0]: iv})
            for g in groups:
                _fill(p, g, rings, ps.i32(s), iv, ub, m)
        if once:
            pipeline_tma.wait_if(bars[-1], ps.i32(0), live, 1, loc)
        pipeline_tma.wait_if(eg.full, ps.i32(0), live, stages, loc)
        first = [tile_memory.mma_wait(r, 0, loc=loc)
                 for r in _issue(p, early, rings, ps.i32(0))]
        _release(p, eg, rings, ps.i32(stages), _iv_at(lb, step, stages), ub, stages,
                 args[0], loc)
        new_for = scf.ForOp(lb, ub, step, inits + first + [ps.i32(0)])
        for name in ("tile.num_stages", "tile.num_stages_note", "tile.warp_specialize",
                     FACTOR):
            if name in for_op.attributes:
                new_for.operation.attributes[name] = for_op.attributes[name]
    new_body = new_for.body
    new_args = list(new_body.arguments)
    n = len(inits)
    iv0, counter = new_args[0], new_args[-1]
    carried = new_args[n + 1:-1]
    with loc, ir.InsertionPoint(new_body):
        read = arith.RemUIOp(counter, ps.i32(stages)).result
        nxt = arith.AddIOp(counter, ps.i32(1)).result
        live = arith.CmpIOp(arith.CmpIPredicate.slt, arith.AddIOp(iv0, step).result, ub).result
        pipeline_tma.wait_if(eg.full, nxt, live, stages, loc)
        ahead = _issue(p, early, rings, arith.RemUIOp(nxt, ps.i32(stages)).result)
        sentinel = scf.YieldOp([])
    for op in ps.ops(body):
        op.move_before(sentinel.operation)
    sentinel.operation.erase()
    for old, new in zip(args, new_args[:n + 1]):
        old.replace_all_uses_with(new)
    late_waited = False
    started = []
    for ui, u in enumerate(p.uses):
        d = u.dot
        if ui in early:
            d.results[0].replace_all_uses_with(carried[early.index(ui)])
            continue
        with d.location, ir.InsertionPoint(d):
            if lg is not None and not late_waited and any(t in l_tiles for t in (u.a, u.b)):
                pipeline_tma.wait(lg.full, counter, stages, d.location)
                late_waited = True
            a_src = d.operands[0] if u.a is None else rings[u.a]
            a_slot = read if u.a is not None and p.tiles[u.a].inside else ps.i32(0)
            b_slot = read if p.tiles[u.b].inside else ps.i32(0)
            m = tile_memory.mma(a_src, a_slot, rings[u.b], b_slot, d.operands[2], "wgmma",
                                loc=d.location)
            if u.kmajor:
                m.owner.attributes["tile.b_kmajor"] = ir.UnitAttr.get()
        d.results[0].replace_all_uses_with(m)
        started.append(m)
    with loc, ir.InsertionPoint(yld):
        landed = [tile_memory.mma_wait(r, 0, loc=loc) for r in ahead]
        scf.YieldOp(list(yld.operands) + landed + [nxt])
    yld.erase()
    for m in started:
        _wait_first_use(m, new_body)
    # A slot is free after the first wait that has seen its readers complete:
    # the early one (j + 1) % S once the early products of j + 1 (the first
    # ones this iteration issues) are, a late one (j % S) once this
    # iteration's products reading late tiles are.
    waits = _set_pending(new_body)
    w_early = next(w for w, done in waits if done >= len(ahead))
    with loc, ir.InsertionPoint(ps.next_op(w_early)):
        _release(p, eg, rings, arith.AddIOp(nxt, ps.i32(stages)).result,
                 _iv_at(iv0, step, stages + 1), ub, stages, iv0, loc)
    if lg is not None:
        mmas = [op for op in ps.ops(new_body) if op.name == "tile.mma"]
        w_late = first_wait_after(waits, mmas, [rings[t] for t in l_tiles])
        with loc, ir.InsertionPoint(ps.next_op(w_late)):
            _release(p, lg, rings, arith.AddIOp(counter, ps.i32(stages)).result,
                     _iv_at(iv0, step, stages), ub, stages, iv0, loc)
    for u in p.uses:
        u.dot.erase()
    for tr in p.trans:
        tr.erase()
    gone = [t.load for t in p.tiles if t.inside or not list(t.load.results[0].uses)]
    pipeline_tma.drop_hints(gone)
    for load in gone:
        load.erase()
    ps.dce(new_body)
    for old, new in zip(for_op.results, list(new_for.results)[:n]):
        old.replace_all_uses_with(new)
    with loc, ir.InsertionPoint(ps.next_op(new_for.operation)):
        tile.barrier(loc=loc)
        for b in reversed(bars):
            tile_memory.mbarrier_inval(b, loc=loc)
        for r in reversed(rings):
            tile_memory.local_dealloc(r, loc=loc)
    block = for_op.block
    for_op.erase()
    ps.dce(block)
    return True
