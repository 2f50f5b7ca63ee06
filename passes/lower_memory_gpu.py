"""GPU lowering rules for `tile.load` and `tile.store`, chosen by target features.

Registered in `convert-tile-to-gpu`'s rule registry (they run while that pass
distributes a kernel, on the per-thread fragments it builds).

Input: `tile.load`/`tile.store` at the tiled level (pointer, mask, other and
value tiles share one layout) or on scalars.
Output, per access of `w` elements (`_FuncLowering.access` picks the width and
alignment axis info proves, `w * sizeof(T) <= target.vector_bytes`; the mask
is constant over each access):
  * unmasked: `llvm.load` / `llvm.store` of `vector<w x T>` (or `T`).
  * masked, `target.has(Feature.PTX_PREDICATED_MEM)` (NVIDIA): one `llvm.inline_asm`
    per access holding a predicated PTX instruction, as Triton emits::

        mov.b32 $0, 0x0;  mov.b32 $1, $6; ...          (the `other` values)
        @$4 ld.global.v4.b32 { $0, $1, $2, $3 }, [ $5 + 0 ];
        @$4 st.global.v4.b32 [ $5 + 0 ], { $0, $1, $2, $3 };

    The access is split into 32-bit words (f16/bf16/i8 are packed two/four to
    a word, 64-bit elements take two words; `v2`/`v4` for 2/4 words); an
    access of 2 or 1 bytes uses one `.b16`/`.b8` access of a 16-bit register.
    Operands are numbered outputs first (`$0..$n-1`, constraint `=r`/`=h`),
    then the register `other` words (`r`/`h`), then the predicate (`b`), then
    the 64-bit address (`l`).  Constant `other` words are immediates in the
    `mov`s.  The loaded words are bit-cast back to `vector<w x T>`.
    Both carry `has_side_effects` and no memory-effect attribute: LLVM must
    treat them as reading and writing any memory, so it never moves one across
    another access (or barrier) that may alias, never merges two identical
    loads separated by a store, and never drops them.  This only orders them
    in the PTX text; ptxas still schedules the independent `ld.global`s of a
    kernel back to back (it sees plain predicated instructions).  The cost is
    that LLVM will not delete or hoist an unused/loop-invariant masked load.
    There is no branch: the predicate guards only the instruction.
  * masked, otherwise (AMD): a uniform-mask `llvm.intr.masked.load` for vector
    loads, an `scf.if` around scalar loads and all stores.
i1 tiles are stored as i8.

Nearest upstream analogue: `vector.maskedload`/`vector.maskedstore` lowering
(`convert-vector-to-llvm`); Triton's `LoadOpConversion`/`StoreOpConversion`
(`LoadStoreOpToLLVM.cpp`, PTXBuilder).
"""
from __future__ import annotations

import math
import struct
from typing import Callable

from mlir import ir
from mlir.dialects import arith, llvm, scf, vector

from tilec.passes.analysis import axis_info
from tilec.targets import Feature
from tilec.passes.gpu import _FuncLowering, _is_i1, _is_tile, _result, lowering

FEATURE = Feature.PTX_PREDICATED_MEM


def _segments(op: ir.Operation) -> list[int]:
    return list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))


def _mem_type(elem: ir.Type) -> ir.Type:
    return ir.IntegerType.get_signless(8) if _is_i1(elem) else elem


# ---------------------------------------------------------------- scalar addresses

# Elementwise ops whose lane j depends only on lane j of their operands.
_LANEWISE = {"arith.addi", "arith.subi", "arith.muli", "arith.ori", "arith.andi", "arith.xori",
             "arith.shli", "arith.shrui", "arith.shrsi", "arith.cmpi", "arith.extsi",
             "arith.extui", "arith.trunci", "arith.select"}


