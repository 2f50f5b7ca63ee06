"""CDNA buffer instructions for tile loads/stores (targets/amd/buffer_ops.py,
targets/amd/lane_range.py): an SGPR buffer resource + a 32-bit VGPR offset,
masked-off lanes sent out of range instead of branched around.

No AMD GPU exists here: the machine code is FileChecked and linked with
ld.lld --no-undefined, and the safety side is checked by kernels whose offsets
may pass 2^31 (they must keep the 64-bit global form)."""
from __future__ import annotations

from typing import Any

import pytest

import tilec
import tilec.language as tl
from tilec.targets import TARGETS, Feature
from toolcheck import filecheck

CDNA = [n for n, t in TARGETS.items() if t.has(Feature.BUFFER_OPS)]


@tilec.kernel
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@tilec.kernel
def row_copy(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-3.0)
    tl.store(out_ptr + row * stride + cols, x, mask=cols < n_cols)


@tilec.kernel
def strided(x_ptr, out_ptr, stride, BLOCK: tl.constexpr):
    # arange * stride may pass 2^31 elements: must stay 64-bit global accesses.
    offs = tl.arange(0, BLOCK) * stride
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + offs))


@tilec.kernel
def shifted(x_ptr, out_ptr, start, BLOCK: tl.constexpr):
    # start (no divisibility known) + arange may wrap in i32: no buffer form.
    offs = start + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


@tilec.kernel
def tile2d(x_ptr, out_ptr, BM: tl.constexpr, BN: tl.constexpr):
    r = tl.arange(0, BM)[:, None]
    c = tl.arange(0, BN)[None, :]
    offs = tl.program_id(0) * (BM * BN) + (r * BN + c)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x * 2)


def _asm(kernel: Any, target: str, sig: str, cx: dict[str, int]) -> Any:
    return kernel.compile(target=target, signature=sig, constexprs=cx, num_warps=4)


@pytest.mark.parametrize("target", CDNA)
def test_vector_add_buffer_form(target: str) -> None:
    ck = _asm(add, target, "*fp32:16,*fp32:16,*fp32:16,i32:16", {"BLOCK": 1024})
    assert ck.asm.get("hsaco"), "no hsaco linked (ld.lld --no-undefined)"
    # One resource per pointer, from the SGPR base advanced by pid * BLOCK * 4;
    # the mask picks the lane offset or 0x80000000 (out of range): no branch.
    filecheck(ck.asm["amdgcn"], """
CHECK-LABEL: add:
CHECK-NOT: s_cbranch_execz
CHECK: v_bfrev_b32_e32 [[OOB:v[0-9]+]], 1
CHECK: v_cndmask_b32_e32 [[OFF:v[0-9]+]], [[OOB]], v{{[0-9]+}}, vcc
CHECK: buffer_load_dwordx4 v[{{[0-9]+:[0-9]+}}], [[OFF]], s[{{[0-9]+:[0-9]+}}], 0 offen
CHECK: buffer_load_dwordx4 v[{{[0-9]+:[0-9]+}}], [[OFF]], s[{{[0-9]+:[0-9]+}}], 0 offen
CHECK-NOT: s_cbranch_execz
CHECK: buffer_store_dwordx4 v[{{[0-9]+:[0-9]+}}], [[OFF]], s[{{[0-9]+:[0-9]+}}], 0 offen
CHECK: s_endpgm
""")
    assert "0x27000" in ck.asm["amdgcn"]              # the resource's fourth word
    assert ck.metadata["vgpr_count"] <= 10, ck.metadata["vgpr_count"]   # Triton 3.9: 10
    filecheck(ck.asm["llir"], """
CHECK: [[BASE:%[0-9]+]] = getelementptr float, ptr addrspace(1) %0, i32 %{{[0-9]+}}
CHECK: call ptr addrspace(8) @llvm.amdgcn.make.buffer.rsrc.p8.p1(ptr addrspace(1) [[BASE]], i16 0, i64 2147483646, i32 159744)
CHECK: select i1 %{{[0-9]+}}, i32 %{{[0-9]+}}, i32 -2147483648
CHECK: @llvm.amdgcn.raw.ptr.buffer.load.v4i32
""")


def test_other_value_is_selected() -> None:
    ck = _asm(row_copy, "gfx942", "*fp32:16,*fp32:16,i32:16,i32", {"BLOCK": 256})
    # A masked-off lane reads 0 from the hardware: `other` (-3.0) replaces it.
    filecheck(ck.asm["llir"], """
CHECK: @llvm.amdgcn.raw.ptr.buffer.load
CHECK: select i1 %{{[0-9]+}}, float %{{[0-9]+}}, float -3.000000e+00
CHECK: @llvm.amdgcn.raw.ptr.buffer.store
""")


@pytest.mark.parametrize("kernel,sig,cx", [
    (strided, "*fp32:16,*fp32:16,i32", {"BLOCK": 256}),
    (shifted, "*fp32:16,*fp32:16,i32", {"BLOCK": 256}),
], ids=["runtime-stride", "unaligned-start"])
def test_unbounded_offsets_keep_global_form(kernel: Any, sig: str, cx: dict[str, int]) -> None:
    ck = _asm(kernel, "gfx942", sig, cx)
    load = ck.asm["amdgcn"].split("s_endpgm")[0]
    assert "global_load" in load and "buffer_load" not in load, load


def test_two_dimensional_offsets() -> None:
    ck = _asm(tile2d, "gfx942", "*fp16:16,*fp16:16", {"BM": 32, "BN": 64})
    body = ck.asm["amdgcn"].split("s_endpgm")[0]
    assert "buffer_load_dwordx4" in body and "buffer_store_dwordx4" in body, body
    assert "global_load" not in body and "global_store" not in body


def test_gfx1100_has_no_buffer_form() -> None:
    ck = _asm(add, "gfx1100", "*fp32:16,*fp32:16,*fp32:16,i32:16", {"BLOCK": 1024})
    assert "buffer_load" not in ck.asm["amdgcn"]


def test_lane_range_rules() -> None:
    """The range analysis on a small tile kernel: products and sums of ranges,
    remainders of non-negative values, and None for a runtime value."""
    from mlir import ir

    from tilec.targets.amd.lane_range import lane_range
    text = tile2d.ir(target="gfx942", signature="*fp16:16,*fp16:16",
                     constexprs={"BM": 32, "BN": 64}, stage="tiled")
    from tilec.dialects import tile as tile_dialect
    with tile_dialect.new_context() as ctx:
        m = ir.Module.parse(text, ctx)
        seen = {}
        for op in m.body.operations[0].regions[0].blocks[0].operations:
            for r in op.results:
                rr = lane_range(r)
                if rr is not None and isinstance(r.type, ir.RankedTensorType):
                    seen[str(r.type.shape)] = seen.get(str(r.type.shape), []) + [rr]
        assert (0, 32 * 64 - 1) in seen["[32, 64]"], seen
