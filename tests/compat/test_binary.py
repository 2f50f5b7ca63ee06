"""Binary arithmetic and Triton's type promotion for every pair of dtypes
(int8..uint64, fp16, bf16, fp32, fp64), checked by `tl.static_assert` on the
result type and by value against NumPy/torch; comparisons and bitwise ops on
integers; Python scalars taking the tile's type.  The normal run takes a
deterministic sample of the pairs (tests/compat/sampling.py)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import tilec as triton
import tilec.language as tl
from tests.compat.sampling import sample

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
DTYPES = INTS + FLOATS
BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint8": 8, "uint16": 16,
        "uint32": 32, "uint64": 64, "float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}


def promoted(a: str, b: str) -> str:
    """Triton's rule for the result type of a + b."""
    if a == b:
        return a
    for wide in ("float64", "float32", "float16"):  # fp16 wins over bf16 and ints
        if wide in (a, b):
            return wide
    if "bfloat16" in (a, b):
        return "float32"  # bf16 stays bf16 only with bf16
    ua, ub = a.startswith("u"), b.startswith("u")
    if ua == ub:
        return a if BITS[a] >= BITS[b] else b
    u, s = (a, b) if ua else (b, a)
    return u if BITS[u] >= BITS[s] else s


@triton.jit
def binop(x_ptr, y_ptr, o_ptr, OP: tl.constexpr, OUT: tl.constexpr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    y = tl.load(y_ptr + i)
    if OP == "+":
        z = x + y
    elif OP == "-":
        z = x - y
    elif OP == "*":
        z = x * y
    else:
        z = x / y
    tl.static_assert(z.dtype == OUT, "the promoted type")
    tl.store(o_ptr + i, z)


def _tensor(values: np.ndarray, dt: str) -> torch.Tensor:
    return torch.from_numpy(values.astype(np.float64)).to(getattr(torch, dt)) \
        if dt in FLOATS else torch.from_numpy(values.astype(dt))


def _ref(x: np.ndarray, y: np.ndarray, op: str, out: str) -> torch.Tensor:
    xs, ys = x.astype(np.float64), y.astype(np.float64)
    r = {"+": xs + ys, "-": xs - ys, "*": xs * ys, "/": xs / ys}[op]
    return _tensor(r, out)


PAIRS = list(itertools.product(DTYPES, DTYPES))
CASES = [(a, b, op) for (a, b), op in zip(PAIRS, itertools.cycle("+*-"))]


@pytest.mark.parametrize("a,b,op", sample(CASES, 9))
def test_arith_promotion(a: str, b: str, op: str) -> None:
    n = 32
    rng = np.random.default_rng(BITS[a] * 7 + BITS[b])
    x = rng.integers(5, 12, n)
    y = rng.integers(1, 5, n)  # x - y stays positive for unsigned types
    out = promoted(a, b)
    o = torch.zeros(n, dtype=getattr(torch, out))
    binop[(1,)](_tensor(x, a), _tensor(y, b), o, OP=op, OUT=getattr(tl, out), N=n)
    assert torch.equal(o, _ref(x, y, op, out))


SAME_SIGN = [(a, b) for a in INTS for b in INTS if a.startswith("u") == b.startswith("u")]


@pytest.mark.parametrize("a,b", sample(SAME_SIGN, 4))
def test_int_true_division_is_fp32(a: str, b: str) -> None:
    n = 16
    x, y = np.arange(3, 3 + n), np.arange(1, 1 + n)
    o = torch.zeros(n, dtype=torch.float32)
    binop[(1,)](_tensor(x, a), _tensor(y, b), o, OP="/", OUT=tl.float32, N=n)
    assert torch.equal(o, torch.from_numpy((x.astype(np.float32) / y.astype(np.float32))))


def test_division_of_mixed_signedness_is_an_error() -> None:
    x = torch.ones(16, dtype=torch.int8)
    with pytest.raises(triton.TilecError, match="different signedness"):
        binop[(1,)](x, torch.ones(16, dtype=torch.uint32), torch.zeros(16), OP="/",
                    OUT=tl.float32, N=16)


@triton.jit
def int_ops(x_ptr, y_ptr, o_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    y = tl.load(y_ptr + i)
    tl.store(o_ptr + i, x // y)
    tl.store(o_ptr + N + i, x % y)
    tl.store(o_ptr + 2 * N + i, (x & y) | (x ^ 5))
    tl.store(o_ptr + 3 * N + i, (x << 2) >> 1)
    tl.store(o_ptr + 4 * N + i, tl.where((x < y) | (x == 7), 1, 0).to(x.dtype))
    tl.store(o_ptr + 5 * N + i, -x + 3)


@pytest.mark.parametrize("dt", ["int8", "int32", "int64"])
def test_integer_ops_truncate_toward_zero(dt: str) -> None:
    n = 32
    x = np.arange(-16, 16).astype(dt)
    y = np.array([3, -4, 5, 7] * 8).astype(dt)
    o = np.zeros(6 * n, dt)
    int_ops[(1,)](x, y, o, N=n)
    xi, yi = x.astype(np.int64), y.astype(np.int64)
    q = np.trunc(xi / yi).astype(np.int64)
    ref = [q, xi - q * yi, (xi & yi) | (xi ^ 5), (xi << 2) >> 1, ((xi < yi) | (xi == 7)),
           -xi + 3]
    np.testing.assert_array_equal(o.reshape(6, n), np.array(ref).astype(dt))


@triton.jit
def scalar_ops(x_ptr, o_ptr, s, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    y = x * 2 + 1
    tl.static_assert(y.dtype == x.dtype, "a literal takes the tile's type")
    tl.store(o_ptr + i, y + s)


@pytest.mark.parametrize("dt", ["int16", "uint8", "float16", "float32"])
def test_python_scalars_take_the_tile_type(dt: str) -> None:
    x = np.arange(16).astype(dt)
    o = np.zeros(16, dt)
    scalar_ops[(1,)](x, o, 3, N=16)
    np.testing.assert_array_equal(o, (x.astype(np.float64) * 2 + 4).astype(dt))
