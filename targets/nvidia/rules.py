"""NVIDIA variants of `convert-tile-to-gpu` rules and target hooks, keyed by
the features the NVIDIA records have (the pass's `RuleTable` lists `RULES`).

| key | feature | what |
|---|---|---|
| `hook.address-lane` | `PTX_PREDICATED_MEM` | a lane of an address/mask vector recomputed on scalars |
| `hook.masked-load` | `PTX_PREDICATED_MEM` | `@p ld.global[.v2/.v4].b32/.b16/.b8` through inline asm |
| `hook.masked-store` | `PTX_PREDICATED_MEM` | `@p st.global...` through inline asm |
| `hook.math-fn` | `DEVICE_LIBM` | keep the `math` op: libdevice (`__nv_*`) through `convert-gpu-to-nvvm`; float32 `math.exp2` is `ex2.approx.ftz.f32` with `EXP2_FTZ` |
| `hook.f32-div` | `FAST_FDIV` | `llvm.nvvm.div.full` (`div.full.f32`, 2 ulp, as Triton's `/`) |
| `hook.dot-mma` | `MMA_M16N8K16` | `tile.dot` on the tensor cores: `ldmatrix` + `mma.sync.m16n8k16` |
| `tile.warp_sync` | `WARP_SYNC_INSTR` | `nvvm.bar.warp.sync` with a full mask |

Predicated masked accesses, as Triton emits them::

    mov.b32 $0, 0x0;  mov.b32 $1, $6; ...          (the `other` values)
    @$4 ld.global.v4.b32 { $0, $1, $2, $3 }, [ $5 + 0 ];
    @$4 st.global.v4.b32 [ $5 + 0 ], { $0, $1, $2, $3 };

The access is split into 32-bit words (f16/bf16/i8 are packed two/four to a
word, 64-bit elements take two words; `v2`/`v4` for 2/4 words); an access of 2
or 1 bytes uses one `.b16`/`.b8` access of a 16-bit register.  Operands are
numbered outputs first (`$0..$n-1`, constraint `=r`/`=h`), then the register
`other` words (`r`/`h`), then the predicate (`b`), then the 64-bit address
(`l`).  Constant `other` words are immediates in the `mov`s.  The loaded words
are bit-cast back to `vector<w x T>`.  Both carry `has_side_effects` and no
memory-effect attribute: LLVM must treat them as reading and writing any
memory, so it never moves one across another access (or barrier) that may
alias, never merges two identical loads separated by a store, and never drops
them.  This only orders them in the PTX text; ptxas still schedules the
independent `ld.global`s of a kernel back to back.  The cost is that LLVM will
not delete or hoist an unused/loop-invariant masked load.  There is no branch:
the predicate guards only the instruction.  An access with no such form (too
little alignment, an element type without a bit pattern) returns None and the
generic guarded access runs.

Tensor cores (f16/bf16 operands, f32 accumulator, and `tile-layout` gave the
result the `mma.sync` accumulator layout, `layouts.mma_accumulator_layout`):
passes/gpu/dot.py stages a and b row by row into workgroup memory, each row
padded by 16 bytes against bank conflicts; each warp then runs, for every
k-step of 16 and every 16 x 8 tile of the result it holds, one
`mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}` (inline PTX) whose A
registers come from one `ldmatrix.x4` per 16-row block and whose B registers
from one `ldmatrix.x2.trans` per 8-column block, and whose C/D registers are
the thread's accumulator fragment itself, so the accumulator stays in
registers across an enclosing K loop.  A last barrier lets the buffers be reused
(passes/gpu/dot.py releases them: the next dot's staging takes the same bytes).

These rules use only the `FuncLowering` they are given (its type is imported
for the checker only), so this file imports nothing from passes/gpu at run
time.  Nearest upstream analogue: Triton's `TargetInfo` (third_party/nvidia)
and `LoadStoreOpToLLVM.cpp`'s PTXBuilder.
"""
from __future__ import annotations

import math
import struct
from typing import TYPE_CHECKING, Callable, Sequence

from mlir import ir
from mlir.dialects import arith, gpu, llvm, nvvm, vector

from tilec.passes.analysis import axis_info
from tilec.passes.analysis.layouts import Distribution, mma_accumulator_layout
from tilec.passes.rules import RuleSet
from tilec.targets import Feature

