"""`tile-pipeline`, loops with several wgmma dots (attention-style bodies).

`passes/tile_pipeline.py` pipelines the one-dot K loop of a matmul.  An
attention loop has two or more dots per iteration (S = Q @ K.T, then P @ V in
the forward; four in the backward), operands loaded once before the loop (Q,
or K and V of the backward's key block), a tile loaded in the loop and used by
two dots in different majorness (the backward's dO as B of P.T @ dO and, as
dO.T, of V @ dO.T), and an A operand computed in registers (P).  This module
handles such loops when every dot is a wgmma dot.

Input: a `scf.for` (positive constant step, no region in its body) whose body
holds >= 1 `tile.dot`s with `tile.mma = "wgmma"` (no fp8), where each dot's
  * A is a `tile.load` (in the body, or before the loop) used only as A by
    dots of this loop, or a 16-bit tile in the accumulator layout
    (`layouts.wgmma_register_a`: wgmma reads it from registers);
  * B is a `tile.load`, or `tile.trans` of one (B is then K-major in shared
    memory), the load in the body or before the loop and used only as B;
  * every load is copyable (`pipeline_support.copyable`) with no or a zero
    `other`; the load side of the body's loads follows `tile_pipeline`'s rules.
Output: a ring (`tile.local_alloc`, 128-byte swizzle, A rings row-permuted)
per loaded tile: S slots for loads in the body, one for loads before the loop
(copied once, in the first group).  A prologue issues iterations 0 .. S-2.
Each iteration: `tile.async_wait {pending = S-2}`, a barrier, the copies of
iteration j + S - 1 into slot (j - 1) % S (read by iteration j - 1, which
every warp finished before the barrier), then the body with each dot replaced
by `tile.mma` (A from its slot, or the register tile) and `tile.mma_wait
{pending = 0}`: the products of one iteration depend on each other, so none
stays in flight.  After the loop: wait for all copies, a barrier, and
`tile.local_dealloc` of the rings.  Loads before the loop keep their other
users (they are erased when none is left).
A product that does not depend on the one started before it is started right
after it (`_issue_early`), and every wait in the body leaves the products
started after its own in flight (`pending`).
On targets with TMA, where `tile-tma-descriptors` tagged every loaded tile, the
rings are filled by TMA copies (`pipeline_tma.issue`) instead: a "full"
transaction barrier per slot (consumers wait on it: no cp.async wait), an
"empty" barrier per slot with one arrival per warp (`tile.mbarrier_arrive`
once the products reading the slot are done: in the iteration, or after the
in-flight product's wait in the next one), on which the one issuing thread
waits before it refills the slot (`tile.mbarrier_wait {tile.one_thread}`),
so no CTA barrier is left in the loop and the warpgroups run independently;
tiles loaded before the loop get a one-slot barrier of their own, waited
for before the loop (copied only where the loop runs: a masked tail loop often
does not, and its wait then returns at once).

Nearest upstream analogue: Triton's `tritongpu-pipeline` on the attention
loop (its loads of K and V become multi-buffered async copies; Q is hoisted
into shared memory by the dot-operand conversion).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import arith, scf

from tilec.dialects import tile, tile_memory
from tilec.passes import pipeline_support as ps
from tilec.passes import pipeline_tma
from tilec.passes.analysis import axis_info
from tilec.passes.analysis.layouts import wgmma_register_a

@dataclass
class _Tile:
    """A loaded tile that feeds dots from a ring."""
    load: ir.Operation
    inside: bool                  # loaded in the body (S slots) or before the loop (1)
    role: str                     # "a" or "b"
    ring: ir.Value | None = None


@dataclass
class _Use:
    dot: ir.Operation
    a: int | None                 # index into tiles, None: A from registers
    b: int
    kmajor: bool


@dataclass
class _Bars:
    """The transaction barriers of a TMA-fed loop: `full` (S, a slot's copies
    landed), `empty` (S, every warp is done reading a slot), `once` (1, the
    tiles loaded before the loop)."""
    full: ir.Value
    empty: ir.Value
    once: ir.Value | None


@dataclass
class _Plan:
    tiles: list[_Tile] = field(default_factory=list)
    uses: list[_Use] = field(default_factory=list)
    trans: list[ir.Operation] = field(default_factory=list)
    side: list[ir.Operation] = field(default_factory=list)
    carried: list[int] = field(default_factory=list)


def _in(op: ir.Operation, block: ir.Block) -> bool:
    """Whether `op` is in `block` (directly)."""
    return op.block == block


def _users_ok(v: ir.Value, body: ir.Block, allowed: set[ir.Operation]) -> bool:
    """Every use of `v` inside `body` is by an op in `allowed`; uses outside
    the loop are fine for loads before it (they keep their register value)."""
    for use in v.uses:
        user = use.owner
        op = user.operation if isinstance(user, ir.OpView) else user
        if _in(op, body) and op not in allowed:
            return False
    return True


def plan(for_op: ir.Operation, info: axis_info.AxisInfoMap) -> _Plan | None:
    """The multi-dot plan of `for_op`, or None when it does not qualify."""
    body = for_op.regions[0].blocks[0]
    ops = ps.ops(body)
    dots = [op for op in ops if op.name == "tile.dot"]
    if not dots or any(op.regions for op in ops):
        return None
    if any(ps.kind(d) != "wgmma" or "tile.mma_fp8" in d.attributes for d in dots):
        return None
    p = _Plan()
    index: dict[ir.Operation, int] = {}
    dot_set = set(dots)

    def tile_of(load: ir.Operation, role: str) -> int | None:
        if load.name != "tile.load":
            return None
        if load in index:
            t = p.tiles[index[load]]
            return index[load] if t.role == role else None
        ptr, mask, other = ps.load_parts(load)
        if other is not None and not ps.is_zero(other) or not ps.copyable(ptr, mask, info):
            return None
        index[load] = len(p.tiles)
        p.tiles.append(_Tile(load, _in(load, body), role))
        return index[load]

    for d in dots:
        a, b = d.operands[0], d.operands[1]
        a_op = ps.defining_op(a)
        if a_op is not None and a_op.name == "tile.load":
            ai = tile_of(a_op, "a")
            if ai is None:
                return None
        elif wgmma_register_a(a.type, d.results[0].type):
            ai = None
        else:
            return None
        kmajor = False
        b_op = ps.defining_op(b)
        if b_op is not None and b_op.name == "tile.trans" and _in(b_op, body):
            if not _users_ok(b, body, dot_set):
                return None
            p.trans.append(b_op)
            kmajor = True
            b_op = ps.defining_op(b_op.operands[0])
        if b_op is None:
            return None
        bi = tile_of(b_op, "b")
        if bi is None:
            return None
        p.uses.append(_Use(d, ai, bi, kmajor))
    allowed = dot_set | set(p.trans)
    for t in p.tiles:
        if not _users_ok(t.load.results[0], body, allowed):
            return None
    if not any(t.inside for t in p.tiles):
        return None
    found = ps.load_side(body, [t.load for t in p.tiles if t.inside])
    if found is None:
        return None
    p.side, p.carried = found
    return p


def _bytes(t: _Tile) -> int:
    rt = t.load.results[0].type
    return axis_info.type_bytes(rt.element_type) * rt.shape[0] * rt.shape[1]


def _copies(p: _Plan, slot: ir.Value, iv: ir.Value, ub: ir.Value,
            mapping: ps.Mapping, bars: _Bars | None = None) -> ps.Mapping:
    """The load side cloned with `mapping`, then a copy of every tile loaded
    in the body into `slot`, and a commit (with `bars`: TMA copies completing
    on the slot's full barrier)."""
    ps.clone_side(p.side, mapping)
    if bars is not None:
        inside = [t for t in p.tiles if t.inside]
        with p.uses[0].dot.location:
            live = arith.CmpIOp(arith.CmpIPredicate.slt, iv, ub).result
        pipeline_tma.issue([t.load for t in inside], [_ring(t) for t in inside], bars.full,
                           slot, live, mapping)
        return mapping
    for t in p.tiles:
        if not t.inside:
            continue
        ptr, mask, _ = (mapping.get(v, v) if v is not None else None
                        for v in ps.load_parts(t.load))
        assert ptr is not None and t.ring is not None
        with t.load.location:
            live = arith.CmpIOp(arith.CmpIPredicate.slt, iv, ub).result
            tile_memory.async_copy(t.ring, slot, ptr, ps.live_mask(mask, ptr, live),
                                   loc=t.load.location)
    tile_memory.async_commit(loc=p.uses[0].dot.location)
    return mapping


def _ring(t: _Tile) -> ir.Value:
    assert t.ring is not None
    return t.ring


def fit_stages(for_op: ir.Operation, p: _Plan, stages: int, shared_bytes: int) -> int | None:
    """The ring depth that fits the shared memory (at most `stages`, noted on
    the loop when fewer), or None when fewer than 2 slots fit."""
    fixed = sum(_bytes(t) for t in p.tiles if not t.inside)
    per_stage = sum(_bytes(t) for t in p.tiles if t.inside)
    fit = (shared_bytes - ps.RESERVED_SHARED - fixed) // per_stage
    if fit < 2:
        return None
    if fit < stages:
        for_op.attributes["tile.num_stages_note"] = ir.StringAttr.get(
            f"num_stages={stages} needs {fixed + stages * per_stage} bytes of shared memory; "
            f"pipelined with {fit}")
    return min(fit, stages)


def transform(for_op: ir.Operation, p: _Plan, stages: int, shared_bytes: int,
              has_tma: bool = False) -> bool:
    """Pipeline `for_op` by plan `p` (see the module docstring)."""
    fitted = fit_stages(for_op, p, stages, shared_bytes)
    if fitted is None:
        return False
    stages = fitted
    body = for_op.regions[0].blocks[0]
    args = list(body.arguments)
    ub, step = list(for_op.operands)[1:3]
    # A product whose result only feeds the next iteration (attention's
    # acc = P @ V) stays in flight across the loop's back edge when there are
    # >= 3 slots: its wait moves to that iteration's first use of the
    # accumulator (after the next S = Q @ K.T has been waited for, so it costs
    # nothing), and the copies then run S - 2 iterations ahead, into the slot
    # of iteration j - 2 (iteration j - 1's product may still be reading its own).
    yld_ops = list(ps.ops(body)[-1].operands)
    # Keyed by the index of the use: an ir.Operation's hash does not survive
    # the rewrites below (moving and erasing ops), so a dict of ops misses.
    lazy: dict[int, int] = {}
    if stages >= 3:
        for ui, u in enumerate(p.uses):
            res = u.dot.results[0]
            users = list(res.uses)
            if len(users) == 1 and isinstance(users[0].owner, ir.OpView) and \
                    users[0].owner.operation.name == "scf.yield":
                lazy[ui] = yld_ops.index(res)
    ahead = stages - 2 if lazy else stages - 1
    # A slot is free when the products reading it are done: in the iteration
    # itself, or in the next one when one of them stays in flight.
    late = any(ui in lazy for ui, u in enumerate(p.uses)
               if (u.a is not None and p.tiles[u.a].inside) or p.tiles[u.b].inside)
    loc = for_op.location
    use_tma = has_tma and pipeline_tma.all_tagged([t.load for t in p.tiles])
    bars: _Bars | None = None
    with loc, ir.InsertionPoint(for_op):
        for t in p.tiles:
            rt = t.load.results[0].type
            t.ring = tile_memory.local_alloc(stages if t.inside else 1, rt.shape,
                                             rt.element_type, swizzle=ps.SWIZZLE,
                                             row_permutation="wgmma" if t.role == "a"
                                             else "none", loc=loc)
        before = [t for t in p.tiles if not t.inside]
        if use_tma:
            bars = _Bars(tile_memory.mbarrier_alloc(stages, loc=loc),
                         tile_memory.mbarrier_alloc(stages, loc=loc, per_warp=True),
                         tile_memory.mbarrier_alloc(1, loc=loc) if before else None)
            if bars.once is not None:
                # Copied only where the loop runs (a masked tail loop often
                # does not); the wait below then returns at once.
                runs = arith.CmpIOp(arith.CmpIPredicate.slt, list(for_op.operands)[0], ub).result
                pipeline_tma.issue([t.load for t in before], [_ring(t) for t in before],
                                   bars.once, ps.i32(0), runs, {})
        for t in before if bars is None else []:   # copied once, in the first group
            ptr, mask, _ = ps.load_parts(t.load)
            tile_memory.async_copy(_ring(t), ps.i32(0), ptr, mask, loc=t.load.location)
        new_for = ps.prologue_loop(for_op, p.carried, ahead,
                                   lambda slot, iv, m: _copies(p, slot, iv, ub, m, bars))
    if bars is not None and bars.once is not None:
        with loc, ir.InsertionPoint(new_for.operation):
            pipeline_tma.wait_if(bars.once, ps.i32(0), runs, 1, loc)
    new_body = new_for.body
    new_args = list(new_body.arguments)
    counter = new_args[-1]
    with loc, ir.InsertionPoint(new_body):
        s_c = ps.i32(stages)
        if bars is None:
            tile_memory.async_wait(ahead - 1, loc=loc)
            tile.barrier(loc=loc)
        else:
            # This iteration's slot has landed; the one the copies below
            # overwrite (load j + ahead) must be free.
            pipeline_tma.wait(bars.full, counter, stages, loc)
            pipeline_tma.wait_free(bars.empty, arith.AddIOp(counter, ps.i32(ahead)).result,
                                   stages, loc)
        read = arith.RemUIOp(counter, s_c).result
        write = arith.RemUIOp(arith.AddIOp(counter, ps.i32(ahead)).result, s_c).result
        iv_w = arith.AddIOp(new_args[0], arith.MulIOp(step, ps.i32(ahead)).result).result
        m = _copies(p, write, iv_w, ub,
                    {args[0]: iv_w, **{args[i + 1]: new_args[i + 1] for i in p.carried}},
                    bars)
        sentinel = scf.YieldOp([])
    for op in ps.ops(body):
        op.move_before(sentinel.operation)
    sentinel.operation.erase()
    for old, new in zip(args, new_args[:-1]):
        old.replace_all_uses_with(new)
    zero = None
    for ui, u in enumerate(p.uses):
        d = u.dot
        with d.location, ir.InsertionPoint(d):
            if zero is None:
                zero = ps.i32(0)
            bt = p.tiles[u.b]
            a_src = d.operands[0] if u.a is None else p.tiles[u.a].ring
            a_slot = read if u.a is not None and p.tiles[u.a].inside else zero
            b_slot = read if bt.inside else zero
            assert a_src is not None and bt.ring is not None
            started = tile_memory.mma(a_src, a_slot, bt.ring, b_slot, d.operands[2], "wgmma",
                                      loc=d.location)
            if u.kmajor:
                started.owner.attributes["tile.b_kmajor"] = ir.UnitAttr.get()
            done = started if ui in lazy else tile_memory.mma_wait(started, 0, loc=d.location)
        d.results[0].replace_all_uses_with(done)
        d.erase()
    for tr in p.trans:
        tr.erase()
    gone = [t.load for t in p.tiles if t.inside or not list(t.load.results[0].uses)]
    if bars is not None:
        pipeline_tma.drop_hints(gone)
    for load in gone:
        load.erase()
    old_yield = ps.ops(new_body)[-1]
    outs = list(old_yield.operands)
    with loc, ir.InsertionPoint(old_yield):
        nxt = arith.AddIOp(counter, ps.i32(1)).result
        scf.YieldOp([m.get(v, v) if i in p.carried else v for i, v in enumerate(outs)] +
                    [nxt])
    old_yield.erase()
    ps.dce(new_body)
    _issue_early(new_body)
    waits = [w for idx in lazy.values()
             if (w := _wait_before_first_use(new_args[idx + 1], new_body)) is not None]
    if bars is not None:
        _arrive(late, waits, bars.empty, counter, stages, new_body, loc)
    for old, new in zip(for_op.results, list(new_for.results)[:-1]):
        old.replace_all_uses_with(new)
    nxt_op = ps.next_op(new_for.operation)
    with loc, ir.InsertionPoint(nxt_op):
        for idx in lazy.values():
            out = new_for.results[idx]
            uses = list(out.uses)
            final = tile_memory.mma_wait(out, 0, loc=loc)
            for use in uses:
                use.owner.operands[use.operand_number] = final
        if bars is None:
            tile_memory.async_wait(0, loc=loc)
        tile.barrier(loc=loc)
        if bars is not None:
            for b in (bars.once, bars.empty, bars.full):   # a stack: last in, first out
                if b is not None:
                    tile_memory.mbarrier_inval(b, loc=loc)
        for t in reversed(p.tiles):
            tile_memory.local_dealloc(_ring(t), loc=loc)
    for_op.erase()
    if bars is not None:   # the prologue's clones of the pointer arithmetic are dead
        ps.dce(new_for.operation.block)
    return True


def _issue_early(body: ir.Block) -> None:
    """Start a product that does not depend on the one just started right after
    it, before that one's wait (the backward's dP = dO @ V.T next to S = Q @
    K.T: the second runs on the tensor cores while the softmax of the first is
    computed), then give every wait in the body as `pending` the products
    started between its product and it: `wgmma.wait_group N` leaves the N
    latest groups in flight, and those are exactly the later ones.  (ptxas
    waits for the first product before it zeroes the second's accumulator,
    C7517, so the second starts when the first is done; issuing both at once
    with scale-d = 0 measured slower: the results README's zero-acc probe.)"""
    def waited(m: ir.Operation) -> ir.Operation | None:
        uses = list(m.results[0].uses)
        if len(uses) == 1 and isinstance(uses[0].owner, ir.OpView) and \
                uses[0].owner.operation.name == "tile.mma_wait":
            return uses[0].owner.operation
        return None

    order = ps.ops(body)
    mmas = [op for op in order if op.name == "tile.mma" and waited(op) is not None]
    for m1, m2 in zip(mmas, mmas[1:]):
        w1 = waited(m1)
        at = order.index(m1)
        defs = [o.owner.operation for o in m2.operands if isinstance(o.owner, ir.OpView)]
        if w1 is None or any(d.block == body and order.index(d) > at for d in defs):
            continue
        m2.move_before(w1)
        order = ps.ops(body)
    mma_seen = 0
    started: dict[ir.Operation, int] = {}
    for op in ps.ops(body):
        if op.name == "tile.mma":
            mma_seen += 1
            started[op] = mma_seen
        elif op.name == "tile.mma_wait":
            src = op.operands[0].owner
            if isinstance(src, ir.OpView) and src.operation in started:
                op.attributes["pending"] = ir.IntegerAttr.get(
                    ir.IntegerType.get_signless(32), mma_seen - started[src.operation])


def _arrive(late: bool, waits: list[ir.Operation], empty: ir.Value, counter: ir.Value,
            stages: int, body: ir.Block, loc: ir.Location) -> None:
    """Each warp arrives on a slot's empty barrier once it is done reading it:
    after the last wait of the products that read slot j % S in iteration j,
    or, when one of them stays in flight across the back edge, after its wait
    in iteration j + 1, for slot (j - 1) % S (nothing to free in iteration 0)."""
    order = ps.ops(body)
    if late:
        after = max(waits, key=order.index)
        with loc, ir.InsertionPoint(ps.next_op(after)):
            slot = arith.RemUIOp(arith.AddIOp(counter, ps.i32(stages - 1)).result,
                                 ps.i32(stages)).result
            live = arith.CmpIOp(arith.CmpIPredicate.ugt, counter, ps.i32(0)).result
            tile_memory.mbarrier_arrive(empty, slot, live, loc=loc)
        return
    last = max((w for w in order if w.name == "tile.mma_wait"), key=order.index)
    with loc, ir.InsertionPoint(ps.next_op(last)):
        slot = arith.RemUIOp(counter, ps.i32(stages)).result
        true = arith.ConstantOp(ir.IntegerType.get_signless(1), 1).result
        tile_memory.mbarrier_arrive(empty, slot, true, loc=loc)


def _wait_before_first_use(arg: ir.Value, body: ir.Block) -> ir.Operation | None:
    """`tile.mma_wait {pending = 0}` on the in-flight accumulator `arg` right
    before its first user in `body`; every user then reads the waited value.
    Returns the wait (None when `arg` has no user)."""
    uses = list(arg.uses)
    if not uses:
        return None
    order = ps.ops(body)
    users = [u.owner.operation if isinstance(u.owner, ir.OpView) else u.owner for u in uses]
    first = min(users, key=order.index)
    with first.location, ir.InsertionPoint(first):
        waited = tile_memory.mma_wait(arg, 0, loc=first.location)
    for use in uses:
        use.owner.operands[use.operand_number] = waited
    return waited.owner.operation if isinstance(waited.owner, ir.OpView) else None
