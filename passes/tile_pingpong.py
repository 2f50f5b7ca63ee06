"""`tile-pingpong`: the two warpgroups of an attention-style loop issue their
tensor-core products in turns (FlashAttention-3's ping-pong schedule), on
loops written `tl.range(..., warp_specialize=True)`.

Why: in a loop whose body is dot, softmax, dot (attention's forward), both
warpgroups wait on the same copies, so without an order they issue their
products together and then compute their softmax together: the tensor cores
idle while the exponentials run.  With turns, warpgroup 1 issues its products
while warpgroup 0 computes its softmax, and the other way round.

Input: tiled IR after `tile-pipeline`, on a target with `Feature.WGMMA`, with
`num_warps` = 8 (two warpgroups).  A loop qualifies when
  * it has `tile.warp_specialize` and sits directly in the kernel's body (not
    in another loop or a branch: every warpgroup runs it exactly once, so the
    turns of all qualifying loops form one sequence);
  * its body holds `tile.mma {kind = "wgmma"}` ops (the pipeliner's
    multi-product loop, passes/tile_pipeline_multi.py) and no region;
  * every product's accumulator has the wgmma layout with all warps along
    the rows (`warps = (8, 1)`) and a multiple of 128 rows: each warpgroup
    issues products of its own rows, and the row reductions between them stay
    inside its warps.
Output: each run of consecutive `tile.mma` ops in the body is bracketed by
`tile.turn_wait` before and `tile.turn_pass` after; one `tile.turn_init` at
the start of the kernel when any loop got turns; the loop and the kernel get
`tile.pingpong`.

A loop with the hint that does not qualify keeps its schedule and gets
`tile.warp_specialize_note` saying why.  tile-warp-specialize runs first: a
loop it gave a producer warpgroup no longer has the hint (with the producer,
turns on the consumers' loop measured no faster: benchmarks/results/README.md),
so turns are for the loops it leaves (copies from values the loop carries).

Measured (H200, attention forward (4, 32, 4096, 128) fp16): the turns make it
5-7% slower than the unordered schedule (2.25 vs 2.13 ms at 128x64, 4 stages;
2.19 vs 2.04 ms at 128x128, 3 stages), so nothing asks for them by default.

The GPU lowering (targets/nvidia/pingpong.py) makes them named barriers and
takes them out again from any loop whose lowered body has a CTA-wide barrier
(a layout conversion through shared memory, say), where turns would deadlock.
Deadlock freedom otherwise: a warpgroup blocks only on turns, on the copies
that thread 0 issued one or more iterations earlier, and (thread 0) on both
warpgroups having released a slot in an earlier iteration; none of those
needs the other warpgroup to get past a turn that comes after the waiting
one's, so the alternation always lets one of them move.

Nearest upstream analogue: FlashAttention-3's warp-scheduler barriers (named
barriers around each warpgroup's GEMMs); Triton's warp specialization splits
producers from consumers instead (`tritongpu-warp-specialize`).
"""
from __future__ import annotations

from mlir import ir

from tilec.dialects import tile, tile_memory
from tilec.options import CompileOptions
from tilec.passes import pipeline_support as ps
from tilec.targets import Feature, Target

NAME = "tile-pingpong"

WARPGROUPS = 2
_WARPGROUP_WARPS = 4
_WGMMA_ROWS = 64


def _reason(body: ir.Block, num_warps: int) -> str | None:
    """Why the loop with body `body` cannot take turns, or None."""
    if num_warps != WARPGROUPS * _WARPGROUP_WARPS:
        return f"turns need num_warps={WARPGROUPS * _WARPGROUP_WARPS} (two warpgroups)"
    mmas = [op for op in ps.ops(body) if op.name == "tile.mma"]
    if not mmas:
        return "the loop has no pipelined wgmma products"
    for op in ps.ops(body):
        if len(op.regions):
            return "the loop's body has a region"
    for m in mmas:
        if ir.StringAttr(m.attributes["kind"]).value != "wgmma":
            return "a product is not a wgmma"
        acc_t = m.results[0].type
        layout = tile.layout_of(acc_t)
        shape = tile.shape_of(acc_t)
        if not isinstance(layout, tile.Blocked) or layout.warps != (num_warps, 1) or \
                shape[0] % (WARPGROUPS * _WGMMA_ROWS):
            return "a product's rows are not split between the warpgroups"
    return None


def _runs(body: ir.Block) -> list[list[ir.Operation]]:
    """The runs of consecutive `tile.mma` ops of `body`, in order."""
    order = ps.ops(body)
    runs: list[list[ir.Operation]] = []
    prev = -2
    for i, op in enumerate(order):
        if op.name != "tile.mma":
            continue
        if i == prev + 1:
            runs[-1].append(op)
        else:
            runs.append([op])
        prev = i
    return runs


def _bracket(body: ir.Block) -> None:
    """Each run of consecutive products is one turn (`turn_wait` before,
    `turn_pass` after).  (A turn of P_j @ V_j with the next S = Q @ K.T, FA3's
    pairing across the back edge, measured 1.07-1.9x slower on the H200,
    likely because the issuing thread's wait for a free ring slot at the top
    of the body then sits inside the turn, waiting on the other warpgroup's
    release; benchmarks/results/README.md.)"""
    for run_ops in _runs(body):
        _around(run_ops)


def _around(run_ops: list[ir.Operation]) -> None:
    first, last = run_ops[0], run_ops[-1]
    tile_memory.turn_wait(loc=first.location, ip=ir.InsertionPoint(first))
    tile_memory.turn_pass(loc=last.location, ip=ir.InsertionPoint(ps.next_op(last)))


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    if not target.has(Feature.WGMMA):
        return
    with module.context:
        for f, hinted in ps.hinted_kernel_loops(module, "tile.warp_specialize"):
            entry = f.regions[0].blocks[0]
            turned = False
            for op in hinted:
                body = op.regions[0].blocks[0]
                why = _reason(body, options.num_warps)
                if why is not None:
                    op.attributes["tile.warp_specialize_note"] = ir.StringAttr.get(why)
                    continue
                _bracket(body)
                op.attributes["tile.pingpong"] = ir.UnitAttr.get()
                turned = True
            if turned:
                f.attributes["tile.pingpong"] = ir.UnitAttr.get()   # convert-tile-to-gpu checks it
                first = ps.ops(entry)[0]
                tile_memory.turn_init(loc=f.location, ip=ir.InsertionPoint(first))
    # Loops nested deeper keep their schedule, noted.
    for func in list(module.body.operations):
        if func.operation.name != "func.func":
            continue
        for op in ps.loops(func.operation):
            if "tile.warp_specialize" in op.attributes and "tile.pingpong" not in \
                    op.attributes and "tile.warp_specialize_note" not in op.attributes:
                op.attributes["tile.warp_specialize_note"] = ir.StringAttr.get(
                    "turns need the loop directly in the kernel's body")
