"""GPU lowering rules for elementwise `arith`/`math` ops, chosen by target features.

Part of `convert-tile-to-gpu` (its `_elementwise` rule emits every per-thread
arith/math op through `emit`).

* `fast_exp2`: `math.exp(x)` becomes `math.exp2(x * log2(e))` for f32 (f16 and
  bf16 compute in f32): one hardware 2^x (NVIDIA `ex2.approx.f32`, AMD
  `v_exp_f32`), as Triton does, instead of a device-library exp.
* no `device_libm` (AMD in this build: the ROCm device library is not linked):
  exp2/log2/exp/log/sin/cos/floor/ceil become LLVM intrinsics called by name
  (`llvm.call_intrinsic`), which the back end selects to native instructions;
  `convert-gpu-to-rocdl` would otherwise call `__ocml_*` functions that do not
  link.  f16/bf16 compute in f32; f64 transcendentals raise `TilecError`.
* `fp_contract`: float add/sub/mul may fuse into FMA (Triton's default
  `enable_fp_fusion`).
* `fast_fdiv`: f32 `/` is the full-range approximate division (NVIDIA
  `div.full.f32`, 2 ulp, through `llvm.nvvm.div.full`), as Triton's `/`.

Input: an op name, result types, converted operands and attributes, at the
current insertion point and location.  Output: the result values.
Nearest upstream analogue: `populateMathToROCDLConversionPatterns` / MathToLLVM.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

from mlir import ir

from tilec.errors import TilecError
from tilec.targets import Feature, Target

_LOG2E = 1.0 / math.log(2.0)
_LN2 = math.log(2.0)
# math op -> LLVM intrinsic base name, for targets without a device math library.
_INTRINSIC = {"math.exp2": "llvm.exp2", "math.log2": "llvm.log2", "math.sin": "llvm.sin",
              "math.cos": "llvm.cos", "math.floor": "llvm.floor", "math.ceil": "llvm.ceil",
              "math.exp": "llvm.exp2", "math.log": "llvm.log2"}
_TRANSCENDENTAL = {"math.exp2", "math.log2", "math.sin", "math.cos", "math.exp", "math.log"}
_CONTRACTIBLE = {"arith.addf", "arith.subf", "arith.mulf"}


def _elem(t: ir.Type) -> ir.Type:
    return ir.VectorType(t).element_type if isinstance(t, ir.VectorType) else t


def _with_elem(t: ir.Type, e: ir.Type) -> ir.Type:
    return ir.VectorType.get(ir.VectorType(t).shape, e) if isinstance(t, ir.VectorType) else e


def _const(t: ir.Type, v: float) -> ir.Value:
    attr: ir.Attribute = ir.FloatAttr.get(_elem(t), v)
    if isinstance(t, ir.VectorType):
        attr = ir.DenseElementsAttr.get_splat(ir.VectorType(t), attr)
    return ir.Operation.create("arith.constant", results=[t], attributes={"value": attr}).result


def _op(name: str, t: ir.Type, operands: Sequence[ir.Value]) -> ir.Value:
    return ir.Operation.create(name, results=[t], operands=list(operands)).result


def _in_f32(t: ir.Type, x: ir.Value, body: Any) -> ir.Value:
    """Compute `body` in f32 for f16/bf16 inputs; the result has type t."""
    e = _elem(t)
    if e == ir.F32Type.get() or e == ir.F64Type.get():
        return body(t, x)
    wide = _with_elem(t, ir.F32Type.get())
    r = body(wide, _op("arith.extf", wide, [x]))
    return _op("arith.truncf", t, [r])


def _intrinsic(name: str, t: ir.Type, x: ir.Value) -> ir.Value:
    return ir.Operation.create("llvm.call_intrinsic", results=[t], operands=[x], attributes={
        "intrin": ir.StringAttr.get(name),
        "op_bundle_sizes": ir.DenseI32ArrayAttr.get([]),
        "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, 0])}).result


def emit(target: Target, name: str, rtypes: Sequence[ir.Type], operands: Sequence[ir.Value],
         attrs: dict[str, ir.Attribute]) -> list[ir.Value]:
    """Emit one per-thread arith/math op for `target`; returns its results."""
    t = rtypes[0] if rtypes else None
    if t is not None and len(rtypes) == 1 and len(operands) == 1 and name in _TRANSCENDENTAL:
        x = operands[0]
        e = _elem(t)
        native = not target.has(Feature.DEVICE_LIBM)
        if native and e == ir.F64Type.get():
            from tilec.errors import source_loc
            raise TilecError(f"tl.{name.split('.')[1]} on float64 is not supported on "
                             f"{target.name} (it needs the ROCm device library, which tilec does "
                             "not link); compute in float32", source_loc(ir.Location.current))
        if name == "math.exp" and (target.has(Feature.FAST_EXP2) or native):
            return [_in_f32(t, x, lambda tt, xx: _exp2(target, tt, _op(
                "arith.mulf", tt, [xx, _const(tt, _LOG2E)])))]
        if name == "math.log" and native:
            return [_in_f32(t, x, lambda tt, xx: _op(
                "arith.mulf", tt, [_intrinsic("llvm.log2", tt, xx), _const(tt, _LN2)]))]
        if native:
            return [_in_f32(t, x, lambda tt, xx: _intrinsic(_INTRINSIC[name], tt, xx))]
    if not target.has(Feature.DEVICE_LIBM) and name in ("math.floor", "math.ceil"):
        return [_in_f32(rtypes[0], operands[0],
                        lambda tt, xx: _intrinsic(_INTRINSIC[name], tt, xx))]
    if name == "arith.divf" and target.has(Feature.FAST_FDIV) and _elem(rtypes[0]) == ir.F32Type.get() \
            and str(attrs.get("fastmath", "#arith.fastmath<none>")) == "#arith.fastmath<none>":
        return [_per_element("llvm.nvvm.div.full", rtypes[0], operands)]
    if name in _CONTRACTIBLE and target.has(Feature.FP_CONTRACT) and \
            str(attrs.get("fastmath", "#arith.fastmath<none>")) == "#arith.fastmath<none>":
        attrs = dict(attrs, fastmath=ir.Attribute.parse("#arith.fastmath<contract>"))
    op = ir.Operation.create(name, results=list(rtypes), operands=list(operands), attributes=attrs)
    return list(op.results)


def _per_element(intrinsic: str, t: ir.Type, operands: Sequence[ir.Value]) -> ir.Value:
    """A scalar-only intrinsic applied to each element of a (vector) operation."""
    def call(args: list[ir.Value], rt: ir.Type) -> ir.Value:
        return ir.Operation.create("llvm.call_intrinsic", results=[rt], operands=args, attributes={
            "intrin": ir.StringAttr.get(intrinsic),
            "op_bundle_sizes": ir.DenseI32ArrayAttr.get([]),
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(args), 0])}).result
    if not isinstance(t, ir.VectorType):
        return call(list(operands), t)
    vt = ir.VectorType(t)
    pos = ir.DenseI64ArrayAttr
    parts = []
    for i in range(vt.shape[0]):
        lanes = [ir.Operation.create("vector.extract", results=[vt.element_type], operands=[o],
                                     attributes={"static_position": pos.get([i])}).result
                 for o in operands]
        parts.append(call(lanes, vt.element_type))
    return ir.Operation.create("vector.from_elements", results=[t], operands=parts).result


def _exp2(target: Target, t: ir.Type, x: ir.Value) -> ir.Value:
    if target.has(Feature.DEVICE_LIBM):
        return _op("math.exp2", t, [x])
    return _intrinsic("llvm.exp2", t, x)
