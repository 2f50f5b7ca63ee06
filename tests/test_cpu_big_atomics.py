"""Atomics on big 2-D tiles on the CPU (the stack-buffer path, passes/cpu/tiled.py)
whose old values nobody reads: the rule binds a poison value for them (the
big-tile path stores every tile result), so the kernel compiles; two lanes
adding to one address both count (Triton's test_core
test_tensor_atomic_add_non_exclusive_offset pattern)."""
from __future__ import annotations

import pytest

import tilec as triton
import tilec.language as tl

torch = pytest.importorskip("torch")


@triton.jit
def pair_add(X, val, NUM: tl.constexpr):
    off = tl.arange(0, NUM)
    offset = off[:, None] * NUM + off[None, :]
    tl.atomic_add(X + offset // 2, tl.load(val + offset))


@triton.jit
def pair_max(X, val, NUM: tl.constexpr):
    off = tl.arange(0, NUM)
    offset = off[:, None] * NUM + off[None, :]
    tl.atomic_max(X + offset // 2, tl.load(val + offset))
    tl.atomic_cas(X + NUM * NUM // 2 + offset, tl.zeros([NUM, NUM], tl.float32),
                  tl.load(val + offset))


@pytest.mark.parametrize("size", [16, 64, 128])
@pytest.mark.parametrize("dt", [torch.float16, torch.float32])
def test_big_tile_atomic_add_unused_result(size: int, dt: torch.dtype) -> None:
    x = torch.zeros(size * size // 2, dtype=dt)
    v = torch.randn(size * size, dtype=dt)
    pair_add[(1,)](x, v, size)
    torch.testing.assert_close(x, v[0::2] + v[1::2])


def test_big_tile_atomic_max_and_cas_unused_results() -> None:
    size = 64
    x = torch.full((size * size // 2 + size * size,), -1e9)
    x[size * size // 2:] = 0
    v = torch.randn(size * size)
    pair_max[(1,)](x, v, size)
    torch.testing.assert_close(x[:size * size // 2], torch.maximum(v[0::2], v[1::2]))
    torch.testing.assert_close(x[size * size // 2:], v)
