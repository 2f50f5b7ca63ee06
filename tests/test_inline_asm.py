"""tl.inline_asm_elementwise: PTX (assembled by ptxas), packed and unpacked,
several results; the argument checks made before LLVM sees the request; AMDGCN
through llvm-mc (or a located error without one); the CPU's located error."""
from __future__ import annotations

import re
from typing import Any

import pytest

import tilec
import tilec.language as tl
from tilec.errors import TilecError
from tilec.targets import toolchain


@tilec.kernel
def shl3_packed(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = tl.inline_asm_elementwise(asm="shl.b32 $0, $1, 3;", constraints="=r,r", args=[x],
                                  dtype=tl.uint8, is_pure=True, pack=4)
    tl.store(y_ptr + offs, y, mask=offs < n)


@tilec.kernel
def add_and_max(x_ptr, y_ptr, s_ptr, m_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = tl.load(y_ptr + offs, mask=offs < n)
    s, m = tl.inline_asm_elementwise(
        asm="add.s32 $0, $2, $3;\n\tmax.s32 $1, $2, $3;", constraints="=r,=r,r,r",
        args=[x, y], dtype=(tl.int32, tl.int32), is_pure=True, pack=1)
    tl.store(s_ptr + offs, s, mask=offs < n)
    tl.store(m_ptr + offs, m, mask=offs < n)


@tilec.kernel
def amd_add(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = tl.inline_asm_elementwise(asm="v_add_u32 $0, $1, 7", constraints="=v,v", args=[x],
                                  dtype=tl.int32, is_pure=True, pack=1)
    tl.store(y_ptr + offs, y, mask=offs < n)


def test_packed_asm_reaches_ptx_once_per_four_bytes() -> None:
    k: Any = shl3_packed.compile(target="sm90", signature="*u8:16,*u8:16,i32",
                                 constexprs={"BLOCK": 1024})
    ptx = k.asm["ptx"]
    body = ptx.split(".entry", 1)[1]
    # 1024 bytes over 128 threads: 8 per thread, two 32-bit registers of four.
    assert body.count("shl.b32") >= 2 and "shl.b32 %r" in body
    if k.metadata.get("cubin_error") is None:
        assert k.asm.get("cubin")


def test_two_results_and_the_same_asm_on_every_element() -> None:
    k: Any = add_and_max.compile(target="sm90", signature="*i32:16,*i32:16,*i32:16,*i32:16,i32",
                                 constexprs={"BLOCK": 256})
    ptx = k.asm["ptx"]
    assert ptx.count("max.s32") == ptx.count("add.s32 %r") >= 2


def test_amd_targets_assemble_it_with_llvm_mc_or_refuse_it_at_the_line() -> None:
    """The in-process AMDGPU back end cannot assemble inline AMDGCN (LLVM would
    abort emitting the object): the AMDGCN text goes through llvm-mc, and
    without one the kernel is a located error, in this process."""
    def build() -> Any:
        return amd_add.compile(target="gfx942", signature="*i32:16,*i32:16,i32",
                               constexprs={"BLOCK": 256})
    if toolchain.find_llvm_mc() is None:
        with pytest.raises(TilecError) as e:
            build()
        assert "llvm-mc" in str(e.value) and "test_inline_asm.py" in str(e.value)
        return
    k = build()
    assert re.search(r"v_add_u32(_e64)? v\d+, v\d+, 7", k.asm["amdgcn"])
    if toolchain.find_lld() is not None:
        assert k.asm["hsaco"][:4] == b"\x7fELF"


def test_the_cpu_target_names_the_line() -> None:
    with pytest.raises(TilecError) as e:
        add_and_max.compile(target="cpu", signature="*i32,*i32,*i32,*i32,i32",
                            constexprs={"BLOCK": 64})
    assert "test_inline_asm.py" in str(e.value) and "CPU target cannot run it" in str(e.value)


@tilec.kernel
def bad_constraints(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r", [x], tl.int32, True, 1)
    tl.store(x_ptr + offs, y)


@tilec.kernel
def bad_pack(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], tl.int32, True, 4)
    tl.store(x_ptr + offs, y)


@pytest.mark.parametrize("kernel,words", [
    (bad_constraints, "name 1 output(s) and 0 input(s)"),
    (bad_pack, "fill 128 bits"),
])
def test_malformed_requests_are_located_errors(kernel: Any, words: str) -> None:
    with pytest.raises(TilecError) as e:
        kernel.compile(target="sm90", signature="*i32:16,i32", constexprs={"BLOCK": 128})
    assert words in str(e.value) and "test_inline_asm.py" in str(e.value)
