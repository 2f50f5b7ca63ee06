"""`convert-tile-to-gpu` rules for pointer <-> integer casts and element
shuffles (dialects/tile_elements.py).

* `tile.int_to_ptr` -> `llvm.inttoptr` to `!llvm.ptr<1>` per fragment chunk
  (or on the scalar); `tile.ptr_to_int` -> `llvm.ptrtoint`.
* `tile.restride`: every thread stores its elements of each source at their
  row-major positions in one workgroup-memory array (the second source after
  the first), a barrier, then each thread reads each of its result elements
  at `offset + sum(v_k * strides[k])`, where v are the element's coordinates
  in the op's `view` of the result, computed from its row-major position.
  The same exchange as `tile.reshape` (passes/gpu/shape.py).

Nearest upstream analogue: `convert-arith-to-llvm` (the casts); Triton's
`JoinOpConversion`/`SplitOpConversion`/`CatOpConversion` (the shuffles, which
Triton does in registers where its layouts allow).
"""
from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith, gpu, llvm

from tilec.dialects import tile_elements as el
from tilec.passes.gpu.context import (
    FuncLowering, Rule, i32, is_i1, is_tile, linear_index, result, shared_element,
    store_row_major,
)
from tilec.passes.rules import RuleSet

RULES: RuleSet[Rule] = RuleSet("gpu.elements")


def _each(L: FuncLowering, op: ir.Operation, build: type) -> None:
    src, res = op.operands[0], result(op)
    if not is_tile(src.type):
        L.values[res] = build(L.scalar_type(res.type), L.get(src)).result
        return
    L.values[res] = [build(t, f).result for t, f in zip(L.frag_types(res.type), L.frag(src))]


@RULES.rule("tile.int_to_ptr")
def _int_to_ptr(L: FuncLowering, op: ir.Operation) -> None:
    _each(L, op, llvm.IntToPtrOp)


@RULES.rule("tile.ptr_to_int")
def _ptr_to_int(L: FuncLowering, op: ir.Operation) -> None:
    _each(L, op, llvm.PtrToIntOp)


@RULES.rule("tile.restride")
def _restride(L: FuncLowering, op: ir.Operation) -> None:
    view, strides, offset = el.restride_params(op)
    res = result(op)
    elem = L.scalar_type(res.type.element_type)
    mem_t = ir.IntegerType.get_signless(8) if is_i1(elem) else elem
    sizes = [math.prod(s.type.shape) for s in op.operands]
    buf = L.shared_buffer(mem_t, sum(sizes))
    gpu.BarrierOp()
    start = 0
    for src, n in zip(op.operands, sizes):
        part = buf if start == 0 else shared_element(L, buf, L.const_i32(start), mem_t)
        store_row_major(L, src, part, mem_t)
        start += n
    gpu.BarrierOp()
    dd = L.dist(res.type)
    vt = ir.VectorType.get([dd.vec_len], i32())

    def const(c: int) -> ir.Value:
        return L.splat(L.const_i32(c), dd.vec_len)

    out = []
    for flat in linear_index(L, dd):
        idx = const(offset)
        for k, (size, stride) in enumerate(zip(view, strides)):
            inner = math.prod(view[k + 1:])
            coord = flat if inner == 1 else arith.DivUIOp(flat, const(inner)).result
            if k > 0:
                coord = arith.RemUIOp(coord, const(size)).result
            if stride != 1:
                coord = arith.MulIOp(coord, const(stride)).result
            idx = arith.AddIOp(idx, coord).result
        assert idx.type == vt
        elems = []
        for i in range(dd.vec_len):
            v = llvm.LoadOp(mem_t, shared_element(L, buf, L.extract(idx, i), mem_t)).result
            elems.append(arith.TruncIOp(elem, v).result if mem_t != elem else v)
        out.append(L.concat(elems) if len(elems) > 1 else L.splat(elems[0], 1))
    gpu.BarrierOp()
    L.release_shared(buf)  # read by every thread: later exchanges may reuse it
    L.values[res] = out

