"""NVIDIA variant of the `hook.atomic-rmw` target hook of `convert-tile-to-gpu`
(passes/gpu/atomic.py): an atomic read-modify-write that keeps its ordering.

Input: one element's atomic (`kind` as `tile.atomic_rmw` spells it, the
`!llvm.ptr<1>` address, the value, the element type), called by the atomic
rules per element the thread owns, or once per program for a scalar.
Output: the old value, from an instruction ordered acquire-release at device
scope, the semantics Triton gives `tl.atomic_*` by default (`sem="acq_rel"`,
`scope="gpu"`):

* a PTX form exists (integer add/max/min/and/or/xor/exchange of 32/64 bits,
  float add of f32/f64/f16, exchange of f32/f64 through same-width integers):
  `atom.acq_rel.gpu.global.<op>.<type> $0, [$1], $2;` through inline asm,
  what Triton emits (ptxas brackets it with `MEMBAR.ALL.GPU` and
  `CCTL.IVALL`);
* otherwise (bf16 add, whose `atom` needs sm_90; float max/min, which LLVM
  expands into a compare-and-swap loop; 16-bit exchange): the generic
  `llvm.atomicrmw ... acq_rel` with `fence.acq_rel.gpu` before and after it
  (what LLVM prints as one relaxed `atom` is ordered by the fences; a
  compare-and-swap loop it expands keeps acq_rel on its `atom.cas`).

Why not `llvm.atomicrmw ... acq_rel`: LLVM 22's NVPTX back end prints every
atomicrmw it has an instruction for as a relaxed `atom.global.<op>` (no
`.acq_rel`, no fence; `cmpxchg` keeps its ordering), so a lock's release
(tutorial 05: `tl.atomic_xchg(Lock, 0)` after the partial-sum stores)
published nothing: the SASS had no `MEMBAR` before the exchange.  Later LLVM
(llvm/llvm-project#176015) lowers the orderings; the feature can then go.

Nearest upstream analogue: Triton's `AtomicRMWOpConversion` (PTXBuilder's
`atom.global.gpu.acq_rel.<op>`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from mlir import ir
from mlir.dialects import llvm

from tilec.passes.rules import RuleSet
from tilec.targets import Feature

if TYPE_CHECKING:
    from tilec.passes.gpu.context import FuncLowering, Rule

RULES: RuleSet[Rule] = RuleSet("nvidia.atomics")

# kind -> (PTX op, type letter) for integers: u/s/b as PTX's atom wants them.
_INT = {"add": ("add", "u"), "max": ("max", "s"), "min": ("min", "s"), "umax": ("max", "u"),
        "umin": ("min", "u"), "and": ("and", "b"), "or": ("or", "b"), "xor": ("xor", "b"),
        "xchg": ("exch", "b")}
# float add: element width -> (PTX type, register constraint)
_FADD = {32: ("f32", "f"), 64: ("f64", "d"), 16: ("noftz.f16", "h")}
_INT_CONSTRAINT = {32: "r", 64: "l"}


def _atom(p: ir.Value, v: ir.Value, op: str, ptx_type: str, cons: str) -> ir.Value:
    text = f"atom.acq_rel.gpu.global.{op}.{ptx_type} $0, [$1], $2;"
    return llvm.InlineAsmOp(v.type, [p, v], text, f"={cons},l,{cons}",
                            has_side_effects=True).result


def _bitcast(t: ir.Type, v: ir.Value) -> ir.Value:
    return llvm.BitcastOp(t, v).result


@RULES.rule("hook.atomic-rmw", feature=Feature.PTX_ORDERED_ATOM)
def _ordered_rmw(L: FuncLowering, kind: str, op: llvm.AtomicBinOp, p: ir.Value, v: ir.Value,
                 scope: str) -> ir.Value:
    t = v.type
    width = t.width if isinstance(t, (ir.IntegerType, ir.FloatType)) else 0
    if isinstance(t, ir.IntegerType) and kind in _INT and width in _INT_CONSTRAINT:
        name, letter = _INT[kind]
        return _atom(p, v, name, f"{letter}{width}", _INT_CONSTRAINT[width])
    if kind == "fadd" and t in (ir.F32Type.get(), ir.F64Type.get()):
        ptx_type, cons = _FADD[width]
        return _atom(p, v, "add", ptx_type, cons)
    if kind == "fadd" and t == ir.F16Type.get():
        i16 = ir.IntegerType.get_signless(16)
        return _bitcast(t, _atom(p, _bitcast(i16, v), "add", "noftz.f16", "h"))
    if kind == "xchg" and isinstance(t, ir.FloatType) and width in _INT_CONSTRAINT:
        it = ir.IntegerType.get_signless(width)
        return _bitcast(t, _atom(p, _bitcast(it, v), "exch", f"b{width}",
                                 _INT_CONSTRAINT[width]))
    llvm.FenceOp(llvm.AtomicOrdering.release, syncscope=scope)
    old = llvm.AtomicRMWOp(op, p, v, llvm.AtomicOrdering.acq_rel, syncscope=scope).result
    llvm.FenceOp(llvm.AtomicOrdering.acquire, syncscope=scope)
    return old
