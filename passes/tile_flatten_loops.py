"""`tile-flatten-loops`: a persistent tile loop and its K loop fused into one loop.

`tl.range(start, end, step, flatten=True)` marks a loop `tile.flatten`.  Run
as written, each of its iterations (an output tile of a persistent kernel)
starts its K loop from nothing: the pipeliner's prologue, its waits and the
epilogue's store happen with no loads in flight.  Fused into one loop of
(tile, k) iterations, with the epilogue under a condition at each tile's last
k, `tile-pipeline` keeps the next tile's first K blocks in flight while the
current tile's epilogue runs, as Triton's flattened persistent loops do.

Input: tile-level IR (the language steps' first pass, before the descriptor
passes).  A `scf.for` carrying `tile.flatten` is rewritten when
  * its body holds exactly one `scf.for` (the inner loop); the ops before it
    (the tile's "prologue") are pure and region-free (`pipeline_support.pure`,
    descriptors, `tile.trans`/`tile.reshape`, `math.*`), the ops after it (the
    "epilogue", up to the yield) are anything;
  * the inner loop's bounds and step are defined outside the outer loop
    (every tile runs the same number of K iterations), and both induction
    variables have the same type (bounds computed inside the tile loop, even
    from invariant values, keep the nest: moving them out, measured on the
    tma fuzzer's pointer kernels, fused loops whose carried index tiles then
    spilled at 128x256, 0 -> 82-224 words, where the nests did not);
  * the prologue values the inner body reads ("P") are scalars or tiles that
    do not depend on the outer loop's iteration arguments;
  * the inner loop carries no pointers (`a_ptrs += BLOCK_K * stride`): fused,
    their per-tile reset sits in the epilogue branch, where tile-pipeline
    cannot run the loads ahead, and the loop lost its pipeline (measured:
    Triton-style batched persistent kernels went from TMA rings to an
    unpipelined loop); such a nest stays, pipelined per tile, and the loop
    says why (`tile.flatten_note`).  Pointers computed from the K index in
    the body (Triton's persistent tutorial) flatten.
Output:
    ot = trips(lb, ub, step); kt = trips(klb, kub, kstep)    (trips(l, u, s) =
        u > l ? (u - l - 1) / s + 1 : 0; scf.for steps are positive)
    scf.if kt > 0 {
      scf.for i = 0 to ot * kt step 1 iter_args(outer args, inner args (the
          first tile's inits), P(lb), tb = lb, kb = 0, te = lb, ke = 0) {tile.flattened}
        inner body(k = klb + kb * kstep, inner args, P) -> y
        wrap = kb + 1 == kt; kb' = wrap ? 0 : kb + 1; tb' = wrap ? tb + step : tb
        P' = scf.if wrap { P(tb + step) } else { P }
        scf.if ke == kt - 1 { the prologue cloned for te; epilogue(te, y);
                              yield the outer yield's values, the next tile's
                              inner inits (the prologue cloned for te + step) }
        else { yield outer args, y }
        ke' = ke == kt - 1 ? 0 : ke + 1; te' likewise
    } else { the original nest with the inner loop replaced by its inits }
So the inner loop-carried values are reset at each tile's end, in the
epilogue branch, and the loop body's dot chains the carried accumulator
directly (what `tile-pipeline` takes).  The body's tile and k are counters,
not `i / kt` and `i % kt`, and the tile's coordinates (P, e.g. the grouped
ordering's divisions) are computed once per tile, under `wrap`: per
iteration the fused loop costs a few adds and selects more than the nest
(computing them every iteration made the flattened matmul 35% slower on the
H200: results README, the flatten probe).  The body's counters and P are
used by the body's loads only, so `tile-pipeline` runs them ahead with the
load side (`pipeline_support.load_side` takes the pure `scf.if`); the
epilogue keeps its own counters (te, ke) for the tile it stores.  The K = 0
case (no inner iteration, the epilogue must still store the inits) keeps the
nest, without its empty inner loop, behind the `scf.if`: one condition per
launch, and the fused loop never runs a padding iteration.  The fused loop
keeps the outer loop's attributes but `tile.flatten` (`tile.num_stages` of
the inner loop wins) and is marked `tile.flattened`.  Loops of any other
shape are left as they are, attribute included.  New ops carry the location
of the loop they come from.  `ot * kt` is computed in the induction
variable's type (a persistent kernel's tiles times K blocks, far below 2^31
for i32).

Nearest upstream analogue: Triton's `FuseNestedLoops` (tritongpu-fuse-nested-loops),
which fuses the same nest for `tl.range(..., flatten=True)`.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, scf

from tilec.dialects import tile
from tilec.options import CompileOptions
from tilec.passes import pipeline_support as ps
from tilec.targets import Target

NAME = "tile-flatten-loops"
_PROLOGUE_OK = {"tile.make_descriptor", "tile.trans", "tile.reshape"}


def _prologue_ok(op: ir.Operation) -> bool:
    return not op.regions and (ps.pure(op) or op.name in _PROLOGUE_OK or
                               op.name.startswith("math."))


def _inside(v: ir.Value, body: ir.Block) -> bool:
    """Whether `v` is defined in `body` (its arguments included)."""
    owner = v.owner
    if isinstance(owner, ir.Block):
        return owner == body
    return owner.operation.block == body


def _shape(outer: ir.Operation) -> tuple[ir.Operation, list[ir.Operation],
                                         list[ir.Operation]] | None:
    """(inner loop, prologue, epilogue) of a loop this pass rewrites, or None."""
    body = outer.regions[0].blocks[0]
    ops = ps.ops(body)
    fors = [op for op in ops if op.name == "scf.for"]
    if len(fors) != 1:
        return None
    inner = fors[0]
    at = ops.index(inner)
    prologue, epilogue = ops[:at], ops[at + 1:-1]
    if not all(_prologue_ok(op) for op in prologue):
        return None
    if any(_inside(v, body) for v in list(inner.operands)[:3]):
        return None
    if body.arguments[0].type != inner.regions[0].blocks[0].arguments[0].type:
        return None
    return inner, prologue, epilogue


def _trips(lb: ir.Value, ub: ir.Value, step: ir.Value) -> ir.Value:
    """The trip count of `scf.for lb to ub step step` (step > 0)."""
    t = lb.type
    one = arith.ConstantOp(t, 1).result
    zero = arith.ConstantOp(t, 0).result
    diff = arith.SubIOp(ub, lb).result
    some = arith.CmpIOp(arith.CmpIPredicate.sgt, diff, zero).result
    n = arith.AddIOp(arith.DivSIOp(arith.SubIOp(diff, one).result, step).result, one).result
    return arith.SelectOp(some, n, zero).result


def _needed(prologue: list[ir.Operation], values: list[ir.Value]) -> list[ir.Operation]:
    """The prologue ops `values` depend on, in order."""
    want: set[ir.Operation] = set()
    stack = list(values)
    pro = set(prologue)
    while stack:
        v = stack.pop()
        owner = v.owner
        if isinstance(owner, ir.Block):
            continue
        op = owner.operation
        if op in pro and op not in want:
            want.add(op)
            stack.extend(op.operands)
    return [op for op in prologue if op in want]


def _fallback(outer: ir.Operation, inner_index: int) -> ir.Operation:
    """A copy of the nest (at the current insertion point) for K = 0: the inner
    loop gives its inits, so it is dropped."""
    copy = outer.clone(ip=ir.InsertionPoint.current)
    body = copy.regions[0].blocks[0]
    inner = ps.ops(body)[inner_index]
    for r, init in zip(inner.results, list(inner.operands)[3:]):
        r.replace_all_uses_with(init)
    inner.erase()
    del copy.attributes["tile.flatten"]
    ps.dce(body)
    return copy


def _frontier(prologue: list[ir.Operation], users: list[ir.Operation]) -> list[ir.Value]:
    """The prologue results `users` (and the ops nested in them) read."""
    pro = set(prologue)
    out: list[ir.Value] = []
    for op in users:
        for inner in [op, *ps.region_ops(op)]:
            for v in inner.operands:
                owner = v.owner
                if isinstance(owner, ir.OpView) and owner.operation in pro and v not in out:
                    out.append(v)
    return out


def _reads(ops: list[ir.Operation], values: list[ir.Value]) -> bool:
    return any(o in values for op in ops for inner in [op, *ps.region_ops(op)]
               for o in inner.operands)


def _carriable(t: ir.Type) -> bool:
    return isinstance(t, (ir.IntegerType, ir.IndexType, ir.FloatType, ir.RankedTensorType))


_POINTERS_NOTE = ("not flattened: the K loop carries pointers (ptrs += BLOCK_K * stride), which "
                  "the fused loop could not prefetch; computed from the K index in the loop "
                  "instead, they flatten")


def _flatten(outer: ir.Operation) -> bool:
    found = _shape(outer)
    if found is None:
        return False
    inner, prologue, epilogue = found
    if any(tile.is_ptr(tile.element_type(a.type))
           for a in list(inner.regions[0].blocks[0].arguments)[1:]):
        outer.attributes["tile.flatten_note"] = ir.StringAttr.get(_POINTERS_NOTE)
        return False
    body = outer.regions[0].blocks[0]
    ibody = inner.regions[0].blocks[0]
    oargs, iargs = list(body.arguments), list(ibody.arguments)
    olb, oub, ost = list(outer.operands)[:3]
    ilb, iub, ist = list(inner.operands)[:3]
    oinits, iinits = list(outer.operands)[3:], list(inner.operands)[3:]
    n_out, n_in = len(oinits), len(iinits)
    oyield, iyield = ps.ops(body)[-1], ps.ops(ibody)[-1]
    inner_ops = ps.ops(ibody)[:-1]
    # The prologue values the K loop's body reads are carried, recomputed only
    # when the body's counters reach the next tile.  They must not depend on
    # what the tile loop carries (the epilogue updates that, behind the load
    # side once tile-pipeline runs the load side ahead).
    carried = _frontier(prologue, inner_ops + [iyield])
    ahead_ops = _needed(prologue, carried)
    if _reads(ahead_ops, oargs[1:]) or not all(_carriable(v.type) for v in carried):
        return False
    loc = outer.location
    ity = oargs[0].type
    with loc, ir.InsertionPoint(outer):
        ot = _trips(olb, oub, ost)
        kt = _trips(ilb, iub, ist)
        has_k = arith.CmpIOp(arith.CmpIPredicate.sgt, kt,
                             arith.ConstantOp(ity, 0).result).result
        branch = scf.IfOp(has_k, [r.type for r in outer.results], has_else=True)
    with loc, ir.InsertionPoint(branch.else_block):
        copy = _fallback(outer, ps.ops(body).index(inner))
        scf.YieldOp(list(copy.results))
    with loc, ir.InsertionPoint(branch.then_block):
        zero = arith.ConstantOp(ity, 0).result
        one = arith.ConstantOp(ity, 1).result
        first = ps.clone_side(_needed(prologue, iinits + carried),
                              {oargs[0]: olb, **dict(zip(oargs[1:], oinits))})
        total = arith.MulIOp(ot, kt).result
        flat = scf.ForOp(zero, total, one,
                         oinits + [first.get(v, v) for v in iinits] + [first[v] for v in carried] +
                         [olb, zero, olb, zero])
        for a in outer.attributes:
            name = a if isinstance(a, str) else a.name
            if name != "tile.flatten":
                flat.operation.attributes[name] = outer.attributes[name]
        if "tile.num_stages" in inner.attributes:
            flat.operation.attributes["tile.num_stages"] = inner.attributes["tile.num_stages"]
        flat.operation.attributes["tile.flattened"] = ir.UnitAttr.get()
        scf.YieldOp(list(flat.results)[:n_out])
    fargs = list(flat.body.arguments)
    f_out = fargs[1:1 + n_out]
    f_in = fargs[1 + n_out:1 + n_out + n_in]
    f_p = fargs[1 + n_out + n_in:-4]
    t_body, k_body, t_epi, k_epi = fargs[-4:]
    with loc, ir.InsertionPoint(flat.body):
        k = arith.AddIOp(ilb, arith.MulIOp(k_body, ist).result).result
        anchor = scf.YieldOp([])
    for op in inner_ops:
        op.move_before(anchor)
    ps.remap(inner_ops + [iyield], {iargs[0]: k, **dict(zip(iargs[1:], f_in)),
                                  **dict(zip(carried, f_p)), oargs[0]: t_body,
                                  **dict(zip(oargs[1:], f_out))})
    ys = list(iyield.operands)
    with loc, ir.InsertionPoint(anchor):
        # The body's counters: the next iteration's k and tile, no division.
        k_next = arith.AddIOp(k_body, one).result
        wrap = arith.CmpIOp(arith.CmpIPredicate.eq, k_next, kt).result
        k_body2 = arith.SelectOp(wrap, zero, k_next).result
        t_next = arith.AddIOp(t_body, ost).result
        t_body2 = arith.SelectOp(wrap, t_next, t_body).result
        p2: list[ir.Value] = []
        if carried:
            again = scf.IfOp(wrap, [v.type for v in carried], has_else=True)
            with ir.InsertionPoint(again.then_block):
                m = ps.clone_side(ahead_ops, {oargs[0]: t_next})
                scf.YieldOp([m[v] for v in carried])
            with ir.InsertionPoint(again.else_block):
                scf.YieldOp(f_p)
            p2 = list(again.results)
        last = arith.CmpIOp(arith.CmpIPredicate.eq, k_epi,
                            arith.SubIOp(kt, one).result).result
        tail = scf.IfOp(last, [a.type for a in f_out + f_in], has_else=True)
    with loc, ir.InsertionPoint(tail.else_block):
        scf.YieldOp(f_out + ys)
    with loc, ir.InsertionPoint(tail.then_block):
        done = scf.YieldOp([])
    # The epilogue computes its tile's prologue values itself, once per tile.
    outer_map = {oargs[0]: t_epi, **dict(zip(oargs[1:], f_out))}
    wanted = _frontier(prologue, epilogue + [oyield])
    with loc, ir.InsertionPoint(done):
        em = ps.clone_side(_needed(prologue, wanted), dict(outer_map))
    for op in epilogue:
        op.move_before(done)
    ps.remap(epilogue + [oyield], {**{v: em[v] for v in wanted},
                                 **dict(zip(inner.results, ys)), **outer_map})
    nxt = list(oyield.operands)
    with loc, ir.InsertionPoint(done):
        need = _needed(prologue, iinits)
        nm: ps.Mapping = dict(zip(oargs[1:], nxt))
        if need:   # the next tile's inits from its prologue values
            nm = ps.clone_side(need, {oargs[0]: arith.AddIOp(t_epi, ost).result, **nm})
        scf.YieldOp(nxt + [nm.get(v, v) for v in iinits])
    done.erase()
    with loc, ir.InsertionPoint(anchor):
        k_epi2 = arith.SelectOp(last, zero, arith.AddIOp(k_epi, one).result).result
        t_epi2 = arith.SelectOp(last, arith.AddIOp(t_epi, ost).result, t_epi).result
        scf.YieldOp(list(tail.results) + p2 + [t_body2, k_body2, t_epi2, k_epi2])
    anchor.erase()
    for r, new in zip(outer.results, branch.results):
        r.replace_all_uses_with(new)
    outer.erase()
    return True


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    with module.context:
        for func in list(module.body.operations):
            if func.operation.name != "func.func":
                continue
            for op in ps.loops(func.operation):
                if "tile.flatten" in op.attributes:
                    _flatten(op)
