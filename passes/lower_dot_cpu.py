"""CPU lowering rule for `tile.dot`, registered in `convert-tile-to-cpu`.

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

from tilec.dialects import tile
from tilec.passes.cpu import _Lowering, _rule
from tilec.passes.lower_reduce_cpu import _entry_alloca, _i64, _lane_ptr


def _widen(lw: _Lowering, v: ir.Value, to_elem: ir.Type) -> ir.Value:
    vt = v.type
    elem = ir.VectorType(vt).element_type if isinstance(vt, ir.VectorType) else vt
    if elem == to_elem:
        return v
    rt = ir.VectorType.get(ir.VectorType(vt).shape, to_elem) if isinstance(vt, ir.VectorType) \
        else to_elem
    name = "arith.extf" if isinstance(to_elem, ir.FloatType) else "arith.extsi"
    return lw.make(name, [rt], [v]).result


def _for(lw: _Lowering, upper: int, carried: list[ir.Value]) -> tuple[ir.Operation, ir.Block]:
    i32 = ir.IntegerType.get_signless(32)
    loop = lw.make("scf.for", [v.type for v in carried],
                   [lw.const_int(i32, 0), lw.const_int(i32, upper), lw.const_int(i32, 1)]
                   + carried, regions=1)
    body = loop.regions[0].blocks.append(i32, *[v.type for v in carried])
    return loop, body


@_rule("tile.dot")
def _dot(lw: _Lowering, op: ir.Operation) -> None:
    a, b, acc = op.operands
    m_dim, k_dim = tile.shape_of(a.type)
    n_dim = tile.shape_of(b.type)[1]
    elem = lw.scalar(tile.element_type(a.type))
    acc_t = lw.scalar(tile.element_type(op.result.type))
    i32 = ir.IntegerType.get_signless(32)
    row_t = ir.VectorType.get([n_dim], acc_t)
    brow_t = ir.VectorType.get([n_dim], elem)
    bufs = []
    for v, et, n in ((a, elem, m_dim * k_dim), (b, elem, k_dim * n_dim),
                     (acc, acc_t, m_dim * n_dim)):
        buf = _entry_alloca(lw, et, n)
        lw.make("llvm.store", [], [lw.mapped(v), buf], {"alignment": _i64(64)})
        bufs.append(buf)
    buf_a, buf_b, buf_c = bufs
    saved = lw.ip
    rows, rows_body = _for(lw, m_dim, [])
    lw.ip = ir.InsertionPoint(rows_body)
    m = rows_body.arguments[0]
    c_at = _lane_ptr(lw, buf_c, lw.make("arith.muli", [i32], [m, lw.const_int(i32, n_dim)]).result,
                     acc_t)
    crow = lw.make("llvm.load", [row_t], [c_at], {"alignment": _i64(4)}).result
    a_row = lw.make("arith.muli", [i32], [m, lw.const_int(i32, k_dim)]).result
    ks, ks_body = _for(lw, k_dim, [crow])
    lw.ip = ir.InsertionPoint(ks_body)
    k, c = ks_body.arguments[0], ks_body.arguments[1]
    a_idx = lw.make("arith.addi", [i32], [a_row, k]).result
    av = lw.make("llvm.load", [elem], [_lane_ptr(lw, buf_a, a_idx, elem)]).result
    av = lw.make("vector.broadcast", [row_t], [_widen(lw, av, acc_t)]).result
    b_idx = lw.make("arith.muli", [i32], [k, lw.const_int(i32, n_dim)]).result
    bv = lw.make("llvm.load", [brow_t], [_lane_ptr(lw, buf_b, b_idx, elem)],
                 {"alignment": _i64(1)}).result
    bv = _widen(lw, bv, acc_t)
    if isinstance(acc_t, ir.FloatType):
        c = lw.make("math.fma", [row_t], [av, bv, c]).result
    else:
        c = lw.make("arith.addi", [row_t], [c, lw.make("arith.muli", [row_t], [av, bv]).result
                                           ]).result
    lw.make("scf.yield", [], [c])
    lw.ip = ir.InsertionPoint(rows_body)
    lw.make("llvm.store", [], [ks.results[0], c_at], {"alignment": _i64(4)})
    lw.make("scf.yield", [], [])
    lw.ip = saved
    out_t = ir.VectorType.get([m_dim * n_dim], acc_t)
    lw.bind(op.result, lw.make("llvm.load", [out_t], [buf_c], {"alignment": _i64(64)}).result)
