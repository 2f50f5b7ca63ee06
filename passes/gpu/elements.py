"""`convert-tile-to-gpu` rules for pointer <-> integer casts and element
shuffles (dialects/tile_elements.py).

* `tile.int_to_ptr` -> `llvm.inttoptr` to `!llvm.ptr<1>` per fragment chunk
  (or on the scalar); `tile.ptr_to_int` -> `llvm.ptrtoint`.
* `tile.inline_asm` -> `llvm.inline_asm` per `pack` elements of each chunk
  (operands and results packed into iN registers when pack > 1); a scalar
  op is one call.  Where the target has `Feature.INLINE_ASM` (ptxas reads the
  PTX text) or `INLINE_ASM_LLVM_MC` (the back end assembles the text with
  llvm-mc: a located error when there is none); elsewhere a located error (LLVM
  would abort: the in-process AMDGPU back end has no assembler for inline
  AMDGCN).
* `arith.truncf` with `roundingmode = toward_zero` (`fp_downcast_rounding=
  "rtz"`): where the target has `Feature.CVT_ROUNDING`, one `cvt.rz` per
  element (f64 -> f16/bf16: through f32, truncation composes); elsewhere the
  arith sequence of passes/float_rounding.py on each chunk.  Without a
  rounding mode the op takes the generic elementwise rule.
* `tile.restride`: every thread stores its elements of each source at their
  row-major positions in one workgroup-memory array (the second source after
  the first), a barrier, then each thread reads each of its result elements
  at `offset + sum(v_k * strides[k])`, where v are the element's coordinates
  in the op's `view` of the result, computed from its row-major position.
  The same exchange as `tile.reshape` (passes/gpu/shape.py).

Nearest upstream analogue: `convert-arith-to-llvm` (the casts); Triton's
`JoinOpConversion`/`SplitOpConversion`/`CatOpConversion` (the shuffles, which
Triton does in registers where its layouts allow).
"""
from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith, gpu, llvm, vector

from tilec.dialects import tile
from tilec.dialects import tile_elements as el
from tilec.errors import TilecError, source_loc
from tilec.passes.analysis import axis_info
from tilec.passes import float_rounding
from tilec.passes.gpu import math as gpu_math
from tilec.passes.gpu.context import (
    FuncLowering, Rule, i32, is_i1, is_tile, linear_index, result, shared_element,
    store_row_major,
)
from tilec.passes.rules import RuleSet
from tilec.targets import Feature, toolchain

RULES: RuleSet[Rule] = RuleSet("gpu.elements")


def _each(L: FuncLowering, op: ir.Operation, build: type) -> None:
    src, res = op.operands[0], result(op)
    if not is_tile(src.type):
        L.values[res] = build(L.scalar_type(res.type), L.get(src)).result
        return
    L.values[res] = [build(t, f).result for t, f in zip(L.frag_types(res.type), L.frag(src))]


@RULES.rule("tile.inline_asm")
def _no_inline_asm(L: FuncLowering, op: ir.Operation) -> None:
    """Targets with neither `Feature.INLINE_ASM` nor `INLINE_ASM_LLVM_MC`: LLVM
    would abort emitting the object (the AMDGPU assembler parser is not in the
    in-process LLVM that llvmlite ships), so the kernel is refused here, at the
    user's line."""
    raise TilecError(f"tl.inline_asm_elementwise is not supported on {L.target.name} yet: its "
                     "code generator cannot assemble inline assembly; NVIDIA targets take it",
                     source_loc(op.location))


@RULES.rule("tile.inline_asm", feature=Feature.INLINE_ASM_LLVM_MC)
def _inline_asm_llvm_mc(L: FuncLowering, op: ir.Operation) -> None:
    """The back end assembles the text with `llvm-mc` (AMD: "=v,v"-style VGPR
    constraints; pack > 1 packs into one 32-bit, or wider, VGPR): the same
    lowering as `_inline_asm`, refused at the user's line without an llvm-mc."""
    if toolchain.find_llvm_mc() is None:
        raise TilecError(f"tl.inline_asm_elementwise on {L.target.name} needs an assembler "
                         f"for the inline AMDGCN (llvm-mc): {toolchain.LLVM_MC_HINT}",
                         source_loc(op.location))
    _inline_asm(L, op)