def lane(v: ir.Value, j: int, depth: int = 8) -> ir.Value:
    """Element j of the 1-D vector `v`, recomputed on scalars through the
    lane-wise integer ops, broadcasts, constants and vector GEPs that produce
    `v` (the same arithmetic, wrapping included), else a `vector.extract`.

    LLVM does not scalarize `extractelement` of a vector op that has other
    uses, and then cannot see that chunk k's address is chunk 0's plus a
    constant (`sext(x or disjoint 512) * 4` -> `+ 2048` in
    SeparateConstOffsetFromGEP): every chunk kept its own 64-bit product, and
    with all loads issued together ptxas needed 4 more registers (vector add)."""
    vt = ir.VectorType(v.type)
    owner = v.owner
    if depth == 0 or not isinstance(owner, ir.OpView):
        return vector.ExtractOp(v, [], [j]).result
    name = owner.operation.name
    if name == "vector.broadcast":
        src = owner.operands[0]
        if not isinstance(src.type, ir.VectorType):
            return src
        return lane(src, 0, depth - 1) if ir.VectorType(src.type).shape == [1] else \
            vector.ExtractOp(v, [], [j]).result
    if name == "arith.constant":
        attr = owner.attributes["value"]
        if isinstance(attr, ir.DenseElementsAttr) and attr.is_splat:
            return arith.ConstantOp(vt.element_type, attr.get_splat_value()).result
        if isinstance(attr, ir.DenseIntElementsAttr):
            return arith.ConstantOp(vt.element_type, int(attr[j])).result
    if (name in _LANEWISE or name == "llvm.getelementptr") and \
            all(isinstance(o.type, ir.VectorType) for o in owner.operands):
        # Same op and attributes (overflow flags, predicate, GEP element type
        # and indices) on lane j of every operand.
        attrs = {n: owner.attributes[n] for n in owner.attributes}
        return ir.Operation.create(name, results=[vt.element_type],
                                   operands=[lane(o, j, depth - 1) for o in owner.operands],
                                   attributes=attrs).result
    return vector.ExtractOp(v, [], [j]).result


# ---------------------------------------------------------------- predicated PTX

def _elem_of(t: ir.Type) -> ir.Type:
    return ir.VectorType(t).element_type if isinstance(t, ir.VectorType) else t


def _count(t: ir.Type) -> int:
    return ir.VectorType(t).shape[0] if isinstance(t, ir.VectorType) else 1


def _plain_elem(e: ir.Type) -> bool:
    """Element types whose bits LLVM can bit-cast to and from integer words."""
    return isinstance(e, (ir.IntegerType, ir.F16Type, ir.BF16Type, ir.F32Type, ir.F64Type)) \
        and axis_info.type_bytes(e) * 8 == getattr(e, "width", 0)


def _words(t: ir.Type, align: int) -> tuple[int, int] | None:
    """(number of registers, bits per register access) of a predicated access of
    type `t` with `align` known bytes of alignment; None when it has none (the
    caller falls back): 4/8/16 bytes -> 1/2/4 b32 words, 2 -> b16, 1 -> b8."""
    e = _elem_of(t)
    if not _plain_elem(e):
        return None
    nbytes = _count(t) * axis_info.type_bytes(e)
    if align < nbytes or nbytes > 16:
        return None
    if nbytes >= 4:
        return nbytes // 4, 32
    return 1, nbytes * 8


def _reg_type(bits: int) -> ir.Type:
    # 8-bit accesses use a 16-bit register: PTX has no 8-bit registers.
    return ir.IntegerType.get_signless(32 if bits == 32 else 16)


def _constraint(bits: int) -> str:
    return "r" if bits == 32 else "h"


def _splat_constant(v: ir.Value) -> int | float | None:
    """The value every element of `v` has, when `v` is a splat constant (through
    the broadcasts, extracts and shuffles the lowering builds); else None."""
    while True:
        owner = v.owner
        if not isinstance(owner, ir.OpView):
            return None
        name = owner.operation.name
        if name == "arith.constant":
            attr = owner.attributes["value"]
            if isinstance(attr, ir.DenseElementsAttr):
                if not attr.is_splat:
                    return None
                attr = attr.get_splat_value()
            if isinstance(attr, ir.FloatAttr):
                return float(attr.value)
            if isinstance(attr, ir.IntegerAttr):
                return int(attr.value)
            return None
        if name in ("vector.broadcast", "vector.extract", "vector.shuffle") and \
                (name != "vector.shuffle" or owner.operands[0] == owner.operands[1]):
            v = owner.operands[0]
            continue
        return None


def _element_bits(e: ir.Type, c: int | float) -> int:
    """The bit pattern of the constant `c` as one element of type `e`."""
    if isinstance(e, ir.IntegerType):
        return int(c) & ((1 << e.width) - 1)
    if isinstance(e, ir.F64Type):
        return int.from_bytes(struct.pack("<d", float(c)), "little")
    if isinstance(e, ir.F32Type):
        return int.from_bytes(struct.pack("<f", float(c)), "little")
    if isinstance(e, ir.F16Type):
        return int.from_bytes(struct.pack("<e", float(c)), "little")
    # bf16: round the f32 pattern to nearest even (NaN stays a quiet NaN).
    f = int.from_bytes(struct.pack("<f", float(c)), "little")
    if math.isnan(float(c)):
        return 0x7FC0
    return ((f + 0x7FFF + ((f >> 16) & 1)) >> 16) & 0xFFFF


def _constant_words(t: ir.Type, c: int | float, n: int, bits: int) -> list[int]:
    e = _elem_of(t)
    eb = axis_info.type_bytes(e) * 8
    pattern = 0
    for i in range(_count(t)):          # little-endian: element 0 in the low bits
        pattern |= _element_bits(e, c) << (i * eb)
    return [(pattern >> (i * bits)) & ((1 << bits) - 1) for i in range(n)]


