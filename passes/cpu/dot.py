"""CPU lowering of `tile.dot`.

Input: `tile.dot %a, %b, %acc` on the flat row-major vectors of the CPU form
(a: M*K, b: K*N, acc and result: M*N elements; element types as `tile-verify`
allows).
Output: a, b and acc are stored to stack buffers (allocas in the entry block);
an `scf.for` over the rows m of C carries row m of C as one `vector<N>` through
an inner `scf.for` over k: `c_row += splat(A[m, k]) * B[k, :]` (operands widened
to the accumulator type; `math.fma` for floats, `muli`+`addi` for integers),
so each element is summed sequentially in k in the accumulator's precision,
the same order as the GPU lowering; the row is stored back and the result is
the reloaded C buffer.  LLVM vectorizes the row operations to the host's SIMD
width.

Nearest upstream analogue: `vector.contract` lowered to outer products.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, llvm, scf, vector
from mlir.dialects import math as mlir_math

from tilec.dialects import tile
from tilec.passes.cpu.context import (CpuRules, Lowering, const_int, elem_of, entry_alloca,
                                      for_loop, int_t, lane_ptr, like)

RULES = CpuRules("cpu.dot")


def _widen(v: ir.Value, to_elem: ir.Type) -> ir.Value:
    if elem_of(v.type) == to_elem:
        return v
    rt = like(v.type, to_elem)
    if isinstance(to_elem, ir.FloatType):
        return arith.ExtFOp(rt, v).result
    return arith.ExtSIOp(rt, v).result


@RULES.rule("tile.dot")
def dot(lw: Lowering, op: ir.Operation) -> None:
    a, b, acc = op.operands
    m_dim, k_dim = tile.shape_of(a.type)
    n_dim = tile.shape_of(b.type)[1]
    elem = lw.scalar(tile.element_type(a.type))
    acc_t = lw.scalar(tile.element_type(op.result.type))
    i32 = int_t(32)
    row_t = ir.VectorType.get([n_dim], acc_t)
    brow_t = ir.VectorType.get([n_dim], elem)
    bufs = []
    for v, et, n in ((a, elem, m_dim * k_dim), (b, elem, k_dim * n_dim),
                     (acc, acc_t, m_dim * n_dim)):
        buf = entry_alloca(lw, et, n)
        llvm.StoreOp(lw.mapped(v), buf, alignment=lw.vector_bytes)
        bufs.append(buf)
    buf_a, buf_b, buf_c = bufs
    rows = for_loop(m_dim)
    with ir.InsertionPoint(rows.body):
        m = rows.induction_variable
        c_at = lane_ptr(buf_c, arith.MulIOp(m, const_int(i32, n_dim)).result, acc_t)
        crow = llvm.LoadOp(row_t, c_at, alignment=4).result
        a_row = arith.MulIOp(m, const_int(i32, k_dim)).result
        ks = for_loop(k_dim, carried=[crow])
        with ir.InsertionPoint(ks.body):
            k, c = ks.induction_variable, ks.inner_iter_args[0]
            a_idx = arith.AddIOp(a_row, k).result
            av = llvm.LoadOp(elem, lane_ptr(buf_a, a_idx, elem)).result
            av = vector.BroadcastOp(row_t, _widen(av, acc_t)).result
            b_idx = arith.MulIOp(k, const_int(i32, n_dim)).result
            bv = llvm.LoadOp(brow_t, lane_ptr(buf_b, b_idx, elem), alignment=1).result
            bv = _widen(bv, acc_t)
            if isinstance(acc_t, ir.FloatType):
                c = mlir_math.FmaOp(av, bv, c).result
            else:
                c = arith.AddIOp(c, arith.MulIOp(av, bv).result).result
            scf.YieldOp([c])
        llvm.StoreOp(ks.results[0], c_at, alignment=4)
        scf.YieldOp([])
    out_t = ir.VectorType.get([m_dim * n_dim], acc_t)
    lw.bind(op.result, llvm.LoadOp(out_t, buf_c, alignment=lw.vector_bytes).result)
