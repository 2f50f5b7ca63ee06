"""`tl.device_print` on AMD: the OpenCL printf-buffer ABI, with no device library.

MLIR's `convert-gpu-to-rocdl{runtime=OpenCL}` lowers `gpu.printf` to a call of
`printf(ptr addrspace(4) format, ...)`.  LLVM's AMDGPU printf pass
(AMDGPUPrintfRuntimeBinding, run by the O1-O3 pipelines of the AMDGPU target
machine) rewrites each such call: it asks `__printf_alloc(i32 bytes)` for a
slot, stores the call's format id and its arguments there, records the format
strings and argument sizes in the module (`llvm.printf.fmts`, which the code
object's metadata shows as `amdhsa.printf`), and the kernel gets the implicit
argument `hidden_printf_buffer`.  `__printf_alloc` itself comes from the
OpenCL device library, which tilec does not link: `printf_alloc_ir` is our own
definition of it, linked into every module that calls printf.

The ABI it implements (LLVM's AMDGPUUsage, "Code Object V5 Metadata": the
hidden kernel arguments follow the explicit ones; `hidden_printf_buffer`, a
64-bit global pointer, is at byte 72 of them from code object v5 on, byte 24
in v4; the buffer's layout is the runtime's):

    buffer + 0   u32  bytes used so far (the allocation counter)
    buffer + 4   u32  the buffer's size in bytes, header included
    buffer + 8   the records, each `bytes` long, in the order they were claimed

A slot is claimed by compare-and-swap on the counter (agent scope, relaxed),
so the counter never passes the end; a call that does not fit, or a kernel
launched without a buffer (a null `hidden_printf_buffer`), gets a null slot
and the printf pass's code then stores nothing.  The definition is external
and hidden: an internal one is deleted as unused before the printf pass adds
its calls (measured: ld.lld then finds `__printf_alloc` undefined); after
inlining, its own copy stays in the code object unused (a local symbol).

What prints: a runtime that fills `hidden_printf_buffer` for kernels whose
metadata lists it and reads the buffer after the kernel, formatting each
record with `amdhsa.printf` (the ROCm runtime does this for OpenCL kernels);
without one the records are written and nobody reads them.  Verified
statically only (no AMD GPU here): ld.lld links the object with
`--no-undefined`, the notes show `amdhsa.printf` and the argument
(tests/compat/test_device_print_amd.py).

Nearest upstream analogue: `__printf_alloc` of ROCm's device libraries
(OpenCL), which this file's IR does the same job as.
"""
from __future__ import annotations

import re
from typing import Any

from tilec.errors import CompilerBugError

# Byte offset of `hidden_printf_buffer` in the hidden kernel arguments.
_PRINTF_BUFFER_OFFSET = {4: 24, 5: 72, 6: 72}
_HEADER_BYTES = 8


def printf_buffer_offset(code_object_version: int | None) -> int:
    """Where the printf buffer pointer lies in the implicit kernel arguments
    (None: LLVM's default code object, v6, which keeps v5's layout)."""
    version = 6 if code_object_version is None else code_object_version
    if version not in _PRINTF_BUFFER_OFFSET:
        raise CompilerBugError(f"no printf buffer layout for code object v{version}")
    return _PRINTF_BUFFER_OFFSET[version]


def calls_printf(llir: str) -> bool:
    """Whether LLVM IR text declares the `printf` that the OpenCL lowering calls."""
    return re.search(r"^declare\b[^\n]*@printf\(", llir, re.M) is not None


def printf_alloc_ir(code_object_version: int | None, triple: str, data_layout: str) -> str:
    """LLVM IR text of a module defining `ptr addrspace(1) @__printf_alloc(i32)`."""
    at = printf_buffer_offset(code_object_version)
    return f"""target datalayout = "{data_layout}"
target triple = "{triple}"

declare ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr()

define hidden ptr addrspace(1) @__printf_alloc(i32 %bytes) {{
entry:
  %args = call ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr()
  %slot = getelementptr inbounds i8, ptr addrspace(4) %args, i64 {at}
  %buf = load ptr addrspace(1), ptr addrspace(4) %slot, align 8
  %none = icmp eq ptr addrspace(1) %buf, null
  br i1 %none, label %fail, label %header

header:
  %size.at = getelementptr inbounds i8, ptr addrspace(1) %buf, i64 4
  %size = load i32, ptr addrspace(1) %size.at, align 4
  %size.w = zext i32 %size to i64
  %want = zext i32 %bytes to i64
  %used0 = load atomic i32, ptr addrspace(1) %buf syncscope("agent") monotonic, align 4
  br label %again

again:
  %used = phi i32 [ %used0, %header ], [ %seen, %claim ]
  %used.w = zext i32 %used to i64
  %end0 = add i64 %used.w, %want
  %end = add i64 %end0, {_HEADER_BYTES}
  %full = icmp ugt i64 %end, %size.w
  br i1 %full, label %fail, label %claim

claim:
  %next = add i32 %used, %bytes
  %pair = cmpxchg ptr addrspace(1) %buf, i32 %used, i32 %next syncscope("agent") monotonic monotonic, align 4
  %seen = extractvalue {{ i32, i1 }} %pair, 0
  %won = extractvalue {{ i32, i1 }} %pair, 1
  br i1 %won, label %done, label %again

done:
  %records = getelementptr inbounds i8, ptr addrspace(1) %buf, i64 {_HEADER_BYTES}
  %record = getelementptr inbounds i8, ptr addrspace(1) %records, i64 %used.w
  ret ptr addrspace(1) %record

fail:
  ret ptr addrspace(1) null
}}
"""


def link_printf_alloc(mod: Any, code_object_version: int | None) -> bool:
    """Link `__printf_alloc` into the llvmlite module `mod` when it calls
    printf (before the optimisation pipeline, whose printf pass calls it);
    whether it did."""
    import llvmlite.binding as llvm_binding
    if not calls_printf(str(mod)):
        return False
    try:
        mod.get_function("__printf_alloc")
        return False                # already there (a module compiled twice)
    except NameError:
        pass
    alloc = llvm_binding.parse_assembly(
        printf_alloc_ir(code_object_version, mod.triple, mod.data_layout))
    alloc.verify()
    mod.link_in(alloc)
    return True
