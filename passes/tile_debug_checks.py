"""tile-debug-checks: bounds checks on every memory access and active
`tl.device_assert`s, in debug mode (`CompileOptions.debug`).

Input invariants: tile-level kernels (`func.func` with `tile.kernel`) after
`tile-lower-descriptors`; `tile.assert` ops where the kernel calls
`tl.device_assert` with a run-time condition.

Output invariants, debug off: no `tile.assert` remains; nothing else changes
(no check, no extra argument).

Output invariants, debug on: each kernel takes hidden arguments after its own,
`lo_i: i64, hi_i: i64` for every pointer argument i (the byte addresses
[lo, hi) of the storage that the pointer came from) and last `err:
!tile.ptr<i64>` (an 8-word error record: [0] = 0 until a check fails, then
the failed site's index + 1; [1..3] the program id; [4] the element offset;
[6] a scratch word).  Before every `tile.load`, `tile.store`,
`tile.atomic_rmw` and `tile.atomic_cas` whose pointer is derived from
argument i (through `tile.addptr`, splats, broadcasts, shape ops, selects and
loop-carried values; a pointer chosen between two arguments by a scalar
select is checked against the chosen one's extent), the active elements (those its mask keeps) are checked
against [lo_i, hi_i); the first program that finds one outside writes the
record (an atomic compare-and-swap on err[0] picks one writer) and executes
`tile.debug_trap` (GPUs print and trap; the CPU continues).  The access itself
then leaves out every element outside the extent (its mask, added where it had
none, is and-ed with the check; its pointers stay as they were, so contiguous
accesses stay vector accesses; `tile.atomic_cas`, which has no mask, sends
those elements to the scratch word), so the checked kernel never touches
memory it does not own.  Each `tile.assert`
becomes the same record (offset: the flat index of the first false element).
Every inserted op carries the location of the access or assert it checks.
The module gets `tile.debug_sites`, a JSON list of the sites (file, line,
col, what, argument, message) in record order; the pipeline step moves it into
the compiled kernel's metadata, where the launcher reads it
(tilec/runtime/debug.py).  Pointers not derived from an argument (from
`tile.int_to_ptr`, loaded from memory) are not checked.

Nearest upstream analogue: Triton's debug mode (`TRITON_DEBUG=1`: device
assertions on, pointer-range checks on tensor descriptors) and
AddressSanitizer's instrumentation, with the shadow memory replaced by one
extent per argument known at launch.
"""
from __future__ import annotations

import json
from typing import Any

from mlir import ir
from mlir.dialects import arith, func, scf, tensor

from tilec.dialects import tile
from tilec.dialects.tile_debug import debug_trap
from tilec.dialects.tile_elements import int_to_ptr, ptr_to_int
from tilec.errors import source_loc
from tilec.options import CompileOptions
from tilec.targets import Target

NAME = "tile-debug-checks"
SITES_ATTR = "tile.debug_sites"
COMBINE = "__tilec_debug_min_i64"
SCRATCH_WORD = 6
ERROR_WORDS = 8
ACCESS_OPS = {"tile.load": "load", "tile.store": "store", "tile.atomic_rmw": "atomic",
              "tile.atomic_cas": "atomic"}
# Value-preserving ops a pointer passes through on its way from an argument.
_THROUGH = {"tile.addptr", "tensor.splat", "tile.broadcast", "tile.expand_dims",
            "tile.reshape", "tile.trans", "tile.convert_layout"}
_INT64_MAX = 2 ** 63 - 1


def _walk(op: ir.Operation, out: list[ir.Operation]) -> None:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                out.append(inner.operation)
                _walk(inner.operation, out)


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    kernels = [v.operation for v in module.body.operations
               if v.operation.name == "func.func" and "tile.kernel" in v.operation.attributes]
    if not options.debug:
        for fn in kernels:
            ops: list[ir.Operation] = []
            _walk(fn, ops)
            for op in ops:
                if op.name == "tile.assert":
                    op.erase()
        return
    sites: list[dict[str, Any]] = []
    for fn in kernels:
        _Instrument(module, fn, sites).run()
    module.operation.attributes[SITES_ATTR] = ir.StringAttr.get(json.dumps(sites))


def _i64() -> ir.Type:
    return ir.IntegerType.get_signless(64)


