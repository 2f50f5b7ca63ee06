"""fp8 bytes to f16 on vectors, after the LDS reads of `tile.mma` (targets/amd/lds_ring.py).

Where the record has no MFMA for a dot's fp8 format (gfx942's fp8 MFMA takes
FNUZ codes, the frontend's float8e4nv / float8e5 are OCP), tile-expand-fp8
decodes the operands to f16 and tile-pipeline-lds keeps the loaded bytes in
the LDS rings (half the LDS of f16 slots); `decode_f16` turns each lane's
operand bytes into the f16 vector the f16 MFMA takes.  Every value of these
formats is exact in f16.  Four codes are one 32-bit word; each pair of codes
is spread to the two 16-bit halves of a word and decoded in both at once:
the magnitude bits moved to f16's field positions (`mag << (10 - mant)`),
read as two f16 and multiplied by 2^(15 - bias) (exact: a power of two, no
overflow; fp8 subnormals become f16 normals or stay subnormal exactly), then
the sign bit.  e5m2 has f16's exponent, so inf and NaN map by themselves; a
format without infinities (e4m3fn) has its one NaN magnitude (all ones):
`mag + 1` carries into bit 7 exactly there, and that bit OR-ed in at its
place fills f16's exponent before the scaling (a NaN stays one).  Plain 32-bit integer ops and one
packed f16 multiply per pair (`v_perm_b32`, `v_and_or_b32`, `v_pk_mul_f16`
on gfx942), no per-element select.

`decode_value` is the model of one code (tests compare it and the emitted
code with torch's casts on every code).

Nearest upstream analogue: Triton's AMD `ElementwiseOpToLLVM` fp8 -> f16
conversions (third_party/amd), which run after `ds_read` too.
"""
from __future__ import annotations

import math
import struct

from mlir import ir
from mlir.dialects import arith, vector

from tilec.errors import CompilerBugError
from tilec.passes.tile_expand_fp8 import Fp8Format

F16_BIAS, F16_MANT = 15, 10


def _half(bits: int) -> float:
    return float(struct.unpack("<e", struct.pack("<H", bits))[0])


def _bits(x: float) -> int:
    return int(struct.unpack("<H", struct.pack("<e", x))[0])


def _check(fmt: Fp8Format) -> int:
    """The shift of the magnitude bits; refuses formats this decoding gets wrong."""
    shift = F16_MANT - fmt.mant
    exp_bits = 7 - fmt.mant
    ok = exp_bits <= 5 and (fmt.bias == F16_BIAS if fmt.has_inf else exp_bits < 5)
    if ok and not fmt.has_inf:        # the carry bit must make the all-ones magnitude a NaN
        ok = (0x80 << shift) < 0x8000 and math.isnan(_half(0xFF << shift))
    if not ok:
        raise CompilerBugError(f"no exact f16 decoding for {fmt.name}")
    return shift


def decode_value(code: int, fmt: Fp8Format) -> int:
    """The f16 bits `decode_f16` gives the fp8 `code` (0..255)."""
    shift = _check(fmt)
    mag, sign = code & 0x7F, (code & 0x80) << 8
    bits = mag << shift
    if not fmt.has_inf:
        bits |= ((mag + 1) << shift) & (0x80 << shift)
    if fmt.bias != F16_BIAS:
        bits = _bits(_half(bits) * 2.0 ** (F16_BIAS - fmt.bias))
    return bits | sign


def decode_words(w: ir.Value, fmt: Fp8Format) -> tuple[ir.Value, ir.Value]:
    """The f16 pairs (as i32 vectors: codes 0, 1 and 2, 3 of each word) of the
    fp8 codes in the i32 vector `w` (four codes a word, little-endian)."""
    shift = _check(fmt)
    t = w.type

    def c(x: int) -> ir.Value:
        attr = ir.IntegerAttr.get(ir.IntegerType.get_signless(32),
                                  x - (1 << 32) if x >= 1 << 31 else x)
        return arith.constant(t, ir.DenseElementsAttr.get_splat(t, attr))
    n = ir.VectorType(t).shape[0]
    f16x2 = ir.VectorType.get([2 * n], ir.F16Type.get())
    lo = arith.ori(arith.andi(w, c(0xFF)), arith.andi(arith.shli(w, c(8)), c(0xFF0000)))
    hi = arith.ori(arith.andi(arith.shrui(w, c(16)), c(0xFF)),
                   arith.andi(arith.shrui(w, c(8)), c(0xFF0000)))
    out = []
    for p in (lo, hi):
        mag = arith.shli(arith.andi(p, c(0x7F007F)), c(shift))
        bits = mag
        if not fmt.has_inf:      # the all-ones magnitude carries into bit 7: a NaN
            nan = (0x80 << shift) * 0x10001
            bits = arith.ori(bits, arith.andi(arith.addi(mag, c((1 << shift) * 0x10001)),
                                              c(nan)))
        if fmt.bias != F16_BIAS:
            scale = ir.FloatAttr.get(ir.F16Type.get(), 2.0 ** (F16_BIAS - fmt.bias))
            prod = arith.mulf(vector.bitcast(f16x2, bits), arith.constant(
                f16x2, ir.DenseElementsAttr.get_splat(f16x2, scale)))
            bits = vector.bitcast(t, prod)
        sign = arith.andi(arith.shli(p, c(8)), c(0x80008000))
        out.append(arith.ori(bits, sign))
    return out[0], out[1]


def decode_f16(v: ir.Value, fmt: Fp8Format) -> ir.Value:
    """The f16 vector of the fp8 codes in the i8 vector `v` (a multiple of 4 long)."""
    n = ir.VectorType(v.type).shape[0]
    if n % 4:
        raise CompilerBugError(f"fp8 decoding of {n} codes: not whole 32-bit words")
    i32 = ir.IntegerType.get_signless(32)
    words = vector.bitcast(ir.VectorType.get([n // 4], i32), v)
    lo, hi = decode_words(words, fmt)
    # Word i of the result pairs: codes 4i, 4i + 1 (lo) then 4i + 2, 4i + 3 (hi).
    pairs = vector.shuffle(lo, hi, [x for i in range(n // 4) for x in (i, n // 4 + i)])
    return vector.bitcast(ir.VectorType.get([n], ir.F16Type.get()), pairs)
