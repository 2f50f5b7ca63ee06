"""`tile-expand-fp8`: fp8 conversions as integer bit operations, fp8 storage as i8.

Input: tile-level IR (before `tile-layout` on GPUs, before `convert-tile-to-cpu`
on the CPU) that may hold the MLIR types `f8E4M3FN` (`tl.float8e4nv`) and
`f8E5M2` (`tl.float8e5`): as tile/scalar element types, as pointees of
`!tile.ptr`, in `arith.extf` (fp8 -> any float), `arith.truncf` (any float ->
fp8), int <-> fp8 conversions (`sitofp`/`uitofp`/`fptosi`/`fptoui`: canonicalize
folds the frontend's route through f32 into them), `arith.bitcast`, splat
`arith.constant`s and `tile.dot` operands.
Upstream MLIR has no LLVM lowering for extf/truncf on fp8 and LLVM has no fp8
type, so this pass makes them portable:

  * extf: the fp8 bits decode to the f32 bits with integer ops (exact), then
    an ordinary extf/truncf reaches the destination (exact for f16/bf16/f64);
  * truncf: the source goes to f32 first (exact from f16/bf16; from f64 one
    rounding to f32, as torch does), then rounds to nearest even in integer
    ops.  Overflow follows torch's casts: e4m3fn saturates to +-448 (infinities
    too), e5m2 overflows to +-inf; NaN becomes 0x7F with the sign;
  * `tile.dot` with fp8 operands: both decode to f16 (every fp8 value is exact
    in f16) and the dot runs on f16 with its f32 accumulator (the new dot
    names the formats in `tile.fp8_decoded`: tile-pipeline-lds may stage the
    bytes and decode after the LDS reads), unless
    `tile-accelerate-dot` (which runs before this pass on GPUs) gave it
    `tile.mma_fp8`: its operands then stay the raw i8 bytes for fp8 wgmma;
  * every remaining fp8 type (values, block and function arguments, pointee
    types) becomes i8, so loads, stores, selects and layout ops move bytes.

Output: no fp8 type remains.  Every new op carries the location of the op it
replaces.  Nearest upstream analogue: `arith-emulate-unsupported-floats` plus
`arith-expand` (which cover other float types, not these conversions).
"""
from __future__ import annotations

from dataclasses import dataclass
from mlir import ir
from mlir.dialects import arith

from tilec.dialects import tile
from tilec.errors import TilecError, source_loc
from tilec.options import CompileOptions
from tilec.passes.tile_bits import Bits, like
from tilec.targets import Target

NAME = "tile-expand-fp8"


@dataclass(frozen=True)
class Fp8Format:
    """An 8-bit float: `mant` mantissa bits, exponent `bias`; `max_code` is what
    an overflow becomes (the largest finite code when saturating, else inf)."""

    name: str
    mant: int
    bias: int
    max_code: int
    has_inf: bool


E4M3FN = Fp8Format("f8E4M3FN", 3, 7, 0x7E, False)
E5M2 = Fp8Format("f8E5M2", 2, 15, 0x7C, True)
FORMATS = {f.name: f for f in (E4M3FN, E5M2)}


def fp8_format(t: ir.Type) -> Fp8Format | None:
    return FORMATS.get(str(tile.element_type(t)))


def _has_fp8(t: ir.Type) -> bool:
    e = tile.element_type(t)
    return str(e) in FORMATS or (tile.is_ptr(e) and str(tile.pointee(e)) in FORMATS)


def storage_type(t: ir.Type) -> ir.Type:
    """`t` with fp8 replaced by i8 (also inside `!tile.ptr`)."""
    e = tile.element_type(t)
    i8 = ir.IntegerType.get_signless(8)
    if str(e) in FORMATS:
        return like(t, i8)
    if tile.is_ptr(e) and str(tile.pointee(e)) in FORMATS:
        return like(t, tile.ptr_type(i8))
    return t


_P = arith.CmpIPredicate


def decode_to_f32(x: ir.Value, fmt: Fp8Format, b: Bits) -> ir.Value:
    """The f32 value of the fp8 bits `x` (i8 tile or scalar); NaNs as torch makes them."""
    return arith.bitcast(b.f32, decode_bits(x, fmt, b), **b.at)


