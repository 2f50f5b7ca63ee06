"""bf16 on hosts without vector bf16 conversions: arithmetic in f32, values as i16.

Without `Feature.BF16_VECTOR_CONVERT` (x86 AVX512-BF16) LLVM's x86 back end
handles a wide `bfloat` vector one lane at a time: it promotes each lane's
arithmetic to f32 through a libcall-shaped sequence and moves lanes in and out
of vector registers for every shuffle and select.  A 1024-lane bf16 row
reduction took 105 s of code generation that way.  This module is the CPU
back end's answer, applied between convert-tile-to-cpu's output and the
conversion to the LLVM dialect (`prepare`) and after translation (`retype`):

1. `vector.reduction` and `vector.fma` on bf16 run on f32 (extf before,
   truncf after: max/min exact, sums accumulate in f32 and round once);
2. upstream `arith-emulate-unsupported-floats` (bf16 -> f32) and
   `math-extend-to-supported-types` make every other bf16 operation an f32 one
   between `arith.extf` and `arith.truncf`;
3. those casts become integer code (`_expand_casts`): bf16 -> f32 is a 16-bit
   shift, f32 -> bf16 rounds to nearest even (quiet NaNs stay NaNs), f64 ->
   bf16 goes through f32 rounded to odd, so rounding once;
4. `retype`: the LLVM IR text's `bfloat` becomes `i16` (constants `0xRhhhh`
   become `u0xhhhh`, the data-movement intrinsics' mangled names follow), so
   the remaining loads, stores, selects and shuffles are integer ones.

Input invariant: upstream dialects only (convert-tile-to-cpu's output).
Output: no bf16 arithmetic; `retype` leaves the text unchanged when a float
operation on `bfloat` survived (an op none of the steps above covers), so the
result is always correct and at worst as slow as before.  Nearest upstream
analogue: `arith-expand{include-bf16}` (steps 3, f32 only), which also expands
ops this back end wants kept (maxnumf, minnumf).
"""
from __future__ import annotations

import re

from mlir import ir
from mlir.dialects import arith, vector
from mlir.passmanager import PassManager

from tilec.passes.cpu.context import elem_of, like

EMULATE = ("builtin.module(func.func(arith-emulate-unsupported-floats{source-types=bf16 "
           "target-type=f32}),math-extend-to-supported-types{extra-types=f16 target-type=f32})")


def _bf16like(t: ir.Type) -> bool:
    return isinstance(elem_of(t), ir.BF16Type)


def _splat(t: ir.Type, value: int) -> ir.Value:
    e = elem_of(t)
    attr = ir.IntegerAttr.get(e, value)
    if isinstance(t, ir.VectorType):
        return arith.constant(t, ir.DenseElementsAttr.get_splat(t, attr))
    return arith.constant(t, attr)


