"""`tile-prefetch-vectors`: the row/column vectors an attention-style loop
loads, one iteration ahead, in registers.

The backward of flash attention loads two vectors per key/query block inside
its loop (the log-sum-exp and delta rows of the block) next to the tiles its
dots read.  `tile-pipeline` streams the tiles through shared-memory rings; the
vectors stay plain global loads, each used a few instructions after it is
issued, so every iteration waits out their latency (measured on the H200: the
d = 64 backward at 0.79x Triton, whose pipeliner streams these loads too).
This pass loads them one iteration ahead instead (`tile-prefetch`'s rewrite,
restricted to rank-1 loads): a vector costs a thread a few registers, where a
prefetched tile would cost the accumulators theirs.

Input: tile-level IR before `tile-layout`, on targets with `Feature.WGMMA`
(where `tile-pipeline` takes multi-dot loops).  A `scf.for` is transformed
when its body holds at least two `tile.dot`s and qualifies for `tile-prefetch`
(no nested region, no store, atomic or barrier), and the tiles it carries
take less than half of a thread's 255 registers (measured: the d = 128
backward, whose dK and dV accumulators take 128, spilled 120 bytes with the
prefetch); of its loads only the rank-1 ones whose operands depend on the
induction variable and values from outside the loop are taken.
Output: as `tile-prefetch` (the first vector loaded before the loop, the next
at the top of each iteration with the mask `and`-ed with `iv + step < ub`,
carried as an iteration argument).  Other loops are unchanged.

Nearest upstream analogue: Triton's `tritongpu-pipeline`, which streams every
load of the loop (vectors included) through shared memory.
"""
from __future__ import annotations

from mlir import ir

from tilec.options import CompileOptions
from tilec.passes import pipeline_support as ps
from tilec.passes.analysis import axis_info
from tilec.passes.tile_prefetch import prefetch_loop
from tilec.targets import Feature, Target

NAME = "tile-prefetch-vectors"


def _vector(load: ir.Operation) -> bool:
    return ir.RankedTensorType(load.results[0].type).rank == 1


_REGISTER_SHARE = 128   # 32-bit registers per thread the carried tiles may take


def _carried_registers(for_op: ir.Operation, threads: int) -> int:
    total = 0
    for v in for_op.results:
        if isinstance(v.type, ir.RankedTensorType):
            t = ir.RankedTensorType(v.type)
            n = 1
            for d in t.shape:
                n *= d
            total += n * max(4, axis_info.type_bytes(t.element_type))
    return total // (4 * threads)


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    if not target.has(Feature.WGMMA):
        return
    threads = options.num_warps * target.warp_size
    for op in ps.loops(module.operation):   # innermost first
        body = op.regions[0].blocks[0]
        if sum(1 for o in ps.ops(body) if o.name == "tile.dot") >= 2 and \
                _carried_registers(op, threads) < _REGISTER_SHARE:
            prefetch_loop(op, _vector)
