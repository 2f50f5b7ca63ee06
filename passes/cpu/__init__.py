"""convert-tile-to-cpu: tile-level kernels -> vector code for the host CPU.

The CPU target is one "lane" per program instance: each program computes its
whole tile as SIMD vectors, and program ids become a loop that the runtime
splits over a thread pool.

Input invariants: a module of tile-level `func.func` kernels (attribute
`tile.kernel`), verified by `tile-verify`; tiles have static shapes.
Output invariants: for kernel `K`,
* `func.func private @K_body(args..., pid0, pid1, pid2, np0, np1, np2)` where
  every tile is a flat 1-D `vector<prod(shape) x T>` (row-major), pointers are
  `!llvm.ptr`, memory accesses are `llvm.load/store`, `llvm.intr.masked.load/
  store` (contiguous rows, as proven by axis info) or masked gather/scatter;
* `func.func @tilec_K(args..., g0: i32, g1: i32, g2: i32, start: i64, end: i64)`
  which runs the programs with linear ids [start, end);
* no `tile` op or `!tile.ptr` type remains; only upstream dialects.
Integer division and remainder get a guarded divisor (x86 traps on division by
zero, GPUs do not), so a masked-off lane can never kill the process.
Every new op carries the location of the tile op it replaces.
Nearest upstream analogue: `convert-vector-to-llvm` (with a type converter).
"""
from __future__ import annotations

import math
from typing import Callable

from mlir import ir

from tilec.dialects import tile
from tilec.errors import CompilerBugError, TilecError, source_loc
from tilec.passes.analysis import axis_info as ai
from tilec.options import CompileOptions
from tilec.targets import Target

NAME = "convert-tile-to-cpu"
MAX_CHUNKS = 256  # beyond this many contiguous pieces, a gather is cheaper to compile
# Strip-mining width (elements) for purely elementwise 1-D kernels: a few SIMD
# registers' worth per value, so values stay in registers and LLVM compiles
# small vectors instead of tile-wide ones.
STRIP_WIDTH = 64
_STRIP_TILE_OPS = frozenset({"tile.range", "tile.addptr", "tile.load", "tile.store",
                             "tile.program_id", "tile.num_programs"})


def _flat(t: ir.Type) -> int:
    return math.prod(tile.shape_of(t))


def _elem_bytes(t: ir.Type) -> int:
    return ai.type_bytes(t)


