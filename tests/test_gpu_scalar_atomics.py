"""Scalar atomics on GPUs run once per program (Triton's semantics), with the
old value broadcast through workgroup memory: a spin lock takes the lock once.
Compiled for sm90 and gfx942 (ptxas / ld.lld); run on the H200 by
scripts/gpu_suite.py ("spin lock + scalar atomics")."""
import re

import pytest

import tilec
import tilec.language as tl
from tilec.targets import toolchain


@tilec.kernel
def _locked(acc_ptr, lock_ptr, count_ptr, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(acc_ptr + cols, tl.load(acc_ptr + cols) + 1)
    tl.atomic_xchg(lock_ptr, 0)
    tl.atomic_add(count_ptr, 1)


def test_scalar_atomics_once_per_program_ptx() -> None:
    ck = _locked.compile(target="sm90", signature="*i32:16,*i32:16,*i32:16",
                         constexprs={"BLOCK": 256}, num_warps=4)
    ptx = ck.asm["ptx"]
    atoms = re.findall(r"^\s*(@%p\d+ )?atom\.\S+", ptx, re.M)
    assert len(atoms) == 3, atoms        # one cas, one exch, one add: not one per element
    # each is skipped by every thread but thread 0 (a branch around it) and
    # published through a barrier
    assert ptx.count("bar.sync") >= 6
    assert "st.shared.b32" in ptx and "ld.shared.b32" in ptx
    if toolchain.find_ptxas() is None:
        pytest.skip("no ptxas")
    assert ck.asm.get("cubin"), ck.metadata.get("cubin_error")


def test_scalar_atomics_assemble_for_amd() -> None:
    ck = _locked.compile(target="gfx942", signature="*i32:16,*i32:16,*i32:16",
                         constexprs={"BLOCK": 256}, num_warps=4)
    assert "s_barrier" in ck.asm["amdgcn"]
    if toolchain.find_lld() is None:
        pytest.skip("no ld.lld")
    assert ck.asm.get("hsaco"), ck.metadata.get("hsaco_error")


def test_spin_lock_on_the_cpu() -> None:
    import numpy as np
    acc = np.zeros(256, np.int32)
    lock = np.zeros(1, np.int32)
    count = np.zeros(1, np.int32)
    _locked[(64,)](acc, lock, count, BLOCK=256)
    assert (acc == 64).all() and count[0] == 64 and lock[0] == 0
