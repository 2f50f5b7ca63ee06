"""NVIDIA rules for warpgroup turns (`tile-pingpong`, passes/tile_pingpong.py).

| key | feature | lowering |
|---|---|---|
| `tile.turn_init` | `WGMMA` | warpgroup 1: `bar.arrive 1, 256` (warpgroup 0 has the first turn) |
| `tile.turn_wait` | `WGMMA` | warpgroup g: `bar.sync 1 + g, 256` |
| `tile.turn_pass` | `WGMMA` | warpgroup g: `bar.arrive 2 - g, 256` |

Named barrier 1 + g is warpgroup g's turn: it completes when warpgroup g's 128
threads wait on it and the other warpgroup's 128 have arrived, so each wait
takes one pass of the other warpgroup.  Barrier 0 stays `gpu.barrier`'s.

`drop_blocked_turns` runs after the lowering: a loop with turns whose lowered
body has a CTA-wide barrier (`gpu.barrier`) would deadlock (one warpgroup
waiting at barrier 0, the other for its turn), so the kernel's turns are
taken out again and the kernel notes why (`tilec.pingpong_note`).

The barriers are convergent intrinsic calls (targets/nvidia/named_barriers.py).

Nearest upstream analogue: `nvvm.barrier` / `nvvm.barrier.arrive` with ids
(CUTLASS's `NamedBarrier`, FlashAttention-3's warp-scheduler barriers).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from mlir import ir
from mlir.dialects import arith, scf

from tilec.passes.rules import RuleSet
from tilec.targets import Feature
from tilec.targets.nvidia import named_barriers
from tilec.targets.nvidia.warp_specialize import CONSUMER_BARRIER

if TYPE_CHECKING:
    from tilec.passes.gpu.context import FuncLowering, Rule

RULES: RuleSet[Rule] = RuleSet("nvidia-pingpong")

_MARK = "tilec.turn"
_FIRST_ID = 1
_WG_THREADS = 128
_PAIR_THREADS = 2 * _WG_THREADS


def _warpgroup(L: FuncLowering) -> ir.Value:
    assert L.tid is not None
    return arith.DivUIOp(L.tid, L.const_i32(_WG_THREADS)).result


def _mark(op: ir.OpView) -> None:
    op.operation.attributes[_MARK] = ir.UnitAttr.get()


@RULES.rule("tile.turn_init", feature=Feature.WGMMA)
def _init(L: FuncLowering, op: ir.Operation) -> None:
    second = arith.CmpIOp(arith.CmpIPredicate.eq, _warpgroup(L), L.const_i32(1)).result
    if_op = scf.IfOp(second)
    _mark(if_op)
    with ir.InsertionPoint(if_op.then_block):
        named_barriers.arrive(_FIRST_ID, _PAIR_THREADS)
        scf.YieldOp([])


@RULES.rule("tile.turn_wait", feature=Feature.WGMMA)
def _wait(L: FuncLowering, op: ir.Operation) -> None:
    bar = arith.AddIOp(_warpgroup(L), L.const_i32(_FIRST_ID)).result
    named_barriers.sync(bar, _PAIR_THREADS)


@RULES.rule("tile.turn_pass", feature=Feature.WGMMA)
def _pass(L: FuncLowering, op: ir.Operation) -> None:
    other = arith.SubIOp(L.const_i32(_FIRST_ID + 1), _warpgroup(L)).result
    named_barriers.arrive(other, _PAIR_THREADS)


def _find(op: ir.Operation, pred: Callable[[ir.Operation], bool]) -> list[ir.Operation]:
    """The ops nested in `op` for which `pred` holds, outermost first."""
    out: list[ir.Operation] = []
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                o = inner.operation
                if pred(o):
                    out.append(o)
                out += _find(o, pred)
    return out


def _is_turn(op: ir.Operation) -> bool:
    """A lowered turn: the marked `scf.if` of `turn_init`, or a barrier with an id
    (only turns use named barriers)."""
    if named_barriers.kind(op) is not None:
        return named_barriers.constant_id(op) != CONSUMER_BARRIER
    return _MARK in op.attributes


def _is_cta_barrier(op: ir.Operation) -> bool:
    """A barrier of every computing thread: `gpu.barrier`, or the consumers'
    named barrier of a producer split (targets/nvidia/warp_specialize.py)."""
    if named_barriers.kind(op) == "sync":
        return named_barriers.constant_id(op) == CONSUMER_BARRIER
    return op.name == "gpu.barrier"


def drop_blocked_turns(gpu_module: ir.Block) -> None:
    """Take the turns out of every kernel where a loop with turns has a CTA barrier."""
    for fop in gpu_module.operations:
        f = fop.operation
        if f.name != "gpu.func":
            continue
        turns = _find(f, _is_turn)
        if not turns:
            continue
        blocked = any(_find(loop, _is_turn) and _find(loop, _is_cta_barrier)
                      for loop in _find(f, lambda o: o.name == "scf.for"))
        if not blocked:
            continue
        for o in reversed(turns):   # nested before enclosing (turn_init's scf.if)
            o.erase()
        f.attributes["tilec.pingpong_note"] = ir.StringAttr.get(
            "turns taken out: a loop with turns has a CTA-wide barrier")