if TYPE_CHECKING:
    from tilec.passes.gpu.context import FuncLowering, Rule
    from tilec.passes.gpu.dot import MmaPlan, Staged

RULES: RuleSet[Rule] = RuleSet("nvidia")


def _i32() -> ir.IntegerType:
    return ir.IntegerType.get_signless(32)


# ---------------------------------------------------------------- memory (PTX_PREDICATED_MEM)

# Elementwise ops whose lane j depends only on lane j of their operands.
_LANEWISE = {"arith.addi", "arith.subi", "arith.muli", "arith.ori", "arith.andi", "arith.xori",
             "arith.shli", "arith.shrui", "arith.shrsi", "arith.cmpi", "arith.extsi",
             "arith.extui", "arith.trunci", "arith.select"}


def _lane(v: ir.Value, j: int, depth: int = 8) -> ir.Value:
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
        return _lane(src, 0, depth - 1) if ir.VectorType(src.type).shape == [1] else \
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
                                   operands=[_lane(o, j, depth - 1) for o in owner.operands],
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


def _predicated_load(pred: ir.Value, t: ir.Type, p: ir.Value, nb: tuple[int, int],
                    alt: Callable[[], ir.Value]) -> ir.Value:
    """`@pred ld.global` of a value of type `t` at `p`; `alt()` where pred is false."""
    n, bits = nb
    reg = _reg_type(bits)
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


def _predicated_store(pred: ir.Value, v: ir.Value, p: ir.Value, nb: tuple[int, int]) -> None:
    """`@pred st.global` of `v` at `p`."""
    n, bits = nb
    words = _to_words(v, n, bits)
    text = f"@${n} st.global{_suffix(n, bits)} [ ${n + 1} + 0 ], {_operand_list(0, n)};"
    cons = ",".join([_constraint(bits)] * n + ["b", "l"])
    llvm.InlineAsmOp(None, words + [pred, p], text, cons, has_side_effects=True)


@RULES.rule("hook.address-lane", feature=Feature.PTX_PREDICATED_MEM)
def _address_lane(L: FuncLowering, v: ir.Value, j: int) -> ir.Value:
    return _lane(v, j)


@RULES.rule("hook.masked-load", feature=Feature.PTX_PREDICATED_MEM)
def _masked_load(L: FuncLowering, pred: ir.Value, t: ir.Type, p: ir.Value, align: int,
                 alt: Callable[[], ir.Value]) -> ir.Value | None:
    nb = _words(t, align)
    return None if nb is None else _predicated_load(pred, t, p, nb, alt)


@RULES.rule("hook.masked-store", feature=Feature.PTX_PREDICATED_MEM)
def _masked_store(L: FuncLowering, pred: ir.Value, v: ir.Value, p: ir.Value,
                  align: int) -> bool:
    nb = _words(v.type, align)
    if nb is None:
        return False
    _predicated_store(pred, v, p, nb)
    return True


# ---------------------------------------------------------------- math

@RULES.rule("hook.math-fn", feature=Feature.DEVICE_LIBM)
def _libdevice_math_fn(L: FuncLowering, name: str, t: ir.Type, x: ir.Value) -> ir.Value | None:
    """The math op stays: `convert-gpu-to-nvvm` calls libdevice, which MLIR links;
    float32 exp2 is `ex2.approx.ftz.f32` where the record has `EXP2_FTZ`."""
    if name == "math.exp2" and L.target.has(Feature.EXP2_FTZ) and \
            _elem_type(t) == ir.F32Type.get():
        return _per_element("llvm.nvvm.ex2.approx.ftz.f", t, [x])
    return None


def _elem_type(t: ir.Type) -> ir.Type:
    return ir.VectorType(t).element_type if isinstance(t, ir.VectorType) else t


@RULES.rule("hook.f32-div", feature=Feature.FAST_FDIV)
def _div_full(L: FuncLowering, t: ir.Type, operands: Sequence[ir.Value],
              attrs: dict[str, ir.Attribute]) -> ir.Value:
    return _per_element("llvm.nvvm.div.full", t, operands)


