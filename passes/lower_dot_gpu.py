"""GPU lowering rule for `tile.dot`: NVIDIA tensor cores (`mma.sync`) where the
target and the dot allow, else products on the vector units (FMA).

Registered in `convert-tile-to-gpu`'s rule registry.

Tensor cores (`target.has("mma_m16n8k16")`, f16/bf16 operands, f32
accumulator, and `tile-layout` gave the result the `mma.sync` accumulator
layout, `layouts.mma_accumulator_layout`): a is stored row-major and b
transposed (n-major) into workgroup memory between barriers; each warp then
runs, for every k-step of 16 and every 16 x 8 tile of the result it holds, one
`mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}` (inline PTX) whose A and B
registers are 32-bit workgroup-memory loads (two adjacent k elements each) and
whose C/D registers are the thread's accumulator fragment itself, so the
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

from tilec.passes.convert_tile_to_gpu import (
    _FuncLowering, _i32, _result, linear_index, lowering, shared_element, store_row_major,
)
from tilec.passes.layouts import mma_accumulator_layout


def _widen(v: ir.Value, to: ir.Type) -> ir.Value:
    if v.type == to:
        return v
    if isinstance(to, ir.FloatType):
        return arith.ExtFOp(to, v).result
    return arith.ExtSIOp(to, v).result


_MMA_KIND = {"f16": "f16", "bf16": "bf16"}


def _mma_kind(L: _FuncLowering, op: ir.Operation) -> str | None:
    """'f16'/'bf16' when this dot runs on the tensor cores, else None."""
    if not L.target.has("mma_m16n8k16"):
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


def _dot_mma(L: _FuncLowering, op: ir.Operation, kind: str) -> None:
    a, b, acc = op.operands
    res = _result(op)
    m_dim, k_dim = tuple(a.type.shape)
    n_dim = tuple(b.type.shape)[1]
    warps = L.num_warps
    elem = L.scalar_type(a.type.element_type)
    f32 = ir.F32Type.get()
    i32 = _i32()
    buf_a = L.shared_buffer(elem, m_dim * k_dim)
    buf_b = L.shared_buffer(elem, k_dim * n_dim)
    gpu.BarrierOp()
    store_row_major(L, a, buf_a, elem)
    store_row_major(L, b, buf_b, elem, [1, k_dim])   # b[k, n] at n * K + k
    gpu.BarrierOp()
    assert L.tid is not None
    lane = arith.AndIOp(L.tid, L.const_i32(31)).result
    g = arith.ShRUIOp(lane, L.const_i32(2)).result
    t2 = arith.ShLIOp(arith.AndIOp(lane, L.const_i32(3)).result, L.const_i32(1)).result
    warp = arith.ShRUIOp(L.tid, L.const_i32(5)).result
    # Row term g * K + 2t of every A register, and (8 w + g) * K + 2t of every B one.
    a_base = arith.AddIOp(arith.MulIOp(g, L.const_i32(k_dim)).result, t2).result
    b_row = arith.AddIOp(arith.ShLIOp(warp, L.const_i32(3)).result, g).result
    b_base = arith.AddIOp(arith.MulIOp(b_row, L.const_i32(k_dim)).result, t2).result

    def word(buf: ir.Value, base: ir.Value, offset: int) -> ir.Value:
        idx = arith.AddIOp(base, L.const_i32(offset)).result if offset else base
        return llvm.LoadOp(i32, shared_element(L, buf, idx, elem), alignment=4).result

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
        a_regs = [[word(buf_a, a_base, (16 * i + 8 * hr) * k_dim + k0 + 8 * hk)
                   for hk in (0, 1) for hr in (0, 1)] for i in range(m_tiles)]
        b_regs = [[word(buf_b, b_base, 8 * warps * j * k_dim + k0 + 8 * hk) for hk in (0, 1)]
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
