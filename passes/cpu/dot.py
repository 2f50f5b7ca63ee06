"""CPU lowering of `tile.dot` on small tiles (vectors).

Input: `tile.dot %a, %b, %acc` on the flat row-major vectors of the CPU form
(a: M*K, b: K*N, acc and result: M*N elements; element types as `tile-verify`
allows).
Output: a, b and acc are stored to stack buffers (allocas in the entry
block), the register-blocked microkernel (microkernel.py) computes
C += A @ B in place in the acc buffer (each element summed in k order in the
accumulator's type, as the GPU lowering does), and the result is the reloaded
buffer.  Kernels with big tiles keep them in buffers throughout and call the
microkernel on those directly (tiled.py).

Nearest upstream analogue: `vector.contract` lowered to outer products.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import llvm

from tilec.dialects import tile
from tilec.passes.cpu import microkernel
from tilec.passes.cpu.context import CpuRules, Lowering, entry_alloca

RULES = CpuRules("cpu.dot")


@RULES.rule("tile.dot")
def dot(lw: Lowering, op: ir.Operation) -> None:
    a, b, acc = op.operands
    m_dim, k_dim = tile.shape_of(a.type)
    n_dim = tile.shape_of(b.type)[1]
    elem = lw.scalar(tile.element_type(a.type))
    acc_t = lw.scalar(tile.element_type(op.result.type))
    bufs = []
    for v, et, n in ((a, elem, m_dim * k_dim), (b, elem, k_dim * n_dim),
                     (acc, acc_t, m_dim * n_dim)):
        buf = entry_alloca(lw, et, n)
        llvm.StoreOp(lw.mapped(v), buf, alignment=lw.vector_bytes)
        bufs.append(buf)
    buf_a, buf_b, buf_c = bufs
    microkernel.emit(lw, buf_a, buf_b, buf_c, buf_c, (m_dim, n_dim, k_dim), elem, acc_t)
    out_t = ir.VectorType.get([m_dim * n_dim], acc_t)
    lw.bind(op.result, llvm.LoadOp(out_t, buf_c, alignment=lw.vector_bytes).result)
