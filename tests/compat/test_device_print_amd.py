"""`tl.device_print` / `print()` on AMD GPUs through the OpenCL printf buffer
(targets/amd/printf.py), checked statically (no AMD GPU here): the code object
links with `ld.lld --no-undefined` (tilec's own `__printf_alloc`, no device
library), `llvm-readelf --notes` shows each call's format in `amdhsa.printf`
with its argument sizes and the kernel's `hidden_printf_buffer` argument 72
bytes into the hidden arguments (code object v5), and the AMDGCN reads that
pointer and claims its slot with a compare-and-swap.  Whether the text is
printed is up to the runtime reading the buffer (tests/compat/SUMMARY.md)."""
from __future__ import annotations

import re

import pytest

import tilec as triton
import tilec.language as tl
from tilec.errors import CompilerBugError
from tilec.targets.amd import printf

from tests.toolcheck import readelf

AMD_TARGETS = ["gfx942", "gfx90a", "gfx950", "gfx1100"]
SIGNATURE = "*fp32, *i8, i32, fp64"


@triton.jit
def print_kernel(x_ptr, b_ptr, n, v):
    o = tl.arange(0, 64)
    tl.device_print("x = ", tl.load(x_ptr + o))
    tl.device_print("b", tl.load(b_ptr + o[:, None] * 2 + tl.arange(0, 2)[None, :]) != 0)
    print("n", n)
    tl.device_print("v", v)
    print("just text")
    for i in range(n):
        tl.device_print("i", i, hex=True)


def _records(notes: str) -> tuple[list[str], list[tuple[int, int, str]]]:
    """(amdhsa.printf entries, the kernel's (offset, size, value_kind) arguments)."""
    block = notes.split("amdhsa.printf:", 1)[1].split("amdhsa.target", 1)[0]
    formats = re.findall(r"^\s+- '(.*)'$", block, re.M)
    args = [(int(o), int(s), k) for o, s, k in re.findall(
        r"\.offset:\s+(\d+)\n(?:\s+\.\w+:.*\n)*?\s+\.size:\s+(\d+)\n(?:\s+\.\w+:.*\n)*?"
        r"\s+\.value_kind:\s+(\w+)", notes)]
    return formats, args


@pytest.mark.parametrize("target", AMD_TARGETS)
def test_print_links_with_the_printf_buffer(target: str) -> None:
    ck = print_kernel.compile(target=target, signature=SIGNATURE, constexprs={})
    hsaco = ck.asm.get("hsaco")
    if hsaco is None:
        pytest.skip(ck.metadata.get("hsaco_error", "no ld.lld"))
    assert hsaco[:4] == b"\x7fELF"
    notes = readelf(hsaco)
    formats, args = _records(notes)
    # id:argument count:argument sizes:format (':' written as \72); the
    # program ids and coordinates are i32, a float %f stays 4 bytes, fp64 8.
    want = [r"pid (%i, %i, %i) idx (%i) x =\72 %f\n",
            r"pid (%i, %i, %i) idx (%i, %i) b\72 %i\n",
            r"pid (%i, %i, %i) idx () n\72 %i\n",
            r"pid (%i, %i, %i) idx () v\72 %f\n",
            r"pid (%i, %i, %i) idx () just text\n",
            r"pid (%i, %i, %i) idx () i\72 0x%08x\n"]
    # (x's 1-D tile has a slice layout: one coordinate all the same)
    bodies = {f.split(":", maxsplit=2 + int(f.split(":")[1]))[-1]: f for f in formats}
    assert sorted(bodies) == sorted(want), formats
    assert bodies[want[0]].split(":")[1:7] == ["5", "4", "4", "4", "4", "4"]
    assert bodies[want[3]].split(":")[1:6] == ["4", "4", "4", "4", "8"]
    assert bodies[want[4]].split(":")[1:5] == ["3", "4", "4", "4"]
    explicit = [a for a in args if not a[2].startswith("hidden_")]
    hidden_start = (max(o + s for o, s, _ in explicit) + 7) // 8 * 8
    kinds = {k: o for o, _, k in args}
    assert kinds["hidden_printf_buffer"] == hidden_start + 72
    assert "hidden_hostcall_buffer" not in kinds
    # No device-library symbol is left: __printf_alloc is our own, local.
    assert re.search(r"LOCAL\s+HIDDEN\s+\d+\s+__printf_alloc$", notes, re.M)
    asm = ck.asm["amdgcn"]
    kernel = asm.split("print_kernel:", 1)[1].split(".Lfunc_end0", 1)[0]
    if target.startswith("gfx9"):     # the pointer read straight from the kernarg segment
        assert re.search(rf"s_load_dwordx2 s\[\d+:\d+\], s\[\d+:\d+\], "
                         rf"{hex(kinds['hidden_printf_buffer'])}\b", kernel), kernel[:2000]
    assert "global_atomic_cmpswap" in kernel
    assert "__printf_alloc" not in kernel       # inlined: no call


def test_printf_buffer_offsets_follow_the_code_object_version() -> None:
    assert printf.printf_buffer_offset(4) == 24
    assert printf.printf_buffer_offset(5) == 72
    assert printf.printf_buffer_offset(None) == 72       # LLVM's default, v6
    with pytest.raises(CompilerBugError, match="v3"):
        printf.printf_buffer_offset(3)
    ir4 = printf.printf_alloc_ir(4, "amdgcn-amd-amdhsa", "")
    assert "i64 24\n" in ir4 and "i64 72" not in ir4


def test_modules_without_printf_get_no_allocator() -> None:
    @triton.jit
    def plain(x_ptr):
        tl.store(x_ptr + tl.arange(0, 64), 1.0)

    ck = plain.compile(target="gfx942", signature="*fp32", constexprs={})
    assert "__printf_alloc" not in ck.asm["amdgcn"]
    assert "amdhsa.printf" not in ck.asm["amdgcn"]
    assert "hidden_printf_buffer" not in ck.asm["amdgcn"]
