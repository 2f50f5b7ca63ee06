"""tl.gather (Triton's semantics: the result has the index's shape) against
NumPy's take_along_axis on the CPU, 1-D and 2-D, both axes, index tiles
shorter and longer than the source along the axis, int/float/bool sources,
int8..int64 indices; errors; compiled for sm90 and gfx942 (ptxas / ld.lld)."""
from __future__ import annotations

import numpy as np
import pytest

import tilec as triton
import tilec.language as tl
from tilec import TilecError

from compat.gpu_check import GPU_TARGETS, assemble


@triton.jit
def gather_2d(s_ptr, i_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr, MI: tl.constexpr,
              NI: tl.constexpr, AXIS: tl.constexpr):
    s = tl.load(s_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    oi = tl.arange(0, MI)[:, None] * NI + tl.arange(0, NI)[None, :]
    tl.store(z_ptr + oi, tl.gather(s, tl.load(i_ptr + oi), AXIS))


@triton.jit
def gather_1d(s_ptr, i_ptr, z_ptr, N: tl.constexpr, NI: tl.constexpr):
    s = tl.load(s_ptr + tl.arange(0, N))
    i = tl.load(i_ptr + tl.arange(0, NI))
    tl.store(z_ptr + tl.arange(0, NI), tl.gather(s, i, 0))


@triton.jit
def gather_computed(s_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    # a transposed index (a layout of its own on GPUs): each row reversed
    s = tl.load(s_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    rev = (N - 1 - tl.arange(0, N))[None, :] + tl.zeros([M, N], tl.int32)
    z = tl.gather(s, rev, 1)
    tl.store(z_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], z)


@triton.jit
def gather_tindex(s_ptr, i_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    # the index read column-major (another layout than the row-major result)
    s = tl.load(s_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    i = tl.load(i_ptr + tl.arange(0, M)[:, None] + tl.arange(0, N)[None, :] * M)
    tl.store(z_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], tl.gather(s, i, 1))


@pytest.mark.sample(2)        # the test command: each index shape with two or three of the dtypes
@pytest.mark.parametrize("dt", ["float32", "float16", "int8", "int64", "bool"])
@pytest.mark.parametrize("axis, mi, ni", [(0, 4, 16), (0, 32, 16), (1, 8, 4), (1, 8, 64),
                                          (1, 8, 16)])
def test_gather_2d(dt: str, axis: int, mi: int, ni: int) -> None:
    m, n = 8, 16
    rs = np.random.RandomState(mi * ni + axis)
    s = (rs.randn(m, n) * 50).astype(dt) if dt != "bool" else rs.randn(m, n) > 0
    i = rs.randint(0, (m, n)[axis], (mi, ni)).astype(np.int32)
    z = np.zeros((mi, ni), s.dtype)
    gather_2d[(1,)](s, i, z, m, n, mi, ni, axis)
    np.testing.assert_array_equal(z, np.take_along_axis(s, i, axis))


@pytest.mark.parametrize("idt", ["int8", "int16", "int64", "uint32"])
@pytest.mark.parametrize("n, ni", [(64, 64), (128, 16), (8, 256)])
def test_gather_1d(idt: str, n: int, ni: int) -> None:
    rs = np.random.RandomState(n + ni)
    s = rs.randn(n).astype(np.float32)
    i = rs.randint(0, n, ni).astype(idt)
    z = np.zeros(ni, np.float32)
    gather_1d[(1,)](s, i, z, n, ni)
    np.testing.assert_array_equal(z, s[i.astype(np.int64)])


def test_gather_computed_index() -> None:
    s = np.arange(4 * 32, dtype=np.float32).reshape(4, 32)
    z = np.zeros_like(s)
    gather_computed[(1,)](s, z, 4, 32)
    np.testing.assert_array_equal(z, s[:, ::-1])


def test_gather_transposed_index() -> None:
    rs = np.random.RandomState(5)
    s = rs.randn(32, 64).astype(np.float32)
    i = rs.randint(0, 64, (32, 64)).astype(np.int32)
    z = np.zeros_like(s)
    gather_tindex[(1,)](s, np.ascontiguousarray(i.T), z, 32, 64)
    np.testing.assert_array_equal(z, np.take_along_axis(s, i, 1))


def test_gather_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    s = torch.randn(8, 16)
    i = torch.randint(0, 16, (8, 32), dtype=torch.int64)
    z = torch.empty(8, 32)
    gather_2d[(1,)](s, i, z, 8, 16, 8, 32, 1)
    assert torch.equal(z, torch.gather(s, 1, i))


@triton.jit
def bad_gather(s_ptr, z_ptr, WHICH: tl.constexpr):
    s = tl.load(s_ptr + tl.arange(0, 8)[:, None] * 8 + tl.arange(0, 8)[None, :])
    if WHICH == 0:
        z = tl.gather(s, tl.arange(0, 8), 0)
    elif WHICH == 1:
        z = tl.gather(s, tl.zeros([4, 4], tl.int32), 0)
    elif WHICH == 2:
        z = tl.gather(s, s, 1)
    else:
        z = tl.gather(s, tl.zeros([8, 8], tl.int32), 2)
    tl.store(z_ptr + tl.arange(0, 8)[:, None] * 8 + tl.arange(0, 8)[None, :], z)


@pytest.mark.parametrize("which, msg", [
    (0, "an index of the source's rank 2"), (1, "dimension 1 \\(4\\) must equal"),
    (2, "index must be a tile of integers"), (3, "axis 2 is out of range"),
])
def test_gather_errors(which: int, msg: str) -> None:
    s = np.zeros((8, 8), np.float32)
    with pytest.raises(TilecError, match=msg) as ei:
        bad_gather[(1,)](s, s, which)
    assert "test_gather.py" in str(ei.value)


@pytest.mark.parametrize("target", GPU_TARGETS)
def test_gather_compiles_for_gpus(target: str) -> None:
    assemble(gather_2d, target, "*fp32, *i32, *fp32",
             {"M": 16, "N": 32, "MI": 16, "NI": 64, "AXIS": 1})
    assemble(gather_2d, target, "*fp16, *i64, *fp16",
             {"M": 32, "N": 16, "MI": 8, "NI": 16, "AXIS": 0})
    assemble(gather_1d, target, "*fp32, *i32, *fp32", {"N": 128, "NI": 256})
    assemble(gather_computed, target, "*fp32, *fp32", {"M": 4, "N": 32})
    assemble(gather_tindex, target, "*fp32, *i32, *fp32", {"M": 32, "N": 64})


def test_gather_ptx_reads_shared_memory() -> None:
    ck = gather_2d.compile(target="sm90", signature="*fp32, *i32, *fp32",
                           constexprs={"M": 16, "N": 32, "MI": 16, "NI": 64, "AXIS": 1})
    ptx = ck.asm["ptx"]
    assert "st.shared" in ptx and "ld.shared" in ptx and "bar.sync" in ptx