@RULES.rule("tile.inline_asm", feature=Feature.INLINE_ASM)
def _inline_asm(L: FuncLowering, op: ir.Operation) -> None:
    """One `llvm.inline_asm` per `pack` elements of each fragment chunk: the
    operands' elements (packed into one iN register when pack > 1), the results
    (a struct when several) unpacked back into elements."""
    asm = ir.StringAttr(op.attributes["asm"]).value
    cons = ir.StringAttr(op.attributes["constraints"]).value
    pure = ir.BoolAttr(op.attributes["pure"]).value
    pack = int(ir.IntegerAttr(op.attributes["pack"]).value)
    res = list(op.results)
    scalars = [L.scalar_type(tile.element_type(r.type)) for r in res]

    def reg(t: ir.Type) -> ir.Type:
        return t if pack == 1 else ir.IntegerType.get_signless(
            pack * axis_info.type_bytes(t) * 8)

    regs = [reg(t) for t in scalars]
    out_t = regs[0] if len(regs) == 1 else llvm.StructType.get_literal(regs)

    def call(ins: list[ir.Value]) -> list[ir.Value]:
        v = llvm.InlineAsmOp(out_t, ins, asm, cons, has_side_effects=not pure).result
        return [v] if len(regs) == 1 else [llvm.ExtractValueOp(t, v, [i]).result
                                           for i, t in enumerate(regs)]

    if not is_tile(res[0].type):
        if pack != 1:
            raise TilecError("tl.inline_asm_elementwise: pack > 1 needs tiles",
                             source_loc(op.location))
        for r, v in zip(res, call([L.get(a) for a in op.operands])):
            L.values[r] = v
        return
    d = L.dist(res[0].type)
    if d.vec_len % pack:
        raise TilecError(f"tl.inline_asm_elementwise: pack={pack} needs {pack} consecutive "
                         f"elements per thread, and this tile's layout gives "
                         f"{d.vec_len}", source_loc(op.location))
    frags = [L.frag(a) for a in op.operands]
    out: list[list[ir.Value]] = [[] for _ in res]
    for c in range(d.num_chunks):
        elems: list[list[ir.Value]] = [[] for _ in res]
        for g in range(0, d.vec_len, pack):
            ins = []
            for f in frags:
                if pack == 1:
                    ins.append(L.extract(f[c], g))
                    continue
                piece = L.slice(f[c], g, pack)
                ins.append(llvm.BitcastOp(reg(ir.VectorType(piece.type).element_type),
                                          piece).result)
            for i, (v, t) in enumerate(zip(call(ins), scalars)):
                if pack == 1:
                    elems[i].append(v)
                else:
                    vec = llvm.BitcastOp(ir.VectorType.get([pack], t), v).result
                    elems[i] += [L.extract(vec, k) for k in range(pack)]
        for i, t in enumerate(scalars):
            out[i].append(vector.FromElementsOp(ir.VectorType.get([d.vec_len], t),
                                                elems[i]).result)
    for r, chunks in zip(res, out):
        L.values[r] = chunks


def _toward_zero(op: ir.Operation) -> bool:
    mode = float_rounding.rounding_mode(op)
    if mode not in (None, 0, float_rounding.TOWARD_ZERO):
        raise TilecError(f"arith.truncf rounding mode {mode} is not supported",
                         source_loc(op.location))
    return mode == float_rounding.TOWARD_ZERO


def _per_chunk(L: FuncLowering, op: ir.Operation, build: type | object) -> None:
    """`build(x, result type)` on the scalar or on each fragment chunk."""
    src, res = op.operands[0], result(op)
    if not is_tile(src.type):
        L.values[res] = build(L.get(src), L.scalar_type(res.type))  # type: ignore[operator]
        return
    L.values[res] = [build(f, t)  # type: ignore[operator]
                     for f, t in zip(L.frag(src), L.frag_types(res.type))]


@RULES.rule("arith.truncf")
def _truncf(L: FuncLowering, op: ir.Operation) -> None:
    if not _toward_zero(op):
        gpu_math.elementwise(L, op)
        return
    _per_chunk(L, op, float_rounding.truncf_toward_zero)


