"""NVIDIA thread-block clusters (`Feature.CLUSTER`, sm90): the ops of a program
split over two CTAs (passes/tile_split_ctas.py) and of its multicast rings
(passes/pipeline_cluster.py).

| key | feature | lowering |
|---|---|---|
| `tile.cta_rank` | `CLUSTER` | `%cluster_ctaid.x` (the cluster is n x 1 x 1) |
| `tile.cluster_barrier` | `CLUSTER` | `barrier.cluster.arrive.aligned` (release) + `barrier.cluster.wait.aligned` (acquire), every thread |
| `tile.cluster_release` | `CLUSTER` | in the copy issuer's branch (the `elect.sync` lane of warp 0, where live): where `arrive`, `mbarrier.arrive.release.cluster` on barrier `slot` of every CTA (its own through `mapa.shared::cluster` with its own rank, the others' with theirs), then `mbarrier.try_wait.parity.acquire.cluster` on its own until phase `phase` completed |

The kernel's `gpu.func` gets `nvvm.cluster_dim = [n, 1, 1]` (PTX
`.reqnctapercluster n, 1, 1`: the driver launches it in clusters of n with
the plain launch call; `passes/gpu/context.py`); the metadata's
`cluster_ctas = n` (targets/pipeline.py) makes the runtime launch n CTAs per
program (`tilec/runtime/cuda.py`).

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
from tilec.targets.nvidia.tma import _bar, _issue_block, cluster_ctas

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


_ARRIVE = "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [{}];"


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
        text = ("{\n\t.reg .pred P1;\n\tLAB_WAIT:\n\t"
                "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 P1, [$0], $1;\n\t"
                "@P1 bra.uni DONE;\n\tbra.uni LAB_WAIT;\n\tDONE:\n\t}")
        llvm.InlineAsmOp(None, [bar, L.get(phase)], text, "r,r", has_side_effects=True)
