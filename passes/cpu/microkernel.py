"""The register-blocked matrix-multiply microkernel behind the CPU `tile.dot`.

`emit` builds C_out = C_in + A @ B on row-major stack buffers (A: M x K,
B: K x N of the operand type; C_in, C_out: M x N of the accumulator type;
C_out may be C_in itself), the way BLAS micro-kernels are written:

    scf.for j in [0, N) step NR:            # a column panel of B stays in L1
      scf.for i in [0, M) step MR:
        c[r] = C_in[i + r, j : j + NR]      # MR vectors of NR lanes: registers
        scf.for k in [0, K):                 # carries the MR vectors
          b = widen(B[k, j : j + NR])
          c[r] = fma(splat(widen(A[i + r, k])), b, c[r])   for r < MR
        C_out[i + r, j : j + NR] = c[r]

NR is up to four SIMD registers of accumulator lanes (the largest such
divisor of N) and MR the largest divisor of M that keeps MR x NR within ~24
registers, so the IR has a fixed size whatever the tile shape: no op is wider
than NR lanes.  Each element of C is summed in k order in the accumulator's
type (`math.fma` for floats, `muli` + `addi` for integers), as before and as
the GPU lowering does.  C_in is read block by block before the block is
written, so C_out = C_in (an accumulator updated in place) is safe.

Nearest upstream analogue: `vector.contract` lowered to outer products
(`vector.outerproduct`), with a loop nest around it as `linalg` tiling would
make.
"""
from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith, llvm, scf, vector
from mlir.dialects import math as mlir_math

from tilec.passes.cpu.context import Lowering, const_int, for_loop, int_t, lane_ptr, scalar_bytes

NR_REGISTERS = 4    # SIMD registers of accumulator lanes per row of a block
BLOCK_REGISTERS = 24  # registers the MR x NR accumulators may take (of 32 on AVX-512)


def block_shape(lw: Lowering, m: int, n: int, acc_t: ir.Type) -> tuple[int, int]:
    """(MR, NR) for an M x N accumulator of `acc_t` on `lw.target`."""
    lanes = max(1, lw.vector_bytes // scalar_bytes(acc_t))
    nr = math.gcd(n, NR_REGISTERS * lanes)
    regs = -(-nr // lanes)
    cap = max(1, BLOCK_REGISTERS // regs)
    mr = max(d for d in range(1, min(m, cap) + 1) if m % d == 0)
    return mr, nr


def _widen(v: ir.Value, to: ir.Type) -> ir.Value:
    src = ir.VectorType(v.type).element_type if isinstance(v.type, ir.VectorType) else v.type
    if src == to:
        return v
    rt = ir.VectorType.get(ir.VectorType(v.type).shape, to) \
        if isinstance(v.type, ir.VectorType) else to
    if isinstance(to, ir.FloatType):
        return arith.ExtFOp(rt, v).result
    return arith.ExtSIOp(rt, v).result


def _mul_add(a: ir.Value, b: ir.Value, c: ir.Value, is_float: bool) -> ir.Value:
    if is_float:
        return mlir_math.FmaOp(a, b, c).result
    return arith.AddIOp(c, arith.MulIOp(a, b).result).result


def emit(lw: Lowering, a: ir.Value, b: ir.Value, c_in: ir.Value, c_out: ir.Value,
         shape: tuple[int, int, int], elem: ir.Type, acc_t: ir.Type) -> None:
    """C_out = C_in + A @ B for `shape` = (M, N, K) (see the module docstring)."""
    m, n, k = shape
    mr, nr = block_shape(lw, m, n, acc_t)
    i32 = int_t(32)
    is_float = isinstance(acc_t, ir.FloatType)
    crow_t = ir.VectorType.get([nr], acc_t)
    brow_t = ir.VectorType.get([nr], elem)
    ea, ec = scalar_bytes(elem), scalar_bytes(acc_t)

    def at(base: ir.Value, row: ir.Value, stride: int, col: ir.Value, et: ir.Type) -> ir.Value:
        idx = arith.AddIOp(arith.MulIOp(row, const_int(i32, stride)).result, col).result
        return lane_ptr(base, idx, et)

    cols = for_loop(n, nr)
    with ir.InsertionPoint(cols.body):
        j = cols.induction_variable
        rows = for_loop(m, mr)
        with ir.InsertionPoint(rows.body):
            i = rows.induction_variable
            row_ids = [arith.AddIOp(i, const_int(i32, r)).result if r else i for r in range(mr)]
            c_ptrs = [at(c_in, r, n, j, acc_t) for r in row_ids]
            cs = [llvm.LoadOp(crow_t, p, alignment=ec).result for p in c_ptrs]
            a_rows = [arith.MulIOp(r, const_int(i32, k)).result for r in row_ids]
            ks = for_loop(k, carried=cs)
            with ir.InsertionPoint(ks.body):
                kk = ks.induction_variable
                bv = _widen(llvm.LoadOp(brow_t, at(b, kk, n, j, elem), alignment=ea).result,
                            acc_t)
                new = []
                for r in range(mr):
                    av = llvm.LoadOp(elem, lane_ptr(a, arith.AddIOp(a_rows[r], kk).result,
                                                    elem)).result
                    av = vector.BroadcastOp(crow_t, _widen(av, acc_t)).result
                    new.append(_mul_add(av, bv, ks.inner_iter_args[r], is_float))
                scf.YieldOp(new)
            out_ptrs = c_ptrs if c_out == c_in else [at(c_out, r, n, j, acc_t) for r in row_ids]
            for v, p in zip(ks.results, out_ptrs):
                llvm.StoreOp(v, p, alignment=ec)
            scf.YieldOp([])
        scf.YieldOp([])
