"""`convert-tile-to-gpu` rule for `tile.dot`: products on the vector units (FMA),
or a target's matrix instructions through the hook `hook.dot-mma`.

Input: `tile.dot %a, %b, %acc` at the tiled level: a [M, K] and b [K, N] with
any encodings, acc and the result [M, N] with one encoding; element types as
`tile-verify` allows (f16/bf16/f32 -> f32, f16 -> f16, f64 -> f64, int -> i32).
`tile-accelerate-dot` chose the family (`tile.mma`).  "wgmma" / "tcgen05": the
target hook `hook.dot-wgmma` / `hook.dot-tcgen05` lowers the whole dot
(targets/nvidia/wgmma.py, tcgen05.py; the generic hook declines and the dot
goes on as "mma_sync").  `tile.mma {kind}` (operands
already in `tile-pipeline`'s ring slots) goes to the target hook of its kind,
`hook.mma-wgmma`, `hook.mma-tcgen05` or `hook.mma-sync`
(targets/nvidia/mma_sync_ring.py).  Otherwise
a and b are stored row-major into workgroup memory by the threads that
hold them (between `gpu.barrier`s; each row followed by the padding the target
asks for).  Then either the target's matrix lowering (`hook.dot-mma` returns
`(row padding, emit)` for a dot it takes: targets/nvidia/rules.py, `mma.sync`
where `Feature.MMA_M16N8K16` holds; targets/amd/mfma.py, MFMA/WMMA; the
generic hook takes none), or every thread runs one `scf.for` over
k = 0 .. K-1 that carries its accumulator fragments and, for each result
element (m, n) it holds, loads A[m*K + k] and B[k*N + n], widens them to the
accumulator type and adds their product (`math.fma` for floats, `muli`+`addi`
for integers), in k order.  Each element is thus summed sequentially in k, in
the accumulator's precision (f32 operands are not rounded to tf32).

Both ways end with a barrier after the last reads of the two buffers, and this
rule then releases them: the next dot's staging (a dot in a loop, the several
dots of an attention backward) and later exchanges take the same bytes, so a
kernel's workgroup memory is that of its largest dot, not the sum of its dots.

Nearest upstream analogue: `vector.contract` lowered to outer products
(`LowerVectorContract`); Triton's FMA dot (`FMADotOpToLLVM`).
"""
from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import arith, gpu, llvm, scf
from mlir.dialects import math as math_dialect

from tilec.passes.gpu.context import (
    FuncLowering, Rule, linear_index, result, shared_element, store_row_major,
)
from tilec.passes.rules import RuleSet

RULES: RuleSet[Rule] = RuleSet("gpu.dot")

# ((M, K, N), element type, buffer of a, buffer of b) of the staged operands.
Staged = tuple[tuple[int, int, int], ir.Type, ir.Value, ir.Value]
# What a target's matrix lowering needs: the row padding, then its emitter.
MmaPlan = tuple[int, Callable[[Staged], None]]


@RULES.rule("hook.dot-mma")
def no_mma(L: FuncLowering, op: ir.Operation) -> MmaPlan | None:
    """No matrix instructions: the FMA loop runs."""
    return None


def _widen(v: ir.Value, to: ir.Type) -> ir.Value:
    if v.type == to:
        return v
    if isinstance(to, ir.FloatType):
        return arith.ExtFOp(to, v).result
    return arith.ExtSIOp(to, v).result


def _stage_operands(L: FuncLowering, a: ir.Value, b: ir.Value, pad: int) -> Staged:
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


@RULES.rule("hook.dot-wgmma", "hook.dot-tcgen05", "hook.dot-matrix")
def no_wgmma(L: FuncLowering, op: ir.Operation) -> bool:
    """No warpgroup MMA: the dot takes the next family (False: not lowered)."""
    return False


# The target hook that lowers the pipeliner's `tile.mma {kind}` (operands in
# ring slots): one generic rule dispatching on the kind, so that a target with
# several families (sm90: wgmma and mma.sync) never has two `tile.mma` rules.
_MMA_HOOKS = {"wgmma": "hook.mma-wgmma", "mma_sync": "hook.mma-sync",
              "tcgen05": "hook.mma-tcgen05"}
# The target hook that lowers a whole register-operand dot of an asynchronous
# family (False where the target declines: the dot goes on as mma_sync).
# "mfma" / "wmma": `hook.dot-matrix` lowers transposed products and dots with
# an operand from outside their loop (targets/amd/matrix_dot.py; False
# elsewhere: the dot is staged as below).
_DOT_HOOKS = {"wgmma": "hook.dot-wgmma", "tcgen05": "hook.dot-tcgen05",
              "mfma": "hook.dot-matrix", "wmma": "hook.dot-matrix"}


@RULES.rule("tile.mma")
def _mma(L: FuncLowering, op: ir.Operation) -> None:
    L.hook(_MMA_HOOKS[ir.StringAttr(op.attributes["kind"]).value])(L, op)


def _kind(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["tile.mma"]).value if "tile.mma" in op.attributes \
        else "fma"


@RULES.rule("tile.dot")
def _dot(L: FuncLowering, op: ir.Operation) -> None:
    kind = _kind(op)
    if kind in _DOT_HOOKS and L.hook(_DOT_HOOKS[kind])(L, op):
        return
    mma = L.hook("hook.dot-mma")(L, op) if kind != "fma" else None
    a, b, acc = op.operands
    res = result(op)
    staged = _stage_operands(L, a, b, mma[0] if mma is not None else 0)
    if mma is not None:
        mma[1](staged)      # ends with a barrier after its last reads of the buffers
        L.release_shared(staged[3])
        L.release_shared(staged[2])
        return
    (m_dim, k_dim, n_dim), elem, buf_a, buf_b = staged
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
                    c = math_dialect.FmaOp(av, bv, c).result
                else:
                    c = arith.AddIOp(c, arith.MulIOp(av, bv).result).result
                elems.append(c)
            out.append(L.concat(elems) if len(elems) > 1 else L.splat(elems[0], 1))
        scf.YieldOp(out)
    gpu.BarrierOp()
    L.release_shared(buf_b)  # a batched dot's next products reuse the bytes
    L.release_shared(buf_a)
    L.values[res] = list(loop.results)
