"""Atomics on NVIDIA keep Triton's default ordering (acq_rel at GPU scope).

LLVM 22's NVPTX back end prints `atomicrmw ... acq_rel` as a relaxed
`atom.global.<op>` (no `.acq_rel`, no fence), so tutorial 05's lock release
(`tl.atomic_xchg(Lock, 0)` after the partial-sum stores) ordered nothing: the
SASS had no `MEMBAR.ALL.GPU` before its `ATOMG.E.EXCH`, where Triton 3.9's has
one.  targets/nvidia/atomics.py writes `atom.acq_rel.gpu.global...` itself,
or brackets the atom with `fence.acq_rel.gpu` where PTX has no such form.
Checked on the PTX of every NVIDIA record and assembled by ptxas."""
from __future__ import annotations

import re

import pytest

import tilec
import tilec.language as tl
from tilec.targets import toolchain


@tilec.kernel
def _lock(dw_ptr, lock_ptr, count_ptr, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    if tl.load(count_ptr) == 0:
        tl.atomic_xchg(count_ptr, 1)
    tl.store(dw_ptr + cols, tl.load(dw_ptr + cols) + 1.0)
    tl.debug_barrier()
    tl.atomic_xchg(lock_ptr, 0)


@tilec.kernel
def _tiles(f32_ptr, f16_ptr, bf16_ptr, i32_ptr, u32_ptr, i64_ptr, f64_ptr, n,
           BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.atomic_add(f32_ptr + offs, 1.0, mask=m)
    tl.atomic_xchg(f32_ptr + BLOCK + offs, 2.0, mask=m)
    tl.atomic_max(f32_ptr + 2 * BLOCK + offs, 3.0, mask=m)
    tl.atomic_add(f16_ptr + offs, tl.full([BLOCK], 1.0, tl.float16), mask=m)
    tl.atomic_add(bf16_ptr + offs, tl.full([BLOCK], 1.0, tl.bfloat16), mask=m)
    tl.atomic_max(i32_ptr + offs, offs, mask=m)
    tl.atomic_xchg(i32_ptr + BLOCK + offs, offs, mask=m)
    tl.atomic_min(u32_ptr + offs, offs.to(tl.uint32), mask=m)
    tl.atomic_add(i64_ptr + offs, offs.to(tl.int64), mask=m)
    tl.atomic_add(f64_ptr + offs, offs.to(tl.float64), mask=m)


_INSTR = re.compile(r"^\s*(?:@!?%p\d+\s+)?([a-z][\w.:]*)", re.M)


def _instructions(ptx: str) -> list[str]:
    """The PTX's instruction lines (labels, directives, comments dropped)."""
    out = []
    for line in ptx.splitlines():
        s = line.strip()
        if not s or s.startswith(("//", ".", "$", "{", "}")) or s.endswith(":"):
            continue
        out.append(s)
    return out


_MEMORY = re.compile(r"(@!?%p\d+\s+)?(ld|st|atom|red|fence|membar|bar|cp)\.")


def _unordered_atoms(ptx: str) -> list[str]:
    """`atom` instructions with neither an ordering of their own nor a
    `fence.acq_rel.gpu` as the memory instruction right before and right after
    them (register moves between them do not matter)."""
    mem = [s for s in _instructions(ptx) if _MEMORY.match(s)]
    bad = []
    for i, s in enumerate(mem):
        if not re.match(r"(@!?%p\d+\s+)?atom\.", s) or ".acq_rel.gpu" in s:
            continue
        before = mem[i - 1] if i else ""
        after = mem[i + 1] if i + 1 < len(mem) else ""
        if not (before.startswith("fence.acq_rel.gpu") and after.startswith("fence.acq_rel.gpu")):
            bad.append(s)
    return bad


def _atoms(ptx: str) -> list[str]:
    return sorted({m.group(1) for m in re.finditer(r"\batom(\.[\w.]+)", ptx)})


@pytest.mark.parametrize("target", ["sm80", "sm90", "sm100"])
def test_lock_release_is_ordered(target: str) -> None:
    ck = _lock.compile(target=target, signature="*fp32:16,*i32:16,*i32:16",
                       constexprs={"BLOCK": 256}, num_warps=4)
    ptx = ck.asm["ptx"]
    assert _atoms(ptx) == [".acq_rel.gpu.global.cas.b32", ".acq_rel.gpu.global.exch.b32"]
    assert _unordered_atoms(ptx) == []
    assert "atomicrmw" not in ck.asm["llir"]
    if toolchain.find_ptxas() is None:
        pytest.skip("no ptxas")
    assert ck.asm.get("cubin"), ck.metadata.get("cubin_error")


@pytest.mark.parametrize("target", ["sm80", "sm90"])
def test_tile_atomics_are_ordered(target: str) -> None:
    sig = "*fp32:16,*fp16:16,*bf16:16,*i32:16,*u32:16,*i64:16,*fp64:16,i32"
    ck = _tiles.compile(target=target, signature=sig, constexprs={"BLOCK": 128}, num_warps=4)
    ptx = ck.asm["ptx"]
    assert _unordered_atoms(ptx) == []
    atoms = _atoms(ptx)
    for form in ("add.f32", "exch.b32", "add.noftz.f16", "max.s32", "min.u32", "add.u64",
                 "add.f64"):
        assert f".acq_rel.gpu.global.{form}" in atoms, (form, atoms)
    # bf16 add (an `atom` of sm_90 only) and float max (LLVM's CAS loop): the
    # generic atomicrmw, between fences on sm90 (on sm80 bf16 is a CAS loop too)
    assert ".acq_rel.gpu.global.cas.b32" in atoms
    if target == "sm90":
        assert ".global.add.noftz.bf16" in atoms
    if toolchain.find_ptxas() is None:
        pytest.skip("no ptxas")
    assert ck.asm.get("cubin"), ck.metadata.get("cubin_error")