class _Lowering:
    def __init__(self, func_op: ir.Operation, info: ai.AxisInfoMap) -> None:
        self.src = func_op
        self.info = info
        self.vmap: dict[ir.Value, ir.Value] = {}
        self.ip: ir.InsertionPoint | None = None
        self.loc = func_op.location
        self.llvm_ptr = ir.Type.parse("!llvm.ptr")
        self.pids: list[ir.Value] = []
        self.nprogs: list[ir.Value] = []
        self.width: int | None = None          # strip-mining width, when strip-mining
        self.chunk_start: ir.Value | None = None
        # Vector stores get non-temporal hints: only in purely elementwise
        # strip-mined kernels (see `_store`), never in row kernels (cpu_rows).
        self.streaming = False

    # ---------------------------------------------------------------- types
    def scalar(self, t: ir.Type) -> ir.Type:
        return self.llvm_ptr if tile.is_ptr(t) else t

    def convert(self, t: ir.Type) -> ir.Type:
        if isinstance(t, ir.RankedTensorType):
            n = self.width if self.width is not None else _flat(t)
            return ir.VectorType.get([n], self.scalar(tile.element_type(t)))
        return self.scalar(t)

    # ---------------------------------------------------------------- helpers
    def make(self, name: str, results: list[ir.Type], operands: list[ir.Value],
             attrs: dict[str, ir.Attribute] | None = None, regions: int = 0) -> ir.Operation:
        return ir.Operation.create(name, results=results, operands=operands,
                                   attributes=attrs or {}, regions=regions, loc=self.loc,
                                   ip=self.ip)

    def const_int(self, t: ir.Type, v: int) -> ir.Value:
        return self.make("arith.constant", [t], [], {"value": ir.IntegerAttr.get(t, v)}).result

    def i64(self, v: int) -> ir.Attribute:
        return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), v)

    def i32(self, v: int) -> ir.Attribute:
        return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), v)

    def extract(self, vec: ir.Value, pos: int) -> ir.Value:
        vt = ir.VectorType(vec.type)
        return self.make("vector.extract", [vt.element_type], [vec], {
            "static_position": ir.DenseI64ArrayAttr.get([pos])}).result

    def slice(self, vec: ir.Value, offset: int, size: int) -> ir.Value:
        vt = ir.VectorType(vec.type)
        if size == vt.shape[0]:
            return vec
        rt = ir.VectorType.get([size], vt.element_type)
        return self.make("vector.extract_strided_slice", [rt], [vec], {
            "offsets": ir.ArrayAttr.get([self.i64(offset)]),
            "sizes": ir.ArrayAttr.get([self.i64(size)]),
            "strides": ir.ArrayAttr.get([self.i64(1)])}).result

    def insert_slice(self, piece: ir.Value, dest: ir.Value, offset: int) -> ir.Value:
        return self.make("vector.insert_strided_slice", [dest.type], [piece, dest], {
            "offsets": ir.ArrayAttr.get([self.i64(offset)]),
            "strides": ir.ArrayAttr.get([self.i64(1)])}).result

    def zeros(self, t: ir.Type) -> ir.Value:
        vt = ir.VectorType(t)
        et = vt.element_type
        zero = ir.FloatAttr.get(et, 0.0) if isinstance(et, ir.FloatType) or \
            isinstance(et, ir.FloatType) else ir.IntegerAttr.get(et, 0)
        return self.make("arith.constant", [t], [], {
            "value": ir.DenseElementsAttr.get_splat(vt, zero)}).result

    def scalar_zero(self, t: ir.Type) -> ir.Value:
        zero = ir.FloatAttr.get(t, 0.0) if isinstance(t, ir.FloatType) else ir.IntegerAttr.get(t, 0)
        return self.make("arith.constant", [t], [], {"value": zero}).result

    # ---------------------------------------------------------------- driver
    def run(self, module_body: ir.Block) -> None:
        fn = self.src
        name = ir.StringAttr(fn.attributes["sym_name"]).value
        ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
        arg_types = [self.convert(t) for t in ftype.inputs]
        i32 = ir.IntegerType.get_signless(32)
        body_type = ir.FunctionType.get(arg_types + [i32] * 6, [])
        ip = ir.InsertionPoint(module_body)
        body_fn = ir.Operation.create("func.func", regions=1, loc=fn.location, ip=ip, attributes={
            "sym_name": ir.StringAttr.get(f"{name}_body"),
            "function_type": ir.TypeAttr.get(body_type),
            "sym_visibility": ir.StringAttr.get("private")})
        entry = body_fn.regions[0].blocks.append(*body_type.inputs)
        src_entry = fn.regions[0].blocks[0]
        for old, new in zip(src_entry.arguments, entry.arguments):
            self.vmap[old] = new
        args = list(entry.arguments)
        self.pids = args[len(arg_types):len(arg_types) + 3]
        self.nprogs = args[len(arg_types) + 3:]
        self.ip = ir.InsertionPoint(entry)
        width = _strip_width(src_entry)
        if width is not None:
            self._lower_stripmined(src_entry, width)
        elif not cpu_rows.try_lower(self, src_entry):  # row kernels with reductions
            self.lower_block(src_entry)
        self._grid_function(module_body, name, arg_types, fn.location)

    def _lower_stripmined(self, block: ir.Block, width: int) -> None:
        """Scalar ops first (they never depend on tiles here), then every tile op
        inside one loop over chunks of `width` elements."""
        ops = [v.operation for v in block.operations]
        is_tile = [_touches_tiles(op) for op in ops]
        for op, t in zip(ops, is_tile):
            if not t and op.name != "func.return":
                self.lower_op(op)
        n = next(_flat(r.type) for op in ops for r in list(op.results) + list(op.operands)
                 if isinstance(r.type, ir.RankedTensorType))
        i32 = ir.IntegerType.get_signless(32)
        self.loc = self.src.location
        loop = self.make("scf.for", [], [self.const_int(i32, 0), self.const_int(i32, n),
                                         self.const_int(i32, width)], regions=1)
        body = loop.regions[0].blocks.append(i32)
        saved = self.ip
        self.ip = ir.InsertionPoint(body)
        self.width, self.chunk_start = width, body.arguments[0]
        self.streaming = True
        for op, t in zip(ops, is_tile):
            if t:
                self.lower_op(op)
        self.loc = self.src.location
        self.make("scf.yield", [], [])
        self.width, self.chunk_start = None, None
        self.streaming = False
        self.ip = saved
        self.lower_op(ops[-1])  # func.return

    def _grid_function(self, module_body: ir.Block, name: str, arg_types: list[ir.Type],
                       loc: ir.Location) -> None:
        i32 = ir.IntegerType.get_signless(32)
        i64 = ir.IntegerType.get_signless(64)
        # fp16/bf16 scalars cross the C ABI as their bits (i16): callers such as
        # ctypes have no 16-bit float type.
        i16 = ir.IntegerType.get_signless(16)
        abi_types = [i16 if isinstance(t, (ir.F16Type, ir.BF16Type)) else t for t in arg_types]
        ftype = ir.FunctionType.get(abi_types + [i32, i32, i32, i64, i64], [])
        self.loc = loc
        grid_fn = ir.Operation.create("func.func", regions=1, loc=loc,
                                      ip=ir.InsertionPoint(module_body), attributes={
            "sym_name": ir.StringAttr.get(f"tilec_{name}"),
            "function_type": ir.TypeAttr.get(ftype)})
        entry = grid_fn.regions[0].blocks.append(*ftype.inputs)
        a = list(entry.arguments)
        kargs, (g0, g1, g2, start, end) = a[:len(arg_types)], a[len(arg_types):]
        self.ip = ir.InsertionPoint(entry)
        kargs = [self.make("arith.bitcast", [t], [v]).result if t != v.type else v
                 for t, v in zip(arg_types, kargs)]
        one = self.const_int(i64, 1)
        loop = self.make("scf.for", [], [start, end, one], regions=1)
        block = loop.regions[0].blocks.append(i64)
        self.ip = ir.InsertionPoint(block)
        lin = block.arguments[0]
        g0w = self.make("arith.extsi", [i64], [g0]).result
        g1w = self.make("arith.extsi", [i64], [g1]).result
        p0 = self.make("arith.remsi", [i64], [lin, g0w]).result
        rest = self.make("arith.divsi", [i64], [lin, g0w]).result
        p1 = self.make("arith.remsi", [i64], [rest, g1w]).result
        p2 = self.make("arith.divsi", [i64], [rest, g1w]).result
        pids = [self.make("arith.trunci", [i32], [p]).result for p in (p0, p1, p2)]
        self.make("func.call", [], kargs + pids + [g0, g1, g2], {
            "callee": ir.FlatSymbolRefAttr.get(f"{name}_body")})
        self.make("scf.yield", [], [])
        self.ip = ir.InsertionPoint(entry)
        self.make("func.return", [], [])
        self._packed_function(module_body, name, abi_types, loc)

    def _packed_function(self, module_body: ir.Block, name: str, abi_types: list[ir.Type],
                         loc: ir.Location) -> None:
        """`tilec_<name>_packed(void **args, g0, g1, g2, start, end)`: the grid
        function with its arguments passed as an array of pointers to their values
        (one signature for every kernel, so the C launch path can call any)."""
        i32 = ir.IntegerType.get_signless(32)
        i64 = ir.IntegerType.get_signless(64)
        ftype = ir.FunctionType.get([self.llvm_ptr, i32, i32, i32, i64, i64], [])
        fn = ir.Operation.create("func.func", regions=1, loc=loc,
                                 ip=ir.InsertionPoint(module_body), attributes={
            "sym_name": ir.StringAttr.get(f"tilec_{name}_packed"),
            "function_type": ir.TypeAttr.get(ftype)})
        entry = fn.regions[0].blocks.append(*ftype.inputs)
        params, rest = entry.arguments[0], list(entry.arguments)[1:]
        self.ip = ir.InsertionPoint(entry)
        values = []
        for i, t in enumerate(abi_types):
            slot = self.make("llvm.getelementptr", [self.llvm_ptr], [params], {
                "rawConstantIndices": ir.DenseI32ArrayAttr.get([i]),
                "elem_type": ir.TypeAttr.get(self.llvm_ptr)}).result
            where = self.make("llvm.load", [self.llvm_ptr], [slot]).result
            values.append(self.make("llvm.load", [t], [where]).result)
        self.make("func.call", [], values + rest, {
            "callee": ir.FlatSymbolRefAttr.get(f"tilec_{name}")})
        self.make("func.return", [], [])

    def lower_block(self, block: ir.Block) -> None:
        for view in block.operations:
            self.lower_op(view.operation)

    def lower_op(self, op: ir.Operation) -> None:
        self.loc = op.location
        rule = _RULES.get(op.name)
        if rule is None:
            self.generic(op)
        else:
            rule(self, op)

    def mapped(self, v: ir.Value) -> ir.Value:
        return self.vmap[v]

    def bind(self, old: ir.Value, new: ir.Value) -> None:
        self.vmap[old] = new

    # ---------------------------------------------------------------- generic
    def generic(self, op: ir.Operation) -> None:
        if op.name.startswith("tile."):
            raise TilecError(f"'{op.name}' is not supported on the CPU target yet",
                             source_loc(op.location))
        if op.regions and len(op.regions) > 0 and op.name not in ("scf.for", "scf.if"):
            raise CompilerBugError(f"{NAME}: unexpected op with regions {op.name}")
        attrs = {name: op.attributes[name] for name in op.attributes}
        new = self.make(op.name, [self.convert(r.type) for r in op.results],
                        [self.mapped(v) for v in op.operands], attrs)
        for old, nv in zip(op.results, new.results):
            self.bind(old, nv)


