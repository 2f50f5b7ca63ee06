"""A scalar tl.store (a scalar through a scalar pointer) is done once per
program on GPUs, by thread 0 (Triton's semantics), masked or not: the PTX
predicates the store on `%tid.x == 0`; the AMD code object links; the CPU
result is unchanged."""
from __future__ import annotations

import re

import numpy as np

import tilec as triton
import tilec.language as tl

from compat.gpu_check import assemble


@triton.jit
def row_sums(x_ptr, z_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    s = tl.sum(tl.load(x_ptr + row * BLOCK + tl.arange(0, BLOCK)))
    tl.store(z_ptr + row, s)
    tl.store(z_ptr + n + row, s * 2, mask=row < 2)


def _tid_predicates(ptx: str) -> set[str]:
    """The predicate registers set from `%tid.x == 0`."""
    tid_regs = set(re.findall(r"mov\.u32\s+(%r\d+), %tid\.x;", ptx))
    preds = set()
    for p, r in re.findall(r"setp\.eq\.(?:b|s|u)32\s+(%p\d+), (%r\d+), 0;", ptx):
        if r in tid_regs:
            preds.add(p)
    return preds


def test_ptx_scalar_store_on_thread_0() -> None:
    ck = row_sums.compile(target="sm90", signature="*fp32, *fp32, i32",
                          constexprs={"BLOCK": 256})
    ptx = ck.asm["ptx"]
    first = _tid_predicates(ptx)
    assert first, ptx
    stores = re.findall(r"(@!?%p\d+)?\s*st\.global\.\S+\s+\[", ptx)
    assert len(stores) == 2 and all(stores), stores     # both predicated
    # the unmasked store's predicate is the thread-0 test itself; the masked one
    # is an and of it with the mask
    assert any(s.lstrip("@") in first for s in stores)
    assert re.search(r"and\.pred\s+%p\d+, %p\d+, %p\d+;", ptx)
    assemble(row_sums, "sm90", "*fp32, *fp32, i32", {"BLOCK": 256})


def test_amd_scalar_store_links() -> None:
    assemble(row_sums, "gfx942", "*fp32, *fp32, i32", {"BLOCK": 256})
    ck = row_sums.compile(target="gfx942", signature="*fp32, *fp32, i32",
                          constexprs={"BLOCK": 256})
    assert "v_cmp_eq_u32" in ck.asm["amdgcn"] and "s_and_saveexec" in ck.asm["amdgcn"]


def test_cpu_scalar_store_unchanged() -> None:
    x = np.random.RandomState(0).randn(4, 256).astype(np.float32)
    z = np.zeros(8, np.float32)
    row_sums[(4,)](x, z, 4, BLOCK=256)
    np.testing.assert_allclose(z[:4], x.sum(1), rtol=1e-5)
    np.testing.assert_allclose(z[4:6], 2 * x.sum(1)[:2], rtol=1e-5)
    assert (z[6:] == 0).all()