def _to_words(v: ir.Value, n: int, bits: int) -> list[ir.Value]:
    """`v` (any plain type of n * bits bits, or 8 bits) as n integer registers."""
    reg = _reg_type(bits)
    if bits == 8:
        return [arith.ExtUIOp(reg, llvm.BitcastOp(ir.IntegerType.get_signless(8), v).result).result]
    if n == 1:
        return [llvm.BitcastOp(reg, v).result]
    vec = llvm.BitcastOp(ir.VectorType.get([n], reg), v).result
    return [vector.ExtractOp(vec, [], [i]).result for i in range(n)]


def _from_words(words: list[ir.Value], t: ir.Type, bits: int) -> ir.Value:
    if bits == 8:
        return llvm.BitcastOp(t, arith.TruncIOp(ir.IntegerType.get_signless(8), words[0]).result).result
    if len(words) == 1:
        return llvm.BitcastOp(t, words[0]).result
    vec = vector.FromElementsOp(ir.VectorType.get([len(words)], words[0].type), words).result
    return llvm.BitcastOp(t, vec).result


def _operand_list(first: int, n: int) -> str:
    regs = [f"${first + i}" for i in range(n)]
    return regs[0] if n == 1 else "{ " + ", ".join(regs) + " }"


def _suffix(n: int, bits: int) -> str:
    return ("" if n == 1 else f".v{n}") + f".b{bits}"


def predicated_load(pred: ir.Value, t: ir.Type, p: ir.Value, nb: tuple[int, int],
                    alt: Callable[[], ir.Value]) -> ir.Value:
    """`@pred ld.global` of a value of type `t` at `p`; `alt()` where pred is false."""
    n, bits = nb
    reg = _reg_type(bits)
    c = None
    alt_v = alt()
    c = _splat_constant(alt_v)
    lines: list[str] = []
    inputs: list[ir.Value] = []
    if c is not None:
        for i, word in enumerate(_constant_words(t, c, n, bits)):
            lines.append(f"mov.b{16 if bits == 8 else bits} ${i}, 0x{word:x};")
    else:
        for i, word_v in enumerate(_to_words(alt_v, n, bits)):
            lines.append(f"mov.b{16 if bits == 8 else bits} ${i}, ${n + len(inputs)};")
            inputs.append(word_v)
    k = n + len(inputs)                         # $k: predicate, $k+1: address
    lines.append(f"@${k} ld.global{_suffix(n, bits)} {_operand_list(0, n)}, [ ${k + 1} + 0 ];")
    cons = ",".join([f"={_constraint(bits)}"] * n + [_constraint(bits)] * len(inputs) + ["b", "l"])
    res_t = reg if n == 1 else llvm.StructType.get_literal([reg] * n)
    asm = llvm.InlineAsmOp(res_t, inputs + [pred, p], "\n\t".join(lines), cons,
                           has_side_effects=True)
    out = asm.result
    words = [out] if n == 1 else [llvm.ExtractValueOp(reg, out, [i]).result for i in range(n)]
    return _from_words(words, t, bits)


def predicated_store(pred: ir.Value, v: ir.Value, p: ir.Value, nb: tuple[int, int]) -> None:
    """`@pred st.global` of `v` at `p`."""
    n, bits = nb
    words = _to_words(v, n, bits)
    text = f"@${n} st.global{_suffix(n, bits)} [ ${n + 1} + 0 ], {_operand_list(0, n)};"
    cons = ",".join([_constraint(bits)] * n + ["b", "l"])
    llvm.InlineAsmOp(None, words + [pred, p], text, cons, has_side_effects=True)


# ---------------------------------------------------------------- rules

