"""Triton's tensor member functions and small semantics: `x.cast(...)`,
`x.sum()/.max()/.exp()` as the tl functions, `Z.dtype.element_ty`, varargs
`reshape`, `tie_break_left=` on argmax/argmin (ties go to the smallest index),
and `>>` choosing its shift by the left operand's signedness (int8 >> uint16
is an arithmetic shift typed uint16, as in Triton); against NumPy/torch."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tilec as triton
import tilec.language as tl


@triton.jit
def members(X, Z, I, N: tl.constexpr):
    o = tl.arange(0, N)
    x = tl.load(X + o)
    tl.store(Z + o, x.cast(Z.dtype.element_ty) + x.exp().sum(axis=0).to(tl.int32))
    rows = x.reshape(2, N // 2)
    tl.store(I, tl.argmax(x, axis=0, tie_break_left=True) * 100
             + rows.max(1, return_indices=True)[1].sum(0) * 10
             + tl.argmin(x, 0, tie_break_left=False))


def test_tensor_members() -> None:
    x = torch.tensor([1., 3., 3., 0., 2., 2., 1., 0.])
    z = torch.zeros(8, dtype=torch.int32)
    i = torch.zeros(1, dtype=torch.int32)
    members[(1,)](x, z, i, 8)
    assert z.tolist() == (x.to(torch.int32) + int(x.exp().sum())).tolist()
    # argmax: first 3 at 1; rows' argmax 1 and 0; argmin: first 0 at 3
    assert i.item() == 1 * 100 + 1 * 10 + 3


@triton.jit
def shift_right(Z, X, Y, N: tl.constexpr):
    o = tl.arange(0, N)
    tl.store(Z + o, tl.load(X + o) >> tl.load(Y + o))


@pytest.mark.parametrize("xd,yd", [("int8", "uint16"), ("int16", "uint32"), ("uint8", "int16")])
def test_shift_signedness_of_left_operand(xd: str, yd: str) -> None:
    rs = np.random.RandomState(3)
    bits = max(np.dtype(xd).itemsize, np.dtype(yd).itemsize) * 8
    x = rs.randint(np.iinfo(xd).min, np.iinfo(xd).max, 64).astype(xd)
    y = rs.randint(0, bits, 64).astype(yd)
    zd = ("int" if xd.startswith("int") else "uint") + str(bits)
    want = (x.astype(zd) >> y.astype(zd)).astype(
        f"uint{bits}" if "uint" in (xd + yd) and np.dtype(yd).itemsize >= np.dtype(xd).itemsize
        else zd)

    def arg(a: np.ndarray) -> object:
        t = torch.tensor(a.astype(a.dtype.name.lstrip("u")))
        return triton.reinterpret(t, getattr(tl, a.dtype.name)) if a.dtype.kind == "u" else t

    out = np.zeros(64, dtype=want.dtype)
    zt = arg(out)
    shift_right[(1,)](zt, arg(x), arg(y), N=64)
    base = zt.base if hasattr(zt, "base") else zt
    got = base.numpy().astype(want.dtype)
    np.testing.assert_array_equal(got, want)


@triton.jit
def type_members(X, Out, N: tl.constexpr):
    # tutorial 06's `acc.to(Out.type.element_ty)`: .type of a scalar pointer is its
    # pointer type; of a tile, a block type with the element type and the shape
    o = tl.arange(0, N)
    x = tl.load(X + o)
    tl.static_assert(x.type.element_ty == tl.float32)
    tl.static_assert(x.type.shape[0] == N)
    tl.store(Out + o, x.to(Out.type.element_ty))


def test_type_members() -> None:
    x = torch.tensor([1.5, -2.25, 3.0, 0.5])
    out = torch.zeros(4, dtype=torch.float16)
    type_members[(1,)](x, out, 4)
    assert out.tolist() == x.to(torch.float16).tolist()