def _per_element(intrinsic: str, t: ir.Type, operands: Sequence[ir.Value]) -> ir.Value:
    """A scalar-only intrinsic applied to each element of a (vector) operation."""
    def call(args: list[ir.Value], rt: ir.Type) -> ir.Value:
        return ir.Operation.create("llvm.call_intrinsic", results=[rt], operands=args, attributes={
            "intrin": ir.StringAttr.get(intrinsic),
            "op_bundle_sizes": ir.DenseI32ArrayAttr.get([]),
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(args), 0])}).result
    if not isinstance(t, ir.VectorType):
        return call(list(operands), t)
    vt = ir.VectorType(t)
    pos = ir.DenseI64ArrayAttr
    parts = []
    for i in range(vt.shape[0]):
        lanes = [ir.Operation.create("vector.extract", results=[vt.element_type], operands=[o],
                                     attributes={"static_position": pos.get([i])}).result
                 for o in operands]
        parts.append(call(lanes, vt.element_type))
    return ir.Operation.create("vector.from_elements", results=[t], operands=parts).result


# ---------------------------------------------------------------- warp sync

@RULES.rule("tile.warp_sync", feature=Feature.WARP_SYNC_INSTR)
def _warp_sync(L: FuncLowering, op: ir.Operation) -> None:
    full = (1 << L.target.warp_size) - 1
    nvvm.SyncWarpOp(arith.ConstantOp(_i32(), full - (1 << 32) if full >= 1 << 31 else full))


# ---------------------------------------------------------------- tensor cores

@RULES.rule("hook.dot-mma", feature=Feature.MMA_M16N8K16)
def _dot_mma_plan(L: FuncLowering, op: ir.Operation) -> MmaPlan | None:
    kind = _mma_kind(L, op)
    if kind is None:
        return None
    return _MMA_PAD, lambda staged: _dot_mma(L, op, kind, staged)


_MMA_KIND = {"f16": "f16", "bf16": "bf16"}
# Elements after each staged row on the mma path: 16 bytes, so the 8 rows one
# ldmatrix phase reads (K + 8 or N + 8 elements apart) start in different
# 16-byte bank groups (no bank conflicts for K, N multiples of 16).
_MMA_PAD = 8


def _mma_kind(L: FuncLowering, op: ir.Operation) -> str | None:
    """'f16'/'bf16' when this dot runs on the tensor cores, else None."""
    a, b = op.operands[0].type, op.operands[1].type
    kind = _MMA_KIND.get(str(a.element_type))
    res = op.results[0].type
    if kind is None or str(res.element_type) != "f32":
        return None
    (m, k), n = tuple(a.shape), tuple(b.shape)[1]
    want = mma_accumulator_layout(m, n, k, L.target.warp_size, L.num_warps)
    d = L.dist(res)
    if want is None or d.sliced_dim is not None or d.blocked != want:
        return None
    return kind


def _ldmatrix(addr: ir.Value, count: int, trans: bool) -> list[ir.Value]:
    """`ldmatrix.sync.aligned.m8n8.x{count}[.trans].shared.b16` at the lane's row
    address `addr` (a 32-bit workgroup-memory address): `count` 32-bit registers.
    It has side effects for LLVM so it stays after the barrier that publishes
    the data."""
    i32 = _i32()
    regs = ",".join(f"${r}" for r in range(count))
    text = (f"ldmatrix.sync.aligned.m8n8.x{count}{'.trans' if trans else ''}.shared.b16 "
            f"{{{regs}}}, [${count}];")
    res_t = llvm.StructType.get_literal([i32] * count)
    out = llvm.InlineAsmOp(res_t, [addr], text, ",".join(["=r"] * count + ["r"]),
                           has_side_effects=True).result
    return [llvm.ExtractValueOp(i32, out, [r]).result for r in range(count)]


def _dot_mma(L: FuncLowering, op: ir.Operation, kind: str, staged: Staged) -> None:
    acc = op.operands[2]
    res = op.results[0]
    (m_dim, k_dim, n_dim), elem, buf_a, buf_b = staged
    d = L.dist(res.type)
    regs = mma_sync_product(L, kind, buf_a, buf_b, (m_dim, k_dim, n_dim),
                            (k_dim + _MMA_PAD, n_dim + _MMA_PAD), L.frag(acc), d)
    gpu.BarrierOp()
    L.values[res] = mma_sync_chunks(L, d, regs)