@lowering("tile.load")
def _load(L: _FuncLowering, op: ir.Operation) -> None:
    seg = _segments(op)
    ptr = op.operands[0]
    mask = op.operands[1] if seg[1] else None
    other = op.operands[1 + seg[1]] if seg[2] else None
    res = _result(op)
    elem = res.type.element_type if _is_tile(res.type) else res.type
    mem_t = _mem_type(elem)
    eb = axis_info.type_bytes(mem_t)
    predicated = L.target.has(FEATURE)

    def from_mem(v: ir.Value) -> ir.Value:
        if mem_t == elem:
            return v
        return arith.CmpIOp(arith.CmpIPredicate.ne, v, L.zero(v.type)).result

    def to_mem(v: ir.Value) -> ir.Value:
        return v if mem_t == elem else arith.ExtUIOp(
            ir.VectorType.get(v.type.shape, mem_t) if isinstance(v.type, ir.VectorType) else mem_t,
            v).result

    def guarded(pred: ir.Value | None, t: ir.Type, p: ir.Value, align: int,
                alt: Callable[[], ir.Value]) -> ir.Value:
        if pred is None:
            return llvm.LoadOp(t, p, alignment=align).result
        nb = _words(t, align) if predicated else None
        if nb is not None:
            return predicated_load(pred, t, p, nb, alt)
        if isinstance(t, ir.VectorType):
            # A uniform-mask llvm.masked.load: LLVM turns it into one branch around
            # the wide load, and lets the loads be scheduled together (ptxas
            # needs 2 fewer registers for vector add than with an scf.if here).
            mask_v = L.splat(pred, t.shape[0])
            return llvm.MaskedLoadOp(t, p, mask_v, align, pass_thru=alt()).result
        if_op = scf.IfOp(pred, [t], has_else=True)
        with ir.InsertionPoint(if_op.then_block):
            scf.YieldOp([llvm.LoadOp(t, p, alignment=align).result])
        with ir.InsertionPoint(if_op.else_block):
            scf.YieldOp([alt()])
        return if_op.results[0]

    if not _is_tile(res.type):
        pred = L.get(mask) if mask is not None else None
        v = guarded(pred, mem_t, L.get(ptr), math.gcd(L.axis.get(ptr).divisibility[0], eb),
                    lambda: to_mem(L.get(other)) if other is not None else L.zero(mem_t))
        L.values[res] = from_mem(v)
        return
    d = L.dist(res.type)
    w, align = L.access(ptr, mask, d, eb)
    piece_t = ir.VectorType.get([w], mem_t) if w > 1 else mem_t
    pf = L.frag(ptr)
    mf = (L.frag(mask) if _is_tile(mask.type) else None) if mask is not None else None
    of = (L.frag(other) if _is_tile(other.type) else None) if other is not None else None
    elem_at = lane if predicated else L.extract
    out = []
    for ci in range(d.num_chunks):
        pieces = []
        for j in range(0, d.vec_len, w):
            pred = None
            if mask is not None:
                pred = elem_at(mf[ci], j) if mf is not None else L.get(mask)

            def alt(ci: int = ci, j: int = j) -> ir.Value:
                if other is None:
                    return L.zero(piece_t)
                if of is None:
                    s = L.get(other)
                    return to_mem(L.splat(s, w) if w > 1 else s)
                return to_mem(L.slice(of[ci], j, w) if w > 1 else L.extract(of[ci], j))
            pieces.append(guarded(pred, piece_t, elem_at(pf[ci], j), align, alt))
        chunk = L.concat(pieces)
        if not isinstance(chunk.type, ir.VectorType):
            chunk = L.splat(chunk, 1)
        out.append(from_mem(chunk))
    L.values[res] = out


@lowering("tile.store")
def _store(L: _FuncLowering, op: ir.Operation) -> None:
    seg = _segments(op)
    ptr, value = op.operands[0], op.operands[1]
    mask = op.operands[2] if seg[2] else None
    elem = value.type.element_type if _is_tile(value.type) else value.type
    mem_t = _mem_type(elem)
    eb = axis_info.type_bytes(mem_t)
    predicated = L.target.has(FEATURE)

    def store(pred: ir.Value | None, v: ir.Value, p: ir.Value, align: int) -> None:
        if mem_t != elem:
            t = ir.VectorType.get(v.type.shape, mem_t) if isinstance(v.type, ir.VectorType) else mem_t
            v = arith.ExtUIOp(t, v).result
        if pred is None:
            llvm.StoreOp(v, p, alignment=align)
            return
        nb = _words(v.type, align) if predicated else None
        if nb is not None:
            predicated_store(pred, v, p, nb)
            return
        if_op = scf.IfOp(pred, [], has_else=False)
        with ir.InsertionPoint(if_op.then_block):
            llvm.StoreOp(v, p, alignment=align)
            scf.YieldOp([])

    if not _is_tile(ptr.type):
        store(L.get(mask) if mask is not None else None, L.get(value), L.get(ptr),
              math.gcd(L.axis.get(ptr).divisibility[0], eb))
        return
    d = L.dist(ptr.type)
    w, align = L.access(ptr, mask, d, eb)
    pf = L.frag(ptr)
    vf = L.frag(value) if _is_tile(value.type) else None
    mf = (L.frag(mask) if _is_tile(mask.type) else None) if mask is not None else None
    elem_at = lane if predicated else L.extract
    for ci in range(d.num_chunks):
        for j in range(0, d.vec_len, w):
            pred = None
            if mask is not None:
                pred = elem_at(mf[ci], j) if mf is not None else L.get(mask)
            if vf is not None:
                v = L.slice(vf[ci], j, w)
            else:
                v = L.get(value)
                v = L.splat(v, w) if w > 1 else v
            store(pred, v, elem_at(pf[ci], j), align)
