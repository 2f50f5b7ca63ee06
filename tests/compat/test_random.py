"""Random numbers as Triton has them (tl.randint4x / randint / rand / randn /
rand4x / randn4x / philox): the bits against a NumPy Philox-4x32 model written
here from the Philox paper (it passes Random123's known-answer vectors), for
32- and 64-bit offsets and seeds of both signs; rand's range; randn's moments;
sm90 and gfx942 assemble."""
from __future__ import annotations

import numpy as np
import pytest

import tilec as triton
import tilec.language as tl
from tests.compat.gpu_check import GPU_TARGETS, assemble

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_LO = np.uint64(0xFFFFFFFF)


def philox_model(c: tuple[np.ndarray, ...], key: tuple[int, int], rounds: int = 10
                 ) -> tuple[np.ndarray, ...]:
    """Philox-4x32: each round multiplies words 0 and 2, swaps the halves in
    and xors the key in; the key is bumped by the Weyl constants."""
    x0, x1, x2, x3 = (np.asarray(v).astype(np.uint64) & _LO for v in c)
    k0, k1 = key[0] & 0xFFFFFFFF, key[1] & 0xFFFFFFFF
    for _ in range(rounds):
        a, b = _M0 * x0, _M1 * x2
        x0, x1, x2, x3 = ((b >> np.uint64(32)) ^ x1 ^ np.uint64(k0), b & _LO,
                          (a >> np.uint64(32)) ^ x3 ^ np.uint64(k1), a & _LO)
        k0, k1 = (k0 + _W0) & 0xFFFFFFFF, (k1 + _W1) & 0xFFFFFFFF
    return tuple(v.astype(np.uint32) for v in (x0, x1, x2, x3))


def randint4x_model(seed: int, offsets: np.ndarray, rounds: int = 10) -> tuple[np.ndarray, ...]:
    off = offsets.astype(np.int64)
    hi = (off >> 32) & 0xFFFFFFFF if offsets.dtype.itemsize == 8 else np.zeros_like(off)
    s = seed & ((1 << 64) - 1)
    zero = np.zeros_like(off)
    return philox_model((off & 0xFFFFFFFF, hi, zero, zero), (s & 0xFFFFFFFF, s >> 32), rounds)


def uniform_model(u: np.ndarray) -> np.ndarray:
    i = u.view(np.int32)
    return np.where(i < 0, ~i, i).astype(np.float32) * np.float32(4.6566127342e-10)


def test_model_matches_random123_known_answers() -> None:
    def run(c: list[int], k: tuple[int, int]) -> list[int]:
        return [int(v[0]) for v in philox_model(tuple(np.array([x]) for x in c), k)]
    assert run([0] * 4, (0, 0)) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    assert run([0xFFFFFFFF] * 4, (0xFFFFFFFF, 0xFFFFFFFF)) == \
        [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]
    assert run([0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344], (0xA4093822, 0x299F31D0)) == \
        [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


@triton.jit
def random_words(o_ptr, f_ptr, seed, base, N: tl.constexpr, ROUNDS: tl.constexpr):
    i = tl.arange(0, N)
    offs = base + i * 7919 - 3
    a, b, c, d = tl.randint4x(seed, offs, ROUNDS)
    tl.store(o_ptr + i, a)
    tl.store(o_ptr + N + i, b)
    tl.store(o_ptr + 2 * N + i, c)
    tl.store(o_ptr + 3 * N + i, d)
    tl.store(o_ptr + 4 * N + i, tl.randint(seed, offs, n_rounds=ROUNDS))
    tl.store(f_ptr + i, tl.rand(seed, offs, ROUNDS))
    u0, u1, u2, u3 = tl.rand4x(seed, offs, ROUNDS)
    tl.store(f_ptr + N + i, u3)
    tl.store(f_ptr + 2 * N + i, tl.randn(seed, offs, ROUNDS))
    n0, n1, n2, n3 = tl.randn4x(seed, offs, ROUNDS)
    tl.store(f_ptr + 3 * N + i, n1)


@pytest.mark.parametrize("seed,base,wide,rounds", [
    (123, 0, False, 10), (-5, 1000, False, 10), (2 ** 40 + 17, 5, False, 7),
    (512, 2 ** 33 + 1, True, 10), (0, -(2 ** 35), True, 10)])
def test_bits_match_model(seed: int, base: int, wide: bool, rounds: int) -> None:
    n = 256
    o = np.zeros(5 * n, np.uint32)
    f = np.zeros(4 * n, np.float32)
    random_words[(1,)](o, f, seed, np.int64(base) if wide else base, N=n, ROUNDS=rounds)
    offs = (np.int64(base) + np.arange(n, dtype=np.int64) * 7919 - 3)
    offs = offs if wide else offs.astype(np.int32)
    ref = randint4x_model(seed, offs, rounds)
    got = o.reshape(5, n)
    for k in range(4):
        np.testing.assert_array_equal(got[k], ref[k])
    np.testing.assert_array_equal(got[4], ref[0])
    fr = f.reshape(4, n)
    np.testing.assert_array_equal(fr[0], uniform_model(ref[0]))
    np.testing.assert_array_equal(fr[1], uniform_model(ref[3]))
    u1 = np.maximum(np.float32(1e-7), uniform_model(ref[0])).astype(np.float64)
    u2 = uniform_model(ref[1]).astype(np.float64)
    r = np.sqrt(-2.0 * np.log(u1))
    np.testing.assert_allclose(fr[2], r * np.cos(2 * np.pi * u2), atol=2e-5, rtol=1e-4)
    np.testing.assert_allclose(fr[3], r * np.sin(2 * np.pi * u2), atol=2e-5, rtol=1e-4)


@triton.jit
def many(f_ptr, seed, N: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    tl.store(f_ptr + offs, tl.rand(seed, offs))
    tl.store(f_ptr + tl.num_programs(0) * N + offs, tl.randn(seed, offs))


def test_distribution() -> None:
    f = np.zeros(2 * 64 * 1024, np.float32)
    many[(64,)](f, 2024, N=1024)
    u, z = f[:65536], f[65536:]
    assert u.min() >= 0.0 and u.max() < 1.0 and abs(u.mean() - 0.5) < 0.01
    assert abs(z.mean()) < 0.02 and abs(z.std() - 1.0) < 0.02


@pytest.mark.parametrize("target", GPU_TARGETS)
def test_random_assembles_for_gpus(target: str) -> None:
    assemble(random_words, target, "*u32,*fp32,i32,i32", {"N": 128, "ROUNDS": 10})


@triton.jit
def bad_random(o_ptr, x_ptr, CASE: tl.constexpr):
    i = tl.arange(0, 16)
    if CASE == 0:
        tl.store(o_ptr + i, tl.rand(tl.load(x_ptr + i), i))  # <- a tile seed
    else:
        tl.store(o_ptr + i, tl.rand(3, i.to(tl.float32)))  # <- float offsets


@pytest.mark.parametrize("case,msg", [(0, "seed must be an integer scalar"),
                                      (1, "offsets must be an integer")])
def test_errors(case: int, msg: str) -> None:
    with pytest.raises(triton.TilecError, match=msg):
        bad_random[(1,)](np.zeros(16, np.float32), np.zeros(16, np.int32), CASE=case)
