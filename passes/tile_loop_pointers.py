"""tile-loop-pointers: loop-carried pointer tiles -> a loop-carried scalar base.

A K loop that advances a pointer tile by a uniform step

    %p0 = tile.addptr(tensor.splat(%base), %offs)          (before the loop)
    scf.for ... iter_args(%p = %p0) {
      ... uses of %p ...
      %q = tile.addptr(%p, tensor.splat(%d))   (or a scalar %d)
      scf.yield %q
    }

carries a 64-bit pointer per element of every thread's fragment (the vector
phi keeps every lane alive: 64 VGPRs for the two operand tiles of a 128x128x64
fp16 matmul on gfx942).  After this pass the loop carries the scalar base
instead, `%b' = tile.addptr(%b, %d)` (64-bit, exact: the same sum of sign-
extended steps the program computes), and the tile is rebuilt where it is
used as `tile.addptr(tensor.splat(%b), %offs)` from the loop-invariant offsets:
a uniform base in SGPRs plus 32-bit offsets, which the AMD memory rules turn
into `global_load ... s[base]` / buffer accesses.  A loop result of the carried
tile is rebuilt after the loop in the same way.

On NVIDIA the tile's elements are then `base + offset` (one `IMAD.WIDE`
each) rather than 64-bit pointers carried and advanced per element, whose
halves ptxas had to re-pair with register moves before every `cp.async`.
The pass runs where the target has `Feature.LOOP_SCALAR_BASES` (targets/
__init__.py says where and why).

Input: tile-level kernels (before tile-layout: no encodings are needed).
Output: the same kernels; iter_args that do not match the pattern (any other
init, a step that is a tile, a use of the yielded tile other than the yield)
are left alone.
Nearest upstream analogue: Triton's AMD `CanonicalizePointers` (pointer =
scalar base + offset tensor, carried through scf.for).
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, tensor

from tilec.dialects import tile
from tilec.options import CompileOptions
from tilec.passes import pipeline_support as ps
from tilec.targets import Feature, Target

NAME = "tile-loop-pointers"


def _producer(v: ir.Value) -> ir.Operation | None:
    owner = v.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _scalar_step(v: ir.Value, ip: ir.InsertionPoint) -> ir.Value | None:
    """The uniform i32/i64 step `v` adds (a scalar, a splat of one or a splat
    constant, which becomes a scalar constant at `ip`)."""
    if not isinstance(v.type, ir.RankedTensorType):
        return v
    p = _producer(v)
    if p is not None and p.name == "tensor.splat":
        return p.operands[0]
    if p is not None and p.name == "arith.constant":
        attr = p.attributes["value"]
        if isinstance(attr, ir.DenseIntElementsAttr) and ir.DenseIntElementsAttr(attr).is_splat:
            et = v.type.element_type
            value = ir.IntegerAttr.get(et, ir.DenseIntElementsAttr(attr)[0])
            return arith.ConstantOp(et, value, loc=p.location, ip=ip).result
    return None


def _rewrite(loop: ir.Operation, i: int) -> bool:
    body = loop.regions[0].blocks[0]
    arg = body.arguments[1 + i]
    if not (isinstance(arg.type, ir.RankedTensorType) and tile.is_ptr(arg.type.element_type)):
        return False
    init = _producer(loop.operands[3 + i])
    if init is None or init.name != "tile.addptr":
        return False
    splat = _producer(init.operands[0])
    if splat is None or splat.name != "tensor.splat":
        return False
    base, offs = splat.operands[0], init.operands[1]
    yield_op = list(body.operations)[-1].operation
    # The yielded tile: arg advanced by one or more scalar steps, each
    # intermediate tile used only by the next step.
    chain: list[ir.Operation] = []
    v = yield_op.operands[i]
    while v != arg:
        step_op = _producer(v)
        if step_op is None or step_op.name != "tile.addptr" \
                or len(list(step_op.results[0].uses)) != 1:
            return False
        chain.append(step_op)
        v = step_op.operands[0]
    if not chain:
        return False
    steps = [_scalar_step(op.operands[1], ir.InsertionPoint(op)) for op in reversed(chain)]
    if any(st is None for st in steps):
        return False
    tile_t = arg.type
    result = loop.results[i]
    # The scalar base is carried; the steps advance it before the yield.
    loop.operands[3 + i] = base
    arg.set_type(base.type)
    result.set_type(base.type)
    new_base: ir.Value = arg
    for st, op in zip(steps, reversed(chain)):
        assert st is not None
        new_base = tile.addptr(new_base, st, loc=op.location, ip=ir.InsertionPoint(yield_op))
    yield_op.operands[i] = new_base
    for op in chain:
        op.erase()
    first = list(body.operations)[0]
    rebuilt = _rebuild(arg, offs, tile_t, init.location, ir.InsertionPoint(first))
    splat_op = _producer(rebuilt.owner.operands[0])
    for use in list(arg.uses):
        user = use.owner.operation
        if user != splat_op and not _is_scalar_addptr(user):
            user.operands[use.operand_number] = rebuilt
    if len(list(result.uses)):
        out = _rebuild(result, offs, tile_t, init.location, ir.InsertionPoint(_next_op(loop)))
        splat_op = _producer(out.owner.operands[0])
        for use in list(result.uses):
            if use.owner.operation != splat_op:
                use.owner.operation.operands[use.operand_number] = out
    return True


def _is_scalar_addptr(op: ir.Operation) -> bool:
    return op.name == "tile.addptr" and not isinstance(op.results[0].type, ir.RankedTensorType)


def _next_op(op: ir.Operation) -> ir.Operation:
    block = op.block
    ops = [o.operation for o in block.operations]
    return ops[ops.index(op) + 1]


def _rebuild(base: ir.Value, offs: ir.Value, tile_t: ir.Type, loc: ir.Location,
             ip: ir.InsertionPoint) -> ir.Value:
    """tile.addptr(tensor.splat(base), offs) at `ip`."""
    with loc:
        s = tensor.SplatOp(tile_t, base, [], ip=ip).result
    return tile.addptr(s, offs, loc=loc, ip=ip)


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    if not target.has(Feature.LOOP_SCALAR_BASES):
        return
    with module.context:
        for loop in ps.loops(module.operation):
            for i in range(len(loop.results)):
                _rewrite(loop, i)
