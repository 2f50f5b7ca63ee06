"""NVIDIA thread-block clusters (`Feature.CLUSTER`, sm90): the ops of a program
split over two CTAs (passes/tile_split_ctas.py) and of its multicast rings
(passes/pipeline_cluster.py).

| key | feature | lowering |
|---|---|---|
| `tile.cta_rank` | `CLUSTER` | `%cluster_ctaid.x` (the cluster is n x 1 x 1) |
| `tile.cluster_barrier` | `CLUSTER` | `barrier.cluster.arrive.aligned` (release) + `barrier.cluster.wait.aligned` (acquire), every thread |
| `tile.cluster_release` | `CLUSTER` | where live: the copy issuer (the `elect.sync` lane of warp 0), where `arrive`, `mbarrier.arrive.shared::cluster` on barrier `slot` of every CTA (`mapa.shared::cluster` with each rank, its own included); then every lane of warp 0 spins on `mbarrier.try_wait.parity` of its own barrier until phase `phase` completed (the warp waits converged, not one lane inside a branch while the others reach `.aligned` wgmma) |

The kernel's `gpu.func` gets `nvvm.cluster_dim = [n, 1, 1]` (PTX
`.reqnctapercluster n, 1, 1`: the driver launches it in clusters of n with
the plain launch call; `passes/gpu/context.py`); the metadata's
`cluster_ctas = n` (targets/pipeline.py) makes the runtime launch n CTAs per
program (`tilec/runtime/cuda.py`).

The arrive and the wait take the default CTA-scope semantics, as CUTLASS's
`ClusterBarrier` does: the slot's readers (wgmma) have completed at
`wgmma.wait_group` before the CTA barrier that precedes the arrive, so there
is nothing to order but the arrival itself; `.release.cluster` /
`.acquire.cluster` put `MEMBAR.ALL.GPU` and an L1 invalidate (`CCTL.IVALL`)
into every iteration of warp 0 (SASS of the fp8 256 x 256 x 128 program).

Nearest upstream analogue: CUTLASS's `ClusterBarrier` (remote arrive through
`mapa`) and `cute::cluster_sync`; upstream `nvvm.cluster.arrive/wait`,
`nvvm.read.ptx.sreg.cluster.ctaid.x`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from mlir import ir
from mlir.dialects import arith, llvm, nvvm, scf

from tilec.passes.rules import RuleSet
from tilec.targets import Feature
from tilec.targets.nvidia.tma import _bar, _issue_block, cluster_ctas, try_wait

if TYPE_CHECKING:
    from tilec.passes.gpu.context import FuncLowering, Rule

RULES: RuleSet[Rule] = RuleSet("nvidia-cluster")


def _i32() -> ir.IntegerType:
    return ir.IntegerType.get_signless(32)


@RULES.rule("tile.cta_rank", feature=Feature.CLUSTER)
def _rank(L: FuncLowering, op: ir.Operation) -> None:
    L.values[op.results[0]] = nvvm.BlockInClusterIdXOp(_i32()).result


@RULES.rule("tile.cluster_barrier", feature=Feature.CLUSTER)
def _barrier(L: FuncLowering, op: ir.Operation) -> None:
    nvvm.ClusterArriveOp(aligned=True)
    nvvm.ClusterWaitOp(aligned=True)


_ARRIVE = "mbarrier.arrive.shared::cluster.b64 _, [{}];"


@RULES.rule("tile.cluster_release", feature=Feature.CLUSTER)
def _release(L: FuncLowering, op: ir.Operation) -> None:
    bars, slot, phase, arrive, live = op.operands
    bar = llvm.PtrToIntOp(_i32(), _bar(L, bars, slot)).result
    ctas = cluster_ctas(L)
    with _issue_block(L, live):
        if_op = scf.IfOp(L.get(arrive))
        with ir.InsertionPoint(if_op.then_block):
            lines = ["{", ".reg .b32 %remote;"]
            for r in range(ctas):
                lines += [f"mapa.shared::cluster.u32 %remote, $0, {r};", _ARRIVE.format("%remote")]
            llvm.InlineAsmOp(None, [bar], "\n\t".join([*lines, "}"]), "r", has_side_effects=True)
            scf.YieldOp([])
    assert L.tid is not None
    warp0 = arith.CmpIOp(arith.CmpIPredicate.ult, L.tid, L.const_i32(L.target.warp_size)).result
    wait = scf.IfOp(arith.AndIOp(warp0, L.get(live)).result)
    with ir.InsertionPoint(wait.then_block):
        try_wait(_bar(L, bars, slot), L.get(phase))
        scf.YieldOp([])
