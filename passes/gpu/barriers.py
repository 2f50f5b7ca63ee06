"""Barrier clean-up after `convert-tile-to-gpu` has lowered a kernel (run by
`FuncLowering` on each `gpu.func` it builds).

Input: a `gpu.func` whose `gpu.barrier`s come from the lowering's own rules
(layout conversions, staged operands and reuses of workgroup memory) and from
`tile.barrier` (marked `ORDERED`, passes/gpu/sync.py).  Output: the same
function without the barriers that order nothing: one of two barriers with
no memory access between them (`drop_repeated`), and the lowering's own
barriers after which the kernel only computes and stores to global memory
before it returns (`drop_trailing`).  Every kept barrier keeps its place and
location.

Nearest upstream analogue: none in MLIR's GPU dialect; Triton's `Membar`
analysis inserts only the barriers shared memory needs, where tilec's rules
place them conservatively and this removes the surplus.
"""
from __future__ import annotations

from mlir import ir

# The mark of a `gpu.barrier` lowered from `tile.barrier` (passes/gpu/sync.py).
ORDERED = "tilec.ordered"
# Ops that touch no memory: a barrier with only these before the next one is redundant.
_NO_MEMORY = ("llvm.mlir.addressof", "llvm.getelementptr", "vector.broadcast",
              "vector.extract", "vector.from_elements")


def drop_repeated(op: ir.Operation) -> None:
    """Erase each `gpu.barrier` followed by another with no memory access in
    between (a reuse barrier of `shared_buffer` meeting the one its caller
    emits before its first write; the pipeline's barrier after its loop
    meeting the one the epilogue's conversion starts with).  The one kept
    takes over the `ORDERED` mark."""
    for region in op.regions:
        for block in region.blocks:
            ops = [o.operation for o in block.operations]
            for i, a in enumerate(ops):
                if a.name != "gpu.barrier":
                    continue
                for b in ops[i + 1:]:
                    if b.name == "gpu.barrier":
                        if ORDERED in a.attributes:
                            b.attributes[ORDERED] = ir.UnitAttr.get()
                        a.erase()
                        break
                    if b.regions or not (b.name in _NO_MEMORY or b.name.startswith("arith.")):
                        break
            for o in block.operations:
                if o.operation.regions:
                    drop_repeated(o.operation)


def _global_only(op: ir.Operation) -> bool:
    """Whether `op` touches no shared memory and synchronizes nothing: pure
    arithmetic and addressing, loads and stores through global pointers, and
    the predicated `st.global` inline stores."""
    if op.name in _NO_MEMORY or op.name == "llvm.bitcast" or op.name.startswith("arith."):
        return not op.regions
    if op.name in ("llvm.store", "llvm.load"):   # through a global (addrspace 1) pointer
        ptr = op.operands[1 if op.name == "llvm.store" else 0]
        return str(ptr.type) == "!llvm.ptr<1>"
    if op.name == "llvm.inline_asm":
        text = ir.StringAttr(op.attributes["asm_string"]).value
        return text.lstrip("@$0123456789 ").startswith("st.global") and ";" not in \
            text.rstrip().rstrip(";")
    return False


def drop_trailing(op: ir.Operation) -> None:
    """Erase the lowering's own `gpu.barrier`s after which the kernel only
    computes and writes global memory before it returns (the barrier a
    layout conversion ends with, to protect its buffer from shared-memory
    writes that never come).  Barriers lowered from `tile.barrier` (marked
    `ORDERED`) stay: the program may order global memory with them."""
    block = op.regions[0].blocks[len(op.regions[0].blocks) - 1]
    ops = [o.operation for o in block.operations]
    if not ops or ops[-1].name != "gpu.return":
        return
    for o in reversed(ops[:-1]):
        if o.name == "gpu.barrier" and ORDERED not in o.attributes:
            o.erase()
        elif not _global_only(o):
            return
