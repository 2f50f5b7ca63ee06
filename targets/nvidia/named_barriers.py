"""Named barriers (`bar.sync id, count` / `bar.arrive id, count`) and
`setmaxnreg` for the NVIDIA
rules that split a block's warps: the consumers' barrier of a producer split
(targets/nvidia/warp_specialize.py) and the warpgroup turns
(targets/nvidia/pingpong.py).

They are calls of LLVM's `llvm.nvvm.barrier.cta.{sync,arrive}.aligned.count`
intrinsics, not inline PTX.  The intrinsics are `convergent`: LLVM may not
copy them into divergent paths.  Inline asm is not, and LLVM's tail
duplication did copy a `bar.sync 3, 256` into both sides of a
`tid == 0` branch (the TMA store's wait after a persistent loop), so warp 0
reached the barrier at two instructions and the block hung on the H200.
Upstream's `nvvm.barrier` with an id is not used either: in MLIR 22 it does
not survive printing with locations and parsing again (the module crosses
into the isolated lowering child as text), while `llvm.call_intrinsic` does.

Nearest upstream analogue: `nvvm.barrier` / `nvvm.barrier.arrive` with ids;
CUTLASS's `NamedBarrier`.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, llvm

SYNC = "llvm.nvvm.barrier.cta.sync.aligned.count"
ARRIVE = "llvm.nvvm.barrier.cta.arrive.aligned.count"


def _i32(v: int) -> ir.Value:
    return arith.ConstantOp(ir.IntegerType.get_signless(32), v).result


def sync(barrier: ir.Value | int, count: int) -> None:
    """Wait at named barrier `barrier` until `count` threads have reached it."""
    bar = _i32(barrier) if isinstance(barrier, int) else barrier
    llvm.CallIntrinsicOp(None, SYNC, [bar, _i32(count)], [], [])


def arrive(barrier: ir.Value | int, count: int) -> None:
    """Count this warp's threads at named barrier `barrier` without waiting."""
    bar = _i32(barrier) if isinstance(barrier, int) else barrier
    llvm.CallIntrinsicOp(None, ARRIVE, [bar, _i32(count)], [], [])


def set_max_registers(direction: str, count: int) -> None:
    """`setmaxnreg.{inc,dec}.sync.aligned.u32 count`: also `.aligned`, so also a
    convergent intrinsic call rather than inline PTX."""
    llvm.CallIntrinsicOp(None, f"llvm.nvvm.setmaxnreg.{direction}.sync.aligned.u32",
                        [_i32(count)], [], [])


def kind(op: ir.Operation) -> str | None:
    """"sync" or "arrive" for a named barrier made here, else None."""
    if op.name != "llvm.call_intrinsic":
        return None
    name = ir.StringAttr(op.attributes["intrin"]).value
    return {SYNC: "sync", ARRIVE: "arrive"}.get(name)


def constant_id(op: ir.Operation) -> int | None:
    """The barrier id of a named barrier made here when it is a constant."""
    owner = op.operands[0].owner
    if isinstance(owner, ir.OpView) and owner.operation.name == "arith.constant":
        return int(ir.IntegerAttr(owner.operation.attributes["value"]).value)
    return None
