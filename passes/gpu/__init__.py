"""`convert-tile-to-gpu`: distribute laid-out tile kernels over the threads of a block.

Input: the output of `tile-layout`: `func.func` kernels whose tensors all carry
`#tile.blocked`/`#tile.slice` encodings, with `tile.convert_layout` where
encodings change; `func.func private` combine functions of reduce/scan ops.
Output: every kernel becomes `gpu.func @name(...) kernel` with
`known_block_size = [num_warps * warp_size, 1, 1]` inside `gpu.module @tilec`
(the enclosing module gets `gpu.container_module`); the `func.func`s, combine
functions included, are erased.
  * `!tile.ptr<T>` arguments become `!llvm.ptr<1>`; scalars keep their types;
    `tile.*` argument and function attributes are dropped.
  * Each tile value becomes the calling thread's fragment: one or more 1-D
    `vector<k x T>` values (`layouts.Distribution` says which elements);
    tiles of pointers become `vector<k x !llvm.ptr<1>>`.
  * Each op is lowered by the rule `TABLE` gives for (op, target feature), one
    file per op family: shape.py (program ids, ranges, splat/broadcast/
    expand_dims/reshape/trans/convert_layout, addptr), math.py (arith/math),
    memory.py (load/store), reduce.py, scan.py, atomic.py, dot.py,
    control_flow.py (scf, func.return), sync.py (barrier, warp_sync),
    elements.py (int_to_ptr/ptr_to_int, restride), gather.py, debug.py (debug_trap); the
    target rule files (targets/nvidia/rules.py, targets/nvidia/atomics.py,
    targets/amd/rules.py, ...) add the variants and target hooks selected by
    features.
  * Workgroup memory is one `llvm.mlir.global` in address space 3 per kernel
    (static, or extern with the size in `tilec.dynamic_shared` where
    `Feature.DYNAMIC_SHARED` holds and the static cap is exceeded).
  * Only upstream dialects remain, and every op carries the location of the
    tile op it came from (the thread-id prologue carries the kernel's).

Nearest upstream analogue: `convert-vector-to-gpu`/`vector-distribution`
(warp distribution of vector ops); Triton's TritonGPU -> LLVM conversion.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import gpu

from tilec.options import CompileOptions
from tilec.passes.gpu import (
    atomic, control_flow, debug, dot, elements, gather, math, memory, reduce, scan, shape, sync,
)
from tilec.passes.gpu.context import FuncLowering, Rule
from tilec.passes.rules import RuleTable
from tilec.targets import Target
from tilec.targets.amd import buffer_ops as amd_buffer_ops
from tilec.targets.amd import lds_ring as amd_lds_ring
from tilec.targets.amd import matrix_dot as amd_matrix_dot
from tilec.targets.amd import mfma as amd_mfma
from tilec.targets.amd import rules as amd_rules
from tilec.targets.nvidia import rules as nvidia_rules
from tilec.targets.nvidia import atomics as nvidia_atomics
from tilec.targets.nvidia import async_copy as nvidia_async_copy
from tilec.targets.nvidia import cluster as nvidia_cluster
from tilec.targets.nvidia import exchange_stores as nvidia_exchange_stores
from tilec.targets.nvidia import tma as nvidia_tma
from tilec.targets.nvidia import tma_store as nvidia_tma_store
from tilec.targets.nvidia import mma_sync_ring as nvidia_mma_sync_ring
from tilec.targets.nvidia import pingpong as nvidia_pingpong
from tilec.targets.nvidia import tcgen05 as nvidia_tcgen05
from tilec.targets.nvidia import warp_specialize as nvidia_warp_specialize
from tilec.targets.nvidia import wgmma as nvidia_wgmma

NAME = "convert-tile-to-gpu"

TABLE: RuleTable[Rule] = RuleTable([
    shape.RULES, math.RULES, memory.RULES, reduce.RULES, scan.RULES, atomic.RULES,
    dot.RULES, control_flow.RULES, sync.RULES, elements.RULES, gather.RULES, debug.RULES,
    nvidia_rules.RULES, nvidia_atomics.RULES, nvidia_wgmma.RULES, nvidia_async_copy.RULES,
    nvidia_mma_sync_ring.RULES, nvidia_tcgen05.RULES, nvidia_tma.RULES, nvidia_tma_store.RULES,
    nvidia_exchange_stores.RULES, nvidia_pingpong.RULES, nvidia_warp_specialize.RULES,
    nvidia_cluster.RULES,
    amd_rules.RULES, amd_mfma.RULES, amd_buffer_ops.RULES, amd_lds_ring.RULES,
    amd_matrix_dot.RULES,
])


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    funcs = [op.operation for op in module.body.operations if op.operation.name == "func.func"]
    # Private functions are combine functions of reduce/scan ops: their
    # bodies are cloned where used, and they are erased once all kernels are.
    private = [f for f in funcs if "sym_visibility" in f.attributes
               and ir.StringAttr(f.attributes["sym_visibility"]).value == "private"]
    funcs = [f for f in funcs if f not in private]
    if not funcs:
        return
    with module.context, ir.Location.unknown():
        module.operation.attributes["gpu.container_module"] = ir.UnitAttr.get()
        gmod = _gpu_module(module)
        turned = any("tile.pingpong" in f.attributes for f in funcs)
        for f in funcs:
            FuncLowering(f, gmod, target, options.num_warps, TABLE).run()
            f.erase()
        if turned:   # a walk of every lowered op: only where tile-pingpong acted
            nvidia_pingpong.drop_blocked_turns(gmod)
        for f in private:
            f.erase()


def _gpu_module(module: ir.Module) -> ir.Block:
    for op in module.body.operations:
        if op.operation.name == "gpu.module":
            return op.operation.regions[0].blocks[0]
    with ir.InsertionPoint(module.body):
        gm = gpu.GPUModuleOp("tilec")
    return gm.bodyRegion.blocks.append()