def decode_bits(x: ir.Value, fmt: Fp8Format, b: Bits) -> ir.Value:
    """The f32 bits (i32) of the fp8 bits `x`."""
    m_bits = fmt.mant
    v = arith.extui(b.i32, x, **b.at)
    sign = b.bin(arith.shli, b.bin(arith.andi, v, 0x80), 24)
    mag = b.bin(arith.andi, v, 0x7F)
    e = b.bin(arith.shrui, mag, m_bits)
    m = b.bin(arith.andi, mag, (1 << m_bits) - 1)
    normal = b.bin(arith.ori, b.bin(arith.shli, b.bin(arith.addi, e, 127 - fmt.bias), 23),
                   b.bin(arith.shli, m, 23 - m_bits))
    unit = ir.FloatAttr.get(ir.F32Type.get(), 2.0 ** (1 - fmt.bias - m_bits))
    if isinstance(b.t, ir.RankedTensorType):
        unit = ir.DenseElementsAttr.get_splat(b.f32, unit)
    sub_f = arith.mulf(arith.uitofp(b.f32, m, **b.at), arith.constant(b.f32, unit, **b.at),
                       **b.at)
    bits = b.sel(b.cmp(_P.eq, e, 0), arith.bitcast(b.i32, sub_f, **b.at), normal)
    if fmt.has_inf:   # exponent all ones: inf (m == 0) or a quiet NaN keeping the payload
        top = (1 << (7 - m_bits)) - 1
        quiet = b.sel(b.cmp(_P.ne, m, 0), 0x7FC00000, 0x7F800000)
        special = b.bin(arith.ori, quiet, b.bin(arith.shli, m, 23 - m_bits))
        bits = b.sel(b.cmp(_P.eq, e, top), special, bits)
    else:             # only S.1111.111 is NaN
        bits = b.sel(b.cmp(_P.eq, mag, 0x7F), 0x7FF00000, bits)
    return b.bin(arith.ori, bits, sign)


def encode_from_f32(x: ir.Value, fmt: Fp8Format, b: Bits) -> ir.Value:
    """The fp8 bits (i8) of the f32 `x`, rounded to nearest even."""
    m_bits, bias = fmt.mant, fmt.bias
    shift = 23 - m_bits
    bits = arith.bitcast(b.i32, x, **b.at)
    sign = b.bin(arith.andi, b.bin(arith.shrui, bits, 24), 0x80)
    a = b.bin(arith.andi, bits, 0x7FFFFFFF)
    # Normal results: rebias the exponent and round the dropped bits (ties to even).
    lsb = b.bin(arith.andi, b.bin(arith.shrui, a, shift), 1)
    rounded = b.bin(arith.addi, b.bin(arith.addi, a, ((bias - 127) << 23) + (1 << (shift - 1)) - 1),
                    lsb)
    normal = b.bin(arith.shrui, rounded, shift)
    # Subnormal results: the significand shifted right by a clamped amount, rounded.
    ef = b.bin(arith.shrui, a, 23)
    sig = b.bin(arith.ori, b.bin(arith.andi, a, 0x7FFFFF), b.sel(b.cmp(_P.eq, ef, 0), 0, 0x800000))
    # In [1, 31] for every lane, also those the select below discards (no poison shifts).
    amount = b.bin(arith.maxui, b.bin(arith.minui, b.bin(arith.subi, b.c(151 - bias - m_bits),
                                                         b.bin(arith.maxui, ef, 1)), 31), 1)
    kept = b.bin(arith.shrui, sig, amount)
    rem = b.bin(arith.subi, sig, b.bin(arith.shli, kept, amount))
    half = b.bin(arith.shli, b.c(1), b.bin(arith.subi, amount, 1))
    tie_odd = arith.andi(b.cmp(_P.eq, rem, half),
                         b.cmp(_P.ne, b.bin(arith.andi, kept, 1), 0), **b.at)
    up = arith.ori(b.cmp(_P.ugt, rem, half), tie_odd, **b.at)
    sub = b.bin(arith.addi, kept, arith.extui(b.i32, up, **b.at))
    r = b.sel(b.cmp(_P.ult, a, (128 - bias) << 23), sub, normal)
    r = b.bin(arith.minui, r, fmt.max_code)
    r = b.sel(b.cmp(_P.ugt, a, 0x7F800000), 0x7F, r)
    r = b.bin(arith.ori, r, sign)
    return arith.trunci(like(b.t, ir.IntegerType.get_signless(8)), r, **b.at)


