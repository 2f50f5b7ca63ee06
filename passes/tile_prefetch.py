"""`tile-prefetch`: issue a loop's global loads one iteration ahead.

In a loop like the K loop of a matmul, every iteration loads its tiles and then
computes on them, so each iteration waits out the memory latency.  This pass
loads the tiles of iteration i + 1 at the top of iteration i and carries them
to the next iteration, so the loads are in flight while iteration i computes
(register double-buffering; Triton's software pipelining does this with
asynchronous copies into shared memory).

Input: tile-level IR (before `tile-layout`).  A `scf.for` is transformed when
  * its body has no nested regions and no `tile.store`, atomic or barrier (a
    load moved ahead of a write could read memory the write changes);
  * a `tile.load` in it has a tile result and its pointer, mask and `other`
    are computed in the body only from the induction variable and values
    defined outside the loop, by pure ops (`arith`, `tensor.splat`,
    `tile.range`/`broadcast`/`expand_dims`/`addptr`/`program_id`/`num_programs`).
Output: for each such load, its operand computation is cloned before the loop
with the induction variable at the lower bound, and at the top of the body
with it at iv + step; both clones load with the mask `and`-ed with
`iv' < upper bound` (masked-off lanes read nothing, so a prefetch past the
last iteration or before a loop that runs zero times touches no memory), and
`other` defaulting to zeros.  The loop carries the prefetched tiles as extra
iteration arguments; the original load is replaced by the carried tile.
Every cloned op keeps the location of the op it copies.

Status: not in the default pipeline (`tilec opt --pass tile-prefetch` runs it).
Measured on the H200 fp16 matmul (benchmarks/results/logs/
h200-matmul-prefetch-2026-11-29.log) every block config ran 1.3-1.8x slower with
it (best 180.9 against 280.2 TFLOP/s without): holding the next tiles in
registers across the mma loop costs registers (spills in the larger configs) and
the loads still wait at the same barriers.  Pipelining that pays needs
asynchronous copies into workgroup memory (`cp.async`/TMA) with several buffers.

Nearest upstream analogue: the `scf` pipelining transform
(`scf::pipelineForLoop`); Triton's `tritongpu-pipeline`.
"""
from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith, scf, tensor

from tilec.dialects import tile
from tilec.options import CompileOptions
from tilec.passes import pipeline_support as ps
from tilec.targets import Target

NAME = "tile-prefetch"
_PURE = {"tensor.splat", "tile.range", "tile.broadcast", "tile.expand_dims", "tile.addptr",
         "tile.program_id", "tile.num_programs"}
_WRITES = {"tile.store", "tile.atomic_rmw", "tile.atomic_cas", "tile.barrier"}


def _ops(block: ir.Block) -> list[ir.Operation]:
    return [v.operation for v in block.operations]


def _writes(op: ir.Operation) -> bool:
    if op.name in _WRITES:
        return True
    return any(_writes(inner.operation) for region in op.regions
               for block in region.blocks for inner in block.operations)


def _slice(load: ir.Operation, body: ir.Block, iv: ir.Value) -> list[ir.Operation] | None:
    """The body ops computing `load`'s operands, in body order; None when they
    depend on anything but `iv` and values from outside the loop."""
    needed: set[ir.Operation] = set()
    stack = list(load.operands)
    while stack:
        v = stack.pop()
        if v == iv:
            continue
        owner = v.owner
        if isinstance(owner, ir.Block):
            if owner == body:
                return None  # an iteration argument: not known one iteration ahead
            continue
        op = owner.operation
        if op.block != body:
            continue  # defined outside the loop
        if not (op.name.startswith("arith.") or op.name in _PURE) or op.regions:
            return None
        if op not in needed:
            needed.add(op)
            stack.extend(op.operands)
    return [op for op in _ops(body) if op in needed]


