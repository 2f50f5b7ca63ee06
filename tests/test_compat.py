"""Triton conveniences: tl.sigmoid, clamp, zeros_like, expand_dims, broadcast_to,
broadcast, the hints, tl.range / tl.static_range, tl.math.*; on the CPU against
NumPy, and through ptxas / ld.lld for an NVIDIA and an AMD target."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import tilec
import tilec.language as tl

THIS_FILE = str(pathlib.Path(__file__).resolve())


@tilec.kernel
def act(x_ptr, s_ptr, c_ptr, z_ptr, n, lo, hi, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(s_ptr + offs, tl.sigmoid(x), mask=m)
    tl.store(c_ptr + offs, tl.clamp(x, lo, hi), mask=m)
    tl.store(z_ptr + offs, tl.zeros_like(x) + tl.math.exp(tl.math.min(x, 0.0)), mask=m)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("n", [1, 100, 1000])
def test_sigmoid_clamp_zeros_like(dtype: type, n: int) -> None:
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 6).astype(dtype)
    x[0] = -80.0 if dtype != np.float16 else -20.0  # exp(-x) overflows: sigmoid -> 0
    s, c, z = (np.full(n, np.nan, dtype) for _ in range(3))
    act[(tilec.cdiv(n, 256),)](x, s, c, z, n, -1.5, 2.0, BLOCK=256)
    xd = x.astype(np.float64)
    tol = {np.float16: 2e-3, np.float32: 2e-6, np.float64: 1e-14}[dtype]
    np.testing.assert_allclose(s, 1 / (1 + np.exp(-xd)), rtol=tol, atol=tol)
    np.testing.assert_array_equal(c, np.clip(x, dtype(-1.5), dtype(2.0)))
    np.testing.assert_allclose(z, np.exp(np.minimum(xd, 0.0)), rtol=tol * 2, atol=tol)


@tilec.kernel
def outer(a_ptr, b_ptr, o_ptr, p_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    a = tl.load(a_ptr + rm, mask=rm < M, other=0.0)
    b = tl.load(b_ptr + rn, mask=rn < N, other=0.0)
    col = tl.expand_dims(a, 1)                      # [BM, 1]
    row = tl.expand_dims(b, (0,))                   # [1, BN]
    cb, rb = tl.broadcast(col, row)                 # [BM, BN] each
    full = tl.broadcast_to(tl.expand_dims(b, 0), (BM, BN))
    idx = tl.expand_dims(rm, -1) * N + tl.expand_dims(rn, 0)
    ok = (tl.expand_dims(rm, 1) < M) & (tl.expand_dims(rn, 0) < N)
    tl.store(o_ptr + idx, cb * rb, mask=ok)
    tl.store(p_ptr + idx, full + tl.broadcast_to(col, BM, BN), mask=ok)


@pytest.mark.parametrize("M,N", [(16, 32), (5, 7), (32, 1)])
def test_expand_dims_and_broadcasts(M: int, N: int) -> None:
    rng = np.random.default_rng(M * N)
    a = rng.standard_normal(M).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    o = np.full((M, N), np.nan, np.float32)
    p = np.full((M, N), np.nan, np.float32)
    outer[(1,)](a, b, o, p, M, N, BM=32, BN=32)
    np.testing.assert_array_equal(o, np.outer(a, b))
    np.testing.assert_array_equal(p, b[None, :] + a[:, None])


@tilec.kernel
def loops(x_ptr, out_ptr, n, K: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in tl.range(0, n, num_stages=3):
        acc += tl.load(x_ptr + i * BLOCK + offs)
    for j in tl.static_range(K):
        acc = acc * 2.0
    for j in tl.static_range(1, K, 2):
        acc = acc + j
    tl.store(out_ptr + offs, acc)


def test_tl_range_and_static_range() -> None:
    x = np.random.default_rng(0).standard_normal((5, 64)).astype(np.float32)
    out = np.zeros(64, np.float32)
    loops[(1,)](x, out, 5, K=3, BLOCK=64)
    np.testing.assert_allclose(out, x.sum(0) * 8 + 1, rtol=1e-5, atol=1e-5)


def _compile_error(src_kernel: object, **constexprs: object) -> tilec.TilecError:
    with pytest.raises(tilec.TilecError) as e:
        src_kernel.compile(target="cpu", signature="*fp32,i32",  # type: ignore[attr-defined]
                           constexprs=constexprs)
    return e.value


@tilec.kernel
def bad_static(x_ptr, n, B: tl.constexpr):
    for i in tl.static_range(n):  # <- static
        tl.store(x_ptr + i, 1.0)


@tilec.kernel
def bad_hint(x_ptr, n, B: tl.constexpr):
    offs = tl.multiple_of(tl.arange(0, B), 0)  # <- hint
    tl.store(x_ptr + offs, 1.0)


@tilec.kernel
def bad_axis(x_ptr, n, B: tl.constexpr):
    v = tl.expand_dims(tl.arange(0, B), 3)  # <- axis
    tl.store(x_ptr + tl.arange(0, B), 1.0)


@tilec.kernel
def bad_sigmoid(x_ptr, n, B: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, B), tl.sigmoid(tl.arange(0, B)))  # <- sig


@pytest.mark.parametrize("kern,marker,text", [
    (bad_static, "<- static", "compile-time constants"),
    (bad_hint, "<- hint", "positive constexpr ints"),
    (bad_axis, "<- axis", "axis 3 is not an int in [-2, 2)"),
    (bad_sigmoid, "<- sig", "floating-point argument"),
])
def test_mistakes_point_at_the_line(kern: object, marker: str, text: str) -> None:
    e = _compile_error(kern, B=16)
    assert e.loc is not None and pathlib.Path(e.loc.file).resolve() == pathlib.Path(THIS_FILE)
    assert marker in str(e) and text in str(e)


@pytest.mark.parametrize("target", ["sm90", "gfx942"])
def test_gpu_targets_assemble(target: str) -> None:
    k = act.compile(target=target, signature="*fp32,*fp32,*fp32,*fp32,i32,fp32,fp32",
                    constexprs={"BLOCK": 256})
    assert k.asm["cubin" if target.startswith("sm") else "hsaco"]
    k2 = outer.compile(target=target, signature="*fp32,*fp32,*fp32,*fp32,i32,i32",
                       constexprs={"BM": 32, "BN": 32})
    assert k2.asm["cubin" if target.startswith("sm") else "hsaco"]
    k3 = loops.compile(target=target, signature="*fp32,*fp32,i32", constexprs={"K": 3, "BLOCK": 64})
    assert k3.asm["cubin" if target.startswith("sm") else "hsaco"]