# `cvt.rz` per (source, destination) element type: the PTX, the constraints.
_CVT_RZ = {("f32", "f16"): ("cvt.rz.f16.f32 $0, $1;", "=h,f"),
           ("f32", "bf16"): ("cvt.rz.bf16.f32 $0, $1;", "=h,f"),
           ("f64", "f32"): ("cvt.rz.f32.f64 $0, $1;", "=f,d")}


def _cvt_rz(x: ir.Value, dst: ir.Type) -> ir.Value:
    """`x` (scalar or vector) truncated toward zero by `cvt.rz`, element by element."""
    vec = isinstance(x.type, ir.VectorType)
    s_in = ir.VectorType(x.type).element_type if vec else x.type
    s_out = ir.VectorType(dst).element_type if vec else dst
    if str(s_in) == "f64" and str(s_out) != "f32":
        mid = ir.VectorType.get(ir.VectorType(x.type).shape, ir.F32Type.get()) if vec \
            else ir.F32Type.get()
        return _cvt_rz(_cvt_rz(x, mid), dst)
    asm, cons = _CVT_RZ[(str(s_in), str(s_out))]
    reg = ir.IntegerType.get_signless(16) if cons.startswith("=h") else s_out

    def one(e: ir.Value) -> ir.Value:
        r = llvm.InlineAsmOp(reg, [e], asm, cons).result
        return r if reg == s_out else llvm.BitcastOp(s_out, r).result

    if not vec:
        return one(x)
    n = ir.VectorType(x.type).shape[0]
    elems = [one(vector.ExtractOp(x, [], [k]).result) for k in range(n)]
    return vector.FromElementsOp(dst, elems).result


@RULES.rule("arith.truncf", feature=Feature.CVT_ROUNDING)
def _truncf_cvt(L: FuncLowering, op: ir.Operation) -> None:
    if not _toward_zero(op):
        gpu_math.elementwise(L, op)
        return
    _per_chunk(L, op, _cvt_rz)


@RULES.rule("tile.int_to_ptr")
def _int_to_ptr(L: FuncLowering, op: ir.Operation) -> None:
    _each(L, op, llvm.IntToPtrOp)


@RULES.rule("tile.ptr_to_int")
def _ptr_to_int(L: FuncLowering, op: ir.Operation) -> None:
    _each(L, op, llvm.PtrToIntOp)


@RULES.rule("tile.restride")
def _restride(L: FuncLowering, op: ir.Operation) -> None:
    view, strides, offset = el.restride_params(op)
    res = result(op)
    elem = L.scalar_type(res.type.element_type)
    mem_t = ir.IntegerType.get_signless(8) if is_i1(elem) else elem
    sizes = [math.prod(s.type.shape) for s in op.operands]
    buf = L.shared_buffer(mem_t, sum(sizes))
    gpu.BarrierOp()
    start = 0
    for src, n in zip(op.operands, sizes):
        part = buf if start == 0 else shared_element(L, buf, L.const_i32(start), mem_t)
        store_row_major(L, src, part, mem_t)
        start += n
    gpu.BarrierOp()
    dd = L.dist(res.type)
    vt = ir.VectorType.get([dd.vec_len], i32())

    def const(c: int) -> ir.Value:
        return L.splat(L.const_i32(c), dd.vec_len)

    out = []
    for flat in linear_index(L, dd):
        idx = const(offset)
        for k, (size, stride) in enumerate(zip(view, strides)):
            inner = math.prod(view[k + 1:])
            coord = flat if inner == 1 else arith.DivUIOp(flat, const(inner)).result
            if k > 0:
                coord = arith.RemUIOp(coord, const(size)).result
            if stride != 1:
                coord = arith.MulIOp(coord, const(stride)).result
            idx = arith.AddIOp(idx, coord).result
        assert idx.type == vt
        elems = []
        for i in range(dd.vec_len):
            v = llvm.LoadOp(mem_t, shared_element(L, buf, L.extract(idx, i), mem_t)).result
            elems.append(arith.TruncIOp(elem, v).result if mem_t != elem else v)
        out.append(L.concat(elems) if len(elems) > 1 else L.splat(elems[0], 1))
    gpu.BarrierOp()
    L.release_shared(buf)  # read by every thread: later exchanges may reuse it
    L.values[res] = out

