"""3-D (batched) tl.dot [B, M, K] x [B, K, N] compiles for sm90 and gfx942
(ptxas / ld.lld): the frontend splits it into B 2-D dots (tile.restride picks
each batch, restrides stack the results), and rank-3 tiles get GPU layouts
(a rank-3 index from a rank-2 one is a tile.reshape, not an expand_dims,
so no slice of a slice arises).  The CPU differential tests are
tests/compat/test_compat_select.py::test_batched_dot; here the CPU checks
the same kernel as it is compiled for GPUs (index tiles built from
arange(B)[:, None, None])."""
from __future__ import annotations

import numpy as np
import pytest

import tilec as triton
import tilec.language as tl

from compat.gpu_check import GPU_TARGETS, assemble


@triton.jit
def bmm(q_ptr, k_ptr, c_ptr, o_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
        K: tl.constexpr, ACC: tl.constexpr):
    b = tl.arange(0, B)[:, None, None]
    q = tl.load(q_ptr + b * M * K + tl.arange(0, M)[None, :, None] * K
                + tl.arange(0, K)[None, None, :])
    k = tl.load(k_ptr + b * K * N + tl.arange(0, K)[None, :, None] * N
                + tl.arange(0, N)[None, None, :])
    offs = b * M * N + tl.arange(0, M)[None, :, None] * N + tl.arange(0, N)[None, None, :]
    if ACC:
        out = tl.dot(q, k, acc=tl.load(c_ptr + offs))
    else:
        out = tl.dot(q, k)
    tl.store(o_ptr + offs, out)


CASES = [("fp16", "fp32", dict(B=2, M=16, N=16, K=16)),
         ("fp32", "fp32", dict(B=4, M=16, N=16, K=16)),
         ("fp16", "fp32", dict(B=2, M=64, N=64, K=32)),
         ("i8", "i32", dict(B=2, M=32, N=32, K=32))]


@pytest.mark.sample(2)        # the test command: each (case, acc) on one of the targets
@pytest.mark.parametrize("target", GPU_TARGETS)
@pytest.mark.parametrize("ab, out, shape", CASES)
@pytest.mark.parametrize("acc", [False, True])
def test_batched_dot_compiles_for_gpus(target: str, ab: str, out: str, shape: dict[str, int],
                                       acc: bool) -> None:
    assemble(bmm, target, f"*{ab}, *{ab}, *{out}, *{out}", {**shape, "ACC": acc})


@pytest.mark.parametrize("dt, acc", [("float16", True), ("float32", False), ("int8", True)])
def test_batched_dot_cpu(dt: str, acc: bool) -> None:
    B, M, N, K = 4, 16, 32, 16
    rs = np.random.RandomState(7)
    q = (rs.randn(B, M, K) * 3).astype(dt)
    k = (rs.randn(B, K, N) * 3).astype(dt)
    odt = np.int32 if dt == "int8" else np.float32
    c = (rs.randn(B, M, N) * 3).astype(odt)
    o = np.zeros((B, M, N), odt)
    bmm[(1,)](q, k, c, o, B, M, N, K, acc)
    ref = np.matmul(q.astype(np.float64), k.astype(np.float64)) + (c if acc else 0)
    if dt == "int8":
        np.testing.assert_array_equal(o, ref.astype(np.int32))
    else:
        np.testing.assert_allclose(o, ref, rtol=1e-3, atol=1e-3)
