"""tl.trans and tl.reshape: executed on the CPU, compiled for every GPU target
(on the GPU they exchange elements through workgroup memory)."""
from __future__ import annotations

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.targets import TARGETS


@tilec.kernel
def trans_reshape(x_ptr, t_ptr, r_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    tl.store(t_ptr + cols[:, None] * M + rows[None, :], tl.trans(x))
    tl.store(r_ptr + cols[:, None] * M + rows[None, :], tl.reshape(x, (N, M)))


@pytest.mark.parametrize("m,n", [(32, 64), (8, 8), (1, 16)])
def test_cpu(m: int, n: int) -> None:
    x = np.random.rand(m, n).astype(np.float32)
    t = np.full((n, m), np.nan, np.float32)
    r = np.full((n, m), np.nan, np.float32)
    trans_reshape[(1,)](x, t, r, M=m, N=n)
    np.testing.assert_array_equal(t, x.T)
    np.testing.assert_array_equal(r, x.reshape(n, m))


@pytest.mark.parametrize("target", [t for t in TARGETS if t != "cpu"])
def test_gpu_targets(target: str) -> None:
    ck = trans_reshape.compile(target=target, signature="*fp32,*fp32,*fp32",
                               constexprs={"M": 32, "N": 64})
    binary = ck.asm.get("cubin") or ck.asm.get("hsaco")
    assert binary, sorted(ck.asm)
    assert ck.metadata["shared"] >= 32 * 64 * 4


def test_large_workgroup_memory_is_dynamic_on_nvidia() -> None:
    """A 128x128 fp32 transpose exchanges 64 KiB: dynamic shared memory on NVIDIA
    (static is capped at 48 KiB); 128 KiB is over gfx942's 64 KiB LDS: a clear error."""
    ck = trans_reshape.compile(target="sm90", signature="*fp32,*fp32,*fp32",
                               constexprs={"M": 128, "N": 128}, num_warps=8)
    assert ck.metadata["dynamic_shared"] == 128 * 128 * 4
    assert ".extern .shared" in ck.asm["ptx"] and ck.asm["cubin"]
    with pytest.raises(tilec.TilecError, match="bytes of workgroup memory"):
        trans_reshape.compile(target="gfx942", signature="*fp32,*fp32,*fp32",
                              constexprs={"M": 128, "N": 256}, num_warps=8)
