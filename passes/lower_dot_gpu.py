"""GPU lowering rule for `tile.dot`: products on the vector units (FMA), no
matrix units yet.

Registered in `convert-tile-to-gpu`'s rule registry.

Input: `tile.dot %a, %b, %acc` at the tiled level: a [M, K] and b [K, N] with
any encodings, acc and the result [M, N] with one encoding; element types as
`tile-verify` allows (f16/bf16/f32 -> f32, f16 -> f16, f64 -> f64, int -> i32).
Output: a and b are stored row-major into workgroup memory by the threads that
hold them (between `gpu.barrier`s); then every thread runs one `scf.for` over
k = 0 .. K-1 that carries its accumulator fragments and, for each result
element (m, n) it holds, loads A[m*K + k] and B[k*N + n], widens them to the
accumulator type and adds their product (`math.fma` for floats, `muli`+`addi`
for integers), in k order; a last barrier lets the buffers be reused (a dot in
a loop).  Each element is thus summed sequentially in k, in the accumulator's
precision (f32 operands are not rounded to tf32).

Nearest upstream analogue: `vector.contract` lowered to outer products
(`LowerVectorContract`); Triton's FMA dot (`FMADotOpToLLVM`).
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, gpu, llvm, scf

from tilec.passes.convert_tile_to_gpu import (
    _FuncLowering, _result, linear_index, lowering, shared_element, store_row_major,
)


def _widen(v: ir.Value, to: ir.Type) -> ir.Value:
    if v.type == to:
        return v
    if isinstance(to, ir.FloatType):
        return arith.ExtFOp(to, v).result
    return arith.ExtSIOp(to, v).result


@lowering("tile.dot")
def _dot(L: _FuncLowering, op: ir.Operation) -> None:
    a, b, acc = op.operands
    res = _result(op)
    m_dim, k_dim = tuple(a.type.shape)
    n_dim = tuple(b.type.shape)[1]
    elem = L.scalar_type(a.type.element_type)
    acc_t = L.scalar_type(res.type.element_type)
    is_float = isinstance(acc_t, ir.FloatType)
    buf_a = L.shared_buffer(elem, m_dim * k_dim)
    buf_b = L.shared_buffer(elem, k_dim * n_dim)
    gpu.BarrierOp()
    store_row_major(L, a, buf_a, elem)
    store_row_major(L, b, buf_b, elem)
    gpu.BarrierOp()
    dc = L.dist(res.type)
    # Per chunk and lane of the result fragment: m * K (A's row start) and n.
    row_starts = linear_index(L, dc, [k_dim, 0])
    cols = linear_index(L, dc, [0, 1])
    zero, kk, one = L.const_i32(0), L.const_i32(k_dim), L.const_i32(1)
    loop = scf.ForOp(zero, kk, one, list(L.frag(acc)))
    with ir.InsertionPoint(loop.body):
        k = loop.induction_variable
        k_row = arith.MulIOp(k, L.const_i32(n_dim)).result if n_dim > 1 else k
        out = []
        for chunk, rs, cs in zip(loop.inner_iter_args, row_starts, cols):
            elems = []
            for i in range(dc.vec_len):
                ia = arith.AddIOp(L.extract(rs, i), k).result
                ib = arith.AddIOp(k_row, L.extract(cs, i)).result
                av = _widen(llvm.LoadOp(elem, shared_element(L, buf_a, ia, elem)).result, acc_t)
                bv = _widen(llvm.LoadOp(elem, shared_element(L, buf_b, ib, elem)).result, acc_t)
                c = L.extract(chunk, i)
                if is_float:
                    c = ir.Operation.create("math.fma", results=[acc_t],
                                            operands=[av, bv, c]).result
                else:
                    c = arith.AddIOp(c, arith.MulIOp(av, bv).result).result
                elems.append(c)
            out.append(L.concat(elems) if len(elems) > 1 else L.splat(elems[0], 1))
        scf.YieldOp(out)
    gpu.BarrierOp()
    L.values[res] = list(loop.results)
