"""CPU lowering of pointer <-> integer casts and element shuffles
(dialects/tile_elements.py).

| op | CPU form |
|---|---|
| `tile.int_to_ptr` | `llvm.inttoptr` on an i64 or a vector of i64. |
| `tile.ptr_to_int` | `llvm.ptrtoint`. |
| `tile.restride`   | one `vector.shuffle` of the (flat, row-major) sources with the index mask the op's view/strides/offset give. |
| `tile.gather`     | the source stored to a stack buffer, `llvm.intr.masked.gather` at the flat positions (index & (n - 1)) * stride + the constant part of each element's other coordinates: one for up to `GATHER_GROUP` lanes, else a loop of such gathers over groups of lanes (through stack buffers of the positions and the result). |
"""
from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith, llvm, scf, vector

from tilec.dialects import tile
from tilec.dialects import tile_elements as el
from tilec.errors import TilecError, source_loc
from tilec.passes.cpu.context import (
    GEP_DYNAMIC, CpuRules, Lowering, all_true, entry_alloca, for_loop, gather, int_t, is_bool,
    lane_ptr, scalar_bytes, shuffle2,
)

RULES = CpuRules("cpu.elements")


@RULES.rule("tile.inline_asm")
def inline_asm(lw: Lowering, op: ir.Operation) -> None:
    raise TilecError("tl.inline_asm_elementwise runs GPU assembly (PTX or AMDGCN); the CPU "
                     "target cannot run it: compile this kernel for a GPU target",
                     source_loc(op.location))


@RULES.rule("tile.int_to_ptr")
def int_to_ptr(lw: Lowering, op: ir.Operation) -> None:
    lw.bind(op.result, llvm.IntToPtrOp(lw.convert(op.result.type),
                                       lw.mapped(op.operands[0])).result)


@RULES.rule("tile.ptr_to_int")
def ptr_to_int(lw: Lowering, op: ir.Operation) -> None:
    lw.bind(op.result, llvm.PtrToIntOp(lw.convert(op.result.type),
                                       lw.mapped(op.operands[0])).result)


@RULES.rule("tile.restride")
def restride(lw: Lowering, op: ir.Operation) -> None:
    view, strides, offset = el.restride_params(op)
    n = 1
    for s in tile.shape_of(op.result.type):
        n *= s
    idx = [el.source_index(view, strides, offset, f) for f in range(n)]
    srcs = [lw.mapped(v) for v in op.operands]
    lw.bind(op.result, gather(srcs[0], idx) if len(srcs) == 1 else shuffle2(srcs[0], srcs[1], idx))


@RULES.rule("tile.gather")
def gather_elements(lw: Lowering, op: ir.Operation) -> None:
    axis = el.gather_axis(op)
    src_shape = tile.shape_of(op.operands[0].type)
    out_shape = tile.shape_of(op.result.type)
    src, idx = lw.mapped(op.operands[0]), lw.mapped(op.operands[1])
    vt = ir.VectorType(lw.convert(op.result.type))
    n = vt.shape[0]
    boolean = is_bool(vt)
    mem = int_t(8) if boolean else vt.element_type
    if boolean:
        src = arith.ExtUIOp(ir.VectorType.get([math.prod(src_shape)], mem), src).result
    buf = entry_alloca(lw, mem, math.prod(src_shape))
    llvm.StoreOp(src, buf, alignment=scalar_bytes(mem))
    rm = [math.prod(src_shape[d + 1:]) for d in range(len(src_shape))]
    fixed = []
    for flat in range(n):
        pos, rem = 0, flat
        for d in range(len(out_shape)):
            coord, rem = divmod(rem, math.prod(out_shape[d + 1:]))
            pos += 0 if d == axis else coord * rm[d]
        fixed.append(pos)
    i32v = ir.VectorType.get([n], int_t(32))

    def dense(values: list[int]) -> ir.Value:
        text = ", ".join(str(v) for v in values)
        return arith.ConstantOp(i32v, ir.Attribute.parse(f"dense<[{text}]> : {i32v}")).result

    # A power-of-two extent: masking keeps a bad index inside the buffer.
    off = arith.AndIOp(idx, dense([src_shape[axis] - 1] * n)).result
    if rm[axis] != 1:
        off = arith.MulIOp(off, dense([rm[axis]] * n)).result
    off = arith.AddIOp(off, dense(fixed)).result
    if n <= GATHER_GROUP:
        out = _gather(lw, buf, off, mem)
    else:
        # a loop over groups of lanes through stack buffers: LLVM scalarizes
        # gathers on hosts without fast ones (AMD Zen), and a 2048-lane one
        # unrolled took 27 s of code generation
        obuf = entry_alloca(lw, int_t(32), n)
        llvm.StoreOp(off, obuf, alignment=4)
        rbuf = entry_alloca(lw, mem, n)
        loop = for_loop(n, GATHER_GROUP)
        with ir.InsertionPoint(loop.body):
            j = loop.induction_variable
            g_off = llvm.LoadOp(ir.VectorType.get([GATHER_GROUP], int_t(32)),
                                lane_ptr(obuf, j, int_t(32)), alignment=4).result
            llvm.StoreOp(_gather(lw, buf, g_off, mem), lane_ptr(rbuf, j, mem),
                         alignment=scalar_bytes(mem))
            scf.YieldOp([])
        out = llvm.LoadOp(ir.VectorType.get([n], mem), rbuf, alignment=scalar_bytes(mem)).result
    lw.bind(op.result, arith.TruncIOp(vt, out).result if boolean else out)


# Lanes of a tl.gather gathered at once (larger tiles loop over groups).
GATHER_GROUP = 64


def _gather(lw: Lowering, buf: ir.Value, off: ir.Value, mem: ir.Type) -> ir.Value:
    """The elements of `buf` at the offsets `off` (a vector of i32)."""
    n = ir.VectorType(off.type).shape[0]
    pt = ir.VectorType.get([n], lw.llvm_ptr)
    base = vector.BroadcastOp(pt, buf).result
    ptrs = llvm.GEPOp(pt, base, [off], [GEP_DYNAMIC], mem, llvm.GEPNoWrapFlags.none).result
    mvt = ir.VectorType.get([n], mem)
    return llvm.masked_gather(mvt, ptrs, all_true(n), [llvm.PoisonOp(mvt).result],
                              scalar_bytes(mem)).result
