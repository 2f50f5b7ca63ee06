"""AMD variants of `convert-tile-to-gpu` rules, keyed by the features the AMD
records have (the pass's `RuleTable` lists `RULES`).

| key | feature | what |
|---|---|---|
| `tile.num_programs` | `IMPLICIT_BLOCK_COUNT` | the grid size from the code object's hidden kernel arguments |
| `hook.math-fn` | `EXP2_INSTR` | float32 `math.exp2`: `llvm.amdgcn.exp2` per element (v_exp_f32; results below 2^-126 may flush to 0, as Triton's); the rest as the generic rule |

Everything else on AMD takes the generic rules: masked accesses are guarded
(`llvm.intr.masked.load` / `scf.if`), math functions become LLVM intrinsics
(the ROCm device library is not linked: passes/gpu/math.py), lock-step
wavefronts need no warp sync, and `tile.dot` runs FMA loops.

These rules use only the `FuncLowering` they are given (its type is imported
for the checker only), so this file imports nothing from passes/gpu at import
time (the math rule defers to the generic one when it is called).
Nearest upstream analogue: Triton's `TargetInfo` (third_party/amd).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from mlir import ir
from mlir.dialects import llvm, vector

from tilec.passes.rules import RuleSet
from tilec.targets import Feature

if TYPE_CHECKING:
    from tilec.passes.gpu.context import FuncLowering, Rule

RULES: RuleSet[Rule] = RuleSet("amd")
_CONSTANT_ADDRSPACE = 4


@RULES.rule("tile.num_programs", feature=Feature.IMPLICIT_BLOCK_COUNT)
def _block_count(L: FuncLowering, op: ir.Operation) -> None:
    """The grid's size in workgroups along `axis`, without the device library:
    `gpu.grid_dim` lowers to a call of `__ockl_get_num_groups`, which tilec
    does not link.  Code object v5 passes it as the hidden kernel arguments
    `hidden_block_count_{x,y,z}` (u32 at byte 0, 4, 8 of the implicit
    arguments), which is what ockl itself reads."""
    axis = int(ir.IntegerAttr(op.attributes["axis"]).value)
    const_ptr = llvm.PointerType.get(_CONSTANT_ADDRSPACE)
    base = llvm.CallIntrinsicOp(const_ptr, ir.StringAttr.get("llvm.amdgcn.implicitarg.ptr"),
                                [], [], []).results[0]
    p = llvm.GEPOp(const_ptr, base, [], [4 * axis], ir.IntegerType.get_signless(8),
                   llvm.GEPNoWrapFlags.inbounds).result
    L.values[op.results[0]] = llvm.LoadOp(ir.IntegerType.get_signless(32), p, alignment=4,
                                          invariant=True).result


def _exp2_instr(x: ir.Value) -> ir.Value:
    return ir.Operation.create("llvm.call_intrinsic", results=[x.type], operands=[x], attributes={
        "intrin": ir.StringAttr.get("llvm.amdgcn.exp2"),
        "op_bundle_sizes": ir.DenseI32ArrayAttr.get([]),
        "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 0])}).result


@RULES.rule("hook.math-fn", feature=Feature.EXP2_INSTR)
def _math_fn(L: FuncLowering, name: str, t: ir.Type, x: ir.Value) -> ir.Value | None:
    """float32 `math.exp2` (attention's scores): the hardware 2^x per element
    (the intrinsic takes scalars only); everything else as the generic rule."""
    f32 = ir.F32Type.get()
    if name == "math.exp2" and isinstance(t, ir.VectorType) and t.element_type == f32:
        parts = [_exp2_instr(vector.ExtractOp(x, [], [i]).result) for i in range(t.shape[0])]
        return vector.FromElementsOp(t, parts).result
    if name == "math.exp2" and t == f32:
        return _exp2_instr(x)
    from tilec.passes.gpu.math import native_math_fn
    return native_math_fn(L, name, t, x)
