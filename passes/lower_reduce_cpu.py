"""CPU lowering rules for reductions, scans, atomics, barriers and shape ops.

Not a pass of its own: importing this module registers rules in the rule
registry of `convert-tile-to-cpu` (`convert_tile_to_cpu` imports it at its end,
so the rules are always present).  Tiles are flat row-major vectors
`vector<prod(shape) x T>` there; a tile of shape (A, K, B) reduced or scanned
along the K dimension is handled uniformly for every rank and axis.

| op | CPU form |
|---|---|
| `tile.reduce`   | a log2 tree over the axis: combine(lo half, hi half) elementwise, the halves taken with `vector.extract_strided_slice` (contiguous) or `vector.shuffle` (strided: inner axes, 2-D along axis 1).  A 1-D reduction whose combine is a single commutative op (addf, addi, maxnumf, minsi, ...) stops the tree at one SIMD register (512 bits) and finishes with `vector.reduction <kind>` (`fastmath<reassoc>` for float add/mul, so LLVM keeps the tree shape). |
| `tile.scan`     | blocked: each register-sized chunk (512 bits) is scanned Hillis-Steele style (log2 steps of a `vector.shuffle` rotation, combine, `arith.select` keeping lanes with nothing before them in scan order); then each chunk combines the broadcast last row of the previous chunk (the next one for `reverse`) and the chunks are concatenated.  Rows wider than a register: Hillis-Steele over the whole tile (the shifts are whole registers).  No scalar chains; one vector combine per chunk on the carry path. |
| `tile.atomic_rmw` | per element `llvm.atomicrmw <kind> ... acq_rel` guarded by `scf.if` on the mask bit; masked-off lanes return 0.  Up to `UNROLL_LANES` lanes are unrolled; wider tiles spill pointers/values/mask to stack buffers (allocas in the entry block) and run an `scf.for` over the lanes. |
| `tile.atomic_cas` | the same with `llvm.cmpxchg ... acq_rel acquire` (floats are bitcast to integers of their width, as cmpxchg wants). |
| `tile.barrier`, `tile.warp_sync` | nothing: on the CPU one program instance is one thread that computes the whole tile, so there are no other threads of the program to wait for, and memory written by a program is visible to its later loads in program order. |
| `tile.reshape`  | nothing: row-major data is unchanged. |
| `tile.trans`    | one `vector.shuffle` with the transposed index mask. |

The combine function (`combine` attribute: a `func.func private` taking the
running values, then the new values) is cloned onto vectors when its body is
only `arith`/`math` ops (constants are splatted); otherwise it is called per
lane (`func.call`, inlined by LLVM).  Tree reductions combine element i with
element i + K/2, so, like Triton's reductions, they assume the combine is
associative and commutative (ties in argmax-style combines must be broken by
the combine itself, e.g. by comparing indices).  Scans preserve the order and
only need associativity.  fp32/fp16 sums are summed in tree order, not
sequentially: a different rounding than a left-to-right loop (error grows with
log2(n), not n).

Float atomics (fadd/fmax/fmin) have no x86 instruction: LLVM's AtomicExpand
turns them into compare-exchange loops, which are atomic under the runtime's
parallel programs.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

from mlir import ir

from tilec.dialects import tile
from tilec.errors import CompilerBugError, TilecError, source_loc
from tilec.passes.cpu import NAME, _Lowering, _rule, _segments

# Widest vector (bits) a recognised reduction still halves by hand before
# finishing with `vector.reduction`.
REDUCTION_REGISTER_BITS = 512
# Atomics on at most this many lanes are unrolled; wider ones loop over lanes.
UNROLL_LANES = 16

# Single-op combine bodies that map to `vector.reduction` kinds.
_REDUCTION_KINDS = {
    "arith.addf": "add", "arith.addi": "add", "arith.mulf": "mul", "arith.muli": "mul",
    "arith.maxnumf": "maxnumf", "arith.minnumf": "minnumf", "arith.maximumf": "maximumf",
    "arith.minimumf": "minimumf", "arith.maxsi": "maxsi", "arith.minsi": "minsi",
    "arith.maxui": "maxui", "arith.minui": "minui", "arith.andi": "and", "arith.ori": "or",
    "arith.xori": "xor",
}
_REASSOC_KINDS = {"add", "mul"}

# llvm.atomicrmw `bin_op` (LLVM::AtomicBinOp) and ordering (LLVM::AtomicOrdering)
# enum values, as the generic form of the ops spells them.
_ATOMIC_BIN_OP = {
    "xchg": 0, "add": 1, "and": 3, "or": 5, "xor": 6, "max": 7, "min": 8, "umax": 9,
    "umin": 10, "fadd": 11, "fmax": 13, "fmin": 14,
}
_ACQUIRE, _ACQ_REL = 4, 6


# ---------------------------------------------------------------- helpers

def _i64(v: int) -> ir.Attribute:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), v)


def _vec_len(v: ir.Value) -> int:
    return int(ir.VectorType(v.type).shape[0])


def _vec_elem(v: ir.Value) -> ir.Type:
    return ir.VectorType(v.type).element_type


def _gather(lw: _Lowering, v: ir.Value, idx: Sequence[int]) -> ir.Value:
    """The lanes `idx` of vector `v`, as a new vector."""
    n = _vec_len(v)
    if list(idx) == list(range(n)):
        return v
    if list(idx) == list(range(idx[0], idx[0] + len(idx))):
        return lw.slice(v, idx[0], len(idx))
    rt = ir.VectorType.get([len(idx)], _vec_elem(v))
    return lw.make("vector.shuffle", [rt], [v, v],
                   {"mask": ir.DenseI64ArrayAttr.get(list(idx))}).result


def _shuffle2(lw: _Lowering, a: ir.Value, b: ir.Value, idx: Sequence[int]) -> ir.Value:
    """Lanes of the concatenation a ++ b."""
    rt = ir.VectorType.get([len(idx)], _vec_elem(a))
    return lw.make("vector.shuffle", [rt], [a, b],
                   {"mask": ir.DenseI64ArrayAttr.get(list(idx))}).result


def _bool_vector(lw: _Lowering, bits: Sequence[bool]) -> ir.Value:
    vt = ir.VectorType.get([len(bits)], ir.IntegerType.get_signless(1))
    if all(bits) or not any(bits):
        attr = ir.DenseElementsAttr.get_splat(
            vt, ir.IntegerAttr.get(ir.IntegerType.get_signless(1), int(bool(bits[0]))))
    else:
        text = ", ".join("true" if b else "false" for b in bits)
        attr = ir.Attribute.parse(f"dense<[{text}]> : {vt}")
    return lw.make("arith.constant", [vt], [], {"value": attr}).result


def _zero(lw: _Lowering, t: ir.Type) -> ir.Value:
    if isinstance(t, ir.VectorType):
        return lw.zeros(t)
    if isinstance(t, (ir.IntegerType, ir.FloatType)):
        return lw.scalar_zero(t)
    return lw.make("llvm.mlir.zero", [t], []).result


def _axis_split(shape: Sequence[int], axis: int) -> tuple[int, int, int]:
    """(outer, K, inner) element counts of a row-major shape around `axis`."""
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])


# ---------------------------------------------------------------- combine functions

def _combine_func(op: ir.Operation) -> ir.Operation:
    f = tile.combine_function(op)
    if f is None:
        raise CompilerBugError(f"{NAME}: the combine function of {op.name} is not in the module")
    return f


class _Combiner:
    """Applies a `combine` function to lists of scalars or of equal-length vectors."""

    def __init__(self, lw: _Lowering, op: ir.Operation) -> None:
        self.lw = lw
        self.fn = _combine_func(op)
        self.name = ir.StringAttr(self.fn.attributes["sym_name"]).value
        block = self.fn.regions[0].blocks[0]
        self.args = list(block.arguments)
        ops = [v.operation for v in block.operations]
        self.body, self.ret = ops[:-1], ops[-1]
        self.results = list(ir.FunctionType(
            ir.TypeAttr(self.fn.attributes["function_type"]).value).results)
        self.vectorizable = all(
            o.name.startswith(("arith.", "math.")) and len(o.regions) == 0 for o in self.body)
        self.kind = self._recognise()

    def _recognise(self) -> str | None:
        """The `vector.reduction` kind of a one-op commutative combine, else None."""
        if len(self.args) != 2 or len(self.body) != 1:
            return None
        o = self.body[0]
        kind = _REDUCTION_KINDS.get(o.name)
        if kind is None or len(o.operands) != 2 or len(o.results) != 1:
            return None
        if set(o.operands) != set(self.args) or o.operands[0] == o.operands[1]:
            return None
        if list(self.ret.operands) != [o.results[0]]:
            return None
        return kind

    def __call__(self, lhs: Sequence[ir.Value], rhs: Sequence[ir.Value]) -> list[ir.Value]:
        lw = self.lw
        width = _vec_len(lhs[0]) if isinstance(lhs[0].type, ir.VectorType) else None
        if width is not None and not self.vectorizable:
            return self._per_lane(lhs, rhs, width)
        if width is None and not self.vectorizable:
            return list(lw.make("func.call", self.results, list(lhs) + list(rhs), {
                "callee": ir.FlatSymbolRefAttr.get(self.name)}).results)
        vmap: dict[ir.Value, ir.Value] = dict(zip(self.args, list(lhs) + list(rhs)))

        def widen(t: ir.Type) -> ir.Type:
            return ir.VectorType.get([width], t) if width is not None else t

        for o in self.body:
            attrs = {name: o.attributes[name] for name in o.attributes}
            if o.name == "arith.constant" and width is not None:
                vt = widen(o.results[0].type)
                attrs["value"] = ir.DenseElementsAttr.get_splat(ir.VectorType(vt), attrs["value"])
            new = lw.make(o.name, [widen(r.type) for r in o.results],
                          [vmap[v] for v in o.operands], attrs)
            for old, nv in zip(o.results, new.results):
                vmap[old] = nv
        return [vmap[v] for v in self.ret.operands]

    def _per_lane(self, lhs: Sequence[ir.Value], rhs: Sequence[ir.Value],
                  width: int) -> list[ir.Value]:
        lw = self.lw
        lanes: list[list[ir.Value]] = [[] for _ in self.results]
        for i in range(width):
            args = [lw.extract(v, i) for v in list(lhs) + list(rhs)]
            res = lw.make("func.call", self.results, args, {
                "callee": ir.FlatSymbolRefAttr.get(self.name)}).results
            for k, r in enumerate(res):
                lanes[k].append(r)
        return [lw.make("vector.from_elements", [ir.VectorType.get([width], t)], vals).result
                for t, vals in zip(self.results, lanes)]


# ---------------------------------------------------------------- reduce

def _reduce_axis(lw: _Lowering, comb: _Combiner, vals: list[ir.Value],
                 a_n: int, k_n: int, b_n: int) -> list[ir.Value]:
    """Reduce vectors holding (a_n, k_n, b_n) row-major elements along k -> (a_n, b_n).

    Each of the a_n slabs (k_n * b_n contiguous lanes) is reduced on its own, so
    every half is a contiguous `vector.extract_strided_slice` (huge strided
    shuffles compile slowly in LLVM); the slab results are concatenated."""
    if a_n == 1:
        return _reduce_slab(lw, comb, vals, k_n, b_n)
    slab = k_n * b_n
    parts = [_reduce_slab(lw, comb, [lw.slice(v, a * slab, slab) for v in vals], k_n, b_n)
             for a in range(a_n)]
    if b_n == 1:  # one scalar per slab
        return [lw.make("vector.from_elements", [ir.VectorType.get([a_n], _vec_elem(v))],
                        [p[i] for p in parts]).result for i, v in enumerate(vals)]
    return [_concat(lw, [p[i] for p in parts]) for i in range(len(vals))]


def _concat(lw: _Lowering, pieces: list[ir.Value]) -> ir.Value:
    """Concatenate equal-length vectors with a tree of two-operand shuffles."""
    while len(pieces) > 1:
        nxt = []
        for i in range(0, len(pieces) - 1, 2):
            a, b = pieces[i], pieces[i + 1]
            nxt.append(_shuffle2(lw, a, b, range(_vec_len(a) + _vec_len(b))))
        if len(pieces) % 2:
            nxt.append(pieces[-1])
        pieces = nxt
    return pieces[0]


def _reduce_slab(lw: _Lowering, comb: _Combiner, vals: list[ir.Value],
                 k_n: int, b_n: int) -> list[ir.Value]:
    """Reduce vectors of (k_n, b_n) row-major elements along k: vector<b_n>, or
    scalars when b_n == 1."""
    while k_n > 1:
        if comb.kind is not None and b_n == 1:
            width = _elem_bits(_vec_elem(vals[0]))
            if k_n * width <= REDUCTION_REGISTER_BITS or k_n & (k_n - 1):
                return [_vector_reduction(lw, comb.kind, vals[0])]
        if k_n & (k_n - 1) == 0:
            half = k_n // 2
            lo = [lw.slice(v, 0, half * b_n) for v in vals]
            hi = [lw.slice(v, half * b_n, half * b_n) for v in vals]
            vals = comb(lo, hi)
            k_n = half
            continue
        # Not a power of two: fold the last k_n - p rows onto the first ones.
        p = 1 << (k_n.bit_length() - 1)
        extra = (k_n - p) * b_n
        folded = comb([lw.slice(v, 0, extra) for v in vals],
                      [lw.slice(v, p * b_n, extra) for v in vals])
        vals = [_shuffle2(lw, f, v, list(range(extra)) + [extra + i for i in range(extra, p * b_n)])
                for f, v in zip(folded, vals)]
        k_n = p
    if b_n == 1:
        return [lw.extract(v, 0) for v in vals]
    return vals


def _elem_bits(t: ir.Type) -> int:
    if isinstance(t, (ir.IntegerType, ir.FloatType)):
        return int(t.width)
    return 64


def _vector_reduction(lw: _Lowering, kind: str, v: ir.Value) -> ir.Value:
    et = _vec_elem(v)
    attrs = {"kind": ir.Attribute.parse(f"#vector.kind<{kind}>")}
    if isinstance(et, ir.FloatType):
        fm = "reassoc" if kind in _REASSOC_KINDS else "none"
        attrs["fastmath"] = ir.Attribute.parse(f"#arith.fastmath<{fm}>")
    return lw.make("vector.reduction", [et], [v], attrs).result


@_rule("tile.reduce")
def _reduce(lw: _Lowering, op: ir.Operation) -> None:
    axis = ir.IntegerAttr(op.attributes["axis"]).value
    shape = tile.shape_of(op.operands[0].type)
    a_n, k_n, b_n = _axis_split(shape, axis)
    comb = _Combiner(lw, op)
    vals = [lw.mapped(v) for v in op.operands]
    out = _reduce_axis(lw, comb, vals, a_n, k_n, b_n)
    for old, new in zip(op.results, out):
        if isinstance(old.type, ir.RankedTensorType) and not isinstance(new.type, ir.VectorType):
            # Every other axis has size 1 (e.g. [1, N] along axis 1 -> [1]): the
            # slab's scalar is the result tile's only element.
            new = lw.make("vector.from_elements", [ir.VectorType.get([1], new.type)],
                          [new]).result
        lw.bind(old, new)


# ---------------------------------------------------------------- scan

def _hillis_steele(lw: _Lowering, comb: _Combiner, vals: list[ir.Value], a_n: int, k_n: int,
                   b_n: int, reverse: bool) -> list[ir.Value]:
    """Inclusive scan of (a_n, k_n, b_n) row-major vectors along k in log2(k_n) steps."""
    coords = [(a, k, b) for a in range(a_n) for k in range(k_n) for b in range(b_n)]
    total = len(coords)
    d = 1
    while d < k_n:
        # Lane (a, k, b) combines with the partial result d steps earlier in scan order.
        step = -d if not reverse else d
        valid = [0 <= k + step < k_n for _, k, _ in coords]
        # A rotation of the flat vector by d * b_n lanes (LLVM lowers it to
        # register moves and lane-align instructions); the lanes that wrap or
        # cross into another slab are discarded by the select below.
        src = [(f + step * b_n) % total for f in range(total)]
        shifted = [_gather(lw, v, src) for v in vals]
        combined = comb(shifted, vals)
        keep = _bool_vector(lw, valid)
        vals = [lw.make("arith.select", [v.type], [keep, c, v]).result
                for c, v in zip(combined, vals)]
        d *= 2
    return vals


def _scan_lanes(elem: ir.Type) -> int:
    """Lanes of one SIMD register (the chunk of the blocked scan)."""
    return max(2, min(64, REDUCTION_REGISTER_BITS // _elem_bits(elem)))


@_rule("tile.scan")
def _scan(lw: _Lowering, op: ir.Operation) -> None:
    axis = ir.IntegerAttr(op.attributes["axis"]).value
    reverse = "reverse" in op.attributes
    shape = tile.shape_of(op.operands[0].type)
    a_n, k_n, b_n = _axis_split(shape, axis)
    comb = _Combiner(lw, op)
    vals = [lw.mapped(v) for v in op.operands]
    lanes = min(_scan_lanes(_vec_elem(v)) for v in vals)
    slab = k_n * b_n
    if slab <= lanes or lanes % b_n or slab % lanes:
        # Small tiles, or rows wider than a register (shifts by whole rows are
        # register renames): one log-step scan over the whole vector.
        out = _hillis_steele(lw, comb, vals, a_n, k_n, b_n, reverse)
    else:
        out = _blocked_scan(lw, comb, vals, a_n, k_n, b_n, lanes, reverse)
    for old, new in zip(op.results, out):
        lw.bind(old, new)


def _blocked_scan(lw: _Lowering, comb: _Combiner, vals: list[ir.Value], a_n: int, k_n: int,
                  b_n: int, lanes: int, reverse: bool) -> list[ir.Value]:
    """Scan each register-sized chunk (lanes // b_n rows) with log steps, then
    carry the last row of each chunk into the next one, in scan order.  Large
    log-step shuffles over whole tiles compile superlinearly in LLVM (a 4096-lane
    i32 scan took 16 s); this form keeps every shuffle inside one register."""
    slab = k_n * b_n
    rows = lanes // b_n
    chunks_per_slab = slab // lanes
    # chunks[i][j]: operand i, chunk j (over all slabs, in memory order)
    chunks = [[lw.slice(v, j * lanes, lanes) for j in range(a_n * chunks_per_slab)] for v in vals]
    scanned = [_hillis_steele(lw, comb, [c[j] for c in chunks], 1, rows, b_n, reverse)
               for j in range(a_n * chunks_per_slab)]
    # The row of a chunk that ends it in scan order, broadcast over the next chunk.
    last_row = 0 if reverse else rows - 1
    carry_idx = [last_row * b_n + b for _ in range(rows) for b in range(b_n)]
    for a in range(a_n):
        order = list(range(chunks_per_slab))
        if reverse:
            order.reverse()
        for prev, cur in zip(order, order[1:]):
            jp, jc = a * chunks_per_slab + prev, a * chunks_per_slab + cur
            carry = [_gather(lw, v, carry_idx) for v in scanned[jp]]
            scanned[jc] = comb(carry, scanned[jc])
    return [_concat(lw, [s[i] for s in scanned]) for i in range(len(vals))]


# ---------------------------------------------------------------- atomics

def _entry_alloca(lw: _Lowering, elem: ir.Type, count: int) -> ir.Value:
    """A stack buffer of `count` elements, allocated in the entry block of the
    function being built (so that allocas inside loops do not grow the stack)."""
    assert lw.ip is not None
    owner: ir.Operation | None = lw.ip.block.owner.operation
    while owner is not None and owner.name != "func.func":
        parent = owner.parent
        owner = parent.operation if parent is not None else None
    assert owner is not None
    entry = owner.regions[0].blocks[0]
    ops = list(entry.operations)
    ip = ir.InsertionPoint(ops[0]) if ops else ir.InsertionPoint(entry)
    i64 = ir.IntegerType.get_signless(64)
    n = ir.Operation.create("llvm.mlir.constant", results=[i64], attributes={"value": _i64(count)},
                            loc=lw.loc, ip=ip).result
    return ir.Operation.create("llvm.alloca", results=[lw.llvm_ptr], operands=[n], attributes={
        "alignment": _i64(64), "elem_type": ir.TypeAttr.get(elem)}, loc=lw.loc, ip=ip).result


def _lane_ptr(lw: _Lowering, base: ir.Value, index: ir.Value, elem: ir.Type) -> ir.Value:
    return lw.make("llvm.getelementptr", [lw.llvm_ptr], [base, index], {
        "rawConstantIndices": ir.DenseI32ArrayAttr.get([-2 ** 31]),
        "elem_type": ir.TypeAttr.get(elem)}).result


def _in_region(lw: _Lowering, block: ir.Block, body: Callable[[], list[ir.Value]]) -> None:
    saved = lw.ip
    lw.ip = ir.InsertionPoint(block)
    results = body()
    lw.make("scf.yield", [], results)
    lw.ip = saved


def _guarded(lw: _Lowering, bit: ir.Value | None, fn: Callable[[], ir.Value],
             result: ir.Type | None) -> ir.Value | None:
    """fn() if `bit` (or unconditionally); 0 for a masked-off lane."""
    if bit is None:
        return fn()
    if_op = lw.make("scf.if", [result] if result is not None else [], [bit], regions=2)
    out: list[ir.Value | None] = [None]

    def then() -> list[ir.Value]:
        v = fn()
        return [v] if result is not None else []

    def other() -> list[ir.Value]:
        return [_zero(lw, result)] if result is not None else []
    _in_region(lw, if_op.regions[0].blocks.append(), then)
    _in_region(lw, if_op.regions[1].blocks.append(), other)
    if result is not None:
        out[0] = if_op.results[0]
    return out[0]


def _per_lane(lw: _Lowering, operands: list[ir.Value], mask: ir.Value | None,
              fn: Callable[[list[ir.Value]], ir.Value], result: ir.Type,
              want_result: bool) -> ir.Value | None:
    """Apply `fn` to the scalars of each lane of `operands` (vectors of one length,
    or scalars) where `mask` is set; returns the vector (or scalar) of results."""
    res_t = result if want_result else None
    if not isinstance(operands[0].type, ir.VectorType):
        return _guarded(lw, mask, lambda: fn(operands), res_t)
    n = _vec_len(operands[0])
    if n <= UNROLL_LANES:
        lanes = []
        for i in range(n):
            scalars = [lw.extract(v, i) for v in operands]
            bit = lw.extract(mask, i) if mask is not None else None
            r = _guarded(lw, bit, lambda: fn(scalars), res_t)
            if r is not None:
                lanes.append(r)
        if not want_result:
            return None
        return lw.make("vector.from_elements", [ir.VectorType.get([n], result)], lanes).result
    # Wide tiles: spill the lanes to stack buffers and loop over them.
    i8 = ir.IntegerType.get_signless(8)
    i32 = ir.IntegerType.get_signless(32)
    if mask is not None:
        mask = lw.make("arith.extui", [ir.VectorType.get([n], i8)], [mask]).result
    bufs = []
    spilled = operands + ([mask] if mask is not None else [])
    for v in spilled:
        buf = _entry_alloca(lw, _vec_elem(v), n)
        lw.make("llvm.store", [], [v, buf], {"alignment": _i64(_align(v))})
        bufs.append(buf)
    out_buf = _entry_alloca(lw, result, n) if want_result else None
    loop = lw.make("scf.for", [], [lw.const_int(i32, 0), lw.const_int(i32, n),
                                   lw.const_int(i32, 1)], regions=1)
    body = loop.regions[0].blocks.append(i32)
    i = body.arguments[0]

    def lane() -> list[ir.Value]:
        scalars = []
        for v, buf in zip(spilled, bufs):
            et = _vec_elem(v)
            p = _lane_ptr(lw, buf, i, et)
            scalars.append(lw.make("llvm.load", [et], [p], {
                "alignment": _i64(_scalar_bytes(et))}).result)
        bit = None
        if mask is not None:
            byte = scalars.pop()
            bit = lw.make("arith.trunci", [ir.IntegerType.get_signless(1)], [byte]).result
        r = _guarded(lw, bit, lambda: fn(scalars), res_t)
        if r is not None and out_buf is not None:
            lw.make("llvm.store", [], [r, _lane_ptr(lw, out_buf, i, result)], {
                "alignment": _i64(_scalar_bytes(result))})
        return []
    _in_region(lw, body, lane)
    if out_buf is None:
        return None
    vt = ir.VectorType.get([n], result)
    return lw.make("llvm.load", [vt], [out_buf], {"alignment": _i64(_scalar_bytes(result))}).result


def _scalar_bytes(t: ir.Type) -> int:
    return max(1, _elem_bits(t) // 8)


def _align(v: ir.Value) -> int:
    return _scalar_bytes(_vec_elem(v))


def _ordering(v: int) -> ir.Attribute:
    return _i64(v)


@_rule("tile.atomic_rmw")
def _atomic_rmw(lw: _Lowering, op: ir.Operation) -> None:
    seg = _segments(op)
    kind = ir.StringAttr(op.attributes["kind"]).value
    if kind not in _ATOMIC_BIN_OP:
        raise TilecError(f"atomic kind '{kind}' is not supported on the CPU target",
                         source_loc(op.location))
    ptr = lw.mapped(op.operands[0])
    val = lw.mapped(op.operands[1])
    mask = lw.mapped(op.operands[2]) if seg[2] else None
    elem = tile.element_type(op.result.type)

    def rmw(s: list[ir.Value]) -> ir.Value:
        return lw.make("llvm.atomicrmw", [elem], [s[0], s[1]], {
            "bin_op": _i64(_ATOMIC_BIN_OP[kind]), "ordering": _ordering(_ACQ_REL)}).result
    want = len(list(op.result.uses)) > 0
    res = _per_lane(lw, [ptr, val], mask, rmw, elem, want)
    if res is not None:
        lw.bind(op.result, res)


@_rule("tile.atomic_cas")
def _atomic_cas(lw: _Lowering, op: ir.Operation) -> None:
    ptr, cmp, val = (lw.mapped(v) for v in op.operands)
    elem = tile.element_type(op.result.type)
    is_float = isinstance(elem, ir.FloatType)
    ity = ir.IntegerType.get_signless(_elem_bits(elem)) if is_float else elem

    def cas(s: list[ir.Value]) -> ir.Value:
        c, v = s[1], s[2]
        if is_float:
            c = lw.make("arith.bitcast", [ity], [c]).result
            v = lw.make("arith.bitcast", [ity], [v]).result
        pair = ir.Type.parse(f"!llvm.struct<({ity}, i1)>")
        r = lw.make("llvm.cmpxchg", [pair], [s[0], c, v], {
            "success_ordering": _ordering(_ACQ_REL),
            "failure_ordering": _ordering(_ACQUIRE)}).result
        old = lw.make("llvm.extractvalue", [ity], [r], {
            "position": ir.DenseI64ArrayAttr.get([0])}).result
        if is_float:
            old = lw.make("arith.bitcast", [elem], [old]).result
        return old
    want = len(list(op.result.uses)) > 0
    res = _per_lane(lw, [ptr, cmp, val], None, cas, elem, want)
    if res is not None:
        lw.bind(op.result, res)


# ---------------------------------------------------------------- sync and shapes

@_rule("tile.barrier", "tile.warp_sync")
def _no_op_sync(lw: _Lowering, op: ir.Operation) -> None:
    # One program instance is one CPU thread computing its whole tile in program
    # order: there is no other thread of the program to wait for or reconverge.
    return None


@_rule("tile.reshape")
def _reshape(lw: _Lowering, op: ir.Operation) -> None:
    lw.bind(op.result, lw.mapped(op.operands[0]))  # row-major data is unchanged


@_rule("tile.trans")
def _trans(lw: _Lowering, op: ir.Operation) -> None:
    rows, cols = tile.shape_of(op.operands[0].type)
    src = lw.mapped(op.operands[0])
    # Result (cols, rows): out[j * rows + i] = in[i * cols + j].
    idx = [i * cols + j for j in range(cols) for i in range(rows)]
    lw.bind(op.result, _gather(lw, src, idx))

# tl.dot on the CPU.
from tilec.passes import lower_dot_cpu  # noqa: E402,F401
