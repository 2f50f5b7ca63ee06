"""Code generation rules for Triton's random numbers: Philox-4x32 (Salmon et
al., "Parallel Random Numbers: As Easy as 1, 2, 3", SC 2011), composed from
32-bit integer ops every target lowers (mul, umulhi, xor, add).

The bit output follows Triton's definition: counter (c0, c1, c2, c3) =
(low 32 bits of the offset, its high 32 bits or 0 for 32-bit offsets, 0, 0),
key (k0, k1) = (low, high 32 bits of the seed widened to 64 bits with its
sign), `n_rounds` (default 10) rounds of

    c0, c1, c2, c3 = hi(B*c2) ^ c1 ^ k0, lo(B*c2), hi(A*c0) ^ c3 ^ k1, lo(A*c0)
    k0, k1 = k0 + 0x9E3779B9, k1 + 0xBB67AE85

with A = 0xD2511F53, B = 0xCD9E8D57; the result words are uint32.  A uniform
float is the word read as int32, complemented when negative, times
4.6566127342e-10 in fp32 (so it stays below 1.0); a normal is Box-Muller of
the first two uniforms (u1 clamped to 1e-7).  The same IR on every target;
tests/compat/test_random.py checks the bits against a NumPy model that passes
Random123's known-answer vectors.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tilec.frontend.builtins import Rule, rule_table
from tilec.frontend.semantic import TValue
from tilec.language import core as tl

if TYPE_CHECKING:
    from tilec.frontend.codegen import CodeGen

RULES: dict[str, Rule] = {}
rule = rule_table(RULES)

_ROUND_A, _ROUND_B = 0xD2511F53, 0xCD9E8D57
_KEY_A, _KEY_B = 0x9E3779B9, 0xBB67AE85
_MASK32 = 0xFFFFFFFF


def _rounds(cg: CodeGen, node: Any, n_rounds: Any) -> int:
    if isinstance(n_rounds, tl.constexpr):
        n_rounds = n_rounds.value
    if isinstance(n_rounds, TValue) or not isinstance(n_rounds, int) or n_rounds < 0:
        cg.err(node, "n_rounds must be a non-negative compile-time integer")
    return int(n_rounds)


def _u32(cg: CodeGen, node: Any, v: Any, what: str) -> Any:
    """An integer tile, scalar or Python int as uint32 bits (Triton's bitcast)."""
    if isinstance(v, tl.constexpr):
        v = v.value
    if isinstance(v, bool) or not isinstance(v, (int, TValue)):
        cg.err(node, f"{what} must be an integer or an integer tile, got {cg.describe(v)}")
    if isinstance(v, int):
        return v & _MASK32
    if v.is_ptr or not v.dtype.is_int() or v.dtype.is_bool():
        cg.err(node, f"{what} must be an integer or an integer tile, got {v.type_str()}")
    if v.dtype.bits != 32:
        cg.err(node, f"{what} must be 32 bits wide for Philox-4x32, got {v.type_str()}")
    return cg.cast(v, tl.uint32, node)


def _seed_words(cg: CodeGen, node: Any, seed: Any) -> tuple[Any, Any]:
    """(low, high) 32-bit words of the seed widened to 64 bits with its sign."""
    if isinstance(seed, tl.constexpr):
        seed = seed.value
    if isinstance(seed, int) and not isinstance(seed, bool):
        s = seed & ((1 << 64) - 1)
        return s & _MASK32, s >> 32
    if not isinstance(seed, TValue) or seed.is_ptr or not seed.dtype.is_int() \
            or seed.dtype.is_bool() or seed.is_block:
        cg.err(node, f"the seed must be an integer scalar, got {cg.describe(seed)}")
    wide = cg.cast(seed, tl.int64 if seed.dtype.is_signed() else tl.uint64, node)
    wide = cg.cast(wide, tl.uint64, node)
    lo = cg.cast(wide, tl.uint32, node)
    hi = cg.cast(cg.binary(">>", wide, 32, node), tl.uint32, node)
    return lo, hi


def _const(cg: CodeGen, v: Any) -> Any:
    return cg.constant(v, tl.uint32) if isinstance(v, int) else v


def _mul_lo_hi(cg: CodeGen, node: Any, m: int, c: Any) -> tuple[Any, Any]:
    if isinstance(c, int):
        p = m * c
        return p & _MASK32, p >> 32
    return cg.binary("*", cg.constant(m, tl.uint32), c, node), \
        cg.builtins["umulhi"](cg, node, cg.constant(m, tl.uint32), c)


def _xor(cg: CodeGen, node: Any, *vals: Any) -> Any:
    acc = vals[0]
    for v in vals[1:]:
        if isinstance(acc, int) and isinstance(v, int):
            acc ^= v
        else:
            acc = cg.binary("^", _const(cg, acc), _const(cg, v), node)
    return acc


def _add32(cg: CodeGen, node: Any, k: Any, inc: int) -> Any:
    if isinstance(k, int):
        return (k + inc) & _MASK32
    return cg.binary("+", k, cg.constant(inc, tl.uint32), node)


def _philox(cg: CodeGen, node: Any, seed: Any, counters: list[Any], n_rounds: int) -> tuple[Any, ...]:
    k0, k1 = _seed_words(cg, node, seed)
    c0, c1, c2, c3 = counters
    for _ in range(n_rounds):
        lo_b, hi_b = _mul_lo_hi(cg, node, _ROUND_B, c2)
        lo_a, hi_a = _mul_lo_hi(cg, node, _ROUND_A, c0)
        c0, c1, c2, c3 = _xor(cg, node, hi_b, c1, k0), lo_b, _xor(cg, node, hi_a, c3, k1), lo_a
        k0, k1 = _add32(cg, node, k0, _KEY_A), _add32(cg, node, k1, _KEY_B)
    shape = next((c.shape for c in counters if isinstance(c, TValue)), ())
    return tuple(cg.broadcast_to(_const(cg, c), shape, node) for c in (c0, c1, c2, c3))


@rule("philox")
def philox(cg: CodeGen, node: Any, seed: Any, c0: Any, c1: Any, c2: Any, c3: Any,
           n_rounds: Any = 10) -> tuple[Any, ...]:
    cs = [_u32(cg, node, c, f"counter c{i}") for i, c in enumerate((c0, c1, c2, c3))]
    tiles = [c for c in cs if isinstance(c, TValue)]
    if tiles:
        shape = tiles[0].shape
        for c in tiles[1:]:
            if c.shape != shape:
                cg.err(node, f"tl.philox counters must have one shape, got {list(shape)} and "
                       f"{list(c.shape)}")
    return _philox(cg, node, seed, cs, _rounds(cg, node, n_rounds))


@rule("randint4x")
def randint4x(cg: CodeGen, node: Any, seed: Any, offset: Any, n_rounds: Any = 10) -> tuple[Any, ...]:
    if isinstance(offset, tl.constexpr):
        offset = offset.value
    if isinstance(offset, int) and not isinstance(offset, bool):
        offset = cg.to_value(offset, node)
    if not isinstance(offset, TValue) or offset.is_ptr or not offset.dtype.is_int() \
            or offset.dtype.is_bool():
        cg.err(node, f"the offsets must be an integer tile or scalar, got {cg.describe(offset)}")
    lo = cg.cast(offset, tl.uint32, node)
    hi: Any = cg.cast(cg.binary(">>", offset, 32, node), tl.uint32, node) \
        if offset.dtype.bits > 32 else 0
    return _philox(cg, node, seed, [lo, hi, 0, 0], _rounds(cg, node, n_rounds))


@rule("randint")
def randint(cg: CodeGen, node: Any, seed: Any, offset: Any, n_rounds: Any = 10) -> Any:
    return randint4x(cg, node, seed, offset, n_rounds)[0]


@rule("uint_to_uniform_float")
def uint_to_uniform_float(cg: CodeGen, node: Any, x: Any) -> TValue:
    if not isinstance(x, TValue) or x.is_ptr or not x.dtype.is_int() or x.dtype.bits != 32:
        cg.err(node, f"tl.uint_to_uniform_float needs a 32-bit integer tile, got {cg.describe(x)}")
    i = cg.cast(x, tl.int32, node, bitcast=False)
    i = cg.builtins["where"](cg, node, cg.binary("<", i, 0, node), cg.unary("~", i, node), i)
    out: TValue = cg.binary("*", i, 4.6566127342e-10, node)
    return out


@rule("rand")
def rand(cg: CodeGen, node: Any, seed: Any, offset: Any, n_rounds: Any = 10) -> TValue:
    return uint_to_uniform_float(cg, node, randint(cg, node, seed, offset, n_rounds))


@rule("rand4x")
def rand4x(cg: CodeGen, node: Any, seed: Any, offset: Any, n_rounds: Any = 10) -> tuple[Any, ...]:
    return tuple(uint_to_uniform_float(cg, node, w)
                 for w in randint4x(cg, node, seed, offset, n_rounds))


@rule("pair_uniform_to_normal")
def pair_uniform_to_normal(cg: CodeGen, node: Any, u1: Any, u2: Any) -> tuple[Any, Any]:
    b = cg.builtins
    u1 = b["maximum"](cg, node, 1.0e-7, u1)
    th = cg.binary("*", 6.283185307179586, u2, node)
    r = b["sqrt"](cg, node, cg.binary("*", -2.0, b["log"](cg, node, u1), node))
    return cg.binary("*", r, b["cos"](cg, node, th), node), \
        cg.binary("*", r, b["sin"](cg, node, th), node)


@rule("randn")
def randn(cg: CodeGen, node: Any, seed: Any, offset: Any, n_rounds: Any = 10) -> Any:
    w = randint4x(cg, node, seed, offset, n_rounds)
    u1, u2 = (uint_to_uniform_float(cg, node, v) for v in w[:2])
    return pair_uniform_to_normal(cg, node, u1, u2)[0]


@rule("randn4x")
def randn4x(cg: CodeGen, node: Any, seed: Any, offset: Any, n_rounds: Any = 10) -> tuple[Any, ...]:
    u = rand4x(cg, node, seed, offset, n_rounds)
    return pair_uniform_to_normal(cg, node, u[0], u[1]) + pair_uniform_to_normal(cg, node, u[2], u[3])


__all__ = ["RULES"]
