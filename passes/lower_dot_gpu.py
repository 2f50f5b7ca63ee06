"""GPU lowering rule for `tile.dot`: NVIDIA tensor cores (`mma.sync`) where the
target and the dot allow, else products on the vector units (FMA).

Registered in `convert-tile-to-gpu`'s rule registry.

Tensor cores (`target.has(Feature.MMA_M16N8K16)`, f16/bf16 operands, f32
accumulator, and `tile-layout` gave the result the `mma.sync` accumulator
layout, `layouts.mma_accumulator_layout`): a and b are stored row by row into
workgroup memory, each row padded by 16 bytes against bank conflicts (16-byte
vector stores where the operand layout allows), between barriers; each warp then runs, for every k-step of 16 and every 16 x 8
tile of the result it holds, one `mma.sync.aligned.m16n8k16.row.col.f32.{f16,
bf16}` (inline PTX) whose A registers come from one `ldmatrix.x4` per 16-row
block and whose B registers from one `ldmatrix.x2.trans` per 8-column block,
and whose C/D registers are the thread's accumulator fragment itself, so the
accumulator stays in registers across an enclosing K loop.  A last barrier lets
the buffers be reused.

Otherwise (FMA):

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

from tilec.passes.gpu import (
    _FuncLowering, _i32, _result, linear_index, lowering, shared_element, store_row_major,
)
from tilec.passes.analysis.layouts import mma_accumulator_layout
from tilec.targets import Feature


def _widen(v: ir.Value, to: ir.Type) -> ir.Value:
    if v.type == to:
        return v
    if isinstance(to, ir.FloatType):
        return arith.ExtFOp(to, v).result
    return arith.ExtSIOp(to, v).result


_MMA_KIND = {"f16": "f16", "bf16": "bf16"}
# Elements after each staged row on the mma path: 16 bytes, so the 8 rows one
# ldmatrix phase reads (K + 8 or N + 8 elements apart) start in different
# 16-byte bank groups (no bank conflicts for K, N multiples of 16).
_MMA_PAD = 8


def _mma_kind(L: _FuncLowering, op: ir.Operation) -> str | None:
    """'f16'/'bf16' when this dot runs on the tensor cores, else None."""
    if not L.target.has(Feature.MMA_M16N8K16):
        return None
    a, b = op.operands[0].type, op.operands[1].type
    kind = _MMA_KIND.get(str(a.element_type))
    res = _result(op).type
    if kind is None or str(res.element_type) != "f32":
        return None
    (m, k), n = tuple(a.shape), tuple(b.shape)[1]
    want = mma_accumulator_layout(m, n, k, L.target.warp_size, L.num_warps)
    d = L.dist(res)
    if want is None or d.sliced_dim is not None or d.blocked != want:
        return None
    return kind


def _stage_operands(L: _FuncLowering, a: ir.Value, b: ir.Value, pad: int = 0
                    ) -> tuple[tuple[int, int, int], ir.Type, ir.Value, ir.Value]:
    """Store a [M, K] and b [K, N] row by row into workgroup memory between
    barriers, each row followed by `pad` unused elements (row strides K + pad
    and N + pad); ((M, K, N), element type, buffer of a, buffer of b)."""
    m_dim, k_dim = tuple(a.type.shape)
    n_dim = tuple(b.type.shape)[1]
    elem = L.scalar_type(a.type.element_type)
    buf_a = L.shared_buffer(elem, m_dim * (k_dim + pad))
    buf_b = L.shared_buffer(elem, k_dim * (n_dim + pad))
    gpu.BarrierOp()
    store_row_major(L, a, buf_a, elem, [k_dim + pad, 1])
    store_row_major(L, b, buf_b, elem, [n_dim + pad, 1])
    gpu.BarrierOp()
    return (m_dim, k_dim, n_dim), elem, buf_a, buf_b


def _ldmatrix(addr: ir.Value, count: int, trans: bool) -> list[ir.Value]:
    """`ldmatrix.sync.aligned.m8n8.x{count}[.trans].shared.b16` at the lane's row
    address `addr` (a 32-bit workgroup-memory address): `count` 32-bit registers.
    It has side effects for LLVM so it stays after the barrier that publishes
    the data."""
    i32 = _i32()
    regs = ",".join(f"${r}" for r in range(count))
    text = (f"ldmatrix.sync.aligned.m8n8.x{count}{'.trans' if trans else ''}.shared.b16 "
            f"{{{regs}}}, [${count}];")
    res_t = llvm.StructType.get_literal([i32] * count)
    out = llvm.InlineAsmOp(res_t, [addr], text, ",".join(["=r"] * count + ["r"]),
                           has_side_effects=True).result
    return [llvm.ExtractValueOp(i32, out, [r]).result for r in range(count)]


def _dot_mma(L: _FuncLowering, op: ir.Operation, kind: str) -> None:
    a, b, acc = op.operands
    res = _result(op)
    (m_dim, k_dim, n_dim), elem, buf_a, buf_b = _stage_operands(L, a, b, _MMA_PAD)
    ka, nb = k_dim + _MMA_PAD, n_dim + _MMA_PAD   # row strides in workgroup memory
    warps = L.num_warps
    f32 = ir.F32Type.get()
    i32 = _i32()
    assert L.tid is not None
    lane = arith.AndIOp(L.tid, L.const_i32(31)).result
    l16 = arith.AndIOp(lane, L.const_i32(15)).result
    hi8 = arith.ShLIOp(arith.ShRUIOp(lane, L.const_i32(4)).result, L.const_i32(3)).result
    warp = arith.ShRUIOp(L.tid, L.const_i32(5)).result
    # Row addresses the lanes give ldmatrix, in bytes: A (x4): row l % 16 of the
    # 16 x 16 block, column 8 * (l / 16); B (x2.trans): k row l % 16, columns 8 w...
    a_elem = arith.AddIOp(arith.MulIOp(l16, L.const_i32(ka)).result, hi8).result
    b_elem = arith.AddIOp(arith.MulIOp(l16, L.const_i32(nb)).result,
                          arith.ShLIOp(warp, L.const_i32(3)).result).result
    two = L.const_i32(2)
    a_addr = arith.AddIOp(llvm.PtrToIntOp(i32, buf_a).result,
                          arith.MulIOp(a_elem, two).result).result
    b_addr = arith.AddIOp(llvm.PtrToIntOp(i32, buf_b).result,
                          arith.MulIOp(b_elem, two).result).result

    def at(base: ir.Value, elements: int) -> ir.Value:
        return arith.AddIOp(base, L.const_i32(2 * elements)).result if elements else base

    d = L.dist(res.type)
    frag = list(L.frag(acc))
    m_tiles, n_tiles = m_dim // 16, n_dim // (8 * warps)
    # acc[(i, j)] = [c0, c1, c2, c3] of the 16 x 8 tile (i, j) this warp holds.
    regs: dict[tuple[int, int], list[ir.Value]] = {}
    for i in range(m_tiles):
        for j in range(n_tiles):
            top = frag[d.chunk_index((2 * i, 2 * j))]
            bottom = frag[d.chunk_index((2 * i + 1, 2 * j))]
            regs[(i, j)] = [L.extract(top, 0), L.extract(top, 1),
                            L.extract(bottom, 0), L.extract(bottom, 1)]
    res_t = llvm.StructType.get_literal([f32] * 4)
    text = (f"mma.sync.aligned.m16n8k16.row.col.f32.{kind}.{kind}.f32 "
            "{$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};")
    cons = "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3"
    for kk in range(k_dim // 16):
        k0 = 16 * kk
        a_regs = [_ldmatrix(at(a_addr, 16 * i * ka + k0), 4, False) for i in range(m_tiles)]
        b_regs = [_ldmatrix(at(b_addr, k0 * nb + 8 * warps * j), 2, True)
                  for j in range(n_tiles)]
        for (i, j), c in regs.items():
            out = llvm.InlineAsmOp(res_t, a_regs[i] + b_regs[j] + c, text, cons).result
            regs[(i, j)] = [llvm.ExtractValueOp(f32, out, [r]).result for r in range(4)]
    gpu.BarrierOp()
    chunks: list[ir.Value | None] = [None] * d.num_chunks
    for (i, j), c in regs.items():
        chunks[d.chunk_index((2 * i, 2 * j))] = L.concat(c[:2])
        chunks[d.chunk_index((2 * i + 1, 2 * j))] = L.concat(c[2:])
    assert all(ch is not None for ch in chunks)
    L.values[res] = [ch for ch in chunks if ch is not None]


@lowering("tile.dot")
def _dot(L: _FuncLowering, op: ir.Operation) -> None:
    kind = _mma_kind(L, op)
    if kind is not None:
        _dot_mma(L, op, kind)
        return
    a, b, acc = op.operands
    res = _result(op)
    (m_dim, k_dim, n_dim), elem, buf_a, buf_b = _stage_operands(L, a, b)
    acc_t = L.scalar_type(res.type.element_type)
    is_float = isinstance(acc_t, ir.FloatType)
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