Rule = Callable[[_Lowering, ir.Operation], None]
_RULES: dict[str, Rule] = {}


def _rule(*names: str) -> Callable[[Rule], Rule]:
    def deco(fn: Rule) -> Rule:
        for n in names:
            _RULES[n] = fn
        return fn
    return deco


def _axis(op: ir.Operation) -> int:
    return ir.IntegerAttr(op.attributes["axis"]).value


@_rule("tile.program_id")
def _program_id(lw: _Lowering, op: ir.Operation) -> None:
    lw.bind(op.result, lw.pids[_axis(op)])


@_rule("tile.num_programs")
def _num_programs(lw: _Lowering, op: ir.Operation) -> None:
    lw.bind(op.result, lw.nprogs[_axis(op)])


@_rule("tile.range")
def _range(lw: _Lowering, op: ir.Operation) -> None:
    start = ir.IntegerAttr(op.attributes["start"]).value
    vt = lw.convert(op.result.type)
    count = ir.VectorType(vt).shape[0]
    attr = ir.Attribute.parse(f"dense<[{', '.join(map(str, range(start, start + count)))}]> : {vt}")
    value = lw.make("arith.constant", [vt], [], {"value": attr}).result
    if lw.chunk_start is not None:
        offset = lw.make("vector.broadcast", [vt], [lw.chunk_start]).result
        value = lw.make("arith.addi", [vt], [value, offset]).result
    lw.bind(op.result, value)


