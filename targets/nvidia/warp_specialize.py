"""NVIDIA rules for a kernel split into a producer warpgroup and consumer warps
(`tile-warp-specialize`, passes/tile_warp_specialize.py; sm_90a).

| key | feature | lowering |
|---|---|---|
| `tile.producer_role` | `WARP_SPECIALIZE` | `tid >= num_warps * 32` (the producer warps follow the consumers) |
| `hook.warp-roles` (the `scf.if {tile.warp_roles}`) | `WARP_SPECIALIZE` | then: `setmaxnreg.dec 40`, the producer's ops lowered with thread indices counted from the producer's first thread (its warp 0 waits and issues, as the consumers' warp 0 did); else: `setmaxnreg.inc 232`, the consumers' ops, each CTA barrier (`gpu.barrier`) made `bar.sync 3, 32 * num_warps` |

Registers: the block has num_warps + 4 warps (384 threads for 8 consumer
warps), so ptxas caps the kernel at 65536 / 384 = 168 registers per thread at
entry; `setmaxnreg` moves them: 128 x 40 + 256 x 232 = 64512 <= 65536.  The
consumer code is allocated against 232, the producer's against 40
(`setmaxnreg` must be executed by all warps of a warpgroup, `.sync.aligned`:
each role is one branch of one if/else, and every warp of a role takes it).

Barriers: the producer warps never reach a CTA barrier after the split (they
leave when their loop ends), so the consumers' barriers name their own
threads: barrier 3 (barrier 0 is `gpu.barrier`'s, 1 and 2 are the warpgroup
turns of targets/nvidia/pingpong.py) with the count of consumer threads,
as a convergent intrinsic call (targets/nvidia/named_barriers.py says why).

Nearest upstream analogue: `nvvm.setmaxregister` and CUTLASS's
`cutlass::arch::warpgroup_reg_dealloc/alloc` + `NamedBarrier`; Triton's
`ttg.warp_specialize` lowering (its partitions' `setmaxnreg` and named
barriers).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from mlir import ir
from mlir.dialects import arith, scf

from tilec.passes.rules import RuleSet
from tilec.targets import Feature
from tilec.targets.nvidia import named_barriers

if TYPE_CHECKING:
    from tilec.passes.gpu.context import FuncLowering, Rule

RULES: RuleSet[Rule] = RuleSet("nvidia-warp-specialize")

PRODUCER_REGS = 40
CONSUMER_REGS = 232
CONSUMER_BARRIER = 3
_REGISTERS = 65536


def consumer_threads(L: FuncLowering) -> int:
    return L.num_warps * L.target.warp_size


@RULES.rule("tile.producer_role", feature=Feature.WARP_SPECIALIZE)
def _role(L: FuncLowering, op: ir.Operation) -> None:
    assert L.tid is not None
    L.values[op.results[0]] = arith.CmpIOp(arith.CmpIPredicate.uge, L.tid,
                                           L.const_i32(consumer_threads(L))).result


def _budget(L: FuncLowering, producer_warps: int) -> tuple[int, int]:
    """(producer, consumer) registers per thread that fit the register file."""
    ws = L.target.warp_size
    consumer = CONSUMER_REGS
    while ws * (producer_warps * PRODUCER_REGS + L.num_warps * consumer) > _REGISTERS:
        consumer -= 8
    return PRODUCER_REGS, consumer


def _named_barriers(block: ir.Block, count: int) -> None:
    """Make every `gpu.barrier` nested in `block` a named barrier of `count` threads."""
    for op in list(block.operations):
        o = op.operation
        for region in o.regions:
            for inner in region.blocks:
                _named_barriers(inner, count)
        if o.name == "gpu.barrier":
            with ir.InsertionPoint(o), o.location:
                named_barriers.sync(CONSUMER_BARRIER, count)
            o.erase()


@RULES.rule("hook.warp-roles", feature=Feature.WARP_SPECIALIZE)
def _roles(L: FuncLowering, op: ir.Operation) -> None:
    assert L.tid is not None
    warps = int(ir.IntegerAttr(L.func.attributes["tile.producer_warps"]).value)
    producer_regs, consumer_regs = _budget(L, warps)
    # A register cap at entry (the register file over the block's threads, in
    # multiples of 8): ptxas applies `setmaxnreg` only where it knows the
    # count at entry (else C7508: ignored).
    # The block runs the producer's warps beside the num_warps ones (the
    # runtime reads `tilec.block_threads`).
    threads = consumer_threads(L) + warps * L.target.warp_size
    i32 = ir.IntegerType.get_signless(32)
    L.gfunc.attributes["known_block_size"] = ir.DenseI32ArrayAttr.get([threads, 1, 1])
    L.gfunc.attributes["tilec.block_threads"] = ir.IntegerAttr.get(i32, threads)
    L.gfunc.attributes["nvvm.maxnreg"] = ir.IntegerAttr.get(
        i32, min(255, _REGISTERS // threads // 8 * 8))
    new = scf.IfOp(L.get(op.operands[0]), [], has_else=True)
    tid = L.tid
    with ir.InsertionPoint(new.then_block):
        named_barriers.set_max_registers("dec", producer_regs)
        L.tid = arith.SubIOp(tid, L.const_i32(consumer_threads(L))).result
        L.thread_offset = consumer_threads(L)
    try:
        L.lower_block(op.regions[0].blocks[0], new.then_block)
    finally:
        L.tid = tid
        L.thread_offset = 0
    with ir.InsertionPoint(new.else_block):
        named_barriers.set_max_registers("inc", consumer_regs)
    L.lower_block(op.regions[1].blocks[0], new.else_block)
    _named_barriers(new.else_block, consumer_threads(L))
