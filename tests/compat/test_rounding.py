"""`fp_downcast_rounding=` on casts (Triton's `tl.cast(x, dt, fp_downcast_rounding=)`
and `x.to(dt, fp_downcast_rounding=)`): 'rtne' (the default) and 'rtz' for
f32 -> f16 / bf16 and f64 -> f32 / f16 / bf16, bit for bit against a NumPy model
of truncation that shares nothing with the implementation (the magnitude's
binary digits cut at the destination's precision, by exact float64
arithmetic); the errors Triton gives (a mode on a widening or int cast, an
unknown mode); sm90 (`cvt.rz`) and gfx942 (the arith sequence) assemble."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tilec as triton
import tilec.language as tl

# (mantissa bits with the leading one, smallest normal exponent, largest finite)
_FORMATS = {"float16": (11, -14, 65504.0), "bfloat16": (8, -126, float.fromhex("0x1.fep127")),
            "float32": (24, -126, float.fromhex("0x1.fffffep127"))}


def _toward_zero(x: float, fmt: str) -> float:
    """x truncated toward zero to `fmt`, as a Python float (exact)."""
    bits, emin, biggest = _FORMATS[fmt]
    if math.isnan(x) or math.isinf(x) or x == 0:
        return x
    a = abs(x)
    _, e = math.frexp(a)                     # a = m * 2^e, m in [0.5, 1)
    step = 2.0 ** (max(e - 1, emin) - (bits - 1))   # the destination's ulp at a
    t = min(math.floor(a / step) * step, biggest)
    return math.copysign(t, x)


def _bf16_bits(v: float) -> int:
    """The bf16 bit pattern of a bf16-exact value (NaN: the sign and 0x7FC0)."""
    f = np.array([v], np.float32).view(np.uint32)[0]
    return int(f >> 16) if not math.isnan(v) else (int(f >> 16) & 0x8000) | 0x7FC0


def _want_bits(xs: np.ndarray, fmt: str) -> np.ndarray:
    vals = [_toward_zero(float(x), fmt) for x in xs]
    if fmt == "bfloat16":
        return np.array([_bf16_bits(v) for v in vals], np.uint16)
    return np.array(vals, fmt).view(np.uint16 if fmt == "float16" else np.uint32)


def _same(got_bits: np.ndarray, want_bits: np.ndarray, fmt: str) -> None:
    """Bit for bit, except that any NaN matches any NaN."""
    width = 32 if fmt == "float32" else 16
    exp_mask = {16: 0x7C00 if fmt == "float16" else 0x7F80, 32: 0x7F800000}[width]
    man_mask = {16: 0x03FF if fmt == "float16" else 0x007F, 32: 0x007FFFFF}[width]

    def nan(b: np.ndarray) -> np.ndarray:
        b = b.astype(np.uint64)
        return ((b & exp_mask) == exp_mask) & ((b & man_mask) != 0)
    both_nan = nan(got_bits) & nan(want_bits)
    bad = (got_bits != want_bits) & ~both_nan
    assert not bad.any(), (f"{int(bad.sum())} of {bad.size} differ; first at "
                           f"{int(np.argmax(bad))}: got {hex(int(got_bits[bad][0]))}, "
                           f"want {hex(int(want_bits[bad][0]))}")


@triton.jit
def from_f32(x_ptr, h_ptr, b_ptr, hn_ptr, N: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(h_ptr + offs, x.to(tl.float16, fp_downcast_rounding="rtz"))
    b = tl.cast(x, tl.bfloat16, fp_downcast_rounding="rtz")
    tl.store(b_ptr + offs, b.to(tl.int16, bitcast=True))
    tl.store(hn_ptr + offs, tl.cast(x, tl.float16, fp_downcast_rounding="rtne"))


@triton.jit
def from_f64(x_ptr, f_ptr, h_ptr, b_ptr, N: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(f_ptr + offs, x.to(tl.float32, "rtz"))
    tl.store(h_ptr + offs, x.to(tl.float16, fp_downcast_rounding="rtz"))
    tl.store(b_ptr + offs, x.to(tl.bfloat16, fp_downcast_rounding="rtz").to(tl.int16,
                                                                             bitcast=True))


def _edges(dt: str) -> np.ndarray:
    f16max, f16tiny = 65504.0, 2.0 ** -24
    vals = [0.0, -0.0, 1.0, -1.0, 1 / 3, -1 / 3, f16max, 65519.9, 65520.0, 70000.0, -70000.0,
            f16tiny, f16tiny * 0.75, f16tiny * 1.5, -f16tiny * 0.5, 2.0 ** -14 * 0.999,
            np.inf, -np.inf, np.nan, 3.3895e38, -3.4e38, 1e-40, -1e-45, 2.0 ** -133]
    if dt == "float64":
        vals += [1e300, -1e300, 1e-300, 3.4028235e38 * 1.0000001, 2.0 ** -149 * 0.9, 2.0 ** -150]
    return np.array(vals, dt)


def _random(dt: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dt == "float32":
        return rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    # f64 near the f32/f16 ranges (uniform exponents), plus any bit pattern
    near = rng.standard_normal(n // 2) * 2.0 ** rng.integers(-160, 130, n // 2)
    raw = rng.integers(0, 2 ** 63, n - n // 2, dtype=np.uint64).view(np.float64)
    return np.concatenate([near, raw]).astype(np.float64)


@pytest.mark.parametrize("seed", [0, 1])
def test_rtz_from_f32_bit_exact(seed: int) -> None:
    with np.errstate(invalid="ignore"):
        x = np.concatenate([_edges("float32"), _random("float32", 4096 - 24, seed)])
    n = x.size // 8
    h, b, hn = np.zeros(x.size, np.float16), np.zeros(x.size, np.int16), np.zeros(x.size,
                                                                                   np.float16)
    from_f32[(8,)](x, h, b, hn, N=n)
    _same(h.view(np.uint16), _want_bits(x, "float16"), "float16")
    _same(b.view(np.uint16), _want_bits(x, "bfloat16"), "bfloat16")
    with np.errstate(over="ignore", invalid="ignore"):
        rtne = x.astype(np.float16)
    _same(hn.view(np.uint16), rtne.view(np.uint16), "float16")


def test_rtz_from_f64_bit_exact() -> None:
    with np.errstate(invalid="ignore", over="ignore"):
        x = np.concatenate([_edges("float64"), _random("float64", 2048 - 30, 7)])
    n = x.size // 4
    f, h, b = np.zeros(x.size, np.float32), np.zeros(x.size, np.float16), np.zeros(x.size,
                                                                                  np.int16)
    from_f64[(4,)](x, f, h, b, N=n)
    _same(f.view(np.uint32), _want_bits(x, "float32"), "float32")
    _same(h.view(np.uint16), _want_bits(x, "float16"), "float16")
    _same(b.view(np.uint16), _want_bits(x, "bfloat16"), "bfloat16")


def test_rtz_of_a_big_tile_and_a_scalar() -> None:
    """A [32, 64] tile (the CPU keeps it in a buffer: chunk loops) and a scalar."""
    @triton.jit
    def big(x_ptr, o_ptr, s_ptr, M: tl.constexpr, N: tl.constexpr):
        offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
        tl.store(o_ptr + offs, tl.load(x_ptr + offs).to(tl.float16, fp_downcast_rounding="rtz"))
        tl.store(s_ptr, tl.load(x_ptr).to(tl.float16, fp_downcast_rounding="rtz"))

    x = _random("float32", 2048, 5).reshape(32, 64)
    o, s = np.zeros((32, 64), np.float16), np.zeros(1, np.float16)
    big[(1,)](x, o, s, M=32, N=64)
    _same(o.view(np.uint16).ravel(), _want_bits(x.ravel(), "float16"), "float16")
    _same(s.view(np.uint16), _want_bits(x.ravel()[:1], "float16"), "float16")


@triton.jit
def bad_mode(x_ptr, MODE: tl.constexpr):
    tl.store(x_ptr, tl.load(x_ptr).to(tl.float16, fp_downcast_rounding=MODE))


@triton.jit
def widening(x_ptr, y_ptr):
    tl.store(y_ptr, tl.load(x_ptr).to(tl.float32, fp_downcast_rounding="rtz"))


@triton.jit
def _rtz_combine(a, b):
    return (a + b).to(tl.float16, fp_downcast_rounding="rtz").to(tl.float32)


@triton.jit
def rtz_in_combine(x_ptr, N: tl.constexpr):
    tl.store(x_ptr, tl.reduce(tl.load(x_ptr + tl.arange(0, N)), 0, _rtz_combine))


def test_rounding_errors() -> None:
    with pytest.raises(triton.TilecError, match="inside a combine function"):
        rtz_in_combine[(1,)](np.zeros(16, np.float32), N=16)
    with pytest.raises(triton.TilecError, match="'rtne' .* and 'rtz'"):
        bad_mode[(1,)](np.zeros(1, np.float32), MODE="rtp")
    with pytest.raises(triton.TilecError, match="only for float conversions to fewer bits"):
        widening[(1,)](np.zeros(1, np.float16), np.zeros(1, np.float32))
    with pytest.raises(triton.TilecError, match="only for float conversions to fewer bits"):
        widening[(1,)](np.zeros(1, np.int32), np.zeros(1, np.float32))


@pytest.mark.parametrize("target", ["sm90", "gfx942"])
def test_rtz_assembles_for_gpus(target: str) -> None:
    from tests.compat.gpu_check import assemble
    assemble(from_f32, target, "*fp32,*fp16,*i16,*fp16", {"N": 256})
    assemble(from_f64, target, "*fp64,*fp32,*fp16,*i16", {"N": 256})
    ck = from_f32.compile(target=target, signature="*fp32,*fp16,*i16,*fp16",
                          constexprs={"N": 256})
    if target == "sm90":
        ptx = ck.asm["ptx"]
        assert "cvt.rz.f16.f32" in ptx and "cvt.rz.bf16.f32" in ptx
        ck64 = from_f64.compile(target=target, signature="*fp64,*fp32,*fp16,*i16",
                                constexprs={"N": 256})
        assert "cvt.rz.f32.f64" in ck64.asm["ptx"]