@_rule("arith.constant")
def _constant(lw: _Lowering, op: ir.Operation) -> None:
    t = op.result.type
    attr = op.attributes["value"]
    if isinstance(t, ir.RankedTensorType):
        dense = ir.DenseElementsAttr(attr)
        vt = lw.convert(t)
        if not dense.is_splat:
            raise CompilerBugError(f"{NAME}: non-splat tile constants")
        attr = ir.DenseElementsAttr.get_splat(ir.VectorType(vt), dense.get_splat_value())
        t = vt
    lw.bind(op.result, lw.make("arith.constant", [t], [], {"value": attr}).result)


@_rule("tensor.splat")
def _splat(lw: _Lowering, op: ir.Operation) -> None:
    lw.bind(op.result, lw.make("vector.broadcast", [lw.convert(op.result.type)],
                               [lw.mapped(op.operands[0])]).result)


@_rule("tile.expand_dims")
def _expand_dims(lw: _Lowering, op: ir.Operation) -> None:
    lw.bind(op.result, lw.mapped(op.operands[0]))  # same row-major data


@_rule("tile.broadcast")
def _broadcast(lw: _Lowering, op: ir.Operation) -> None:
    src_shape = tile.shape_of(op.operands[0].type)
    dst_shape = tile.shape_of(op.result.type)
    src = lw.mapped(op.operands[0])
    src_strides = [math.prod(src_shape[i + 1:]) for i in range(len(src_shape))]
    mask = []
    for flat in range(math.prod(dst_shape)):
        idx, rem = 0, flat
        for d in range(len(dst_shape)):
            inner = math.prod(dst_shape[d + 1:])
            coord, rem = divmod(rem, inner)
            if src_shape[d] != 1:
                idx += coord * src_strides[d]
        mask.append(idx)
    if math.prod(src_shape) == 1:
        scalar = lw.extract(src, 0)
        lw.bind(op.result, lw.make("vector.broadcast", [lw.convert(op.result.type)],
                                   [scalar]).result)
        return
    res = lw.make("vector.shuffle", [lw.convert(op.result.type)], [src, src],
                  {"mask": ir.DenseI64ArrayAttr.get(mask)}).result
    lw.bind(op.result, res)