def mma_sync_product(L: FuncLowering, kind: str, buf_a: ir.Value, buf_b: ir.Value,
                     shape: tuple[int, int, int], strides: tuple[int, int],
                     acc: Sequence[ir.Value], d: Distribution,
                     offsets: tuple[ir.Value, ir.Value] | None = None,
                     ) -> dict[tuple[int, int], list[ir.Value]]:
    """acc + A @ B with `ldmatrix` + `mma.sync.m16n8k16` for the [M, K] A and
    [K, N] B of 2-byte elements stored row-major in workgroup memory at `buf_a`
    / `buf_b` (plus the byte `offsets`, if given), rows `strides` elements
    apart; `acc` is the accumulator fragment in `d` (`mma_accumulator_layout`).
    Returns, per 16 x 8 tile (i, j) the warp holds, its c0..c3 values."""
    m_dim, k_dim, n_dim = shape
    ka, nb = strides   # row strides in workgroup memory
    warps = L.num_warps
    f32 = ir.F32Type.get()
    i32 = _i32()
    assert L.tid is not None
    lane = arith.AndIOp(L.tid, L.const_i32(31)).result
    l16 = arith.AndIOp(lane, L.const_i32(15)).result
    hi8 = arith.ShLIOp(arith.ShRUIOp(lane, L.const_i32(4)).result, L.const_i32(3)).result
    warp = arith.ShRUIOp(L.tid, L.const_i32(5)).result
    # Row addresses the lanes give ldmatrix, in bytes: A (x4): row l % 16 of the
    # 16 x 16 block, column 8 * (l / 16); B (x2.trans): k row l % 16, columns 8 w...
    a_elem = arith.AddIOp(arith.MulIOp(l16, L.const_i32(ka)).result, hi8).result
    b_elem = arith.AddIOp(arith.MulIOp(l16, L.const_i32(nb)).result,
                          arith.ShLIOp(warp, L.const_i32(3)).result).result
    two = L.const_i32(2)
    a_base = llvm.PtrToIntOp(i32, buf_a).result
    b_base = llvm.PtrToIntOp(i32, buf_b).result
    if offsets is not None:
        a_base = arith.AddIOp(a_base, offsets[0]).result
        b_base = arith.AddIOp(b_base, offsets[1]).result
    a_addr = arith.AddIOp(a_base, arith.MulIOp(a_elem, two).result).result
    b_addr = arith.AddIOp(b_base, arith.MulIOp(b_elem, two).result).result

    def at(base: ir.Value, elements: int) -> ir.Value:
        return arith.AddIOp(base, L.const_i32(2 * elements)).result if elements else base

    frag = list(acc)
    m_tiles, n_tiles = m_dim // 16, n_dim // (8 * warps)
    # acc[(i, j)] = [c0, c1, c2, c3] of the 16 x 8 tile (i, j) this warp holds.
    regs: dict[tuple[int, int], list[ir.Value]] = {}
    for i in range(m_tiles):
        for j in range(n_tiles):
            top = frag[d.chunk_index((2 * i, 2 * j))]
            bottom = frag[d.chunk_index((2 * i + 1, 2 * j))]
            regs[(i, j)] = [L.extract(top, 0), L.extract(top, 1),
                            L.extract(bottom, 0), L.extract(bottom, 1)]
    res_t = llvm.StructType.get_literal([f32] * 4)
    text = (f"mma.sync.aligned.m16n8k16.row.col.f32.{kind}.{kind}.f32 "
            "{$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};")
    cons = "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3"
    for kk in range(k_dim // 16):
        k0 = 16 * kk
        a_regs = [_ldmatrix(at(a_addr, 16 * i * ka + k0), 4, False) for i in range(m_tiles)]
        b_regs = [_ldmatrix(at(b_addr, k0 * nb + 8 * warps * j), 2, True)
                  for j in range(n_tiles)]
        for (i, j), c in regs.items():
            out = llvm.InlineAsmOp(res_t, a_regs[i] + b_regs[j] + c, text, cons).result
            regs[(i, j)] = [llvm.ExtractValueOp(f32, out, [r]).result for r in range(4)]
    return regs


def mma_sync_chunks(L: FuncLowering, d: Distribution,
                    regs: dict[tuple[int, int], list[ir.Value]]) -> list[ir.Value]:
    """The accumulator fragment (chunks in `d`'s order) from `mma_sync_product`."""
    chunks: list[ir.Value | None] = [None] * d.num_chunks
    for (i, j), c in regs.items():
        chunks[d.chunk_index((2 * i, 2 * j))] = L.concat(c[:2])
        chunks[d.chunk_index((2 * i + 1, 2 * j))] = L.concat(c[2:])
    assert all(ch is not None for ch in chunks)
    return [ch for ch in chunks if ch is not None]