class _Instrument:
    """Adds the hidden arguments and the checks to one kernel."""

    def __init__(self, module: ir.Module, fn: ir.Operation, sites: list[dict[str, Any]]) -> None:
        self.module, self.fn, self.sites = module, fn, sites
        self.entry = fn.regions[0].blocks[0]
        self.args = list(self.entry.arguments)
        self.ptr_args = [i for i, a in enumerate(self.args) if tile.is_ptr(a.type)]
        self.extent: dict[int, tuple[ir.Value, ir.Value]] = {}
        self.combine_made = False

    def run(self) -> None:
        self._add_arguments()
        ops: list[ir.Operation] = []
        _walk(self.fn, ops)
        for op in ops:
            if op.name in ACCESS_OPS:
                self._check_access(op)
            elif op.name == "tile.assert":
                self._check_assert(op)

    # ------------------------------------------------------------ arguments
    def _add_arguments(self) -> None:
        names = [self._arg_name(i) for i in range(len(self.args))]
        extra: list[tuple[ir.Type, str]] = []
        for i in self.ptr_args:
            extra += [(_i64(), f"__debug_lo_{names[i]}"), (_i64(), f"__debug_hi_{names[i]}")]
        extra.append((tile.ptr_type(_i64()), "__debug_error"))
        loc = self.fn.location
        new = [self.entry.add_argument(t, loc) for t, _ in extra]
        for k, i in enumerate(self.ptr_args):
            self.extent[i] = (new[2 * k], new[2 * k + 1])
        self.err = new[-1]
        ftype = ir.FunctionType(ir.TypeAttr(self.fn.attributes["function_type"]).value)
        self.fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
            list(ftype.inputs) + [t for t, _ in extra], list(ftype.results)))
        if "arg_attrs" in self.fn.attributes:
            attrs = list(ir.ArrayAttr(self.fn.attributes["arg_attrs"]))
            attrs += [ir.DictAttr.get({"tile.name": ir.StringAttr.get(n)}) for _, n in extra]
            self.fn.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)

    def _arg_name(self, i: int) -> str:
        if "arg_attrs" in self.fn.attributes:
            d = ir.DictAttr(ir.ArrayAttr(self.fn.attributes["arg_attrs"])[i])
            if "tile.name" in d:
                return ir.StringAttr(d["tile.name"]).value
        return f"arg{i}"

    # ------------------------------------------------------------ pointer roots
    def _root(self, v: ir.Value, seen: set[Any] | None = None) -> int | None:
        """The index of the pointer argument `v` is derived from, or None."""
        seen = set() if seen is None else seen
        if v in seen:
            return -1  # a loop-carried value met again: no new root on this path
        seen.add(v)
        if isinstance(v, ir.BlockArgument):
            return self._block_arg_root(v, seen)
        op = ir.OpResult(v).owner
        op = op.operation if hasattr(op, "operation") else op
        if op.name in _THROUGH:
            return self._root(op.operands[0], seen)
        if op.name == "arith.select":
            return self._agree([op.operands[1], op.operands[2]], seen)
        if op.name == "tile.restride":
            return self._agree(list(op.operands), seen)
        idx = ir.OpResult(v).result_number
        if op.name == "scf.for":
            body = op.regions[0].blocks[0]
            return self._agree([op.operands[3 + idx], _yielded(body, idx)], seen)
        if op.name == "scf.if":
            return self._agree([_yielded(r.blocks[0], idx) for r in op.regions
                                if len(r.blocks) > 0], seen)
        return None

    def _chosen(self, v: ir.Value) -> tuple[ir.Value, int, int] | None:
        """(cond, a, b) when `v` comes from `arith.select(cond, p, q)` on a scalar
        condition, p derived from argument a and q from argument b; else None."""
        while isinstance(v, ir.OpResult):
            op = v.owner.operation if hasattr(v.owner, "operation") else v.owner
            if op.name in _THROUGH:
                v = op.operands[0]
                continue
            if op.name != "arith.select" or isinstance(op.operands[0].type, ir.RankedTensorType):
                return None
            a, b = self._root(op.operands[1]), self._root(op.operands[2])
            if a is None or b is None or a < 0 or b < 0:
                return None
            return op.operands[0], a, b
        return None

    def _block_arg_root(self, v: ir.BlockArgument, seen: set[Any]) -> int | None:
        block = v.owner
        if block == self.entry:
            return v.arg_number if v.arg_number in self.extent else None
        parent = block.owner
        parent = parent.operation if hasattr(parent, "operation") else parent
        if parent.name == "scf.for" and v.arg_number > 0:
            k = v.arg_number - 1
            return self._agree([parent.operands[3 + k], _yielded(block, k)], seen)
        return None

    def _agree(self, values: list[ir.Value | None], seen: set[Any]) -> int | None:
        roots = {self._root(x, seen) if x is not None else None for x in values}
        roots.discard(-1)
        if len(roots) == 1:
            return roots.pop()
        return -1 if not roots else None

    # ------------------------------------------------------------ checks
    def _site(self, op: ir.Operation, what: str, message: str, root: int | None = None,
              elem_bytes: int = 0) -> int:
        """Record a check site; its record index + 1 (what err[0] holds when it fails)."""
        loc = source_loc(op.location)
        self.sites.append({"file": loc.file if loc else "", "line": loc.line if loc else 0,
                           "col": loc.col if loc else 0, "what": what,
                           "arg": self._arg_name(root) if root is not None else "",
                           "pointer": self.ptr_args.index(root) if root is not None else None,
                           "elem_bytes": elem_bytes, "message": message})
        return len(self.sites)

    def _check_access(self, op: ir.Operation) -> None:
        root = self._root(op.operands[0])
        chosen = self._chosen(op.operands[0]) if root is None else None
        if (root is None or root < 0) and chosen is None:
            return
        what = ACCESS_OPS[op.name]
        ptr = op.operands[0]
        shape = tile.shape_of(ptr.type)
        mask = _mask_of(op)
        esize = _byte_size(tile.pointee(tile.element_type(ptr.type)))
        with op.location, ir.InsertionPoint(op):
            if chosen is None:
                assert root is not None
                site = self._site(op, what, f"out-of-bounds {what} of '{self._arg_name(root)}'",
                                  root, esize)
                lo, hi = self.extent[root]
                base = ptr_to_int(self.args[root], loc=op.location)
            else:
                # A pointer chosen between two arguments: so are its extent and base.
                cond, a, b = chosen
                names = f"'{self._arg_name(a)}' or '{self._arg_name(b)}'"
                site = self._site(op, what, f"out-of-bounds {what} of {names}", None, esize)
                self.sites[-1]["arg"] = f"{self._arg_name(a)}' or '{self._arg_name(b)}"
                lo, hi = (arith.select(cond, x, y) for x, y in zip(self.extent[a], self.extent[b]))
                base = arith.select(cond, ptr_to_int(self.args[a], loc=op.location),
                                    ptr_to_int(self.args[b], loc=op.location))
            addr = ptr_to_int(ptr, loc=op.location)
            end = arith.addi(addr, _const(shape, esize))
            ok = arith.andi(arith.cmpi(arith.CmpIPredicate.sge, addr, _splat(lo, shape)),
                            arith.cmpi(arith.CmpIPredicate.sle, end, _splat(hi, shape)))
            bad = arith.xori(ok, _const(shape, 1, 1))
            if mask is not None:
                bad = arith.andi(bad, mask)
            off = arith.divsi(arith.subi(addr, _splat(base, shape)), _const(shape, esize))
            self._report(op, site, bad, off, shape)
            if op.name == "tile.atomic_cas":
                # No mask to narrow: the elements outside use the scratch word.
                scratch = arith.addi(ptr_to_int(self.err, loc=op.location),
                                     _const((), SCRATCH_WORD * 8))
                safe = arith.select(ok, addr, _splat(scratch, shape))
                op.operands[0] = int_to_ptr(safe, tile.element_type(ptr.type), loc=op.location)
                return
            # The access keeps its pointers (contiguous accesses stay vector
            # accesses) and leaves out the elements outside.
            _set_mask(op, ok if mask is None else arith.andi(mask, ok))

    def _check_assert(self, op: ir.Operation) -> None:
        message = ir.StringAttr(op.attributes["message"]).value
        site = self._site(op, "assert", message)
        cond = op.operands[0]
        shape = tile.shape_of(cond.type)
        with op.location, ir.InsertionPoint(op):
            bad = arith.xori(cond, _const(shape, 1, 1))
            self._report(op, site, bad, _flat_index(shape, op.location), shape)
        op.erase()

    def _report(self, op: ir.Operation, site: int, bad: ir.Value, off: ir.Value,
                shape: tuple[int, ...]) -> None:
        """At the insertion point: if any element of `bad` is set, write the
        error record (site, program id, the smallest such `off`) and trap."""
        big = _const(shape, _INT64_MAX)
        first = arith.select(bad, off, big)
        for axis in reversed(range(len(shape))):
            self._combine()
            first = tile.reduce([first], axis, COMBINE, loc=op.location)[0]
        failed = arith.cmpi(arith.CmpIPredicate.ne, first, _const((), _INT64_MAX))
        if_op = scf.IfOp(failed, [], has_else=False)
        with ir.InsertionPoint(if_op.then_block):
            old = tile.atomic_cas(self.err, _const((), 0), _const((), site), loc=op.location)
            won = arith.cmpi(arith.CmpIPredicate.eq, old, _const((), 0))
            pids = [tile.program_id(a, loc=op.location) for a in range(3)]
            inner = scf.IfOp(won, [], has_else=False)
            with ir.InsertionPoint(inner.then_block):
                for k, v in enumerate([*pids, first]):
                    wide = arith.extsi(_i64(), v) if v.type != _i64() else v
                    slot = tile.addptr(self.err, _const((), k + 1, 32), loc=op.location)
                    tile.store(slot, wide, loc=op.location)
                scf.YieldOp([])
            debug_trap(pids, first, self.sites[site - 1]["message"], loc=op.location)
            scf.YieldOp([])

    def _combine(self) -> None:
        """The private min-of-i64 function the reductions name (made once)."""
        if self.combine_made:
            return
        self.combine_made = True
        body = self.module.body
        for view in body.operations:
            if view.operation.name == "func.func" and \
                    ir.StringAttr(view.operation.attributes["sym_name"]).value == COMBINE:
                return
        with ir.InsertionPoint.at_block_begin(body):
            f = func.FuncOp(COMBINE, ir.FunctionType.get([_i64(), _i64()], [_i64()]),
                            visibility="private")
        block = f.body.blocks.append(_i64(), _i64())
        with ir.InsertionPoint(block):
            func.ReturnOp([arith.minsi(block.arguments[0], block.arguments[1])])