def _clone_load(load: ir.Operation, ops: list[ir.Operation], iv: ir.Value, at: ir.Value,
                upper: ir.Value, ip: ir.InsertionPoint) -> ir.Value:
    """`load` of iteration `at`, guarded by `at < upper`, built at `ip`."""
    mapping: dict[ir.Value, ir.Value] = {iv: at}
    for op in ops:
        new = op.clone(ip=ip)
        for i, o in enumerate(op.operands):
            if o in mapping:
                new.operands[i] = mapping[o]
        for old, r in zip(op.results, new.results):
            mapping[old] = r
    operands = [mapping.get(o, o) for o in load.operands]
    seg = list(ir.DenseI32ArrayAttr(load.attributes["operandSegmentSizes"]))
    ptr = operands[0]
    mask = operands[1] if seg[1] else None
    other = operands[1 + seg[1]] if seg[2] else None
    res_t = load.results[0].type
    with load.location, ip:
        live = arith.CmpIOp(arith.CmpIPredicate.slt, at, upper).result
        i1 = ir.IntegerType.get_signless(1)
        live_t = tensor.SplatOp(ir.RankedTensorType.get(list(res_t.shape), i1), live, []).result
        mask = live_t if mask is None else arith.AndIOp(mask, live_t).result
        if other is None:
            et = res_t.element_type
            zero = ir.FloatAttr.get(et, 0.0) if isinstance(et, ir.FloatType) else \
                ir.IntegerAttr.get(et, 0)
            other = arith.ConstantOp(res_t, ir.DenseElementsAttr.get_splat(res_t, zero)).result
        return tile.load(ptr, mask, other, loc=load.location)


def prefetch_loop(for_op: ir.Operation,
                  want: Callable[[ir.Operation], bool] = lambda _load: True) -> bool:
    """Prefetch the loads of `for_op` that qualify and `want` accepts (see the
    module docstring); False when the loop is left as it is."""
    body = for_op.regions[0].blocks[0]
    if any(op.regions or _writes(op) for op in _ops(body)):
        return False
    iv = body.arguments[0]
    lb, ub, step = list(for_op.operands)[:3]
    plans: list[tuple[ir.Operation, list[ir.Operation]]] = []
    for op in _ops(body):
        if op.name == "tile.load" and isinstance(op.results[0].type, ir.RankedTensorType) \
                and want(op):
            ops = _slice(op, body, iv)
            if ops is not None:
                plans.append((op, ops))
    if not plans:
        return False
    before = ir.InsertionPoint(for_op)
    firsts = [_clone_load(load, ops, iv, lb, ub, before) for load, ops in plans]
    inits = list(for_op.operands)[3:]
    with for_op.location, before:
        new_for = scf.ForOp(lb, ub, step, inits + firsts)
    new_body = new_for.body
    n_old = len(inits)
    old_yield = _ops(body)[-1]
    with for_op.location, ir.InsertionPoint(new_body):
        new_yield = scf.YieldOp(list(old_yield.operands))
    for op in _ops(body)[:-1]:
        op.move_before(new_yield)
    body.arguments[0].replace_all_uses_with(new_for.induction_variable)
    for old, new in zip(list(body.arguments)[1:], list(new_for.inner_iter_args)[:n_old]):
        old.replace_all_uses_with(new)
    new_iv = new_for.induction_variable
    top = ir.InsertionPoint.at_block_begin(new_body)
    with for_op.location, top:
        next_iv = arith.AddIOp(new_iv, step).result
    after_next = ir.InsertionPoint(_ops(new_body)[1])
    nexts = [_clone_load(load, ops, new_iv, next_iv, ub, after_next) for load, ops in plans]
    for (load, _ops_), carried in zip(plans, list(new_for.inner_iter_args)[n_old:]):
        load.results[0].replace_all_uses_with(carried)
        load.erase()
    with for_op.location, ir.InsertionPoint(new_yield):
        scf.YieldOp(list(new_yield.operands) + nexts)
    new_yield.erase()
    for old, new in zip(for_op.results, list(new_for.results)[:n_old]):
        old.replace_all_uses_with(new)
    for_op.erase()
    return True


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    for op in ps.loops(module.operation):   # innermost first
        prefetch_loop(op)
