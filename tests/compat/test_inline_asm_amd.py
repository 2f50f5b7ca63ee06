"""`tl.inline_asm_elementwise` on AMD GPUs: AMDGCN through `llvm.inline_asm`
with "=v,v" (VGPR) constraints, `pack` > 1 (four int8 or two f16 in one 32-bit
VGPR), two results.  Where the target record has
`Feature.INLINE_ASM_LLVM_MC` and an llvm-mc is found, the instruction is in
the AMDGCN text once per `pack` elements and ld.lld links the code object;
without an llvm-mc, or on a record without the feature, the kernel is refused
at its line (never an abort of the process).  The CPU refuses it at the line."""
from __future__ import annotations

import re
from typing import Any

import pytest

import tilec as triton
import tilec.language as tl
from tilec.targets import Feature, get_target, toolchain


@triton.jit
def add_self(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    y = tl.inline_asm_elementwise("v_add_u32 $0, $1, $1", "=v,v", [tl.load(x_ptr + offs)],
                                  dtype=tl.int32, is_pure=True, pack=1)
    tl.store(y_ptr + offs, y)


@triton.jit
def not_bytes(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    y = tl.inline_asm_elementwise("v_not_b32 $0, $1", "=v,v", [tl.load(x_ptr + offs)],
                                  dtype=tl.int8, is_pure=True, pack=4)
    tl.store(y_ptr + offs, y)


@triton.jit
def double_halves(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    y = tl.inline_asm_elementwise("v_pk_add_f16 $0, $1, $1", "=v,v", [tl.load(x_ptr + offs)],
                                  dtype=tl.float16, is_pure=True, pack=2)
    tl.store(y_ptr + offs, y)


@triton.jit
def add_and_max(x_ptr, y_ptr, s_ptr, m_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    s, m = tl.inline_asm_elementwise(
        "v_add_u32 $0, $2, $3\n\tv_max_i32 $1, $2, $3", "=v,=v,v,v",
        [tl.load(x_ptr + offs), tl.load(y_ptr + offs)], dtype=(tl.int32, tl.int32),
        is_pure=True, pack=1)
    tl.store(s_ptr + offs, s)
    tl.store(m_ptr + offs, m)


# kernel, signature, the instruction as it appears with registers, elements per instruction
CASES = [(add_self, "*i32,*i32", r"v_add_u32(_e32|_e64)? v\d+, v\d+, v\d+", 1),
         (not_bytes, "*i8,*i8", r"v_not_b32(_e32)? v\d+, v\d+", 4),
         (double_halves, "*fp16,*fp16", r"v_pk_add_f16 v\d+, v\d+, v\d+", 2),
         (add_and_max, "*i32,*i32,*i32,*i32", r"v_max_i32(_e32|_e64)? v\d+, v\d+, v\d+", 1)]


def _body(asm: str) -> str:
    """The kernel's instructions (the text before the kernel descriptor)."""
    return asm.split(".amdhsa_kernel", 1)[0]


@pytest.mark.parametrize("target", ["gfx942", "gfx90a"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_inline_amdgcn(target: str, case: int) -> None:
    kernel, sig, instr, per = CASES[case]
    n = 1024                                   # 4 waves of 64: 4 elements per lane
    compile_it: Any = lambda: kernel.compile(target=target, signature=sig,  # noqa: E731
                                             constexprs={"N": n})
    if not get_target(target).has(Feature.INLINE_ASM_LLVM_MC):
        with pytest.raises(triton.TilecError, match=f"not supported on {target}") as e:
            compile_it()
        assert "test_inline_asm_amd.py" in str(e.value)
        return
    if toolchain.find_llvm_mc() is None:
        with pytest.raises(triton.TilecError, match="llvm-mc") as e:
            compile_it()
        assert "test_inline_asm_amd.py" in str(e.value)
        return
    ck = compile_it()
    found = re.findall(instr, _body(ck.asm["amdgcn"]))
    assert len(found) == n // (4 * 64) // per, found      # once per `pack` elements
    if toolchain.find_lld() is None:
        pytest.skip("ld.lld not found")
    assert ck.asm.get("hsaco", b"")[:4] == b"\x7fELF", ck.metadata


def test_cpu_refuses_inline_asm_at_the_line() -> None:
    with pytest.raises(triton.TilecError) as e:
        add_self.compile(target="cpu", signature="*i32,*i32", constexprs={"N": 64})
    assert "CPU target cannot run it" in str(e.value) and "test_inline_asm_amd.py" in str(e.value)
