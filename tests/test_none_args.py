"""None for a pointer argument the kernel does not use (Triton: a constexpr
None): optional bias pointers guarded by a constexpr flag or by `is None`;
None and an array are two specializations; using the None is a TilecError at
the user's line."""
from __future__ import annotations

import numpy as np
import pytest

import tilec as triton
import tilec.language as tl
from tilec import TilecError


@triton.jit
def bias_add(x_ptr, b_ptr, w_ptr, z_ptr, n, HAS_B: tl.constexpr, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    x = tl.load(x_ptr + o, mask=m)
    if HAS_B:
        x += tl.load(b_ptr + o, mask=m)
    if w_ptr is not None:
        x *= tl.load(w_ptr + o, mask=m)
    tl.store(z_ptr + o, x, mask=m)


def test_none_for_unused_pointers() -> None:
    n = 100
    x = np.arange(n, dtype=np.float32)
    b = np.full(n, 0.5, np.float32)
    w = np.full(n, 3.0, np.float32)
    z = np.zeros(n, np.float32)
    bias_add[(4,)](x, None, None, z, n, False, 32)
    np.testing.assert_array_equal(z, x)
    bias_add[(4,)](x, b, None, z, n, True, 32)
    np.testing.assert_array_equal(z, x + b)
    bias_add[(4,)](x, None, w, z, n, False, 32)
    np.testing.assert_array_equal(z, x * w)
    bias_add[(4,)](x, b, w, z, n, True, BLOCK=32)
    np.testing.assert_array_equal(z, (x + b) * w)
    bias_add[(4,)](x, None, None, z, n, HAS_B=False, BLOCK=32)   # keywords, again
    np.testing.assert_array_equal(z, x)


def test_none_with_torch_tensors() -> None:
    torch = pytest.importorskip("torch")
    x = torch.randn(64)
    z = torch.empty(64)
    bias_add[(2,)](x, None, None, z, 64, False, 32)
    assert torch.equal(z, x)


def test_none_is_a_specialization() -> None:
    # a None and an int for the same parameter compile separately
    x = np.arange(32, dtype=np.float32)
    z = np.zeros(32, np.float32)
    bias_add[(1,)](x, None, x, z, 32, False, 32)
    np.testing.assert_array_equal(z, x * x)
    bias_add[(1,)](x, None, None, z, 32, False, 32)
    np.testing.assert_array_equal(z, x)


@triton.jit
def uses_none(x_ptr, b_ptr, z_ptr, WHICH: tl.constexpr):
    o = tl.arange(0, 16)
    if WHICH == 0:
        v = tl.load(b_ptr + o)
    elif WHICH == 1:
        v = tl.load(b_ptr)
    else:
        v = tl.load(x_ptr + o)
        tl.store(b_ptr + o, v)
    tl.store(z_ptr + o, v)


@pytest.mark.parametrize("which, text", [(0, "tl.load(b_ptr + o)"), (1, "tl.load(b_ptr)"),
                                         (2, "tl.store(b_ptr + o, v)")])
def test_using_a_none_argument_is_an_error(which: int, text: str) -> None:
    x = np.zeros(16, np.float32)
    with pytest.raises(TilecError) as ei:
        uses_none[(1,)](x, None, x, which)
    msg = str(ei.value)
    assert "test_none_args.py" in msg and text in msg
    assert "None" in msg