def encode_value(v: float, fmt: Fp8Format) -> int:
    """The fp8 code of the Python float `v` (constants), as `encode_from_f32` rounds."""
    import struct
    a = struct.unpack("<I", struct.pack("<f", v))[0]  # f32 rounding first, as the IR does
    sign, a = (a >> 24) & 0x80, a & 0x7FFFFFFF
    if a > 0x7F800000:
        return 0x7F | sign
    shift = 23 - fmt.mant
    if a >= (128 - fmt.bias) << 23:
        r = (a + ((fmt.bias - 127) << 23) + (1 << (shift - 1)) - 1 + ((a >> shift) & 1)) >> shift
    else:
        ef = a >> 23
        sig = (a & 0x7FFFFF) | (0x800000 if ef else 0)
        amount = min(151 - fmt.bias - fmt.mant - max(ef, 1), 31)
        kept, rem, half = sig >> amount, sig & ((1 << amount) - 1), 1 << (amount - 1)
        r = kept + int(rem > half or (rem == half and kept & 1 == 1))
    return min(r, fmt.max_code) | sign


# ------------------------------------------------------------------ the pass

def _walk(op: ir.Operation, out: list[ir.Operation]) -> None:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                out.append(inner.operation)
                _walk(inner.operation, out)


_PASSIVE = ("tile.", "scf.", "func.", "tensor.splat", "arith.select")


def _retype(ops: list[ir.Operation]) -> None:
    for op in ops:
        for region in op.regions:
            for block in region.blocks:
                for arg in block.arguments:
                    if _has_fp8(arg.type):
                        arg.set_type(storage_type(arg.type))
        for res in op.results:
            if _has_fp8(res.type):
                res.set_type(storage_type(res.type))
        if op.name == "func.func":
            ft = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            inputs = [storage_type(t) for t in ft.inputs]
            results = [storage_type(t) for t in ft.results]
            op.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, results))


def _rewrite(op: ir.Operation, fmts: tuple[Fp8Format | None, ...]) -> None:
    """Replace `op` (already retyped: its fp8 values are i8); `fmts`: the fp8
    formats of its operands and results before retyping (None: not fp8)."""
    ip, loc = ir.InsertionPoint(op), op.location
    name = op.name
    out: ir.Value
    if name == "tile.dot":
        f16 = ir.F16Type.get()
        halves = []
        for v, fmt in zip(list(op.operands)[:2], fmts[:2]):
            assert fmt is not None
            wide = decode_to_f32(v, fmt, Bits(v.type, loc, ip))
            halves.append(arith.truncf(like(v.type, f16), wide, loc=loc, ip=ip))
        out = tile.dot(halves[0], halves[1], op.operands[2], loc=loc, ip=ip)
        attrs = op.attributes
        for i in range(len(attrs)):
            out.owner.attributes[attrs[i].name] = attrs[i].attr
        # Which formats the f16 operands decode (tile-pipeline-lds keeps the bytes).
        out.owner.attributes["tile.fp8_decoded"] = ir.ArrayAttr.get(
            [ir.StringAttr.get(f.name) for f in fmts[:2] if f is not None])
    elif name == "arith.constant":
        fmt = fmts[-1]
        assert fmt is not None
        attr = op.attributes["value"]
        if isinstance(attr, ir.DenseElementsAttr):
            if not attr.is_splat:
                raise TilecError("non-splat fp8 tile constants are not supported",
                                 source_loc(loc))
            attr = attr.get_splat_value()
        code = encode_value(ir.FloatAttr(attr).value, fmt)
        t = op.results[0].type
        value: ir.Attribute = ir.IntegerAttr.get(ir.IntegerType.get_signless(8),
                                                 code - 256 if code >= 128 else code)
        if isinstance(t, ir.RankedTensorType):
            value = ir.DenseElementsAttr.get_splat(t, value)
        out = arith.constant(t, value, loc=loc, ip=ip)
    elif name == "arith.extf":
        src, fmt = op.operands[0], fmts[0]
        assert fmt is not None
        bits = Bits(src.type, loc, ip)
        f32 = decode_to_f32(src, fmt, bits)
        dst = op.results[0].type
        de = tile.element_type(dst)
        out = f32 if de == ir.F32Type.get() else (
            arith.extf(dst, f32, loc=loc, ip=ip) if de == ir.F64Type.get()
            else _to_bf16(f32, bits) if de == ir.BF16Type.get()
            else arith.truncf(dst, f32, loc=loc, ip=ip))
    elif name == "arith.truncf":
        src, fmt = op.operands[0], fmts[-1]
        assert fmt is not None
        f32_t = like(src.type, ir.F32Type.get())
        se = tile.element_type(src.type)
        x = src if se == ir.F32Type.get() else (
            arith.truncf(f32_t, src, loc=loc, ip=ip) if se == ir.F64Type.get()
            else arith.extf(f32_t, src, loc=loc, ip=ip))
        out = encode_from_f32(x, fmt, Bits(src.type, loc, ip))
    elif name in ("arith.sitofp", "arith.uitofp"):  # canonicalize folds int -> f32 -> fp8
        src, fmt = op.operands[0], fmts[-1]
        assert fmt is not None
        to_f32 = arith.sitofp if name == "arith.sitofp" else arith.uitofp
        x = to_f32(like(src.type, ir.F32Type.get()), src, loc=loc, ip=ip)
        out = encode_from_f32(x, fmt, Bits(src.type, loc, ip))
    elif name in ("arith.fptosi", "arith.fptoui"):  # and fp8 -> f32 -> int
        src, fmt = op.operands[0], fmts[0]
        assert fmt is not None
        to_int = arith.fptosi if name == "arith.fptosi" else arith.fptoui
        out = to_int(op.results[0].type, decode_to_f32(src, fmt, Bits(src.type, loc, ip)),
                     loc=loc, ip=ip)
    else:   # arith.bitcast i8 <-> fp8: the same bits once fp8 is i8
        out = op.operands[0]
    op.results[0].replace_all_uses_with(out)
    op.erase()


