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
    variables have the same type.
Output:
    ot = trips(lb, ub, step); kt = trips(klb, kub, kstep)    (trips(l, u, s) =
        u > l ? (u - l - 1) / s + 1 : 0; scf.for steps are positive)
    scf.if kt > 0 {
      inits = the inner inits of the first tile (the prologue's ops they need,
              cloned for iv = lb; loop-invariant inits are used as they are)
      scf.for i = 0 to ot * kt step 1 iter_args(outer args, inner args) {tile.flattened}
        t = lb + (i / kt) * step; k = klb + (i % kt) * kstep
        prologue(t); inner body(k, inner args) -> y
        scf.if i % kt == kt - 1 { epilogue(t, y); yield the outer yield's values,
                                  the next tile's inner inits (the prologue's ops
                                  cloned for t + step) }
        else { yield outer args, y }
    } else { the original nest with the inner loop replaced by its inits }
So the inner loop-carried values are reset at each tile's end, in the
epilogue branch, and the loop body's dot chains the carried accumulator
directly (what `tile-pipeline` takes).  The K = 0 case (no inner iteration,
the epilogue must still store the inits) keeps the nest, without its empty
inner loop, behind the `scf.if`: one condition per launch, and the fused loop
never runs a padding iteration.  Prologue ops whose values only the epilogue
reads move into the epilogue branch.  The fused loop keeps the outer loop's
attributes but `tile.flatten` (`tile.num_stages` of the inner loop wins) and
is marked `tile.flattened`.  Loops of any other shape are left as they are,
attribute included.  New ops carry the location of the loop they come from.
`ot * kt` is computed in the induction variable's type (a persistent kernel's
tiles times K blocks, far below 2^31 for i32).

Nearest upstream analogue: Triton's `FuseNestedLoops` (tritongpu-fuse-nested-loops),
which fuses the same nest for `tl.range(..., flatten=True)`.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, scf

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


def _flatten(outer: ir.Operation) -> bool:
    found = _shape(outer)
    if found is None:
        return False
    inner, prologue, epilogue = found
    body = outer.regions[0].blocks[0]
    ibody = inner.regions[0].blocks[0]
    oargs, iargs = list(body.arguments), list(ibody.arguments)
    olb, oub, ost = list(outer.operands)[:3]
    ilb, iub, ist = list(inner.operands)[:3]
    oinits, iinits = list(outer.operands)[3:], list(inner.operands)[3:]
    n_out = len(oinits)
    oyield, iyield = ps.ops(body)[-1], ps.ops(ibody)[-1]
    init_ops = _needed(prologue, iinits)
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
        first = ps.clone_side(init_ops, {oargs[0]: olb, **dict(zip(oargs[1:], oinits))})
        total = arith.MulIOp(ot, kt).result
        flat = scf.ForOp(arith.ConstantOp(ity, 0).result, total,
                         arith.ConstantOp(ity, 1).result,
                         oinits + [first.get(v, v) for v in iinits])
        for a in outer.attributes:
            name = a if isinstance(a, str) else a.name
            if name != "tile.flatten":
                flat.operation.attributes[name] = outer.attributes[name]
        if "tile.num_stages" in inner.attributes:
            flat.operation.attributes["tile.num_stages"] = inner.attributes["tile.num_stages"]
        flat.operation.attributes["tile.flattened"] = ir.UnitAttr.get()
        results = list(flat.results)
        scf.YieldOp(results[:n_out])
    fbody = flat.body
    fargs = list(fbody.arguments)
    i = fargs[0]
    with loc, ir.InsertionPoint(fbody):
        tile_i = arith.DivUIOp(i, kt).result
        t = arith.AddIOp(olb, arith.MulIOp(tile_i, ost).result).result
        kk = arith.RemUIOp(i, kt).result
        k = arith.AddIOp(ilb, arith.MulIOp(kk, ist).result).result
        anchor = scf.YieldOp([])
    for op in prologue:
        op.move_before(anchor)
    for op in ps.ops(ibody)[:-1]:
        op.move_before(anchor)
    oargs[0].replace_all_uses_with(t)
    for old, new in zip(oargs[1:], fargs[1:1 + n_out]):
        old.replace_all_uses_with(new)
    iargs[0].replace_all_uses_with(k)
    for old, new in zip(iargs[1:], fargs[1 + n_out:]):
        old.replace_all_uses_with(new)
    ys = list(iyield.operands)
    for r, y in zip(inner.results, ys):
        r.replace_all_uses_with(y)
    with loc, ir.InsertionPoint(anchor):
        last = arith.CmpIOp(arith.CmpIPredicate.eq, kk,
                            arith.SubIOp(kt, arith.ConstantOp(ity, 1).result).result).result
        tail = scf.IfOp(last, [a.type for a in fargs[1:]], has_else=True)
    with loc, ir.InsertionPoint(tail.else_block):
        scf.YieldOp(fargs[1:1 + n_out] + ys)
    with loc, ir.InsertionPoint(tail.then_block):
        done = scf.YieldOp([])
    for op in epilogue:
        op.move_before(done)
    nxt = list(oyield.operands)
    with loc, ir.InsertionPoint(done):
        need = _needed(prologue, iinits)
        m: ps.Mapping = {}
        if need:
            m = ps.clone_side(need, {t: arith.AddIOp(t, ost).result,
                              **dict(zip(fargs[1:1 + n_out], nxt))})
        scf.YieldOp(nxt + [m.get(v, v) for v in iinits])
    done.erase()
    with loc, ir.InsertionPoint(anchor):
        scf.YieldOp(list(tail.results))
    anchor.erase()
    _sink(prologue, tail)
    for r, new in zip(outer.results, branch.results):
        r.replace_all_uses_with(new)
    outer.erase()
    return True


def _sink(prologue: list[ir.Operation], tail: scf.IfOp) -> None:
    """Move the prologue ops only the epilogue branch reads into it."""
    then = tail.then_block
    inside: set[ir.Operation] = set()

    def collect(block: ir.Block) -> None:
        for op in ps.ops(block):
            inside.add(op)
            for region in op.regions:
                for b in region.blocks:
                    collect(b)
    collect(then)
    for op in reversed(prologue):
        uses = [u.owner.operation if isinstance(u.owner, ir.OpView) else u.owner
                for r in op.results for u in r.uses]
        if uses and all(u in inside for u in uses):
            op.move_before(ps.ops(then)[0])
            inside.add(op)


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    with module.context:
        for func in list(module.body.operations):
            if func.operation.name != "func.func":
                continue
            for op in ps.loops(func.operation):
                if "tile.flatten" in op.attributes:
                    _flatten(op)
