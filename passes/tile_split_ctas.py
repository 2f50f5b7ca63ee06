"""tile-split-ctas: a program run by a cluster of two CTAs (`num_ctas=2`, sm90).

Triton's `num_ctas` option: one program instance is executed by a
thread-block cluster.  Here a cluster of two CTAs splits the rows of the
program's dot tiles: CTA r (`tile.cta_rank`) computes rows
[r M / 2, (r + 1) M / 2) of every [M, N] accumulator, loads those rows of A,
stores those rows of C, and both load the same B block, which the pipeliner
copies once per cluster and multicasts into both CTAs' shared memory
(passes/pipeline_cluster.py): each CTA issues half of B's boxes, as a pair of
128 x 256 tiles sharing one 256-wide B block does in a CUTLASS 2x1 cluster
(measured on an H100 at 8192^3: DRAM bytes -16%, 2-3% faster than one CTA
per program in alternated rounds; benchmarks/results/README.md, session 29).
Everything else of the program (its scalars, loop bounds, tile ids) is
computed by both CTAs alike, and `tl.program_id(0)` / `tl.num_programs(0)`
count clusters (passes/gpu/shape.py).

Input: tile-level IR after tile-flatten-loops, before tile-tma-descriptors,
with `options.num_ctas == 2` on a target with `Feature.CLUSTER`.  The kernel
is split when every tile value reached from a dot's A operand, accumulator
or result (the split set: same-shaped values, linked through elementwise
`arith`/`math` ops, `scf.for`/`scf.if` results, iteration arguments and
yields) is
  * a rank-2 tile of the dots' M rows (one M for every dot, M / 2 a
    multiple of 16),
  * made by a `tile.descriptor_load`, a dot, an elementwise op of split
    values, scalars and splat constants, a `tensor.splat` of a scalar, a
    `tile.broadcast` of a row [1, N] (which stays whole) or of a column
    [M, 1] (which splits), or control flow, and
  * read by those, by a dot as A or accumulator, or stored by a
    `tile.descriptor_store`,
and the kernel writes memory only through such stores (no pointer stores,
atomics, prints or asserts, which both CTAs would repeat); on wgmma targets
half of M must still fill the warps' warpgroups (16 rows a warp) wherever
the whole M does, else the split dots would fall back to mma.sync (bf16
128 x 256 x 128 on 8 warps: 0 -> 388 bytes of spills).
Output: the split values have M / 2 rows; each split access reads or writes
through a descriptor of M / 2-row blocks at row offset `+ rank * M / 2`;
B loads (a dot's second operand, directly or through `tile.trans`, read
by nothing else) carry `tile.multicast = 2`; the function has
`tile.num_ctas = 2`.  A kernel that does not qualify is left whole (one CTA
per program, as with num_ctas=1) and its function says why
(`tile.cluster_note`).

Nearest upstream analogue: Triton's CTA layouts (`CTALayoutAttr`'s
CTASplitNum along M with B's CTAsPerCGA broadcast), which split every
tensor's layout over the cluster; this pass splits the tiles themselves
before any layout exists.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from tilec.dialects import tile_descriptors as desc
from tilec.dialects import tile_memory
from tilec.passes import pipeline_support as ps
from tilec.options import CompileOptions
from tilec.targets import Feature, Target

NAME = "tile-split-ctas"
CTAS = 2
_SIDE_EFFECTS = ("tile.store", "tile.atomic_rmw", "tile.atomic_cas", "tile.print",
                 "tile.assert", "tile.debug_trap", "tile.inline_asm", "func.call")


class _Refused(Exception):
    """Why the kernel stays one CTA per program."""


def _op(x: ir.Operation | ir.OpView) -> ir.Operation:
    return x.operation if isinstance(x, ir.OpView) else x


def _elementwise(op: ir.Operation) -> bool:
    return op.name.startswith(("arith.", "math.")) and not len(op.regions)


def _shape(v: ir.Value) -> list[int] | None:
    return list(v.type.shape) if isinstance(v.type, ir.RankedTensorType) else None


class _Split:
    """The split set of one kernel function, grown from its dots."""

    def __init__(self, func: ir.Operation, warpgroup_rows: int = 0) -> None:
        self.func = func
        # wgmma targets: the rows a program's warps stack along M (16 per warp)
        self.warpgroup_rows = warpgroup_rows
        self.values: list[ir.Value] = []
        self.loads: list[ir.Operation] = []
        self.stores: list[ir.Operation] = []
        self.multicast: list[ir.Operation] = []
        self.dots: list[ir.Operation] = []
        self.constants: list[ir.Value] = []
        self.rows = 0

    def has(self, v: ir.Value) -> bool:
        return any(v == w for w in self.values)

    def add(self, v: ir.Value, work: list[ir.Value]) -> None:
        if self.has(v) or any(v == c for c in self.constants):
            return
        if ps.splat_constant(v):   # a half-row copy where split ops read it
            self.constants.append(v)
            return
        shape = _shape(v)
        if shape is None or len(shape) != 2 or shape[0] != self.rows:
            raise _Refused(f"a value of type {v.type} would take half of the dots' "
                           f"{self.rows} rows")
        self.values.append(v)
        work.append(v)

    def grow(self) -> None:
        ops: list[ir.Operation] = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            ops.append(op)
            return ir.WalkResult.ADVANCE

        self.func.walk(visit)
        for op in ops:
            if op.name in _SIDE_EFFECTS:
                raise _Refused(f"the kernel has `{op.name}`, which both CTAs would execute")
        self.dots = [op for op in ops if op.name == "tile.dot"]
        if not self.dots:
            raise _Refused("the kernel has no tl.dot to split")
        rows = {ir.RankedTensorType(d.results[0].type).shape[0] for d in self.dots}
        self.rows = rows.pop()
        if rows or self.rows % (2 * 16):
            raise _Refused("the dots need one M, a multiple of 32, to split over 2 CTAs")
        w = self.warpgroup_rows
        if w and self.rows % w == 0 and (self.rows // CTAS) % w:
            raise _Refused(f"half of the dots' {self.rows} rows would not fill the warps' "
                           f"warpgroups (wgmma stacks {w} rows per CTA here), and the "
                           "matrix units would fall back to mma.sync: give the program "
                           f"{w * CTAS} rows or fewer warps")
        work: list[ir.Value] = []
        for d in self.dots:
            for v in (d.operands[0], d.operands[2], d.results[0]):
                self.add(v, work)
        for op in ops:   # a store of M rows made without a dot (a flattened loop's K = 0 tile)
            shape = _shape(op.operands[1]) if op.name == "tile.descriptor_store" else None
            if shape is not None and len(shape) == 2 and shape[0] == self.rows:
                self.add(op.operands[1], work)
                self._user(op, 1, work)
        while work:
            v = work.pop()
            self._definer(v, work)
            for use in v.uses:
                self._user(_op(use.owner), use.operand_number, work)
        for op in ops:
            if op.name == "tile.descriptor_store" and op not in self.stores:
                raise _Refused("a descriptor store of a tile other than the dots' rows")
        for d in self.dots:
            if self.has(d.operands[1]):
                raise _Refused("a dot's B operand is made from its rows")
            b = ps.defining_op(d.operands[1])
            if b is not None and b.name == "tile.trans" and len(list(b.results[0].uses)) == 1:
                b = ps.defining_op(b.operands[0])
            if b is not None and b.name == "tile.descriptor_load" and \
                    len(list(b.results[0].uses)) == 1:
                self.multicast.append(b)

    def _definer(self, v: ir.Value, work: list[ir.Value]) -> None:
        if isinstance(v, ir.BlockArgument):
            parent = _op(v.owner.owner)
            if parent.name != "scf.for" or v.arg_number == 0:
                raise _Refused(f"a block argument of `{parent.name}` holds the dots' rows")
            i = v.arg_number - 1
            self.add(parent.operands[3 + i], work)
            self.add(parent.results[i], work)
            self.add(v.owner.operations[len(v.owner.operations) - 1].operands[i], work)
            return
        op = ps.defining_op(v)
        assert op is not None
        if op.name == "tile.descriptor_load":
            if not _made_here(op.operands[0]):
                raise _Refused("a load through a descriptor not made in the kernel")
            if op not in self.loads:
                self.loads.append(op)
        elif op.name == "tile.dot":
            pass
        elif op.name in ("scf.for", "scf.if"):
            i = list(op.results).index(v)
            if op.name == "scf.for":
                self.add(op.regions[0].blocks[0].arguments[1 + i], work)
            for region in op.regions:
                for block in region.blocks:
                    self.add(block.operations[len(block.operations) - 1].operands[i], work)
        elif op.name == "tensor.splat":
            pass   # a scalar in every row
        elif op.name == "tile.broadcast":
            src = _shape(op.operands[0])
            assert src is not None
            if src[0] == self.rows:   # a column [M, 1] stretched: its rows split too
                self.add(op.operands[0], work)
            # a row [1, N] stretched over the rows stays whole
        elif _elementwise(op):
            self._elementwise(op, work)
        else:
            raise _Refused(f"`{op.name}` makes a tile of the dots' rows")

    def _elementwise(self, op: ir.Operation, work: list[ir.Value]) -> None:
        """Every tile operand and result of `op` (scalar operands, as a select's
        condition, are the same in every row)."""
        for x in [*op.operands, *op.results]:
            if _shape(x) is not None:
                self.add(x, work)

    def _user(self, user: ir.Operation, index: int, work: list[ir.Value]) -> None:
        if user.name == "tile.dot":
            if index == 1:
                raise _Refused("a dot's B operand is made from its rows")
            self.add(user.results[0], work)
        elif user.name == "tile.descriptor_store" and index == 1:
            if not _made_here(user.operands[0]):
                raise _Refused("a store through a descriptor not made in the kernel")
            if user not in self.stores:
                self.stores.append(user)
        elif user.name == "scf.for" and index >= 3:
            i = index - 3
            self.add(user.regions[0].blocks[0].arguments[1 + i], work)
            self.add(user.results[i], work)
        elif user.name == "scf.yield":
            parent = _op(user.parent)
            self.add(parent.results[index], work)
            if parent.name == "scf.for":
                self.add(parent.regions[0].blocks[0].arguments[1 + index], work)
                self.add(parent.operands[3 + index], work)
            elif parent.name == "scf.if":
                for region in parent.regions:
                    for block in region.blocks:
                        self.add(block.operations[len(block.operations) - 1].operands[index],
                                 work)
            else:
                raise _Refused(f"`{parent.name}` carries a tile of the dots' rows")
        elif _elementwise(user):
            self._elementwise(user, work)
        else:
            raise _Refused(f"`{user.name}` reads a tile of the dots' rows")


def _half(t: ir.Type) -> ir.Type:
    rt = ir.RankedTensorType(t)
    return ir.RankedTensorType.get([rt.shape[0] // CTAS, *rt.shape[1:]], rt.element_type,
                                   rt.encoding)


def _made_here(d: ir.Value) -> bool:
    make = ps.defining_op(d)
    return make is not None and make.name == "tile.make_descriptor"


def _half_descriptor(make: ir.Operation, cache: list[tuple[ir.Operation, ir.Value]]) -> ir.Value:
    """A descriptor like `make`'s with blocks of half the rows (made once, right
    before `make`: its operands are defined there)."""
    for old, made in cache:
        if old == make:
            return made
    block = desc.block_type(make.results[0].type)
    attrs = {n.name: n.attr for n in (make.attributes[i] for i in range(len(make.attributes)))}
    new = ir.Operation.create("tile.make_descriptor", results=[desc.desc_type(_half(block))],
                              operands=list(make.operands), attributes=attrs,
                              loc=make.location, ip=ir.InsertionPoint(make))
    cache.append((make, new.results[0]))
    return new.results[0]


def _split_use(s: _Split, user: ir.Operation, i: int) -> bool:
    """Whether operand i of `user` is read as a tile of the split rows."""
    if user.name == "tile.dot":
        return i != 1 and user in s.dots
    if user.name == "tile.descriptor_store":
        return i == 1 and user in s.stores
    if user.name == "scf.for":
        return i >= 3 and s.has(user.results[i - 3])
    if user.name == "scf.yield":
        parent = _op(user.parent)
        return parent.name in ("scf.for", "scf.if") and s.has(parent.results[i])
    return _elementwise(user) and len(user.results) > 0 and s.has(user.results[0])


def _rewrite(s: _Split, rank: ir.Value) -> None:
    for v in s.values:
        v.set_type(_half(v.type))
    for c in s.constants:
        uses = [(_op(u.owner), u.operand_number) for u in c.uses]
        attr = ir.DenseElementsAttr(ps.defining_op(c).attributes["value"])  # type: ignore[union-attr]
        t = _half(c.type)
        for user, i in uses:
            if _split_use(s, user, i):
                with user.location, ir.InsertionPoint(user):
                    user.operands[i] = arith.ConstantOp(t, ir.DenseElementsAttr.get_splat(
                        t, attr.get_splat_value())).result
    made: list[tuple[ir.Operation, ir.Value]] = []
    for op, row in [*((ld, 1) for ld in s.loads), *((st, 2) for st in s.stores)]:
        make = ps.defining_op(op.operands[0])
        assert make is not None
        op.operands[0] = _half_descriptor(make, made)
        with op.location, ir.InsertionPoint(op):
            off = arith.MulIOp(rank, arith.ConstantOp(rank.type, s.rows // CTAS).result).result
            op.operands[row] = arith.AddIOp(op.operands[row], off).result
    for ld in s.multicast:
        ld.attributes["tile.multicast"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32),
                                                             CTAS)


def _kernels(module: ir.Module) -> list[ir.Operation]:
    return [op.operation for op in module.body.operations
            if op.operation.name == "func.func" and "tile.kernel" in op.operation.attributes]


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    if options.num_ctas != CTAS or not target.has(Feature.CLUSTER):
        return
    rows = 16 * options.num_warps if target.has(Feature.WGMMA) else 0
    for func in _kernels(module):
        s = _Split(func, rows)
        try:
            s.grow()
        except _Refused as why:
            func.attributes["tile.cluster_note"] = ir.StringAttr.get(
                f"num_ctas=2 runs one CTA per program: {why}")
            continue
        entry = func.regions[0].blocks[0]
        with func.location, ir.InsertionPoint.at_block_begin(entry):
            rank = tile_memory.cta_rank(loc=func.location)
        _rewrite(s, rank)
        func.attributes["tile.num_ctas"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32),
                                                              CTAS)
