"""Masked global loads/stores on GPUs (passes/gpu/memory.py, targets/nvidia/rules.py).

On targets with `ptx_predicated_mem` (NVIDIA) a masked access is one
predicated PTX instruction through inline asm (`@%p ld.global.v4.b32`), with
no branch around it; unmasked accesses stay plain `ld/st.global`; ptxas
accepts the result with no spills for every element width.  The asm is marked
as having side effects, so a load after a store through the same pointer stays
after it.  AMD keeps `llvm.intr.masked.load` / `scf.if` where it has no buffer instructions.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

import tilec
import tilec.language as tl
from tilec.targets import Feature, get_target
from toolcheck import filecheck

FILECHECK = Path(str(__import__("llvm").__file__)).parent / "bin" / "FileCheck"
needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not on PATH")


# ---------------------------------------------------------------- kernels

@tilec.kernel
def masked_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # type: ignore[arg-type]
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@tilec.kernel
def plain_add(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # type: ignore[arg-type]
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))


@tilec.kernel
def copy_other(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # type: ignore[arg-type]
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m, other=-1), mask=m)


@tilec.kernel
def tile_other(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # type: ignore[arg-type]
    m = offs < n
    fallback = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m, other=fallback), mask=m)


@tilec.kernel
def scalar_masked(x_ptr, out_ptr, n):
    pid = tl.program_id(0)
    v = tl.load(x_ptr + pid, mask=pid < n, other=0.0)
    tl.store(out_ptr + pid, v * 2.0, mask=pid < n)


@tilec.kernel
def store_then_load(p_ptr, q_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # type: ignore[arg-type]
    m = offs < n
    tl.store(p_ptr + offs, offs.to(tl.float32), mask=m)
    y = tl.load(p_ptr + offs, mask=m, other=0.0)
    tl.store(q_ptr + offs, y + 1.0, mask=m)


@tilec.kernel
def plain_store_then_masked_load(p_ptr, q_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # type: ignore[arg-type]
    tl.store(p_ptr + offs, offs.to(tl.float32))
    y = tl.load(p_ptr + offs, mask=offs < n, other=0.0)
    tl.store(q_ptr + offs, y + 1.0)


@tilec.kernel
def masked_store_then_plain_load(p_ptr, q_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # type: ignore[arg-type]
    tl.store(p_ptr + offs, offs.to(tl.float32), mask=offs < n)
    y = tl.load(p_ptr + offs)
    tl.store(q_ptr + offs, y + 1.0)


# ---------------------------------------------------------------- helpers

def compile_asm(kernel: Any, types: list[str], constexprs: dict[str, int], target: str = "sm90",
                divisible: bool = True, num_warps: int = 4) -> dict[str, Any]:
    names = kernel.runtime_names()
    sig = {n: t + (":16" if divisible or t.startswith("*") else ":1") for n, t in zip(names, types)}
    return dict(kernel.compile(target=target, signature=sig, constexprs=constexprs,
                               num_warps=num_warps).asm)


def ptx_of(kernel: Any, types: list[str], constexprs: dict[str, int], **kw: Any) -> str:
    ptx = compile_asm(kernel, types, constexprs, **kw)["ptx"]
    assert isinstance(ptx, str)
    return ptx


def body(ptx: str) -> str:
    return ptx[ptx.index("{", ptx.index(".entry")):]




def ptxas_ok(ptx: str, arch: str = "sm_90a") -> int:
    """Assemble with ptxas; returns the register count, asserts no spills."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "k.ptx"
        path.write_text(ptx)
        r = subprocess.run(["ptxas", f"-arch={arch}", "-v", "-O3", str(path), "-o",
                            str(Path(d) / "k.cubin")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    spills = re.findall(r"(\d+) bytes spill (?:stores|loads)", r.stderr)
    assert all(int(s) == 0 for s in spills), r.stderr
    return int(re.search(r"Used (\d+) registers", r.stderr).group(1))  # type: ignore[union-attr]


PRED_LD = re.compile(r"^\s*@%p\d+ ld\.global(\.v\d)?\.b(\d+)", re.M)
PRED_ST = re.compile(r"^\s*@%p\d+ st\.global(\.v\d)?\.b(\d+)", re.M)
PLAIN_LD = re.compile(r"^\s*ld\.global[.\w]*", re.M)
PLAIN_ST = re.compile(r"^\s*st\.global[.\w]*", re.M)
BRA = re.compile(r"^\s*(@!?%p\d+\s+)?bra(\.uni)?\s", re.M)


def test_feature_is_on_nvidia_only() -> None:
    for name in ("sm80", "sm90", "sm100"):
        assert get_target(name).has(Feature.PTX_PREDICATED_MEM)
    for name in ("gfx90a", "gfx942", "gfx950", "gfx1100", "cpu"):
        assert not get_target(name).has(Feature.PTX_PREDICATED_MEM)


# ---------------------------------------------------------------- NVIDIA

@needs_ptxas
def test_masked_vector_add_is_predicated_without_branches() -> None:
    ptx = ptx_of(masked_add, ["*fp32", "*fp32", "*fp32", "i32"], {"BLOCK": 1024})
    # 8 fp32 per thread = 2 chunks of 128 bits per tensor, each under its own
    # chunk predicate, initialised to 0 by mov inside the asm; no branch.
    filecheck(body(ptx), """
CHECK-NOT: bra
CHECK: mov.b32 %r[[A0:[0-9]+]], 0x0;
CHECK-NEXT: mov.b32 %r[[A1:[0-9]+]], 0x0;
CHECK-NEXT: mov.b32 %r[[A2:[0-9]+]], 0x0;
CHECK-NEXT: mov.b32 %r[[A3:[0-9]+]], 0x0;
CHECK-NEXT: @%p[[P0:[0-9]+]] ld.global.v4.b32 { %r[[A0]], %r[[A1]], %r[[A2]], %r[[A3]] }, [ %rd{{[0-9]+}} + 0 ];
CHECK-NOT: bra
CHECK: @%p[[P1:[0-9]+]] ld.global.v4.b32 {
CHECK-NOT: bra
CHECK: @%p[[P0]] ld.global.v4.b32 {
CHECK-NOT: bra
CHECK: @%p[[P1]] ld.global.v4.b32 {
CHECK-NOT: bra
CHECK: @%p[[P0]] st.global.v4.b32 [ %rd{{[0-9]+}} + 0 ], { %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}} };
CHECK-NOT: bra
CHECK: @%p[[P1]] st.global.v4.b32 [ %rd{{[0-9]+}} + 0 ], {
CHECK-NOT: bra
CHECK: ret;
""")
    assert not PLAIN_LD.search(body(ptx)) or all(
        "param" in m.group(0) for m in PLAIN_LD.finditer(body(ptx)))
    assert ptxas_ok(ptx) <= 26   # Triton 3.9's vector add: 26 registers


@needs_ptxas
def test_unmasked_accesses_stay_plain() -> None:
    ptx = body(ptx_of(plain_add, ["*fp32", "*fp32", "*fp32"], {"BLOCK": 1024}))
    assert "inline asm" not in ptx and "@%p" not in ptx
    assert len(re.findall(r"^\s*ld\.global\.v4\.(?:b32|f32)", ptx, re.M)) == 4, ptx
    assert len(re.findall(r"^\s*st\.global\.v4\.(?:b32|f32)", ptx, re.M)) == 2, ptx
    ptxas_ok(ptx_of(plain_add, ["*fp32", "*fp32", "*fp32"], {"BLOCK": 1024}))


# dtype, (vector width suffix, bits) of a 16-divisible access, of a unit-stride
# access with n unknown (the mask then changes every element: w = 1).
WIDTHS = [
    ("fp32", (".v4", 32), ("", 32)),
    ("fp16", (".v4", 32), ("", 16)),
    ("bf16", (".v4", 32), ("", 16)),
    ("i8", (".v2", 32), ("", 8)),       # 1024 / 128 threads: 8 bytes per thread
    ("i16", (".v4", 32), ("", 16)),
    ("i64", (".v4", 32), (".v2", 32)),
    ("fp64", (".v4", 32), (".v2", 32)),
]


@needs_ptxas
@pytest.mark.parametrize("dtype,wide,narrow", WIDTHS)
def test_every_width_assembles(dtype: str, wide: tuple[str, int], narrow: tuple[str, int]) -> None:
    for divisible, (vec, bits) in ((True, wide), (False, narrow)):
        ptx = ptx_of(copy_other, [f"*{dtype}", f"*{dtype}", "i32"], {"BLOCK": 1024},
                     divisible=divisible)
        b = body(ptx)
        loads, stores = PRED_LD.findall(b), PRED_ST.findall(b)
        assert loads and stores, b
        assert set(loads) == {(vec, str(bits))}, (dtype, divisible, loads)
        assert set(stores) == {(vec, str(bits))}, (dtype, divisible, stores)
        assert not BRA.search(b), b
        ptxas_ok(ptx)


@needs_ptxas
def test_other_constant_is_an_immediate() -> None:
    b = body(ptx_of(copy_other, ["*fp16", "*fp16", "i32"], {"BLOCK": 1024}))
    # -1.0 in fp16 is 0xbc00: two per 32-bit word.
    assert "mov.b32 %r" in b and "0xbc00bc00;" in b, b
    b = body(ptx_of(copy_other, ["*bf16", "*bf16", "i32"], {"BLOCK": 1024}))
    assert "0xbf80bf80;" in b, b                       # bf16 -1.0 = 0xbf80
    b = body(ptx_of(copy_other, ["*fp32", "*fp32", "i32"], {"BLOCK": 1024}))
    assert "0xbf800000;" in b, b


@needs_ptxas
def test_other_tile_is_a_register_operand() -> None:
    ptx = ptx_of(tile_other, ["*fp32", "*fp32", "*fp32", "i32"], {"BLOCK": 1024})
    b = body(ptx)
    # The fallback values are moved from registers inside the asm block.
    assert re.search(r"mov\.b32 %r\d+, %r\d+;\s*\n\s*mov\.b32 %r\d+, %r\d+;", b), b
    assert len(PRED_LD.findall(b)) == 2 and not BRA.search(b), b
    ptxas_ok(ptx)


@needs_ptxas
def test_scalar_masked_access() -> None:
    ptx = ptx_of(scalar_masked, ["*fp32", "*fp32", "i32"], {})
    b = body(ptx)
    assert PRED_LD.findall(b) == [("", "32")] and PRED_ST.findall(b) == [("", "32")], b
    assert not BRA.search(b), b
    ptxas_ok(ptx)


@needs_ptxas
@pytest.mark.parametrize("target,arch", [("sm80", "sm_80"), ("sm100", "sm_100a")])
def test_other_nvidia_chips(target: str, arch: str) -> None:
    ptx = ptx_of(masked_add, ["*fp32", "*fp32", "*fp32", "i32"], {"BLOCK": 1024}, target=target)
    assert len(PRED_LD.findall(body(ptx))) == 4 and not BRA.search(body(ptx))
    ptxas_ok(ptx, arch)


def _order(b: str) -> list[str]:
    """The global accesses of a PTX body in order: 'ld'/'st'."""
    return [m.group(1) for m in re.finditer(r"^\s*(?:@%p\d+\s+)?(ld|st)\.global", b, re.M)]


@needs_ptxas
@pytest.mark.parametrize("kernel,expected", [
    # store p (2 chunks), load p (2), store q (2)
    (store_then_load, ["st", "st", "ld", "ld", "st", "st"]),
    (plain_store_then_masked_load, ["st", "st", "ld", "ld", "st", "st"]),
    (masked_store_then_plain_load, ["st", "st", "ld", "ld", "st", "st"]),
])
def test_load_after_store_is_not_reordered(kernel: Any, expected: list[str]) -> None:
    ptx = ptx_of(kernel, ["*fp32", "*fp32", "i32"], {"BLOCK": 1024})
    b = body(ptx)
    assert _order(b) == expected, b
    ptxas_ok(ptx)


# ---------------------------------------------------------------- AMD

def test_amd_keeps_masked_load() -> None:
    # gfx1100 has no `buffer_ops` (CDNA's buffer form: tests/test_amd_buffer_ops.py).
    text = compile_asm(masked_add, ["*fp32", "*fp32", "*fp32", "i32"], {"BLOCK": 1024},
                       target="gfx1100")
    gpu_ir = text.get("gpu")
    if not isinstance(gpu_ir, str):
        gpu_ir = masked_add.ir(target="gfx1100", signature={
            n: t + ":16" for n, t in zip(masked_add.runtime_names(),
                                         ["*fp32", "*fp32", "*fp32", "i32"])},
            constexprs={"BLOCK": 1024}, stage="gpu")
    # wave32 x 4 warps: 4 fp32 per thread, two chunks per tensor.
    assert "llvm.inline_asm" not in gpu_ir
    assert gpu_ir.count("llvm.intr.masked.load") == 4 and "scf.if" in gpu_ir