def _yielded(block: ir.Block, idx: int) -> ir.Value | None:
    ops = list(block.operations)
    if not ops or ops[-1].operation.name != "scf.yield":
        return None
    term = ops[-1].operation
    return term.operands[idx] if idx < len(term.operands) else None


def _mask_of(op: ir.Operation) -> ir.Value | None:
    """The mask operand of a load, store or atomic_rmw (None: every element)."""
    if "operandSegmentSizes" not in op.attributes:
        return None
    seg = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    if op.name == "tile.load":
        return op.operands[1] if seg[1] else None
    return op.operands[2] if len(seg) > 2 and seg[2] else None


def _set_mask(op: ir.Operation, mask: ir.Value) -> None:
    """Give a load, store or atomic_rmw the mask `mask` (replacing its own)."""
    seg = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    at = 1 if op.name == "tile.load" else 2
    if seg[at]:
        op.operands[at] = mask
        return
    operands = list(op.operands)
    operands.insert(at, mask)
    seg[at] = 1
    attrs = {name: op.attributes[name] for name in op.attributes}
    attrs["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get(seg)
    new = ir.Operation.create(op.name, results=[r.type for r in op.results], operands=operands,
                              attributes=attrs, loc=op.location, ip=ir.InsertionPoint(op))
    for old, res in zip(op.results, new.results):
        old.replace_all_uses_with(res)
    op.erase()


def _byte_size(t: ir.Type) -> int:
    if tile.is_ptr(t):
        return 8
    if isinstance(t, ir.IntegerType):
        return max(1, t.width // 8)
    return max(1, ir.FloatType(t).width // 8)


def _const(shape: tuple[int, ...], value: int, width: int = 64) -> ir.Value:
    t = ir.IntegerType.get_signless(width)
    if not shape:
        return arith.constant(t, value)
    tt = ir.RankedTensorType.get(list(shape), t)
    return arith.constant(tt, ir.DenseElementsAttr.get_splat(tt, ir.IntegerAttr.get(t, value)))


def _splat(v: ir.Value, shape: tuple[int, ...]) -> ir.Value:
    if not shape:
        return v
    return tensor.splat(ir.RankedTensorType.get(list(shape), v.type), v, [])


def _flat_index(shape: tuple[int, ...], loc: ir.Location) -> ir.Value:
    """The row-major index of each element of a tile of `shape` (i64; 0 for a scalar)."""
    if not shape:
        return _const((), 0)
    total: ir.Value | None = None
    stride = 1
    for axis in reversed(range(len(shape))):
        r = arith.extsi(ir.RankedTensorType.get([shape[axis]], _i64()),
                        tile.range_(0, shape[axis], loc=loc))
        r = _to_shape(r, axis, shape, loc)
        term = arith.muli(r, _const(shape, stride)) if stride != 1 else r
        total = term if total is None else arith.addi(total, term)
        stride *= shape[axis]
    assert total is not None
    return total


def _to_shape(r: ir.Value, axis: int, shape: tuple[int, ...], loc: ir.Location) -> ir.Value:
    """A 1-D tile along `axis` expanded and broadcast to `shape`."""
    for _ in range(axis):
        r = tile.expand_dims(r, 0, loc=loc)
    for d in range(axis + 1, len(shape)):
        r = tile.expand_dims(r, d, loc=loc)
    if tile.shape_of(r.type) == shape:
        return r
    return tile.broadcast(r, ir.RankedTensorType.get(list(shape), _i64()), loc=loc)