def _ops(root: ir.Operation, names: tuple[str, ...]) -> list[ir.Operation]:
    """The ops under `root` named one of `names`, in pre-order."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> None:
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    if inner.operation.name in names:
                        found.append(inner.operation)
                    visit(inner.operation)
    visit(root)
    return found


def _widen_vector_ops(module: ir.Module) -> None:
    """Step 1: bf16 `vector.reduction` / `vector.fma` on f32."""
    f32 = ir.F32Type.get()
    for op in _ops(module.operation, ("vector.reduction", "vector.fma")):
        if not _bf16like(op.results[0].type):
            continue
        with ir.InsertionPoint(op), op.location:
            wide = [arith.extf(like(v.type, f32), v) for v in op.operands]
            if op.name == "vector.fma":
                r = vector.fma(*wide)
            else:
                kind = op.attributes["kind"]
                r = vector.ReductionOp(f32, kind, wide[0],
                                       acc=wide[1] if len(wide) > 1 else None).result
                if "fastmath" in op.attributes:
                    r.owner.attributes["fastmath"] = op.attributes["fastmath"]
            out = arith.truncf(op.results[0].type, r)
        op.results[0].replace_all_uses_with(out)
        op.erase()


def _extend(v: ir.Value, to: ir.Type) -> ir.Value:
    """bf16 `v` -> f32 (then `to`) exactly: its bits in the high half of an f32."""
    i16, i32, f32 = (ir.IntegerType.get_signless(16), ir.IntegerType.get_signless(32),
                     ir.F32Type.get())
    bits = arith.extui(like(v.type, i32), arith.bitcast(like(v.type, i16), v))
    wide = arith.bitcast(like(v.type, f32), arith.shli(bits, _splat(bits.type, 16)))
    return wide if elem_of(to) == f32 else arith.extf(to, wide)


def _round_to_odd_f32(x: ir.Value) -> ir.Value:
    """f64 `x` -> f32 rounded to odd (truncate, then set the last bit when inexact),
    so that rounding the result to bf16 rounds `x` once."""
    f32, i32 = ir.F32Type.get(), ir.IntegerType.get_signless(32)
    r = arith.truncf(like(x.type, f32), x)
    back = arith.extf(x.type, r)
    bits = arith.bitcast(like(x.type, i32), r)
    # |r| > |x| where RNE rounded away from zero: one step back toward zero
    above = arith.cmpf(arith.CmpFPredicate.OGT, arith.absf(back), arith.absf(x))
    toward_zero = arith.select(above, arith.subi(bits, _splat(bits.type, 1)), bits)
    inexact = arith.cmpf(arith.CmpFPredicate.ONE, back, x)
    odd = arith.select(inexact, arith.ori(toward_zero, _splat(bits.type, 1)), toward_zero)
    return arith.bitcast(r.type, odd)


def _truncate(v: ir.Value, to: ir.Type) -> ir.Value:
    """f32 or f64 `v` -> bf16 `to`, rounded to nearest even; NaNs stay quiet NaNs."""
    i16, i32, f32 = (ir.IntegerType.get_signless(16), ir.IntegerType.get_signless(32),
                     ir.F32Type.get())
    if isinstance(elem_of(v.type), ir.F64Type):
        v = _round_to_odd_f32(v)
    elif elem_of(v.type) != f32:
        v = arith.extf(like(v.type, f32), v)          # f16 -> f32 is exact
    bits = arith.bitcast(like(v.type, i32), v)
    hi = arith.shrui(bits, _splat(bits.type, 16))
    lsb = arith.andi(hi, _splat(bits.type, 1))
    rounded = arith.addi(bits, arith.addi(lsb, _splat(bits.type, 0x7FFF)))
    nan = arith.cmpf(arith.CmpFPredicate.UNO, v, v)
    quiet = arith.ori(hi, _splat(bits.type, 0x40))
    out = arith.select(nan, quiet, arith.shrui(rounded, _splat(bits.type, 16)))
    return arith.bitcast(to, arith.trunci(like(v.type, i16), out))


def _expand_casts(module: ir.Module) -> None:
    """Step 3: `arith.extf` from / `arith.truncf` to bf16 as integer code."""
    for op in _ops(module.operation, ("arith.extf", "arith.truncf")):
        src, dst = op.operands[0], op.results[0]
        if op.name == "arith.extf" and _bf16like(src.type):
            build = _extend
        elif op.name == "arith.truncf" and _bf16like(dst.type):
            build = _truncate
        else:
            continue
        with ir.InsertionPoint(op), op.location:
            out = build(src, dst.type)
        dst.replace_all_uses_with(out)
        op.erase()


def _mentions_bf16(module: ir.Module) -> bool:
    return "bf16" in str(module.operation.get_asm(large_elements_limit=1))


def prepare(module: ir.Module) -> bool:
    """Steps 1-3 on a module of upstream dialects; whether it had bf16 at all."""
    if not _mentions_bf16(module):
        return False
    _widen_vector_ops(module)
    PassManager.parse(EMULATE).run(module.operation)
    _expand_casts(module)
    return True


# LLVM instructions and intrinsics that compute on floats: a `bfloat` in one of
# them means a bf16 operation survived and the retyping would change it.
_FLOAT_OPS = re.compile(r"\b(fadd|fsub|fmul|fdiv|frem|fneg|fcmp|fpext|fptrunc|sitofp|uitofp|"
                        r"fptosi|fptoui)\b")
# Intrinsics that only move bits: their names mangle the element type.
_MOVES = ("masked.load", "masked.store", "masked.gather", "masked.scatter",
          "masked.expandload", "masked.compressstore", "vector.insert", "vector.extract",
          "vector.reverse", "vector.splice", "vector.interleave2", "vector.deinterleave2",
          "experimental.vp.strided.load", "experimental.vp.strided.store")
_INTRINSIC = re.compile(r"@llvm\.([a-z0-9_.]+?)((?:\.(?:nx)?v\d+bf16|\.bf16|\.p0)+)\b")


def retype(llir: str) -> str:
    """Step 4: `bfloat` as `i16` in LLVM IR text, or the text unchanged when a
    float operation on `bfloat` is left in it."""
    if "bfloat" not in llir:
        return llir
    for line in llir.splitlines():
        if "bfloat" in line and _FLOAT_OPS.search(line):
            return llir
    for m in _INTRINSIC.finditer(llir):
        if "bf16" in m.group(2) and m.group(1) not in _MOVES:
            return llir
    out = _INTRINSIC.sub(lambda m: "@llvm." + m.group(1) + m.group(2).replace("bf16", "i16"),
                         llir)
    out = re.sub(r"bfloat 0xR([0-9A-Fa-f]{4})", r"i16 u0x\1", out)
    out = re.sub(r"0xR([0-9A-Fa-f]{4})", r"u0x\1", out)
    return _one_declaration_each(out.replace("bfloat", "i16"))


_DECLARED = re.compile(r"^declare\b.*?(@[\w.$]+)\(")


def _one_declaration_each(llir: str) -> str:
    """`llir` without the repeated declarations of an intrinsic (its bf16
    and i16 forms are one function now)."""
    seen: set[str] = set()
    lines = []
    for line in llir.splitlines(keepends=True):
        m = _DECLARED.match(line)
        if m is not None:
            if m.group(1) in seen:
                continue
            seen.add(m.group(1))
        lines.append(line)
    return "".join(lines)
