"""NVIDIA `mma.sync` on the pipeliner's shared-memory rings (`Feature.MMA_M16N8K16`,
sm80 and later): `tile.mma {kind = "mma_sync"}`.

| key | feature | lowering |
|---|---|---|
| `hook.mma-sync` | `MMA_M16N8K16` | `tile.mma {kind = "mma_sync"}` (passes/gpu/dot.py dispatches on kind): `ldmatrix` + `mma.sync.m16n8k16` on a ring slot |

The rings of an mma.sync loop (`tile-pipeline`) are `tile.local_alloc {swizzle =
0, row_permutation = "none"}`: each slot is a row-major tile, rows padded by 16
bytes (`layouts.PaddedTile`, what `tile.async_copy` writes), A [M, K] and
B [K, N] as loaded.  That is the layout `passes/gpu/dot.py` stages register
operands in for the non-pipelined dot, so the product is the same emission
(`rules.mma_sync_product`: per k-step of 16, one `ldmatrix.x4` per 16-row
block of A and one `ldmatrix.x2.trans` per 8-column block of B, then one
`mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}` per 16 x 8 tile the warp
holds, on the accumulator registers themselves), with the slot's byte offset
added to both base addresses.

`mma.sync` is synchronous: the result is complete when the instruction is, so
no wait follows it, and no barrier either: the pipeliner's barrier at the top
of the next iteration is what orders these `ldmatrix` reads before the copies
that overwrite the slot.

Nearest upstream analogue: `nvgpu.ldmatrix` + `nvgpu.mma.sync` (NVGPUToNVVM);
Triton's MMAv2 lowering (`MMAv2.cpp`) on a shared-memory operand.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from mlir import ir
from mlir.dialects import arith

from tilec.errors import CompilerBugError
from tilec.passes.analysis.layouts import PaddedTile, mma_accumulator_layout
from tilec.passes.rules import RuleSet
from tilec.targets import Feature
from tilec.targets.nvidia.rules import mma_sync_chunks, mma_sync_product
from tilec.targets.nvidia.wgmma import ring_tile

if TYPE_CHECKING:
    from tilec.passes.gpu.context import FuncLowering, Rule

RULES: RuleSet[Rule] = RuleSet("nvidia-mma-sync-ring")
_KINDS = {"f16": "f16", "bf16": "bf16"}


@RULES.rule("hook.mma-sync", feature=Feature.MMA_M16N8K16)
def _mma_sync_ring(L: FuncLowering, op: ir.Operation) -> None:
    ring_a, slot_a, ring_b, slot_b, acc = op.operands
    res = op.results[0]
    ta, _ = ring_tile(L, ring_a)
    tb, _ = ring_tile(L, ring_b)
    kind = _KINDS.get(str(ir.MemRefType(ring_a.type).element_type))
    d = L.dist(res.type)
    m, k, n = ta.rows, ta.cols, tb.cols
    want = mma_accumulator_layout(m, n, k, L.target.warp_size, L.num_warps)
    if not (isinstance(ta, PaddedTile) and isinstance(tb, PaddedTile)) or kind is None or \
            tb.rows != k or want is None or d.sliced_dim is not None or d.blocked != want or \
            str(ir.RankedTensorType(res.type).element_type) != "f32":
        raise CompilerBugError(f"tile.mma kind mma_sync on rings {ring_a.type}, {ring_b.type} "
                               f"with result {res.type}: not an mma.sync product")
    a_off = arith.MulIOp(L.get(slot_a), L.const_i32(ta.nbytes)).result
    b_off = arith.MulIOp(L.get(slot_b), L.const_i32(tb.nbytes)).result
    eb = ta.elem_bytes
    regs = mma_sync_product(L, kind, L.get(ring_a), L.get(ring_b), (m, k, n),
                            (ta.row_bytes // eb, tb.row_bytes // eb), L.frag(acc), d,
                            (a_off, b_off))
    L.values[res] = mma_sync_chunks(L, d, regs)