@_rule("tile.addptr")
def _addptr(lw: _Lowering, op: ir.Operation) -> None:
    ptr_t = tile.element_type(op.operands[0].type)
    elem = tile.pointee(ptr_t)
    res = lw.make("llvm.getelementptr", [lw.convert(op.result.type)],
                  [lw.mapped(op.operands[0]), lw.mapped(op.operands[1])], {
                      "rawConstantIndices": ir.DenseI32ArrayAttr.get([-2 ** 31]),
                      "elem_type": ir.TypeAttr.get(elem)}).result
    lw.bind(op.result, res)


def _segments(op: ir.Operation) -> list[int]:
    return list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))


def _chunking(lw: _Lowering, ptr: ir.Value, n: int, elem_bytes: int) -> tuple[int, int]:
    """(chunk length, alignment in bytes) for an access of n elements through `ptr`."""
    info = lw.info.get(ptr)
    contig = info.contiguity[-1] if info.contiguity else 1
    chunk = math.gcd(contig, n)
    div = info.divisibility[-1] if info.divisibility else elem_bytes
    align = max(elem_bytes, min(div, chunk * elem_bytes, 64))
    align = 1 << (align.bit_length() - 1)
    return chunk, align


def _scalar_masked(lw: _Lowering, mask: ir.Value, then: Callable[[], ir.Value | None],
                   other: Callable[[], ir.Value | None], result: ir.Type | None) -> ir.Value | None:
    if_op = lw.make("scf.if", [result] if result is not None else [], [mask], regions=2)
    saved = lw.ip
    values = []
    for region, fn in zip(if_op.regions, (then, other)):
        block = region.blocks.append()
        lw.ip = ir.InsertionPoint(block)
        v = fn()
        lw.make("scf.yield", [], [v] if v is not None else [])
        values.append(v)
    lw.ip = saved
    return if_op.results[0] if result is not None else None


def _is_bool(t: ir.Type) -> bool:
    """Whether a scalar or vector type has i1 elements."""
    et = ir.VectorType(t).element_type if isinstance(t, ir.VectorType) else t
    return isinstance(et, ir.IntegerType) and ir.IntegerType(et).width == 1


def _as_bytes(t: ir.Type) -> ir.Type:
    """The in-memory type of an i1 scalar or vector: one byte per element."""
    i8 = ir.IntegerType.get_signless(8)
    return ir.VectorType.get(ir.VectorType(t).shape, i8) if isinstance(t, ir.VectorType) else i8