def _to_bf16(f32: ir.Value, b: Bits) -> ir.Value:
    """An fp8 value (as f32) in bf16: its f32 bits' upper half (exact, every fp8
    value fits), NaN as torch's canonical 0x7FC0.  Integer ops only: LLVM may
    fold a float select between NaN payloads away."""
    i32 = arith.bitcast(b.i32, f32, **b.at)
    is_nan = b.cmp(_P.ugt, b.bin(arith.andi, i32, 0x7FFFFFFF), 0x7F800000)
    bits = b.sel(is_nan, 0x7FC0, b.bin(arith.shrui, i32, 16))
    i16 = like(b.t, ir.IntegerType.get_signless(16))
    return arith.bitcast(like(b.t, ir.BF16Type.get()), arith.trunci(i16, bits, **b.at), **b.at)


_REWRITTEN = ("arith.extf", "arith.truncf", "tile.dot", "arith.constant", "arith.bitcast",
              "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui")


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    with module.context:
        ops: list[ir.Operation] = []
        _walk(module.operation, ops)
        todo: list[tuple[ir.Operation, tuple[Fp8Format | None, ...]]] = []
        seen = False
        for op in ops:
            types = [v.type for v in op.operands] + [r.type for r in op.results]
            if op.name == "func.func":
                types += list(ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
                              .inputs)
            if not any(_has_fp8(t) for t in types):
                continue
            seen = True
            if op.name in _REWRITTEN:
                if op.name == "tile.dot" and "tile.mma_fp8" in op.attributes:
                    pass   # fp8 tensor cores read the bytes (tile-accelerate-dot)
                elif op.name != "tile.dot" or fp8_format(op.operands[0].type) is not None:
                    todo.append((op, tuple(fp8_format(t) for t in types)))
            elif not op.name.startswith(_PASSIVE) or op.name.startswith("tile.atomic"):
                raise TilecError(f"{op.name} on fp8 values is not supported: fp8 is a storage "
                                 "type; convert with .to(tl.float16) or .to(tl.float32) first",
                                 source_loc(op.location))
        if not seen:
            return
        _retype(ops)
        for op, fmts in todo:
            _rewrite(op, fmts)