@_rule("tile.load")
def _load(lw: _Lowering, op: ir.Operation) -> None:
    seg = _segments(op)
    ptr_old = op.operands[0]
    mask = lw.mapped(op.operands[1]) if seg[1] else None
    other = lw.mapped(op.operands[1 + seg[1]]) if seg[2] else None
    rt = lw.convert(op.result.type)
    if not _is_bool(rt):
        lw.bind(op.result, _load_value(lw, ptr_old, mask, other, rt))
        return
    # Booleans live in memory as bytes (NumPy, torch, Triton), but LLVM packs a
    # vector of i1 into bits: load bytes and compare them with zero.
    bt = _as_bytes(rt)
    if other is not None:
        other = lw.make("arith.extui", [bt], [other]).result
    raw = _load_value(lw, ptr_old, mask, other, bt)
    zero = lw.zeros(bt) if isinstance(bt, ir.VectorType) else lw.scalar_zero(bt)
    lw.bind(op.result, lw.make("arith.cmpi", [rt], [raw, zero], {"predicate": lw.i64(1)}).result)


def _load_value(lw: _Lowering, ptr_old: ir.Value, mask: ir.Value | None, other: ir.Value | None,
                rt: ir.Type) -> ir.Value:
    """Load a value of (converted) type `rt` through the pointer(s) `ptr_old`."""
    ptr = lw.mapped(ptr_old)
    if not isinstance(rt, ir.VectorType):
        ebytes = _elem_bytes(rt)
        align = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), ebytes)

        def do_load() -> ir.Value:
            return lw.make("llvm.load", [rt], [ptr], {"alignment": align}).result
        if mask is None:
            return do_load()
        res = _scalar_masked(lw, mask, do_load,
                             lambda: other if other is not None else lw.scalar_zero(rt), rt)
        assert res is not None
        return res
    vt = ir.VectorType(rt)
    n = vt.shape[0]
    elem = vt.element_type
    ebytes = _elem_bytes(elem)
    chunk, align = _chunking(lw, ptr_old, n, ebytes)
    passthru = other if other is not None else lw.zeros(rt)
    if chunk == 1 or n // chunk > MAX_CHUNKS:
        i1v = ir.VectorType.get([n], ir.IntegerType.get_signless(1))
        m = mask if mask is not None else lw.make("arith.constant", [i1v], [], {
            "value": ir.DenseElementsAttr.get_splat(i1v, ir.IntegerAttr.get(
                ir.IntegerType.get_signless(1), 1))}).result
        return lw.make("llvm.intr.masked.gather", [rt], [ptr, m, passthru],
                       {"alignment": lw.i32(ebytes)}).result
    acc = None
    ct = ir.VectorType.get([chunk], elem)
    for k in range(n // chunk):
        base = lw.extract(ptr, k * chunk)
        if mask is None:
            piece = lw.make("llvm.load", [ct], [base], {"alignment": lw.i64(align)}).result
        else:
            piece = lw.make("llvm.intr.masked.load", [ct], [
                base, lw.slice(mask, k * chunk, chunk), lw.slice(passthru, k * chunk, chunk)],
                {"alignment": lw.i32(align)}).result
        if chunk == n:
            acc = piece
        else:
            acc = lw.insert_slice(piece, acc if acc is not None else lw.zeros(rt), k * chunk)
    assert acc is not None
    return acc


@_rule("tile.store")
def _store(lw: _Lowering, op: ir.Operation) -> None:
    seg = _segments(op)
    ptr_old = op.operands[0]
    ptr = lw.mapped(ptr_old)
    value = lw.mapped(op.operands[1])
    mask = lw.mapped(op.operands[2]) if seg[2] else None
    if _is_bool(value.type):
        # One byte (0 or 1) per boolean, as NumPy and torch store them.
        value = lw.make("arith.extui", [_as_bytes(value.type)], [value]).result
    vt_ = value.type
    if not isinstance(vt_, ir.VectorType):
        align = lw.i64(_elem_bytes(vt_))

        def do_store() -> None:
            lw.make("llvm.store", [], [value, ptr], {"alignment": align})
            return None
        if mask is None:
            do_store()
        else:
            _scalar_masked(lw, mask, do_store, lambda: None, None)
        return
    vt = ir.VectorType(vt_)
    n = vt.shape[0]
    elem = vt.element_type
    ebytes = _elem_bytes(elem)
    chunk, align = _chunking(lw, ptr_old, n, ebytes)
    if chunk == 1 or n // chunk > MAX_CHUNKS:
        i1v = ir.VectorType.get([n], ir.IntegerType.get_signless(1))
        m = mask if mask is not None else lw.make("arith.constant", [i1v], [], {
            "value": ir.DenseElementsAttr.get_splat(i1v, ir.IntegerAttr.get(
                ir.IntegerType.get_signless(1), 1))}).result
        lw.make("llvm.intr.masked.scatter", [], [value, ptr, m], {"alignment": lw.i32(ebytes)})
        return
    # A strip-mined elementwise kernel streams its output: store it with
    # non-temporal hints (no read-for-ownership of the destination lines; about
    # 1.2-1.4x on a memory-bound add here), and keep the masked store for chunks
    # whose mask is not all true (masked stores have no non-temporal form).
    # Row kernels with reductions (cpu_rows) store plainly: there non-temporal
    # stores were measured 1.15-1.6x slower per launch, in cache and out of it
    # (they evict the rows just written, and at 4-byte alignment LLVM splits
    # them into 8-byte `movnti`s).
    streaming = lw.streaming
    for k in range(n // chunk):
        base = lw.extract(ptr, k * chunk)
        piece = lw.slice(value, k * chunk, chunk)
        plain: dict[str, ir.Attribute] = {"alignment": lw.i64(align)}
        if streaming:
            plain["nontemporal"] = ir.UnitAttr.get()
        if mask is None:
            lw.make("llvm.store", [], [piece, base], plain)
            continue
        m = lw.slice(mask, k * chunk, chunk)
        if not streaming:
            lw.make("llvm.intr.masked.store", [], [piece, base, m], {"alignment": lw.i32(align)})
            continue
        i1 = ir.IntegerType.get_signless(1)
        full = lw.make("vector.reduction", [i1], [m],
                       {"kind": ir.Attribute.parse("#vector.kind<and>")}).result
        _scalar_masked(
            lw, full, lambda: lw.make("llvm.store", [], [piece, base], plain) and None,
            lambda: lw.make("llvm.intr.masked.store", [], [piece, base, m],
                            {"alignment": lw.i32(align)}) and None, None)


def _guarded_divisor(lw: _Lowering, op: ir.Operation, signed: bool) -> ir.Value:
    a, b = lw.mapped(op.operands[0]), lw.mapped(op.operands[1])
    t = b.type
    et = ir.VectorType(t).element_type if isinstance(t, ir.VectorType) else t
    width = ir.IntegerType(et).width
    i1 = ir.IntegerType.get_signless(1)
    bt = ir.VectorType.get(ir.VectorType(t).shape, i1) if isinstance(t, ir.VectorType) else i1

    def const(v: int) -> ir.Value:
        attr = ir.IntegerAttr.get(et, v)
        if isinstance(t, ir.VectorType):
            attr = ir.DenseElementsAttr.get_splat(ir.VectorType(t), attr)
        return lw.make("arith.constant", [t], [], {"value": attr}).result

    def cmp(x: ir.Value, y: ir.Value) -> ir.Value:
        return lw.make("arith.cmpi", [bt], [x, y], {"predicate": lw.i64(0)}).result

    bad = cmp(b, const(0))
    if signed:
        # INT_MIN / -1 overflows (and traps on x86) too.
        min_v = -(1 << (width - 1)) if width > 1 else -1
        ovf = lw.make("arith.andi", [bt], [cmp(a, const(min_v)), cmp(b, const(-1))]).result
        bad = lw.make("arith.ori", [bt], [bad, ovf]).result
    return lw.make("arith.select", [t], [bad, const(1), b]).result


def _int_div(signed: bool) -> Rule:
    def rule(lw: _Lowering, op: ir.Operation) -> None:
        b = _guarded_divisor(lw, op, signed)
        a = lw.mapped(op.operands[0])
        lw.bind(op.result, lw.make(op.name, [a.type], [a, b]).result)
    return rule


_RULES["arith.divsi"] = _int_div(True)
_RULES["arith.remsi"] = _int_div(True)
_RULES["arith.divui"] = _int_div(False)
_RULES["arith.remui"] = _int_div(False)


@_rule("scf.for")
def _for(lw: _Lowering, op: ir.Operation) -> None:
    operands = [lw.mapped(v) for v in op.operands]
    new = lw.make("scf.for", [lw.convert(r.type) for r in op.results], operands, regions=1)
    old_block = op.regions[0].blocks[0]
    block = new.regions[0].blocks.append(*[lw.convert(a.type) for a in old_block.arguments])
    for o, n in zip(old_block.arguments, block.arguments):
        lw.bind(o, n)
    saved = lw.ip
    lw.ip = ir.InsertionPoint(block)
    lw.lower_block(old_block)
    lw.ip = saved
    for o, n in zip(op.results, new.results):
        lw.bind(o, n)


@_rule("scf.while")
def _while(lw: _Lowering, op: ir.Operation) -> None:
    new = lw.make("scf.while", [lw.convert(r.type) for r in op.results],
                  [lw.mapped(v) for v in op.operands], regions=2)
    saved = lw.ip
    for old_region, region in zip(op.regions, new.regions):
        old_block = old_region.blocks[0]
        block = region.blocks.append(*[lw.convert(a.type) for a in old_block.arguments])
        for o, n in zip(old_block.arguments, block.arguments):
            lw.bind(o, n)
        lw.ip = ir.InsertionPoint(block)
        lw.lower_block(old_block)
    lw.ip = saved
    for o, n in zip(op.results, new.results):
        lw.bind(o, n)


@_rule("scf.if")
def _if(lw: _Lowering, op: ir.Operation) -> None:
    new = lw.make("scf.if", [lw.convert(r.type) for r in op.results],
                  [lw.mapped(op.operands[0])], regions=2)
    saved = lw.ip
    for old_region, region in zip(op.regions, new.regions):
        if len(old_region.blocks) == 0:
            continue
        block = region.blocks.append()
        lw.ip = ir.InsertionPoint(block)
        lw.lower_block(old_region.blocks[0])
    lw.ip = saved
    for o, n in zip(op.results, new.results):
        lw.bind(o, n)


def _touches_tiles(op: ir.Operation) -> bool:
    return any(isinstance(v.type, ir.RankedTensorType)
               for v in list(op.results) + list(op.operands))


def is_chunkable_op(name: str) -> bool:
    """Ops that act elementwise on 1-D tiles, so a tile can be processed in chunks."""
    return name.startswith(("arith.", "math.")) or name in _STRIP_TILE_OPS or \
        name in ("tensor.splat", "func.return")


def chunkable_length(op: ir.Operation, n: int | None) -> int | None:
    """The common 1-D tile length of `op` and the ops before it (`n`): None when
    no tile is involved yet, -1 when `op` breaks the pattern (a 2-D tile, a
    different length, a scalar load or store)."""
    if op.name in ("tile.load", "tile.store") and not _touches_tiles(op):
        return -1
    for v in list(op.results) + list(op.operands):
        if isinstance(v.type, ir.RankedTensorType):
            shape = tile.shape_of(v.type)
            if len(shape) != 1 or (n is not None and shape[0] != n):
                return -1
            n = shape[0]
    return n


def _strip_width(block: ir.Block) -> int | None:
    """The strip-mining width if the body is purely elementwise over one 1-D
    tile shape (no control flow, broadcasts or scalar memory accesses)."""
    n = None
    for view in block.operations:
        op = view.operation
        if len(op.regions) or not is_chunkable_op(op.name):
            return None
        n = chunkable_length(op, n)
        if n == -1:
            return None
    if n is None or n <= STRIP_WIDTH or n % STRIP_WIDTH:
        return None
    return STRIP_WIDTH


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    """Replace every tile-level kernel in `module` by its CPU form (in place)."""
    kernels = [v.operation for v in module.body.operations
               if v.operation.name == "func.func" and "tile.kernel" in v.operation.attributes]
    for fn in kernels:
        info = ai.analyze(fn)
        _Lowering(fn, info).run(module.body)
        fn.erase()


# Rules for reductions, scans, atomics, barriers, reshape and trans, and for
# vectorized exp/exp2/log/log2, live in their own modules; importing them
# registers them in _RULES.
from tilec.passes import cpu_math, lower_reduce_cpu  # noqa: E402,F401
# Staged strip-mining of 1-D kernels with reductions (softmax, LayerNorm).
from tilec.passes import cpu_rows  # noqa: E402
