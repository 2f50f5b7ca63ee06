"""`convert-tile-to-gpu` rules for elementwise `arith`/`math` ops.

Every `arith`/`math` op without a rule of its own (`arith.*`, `math.*`) is
copied chunk by chunk with vector types (once for scalars), through `emit`:

* `fast_exp2`: `math.exp(x)` becomes `math.exp2(x * log2(e))` (f16 and bf16
  compute in f32): one hardware 2^x (NVIDIA `ex2.approx.f32`, AMD
  `v_exp_f32`), as Triton does, instead of a device-library exp.
* `math.absi` (every integer width): `x < 0 ? 0 - x : x` in arith ops;
  the upstream GPU conversions lower it for i32 only (NVVM), and an i8/i16/i64
  `math.absi` reached LLVM IR translation unconverted (the NVIDIA child
  crashed).
* `fp_contract`: float add/sub/mul may fuse into FMA (Triton's default
  `enable_fp_fusion`).
* masks (i1 tile results): a chunk whose elements lie in one run of equal
  values (the axis analysis' constancy, `Distribution.run_key`) is computed
  once, on its first element, and a run an earlier chunk computed is reused
  (`offs < n`, n % 16 == 0: one comparison per 8-16 columns).
* target hooks:
  - `hook.math-fn` (exp2/log2/exp/log/sin/cos/floor/ceil on one value): the
    generic rule here is for targets without a device math library (AMD in
    this build: the ROCm device library is not linked): LLVM intrinsics called
    by name (`llvm.call_intrinsic`), which the back end selects to native
    instructions (`convert-gpu-to-rocdl` would otherwise call `__ocml_*`
    functions that do not link); f16/bf16 compute in f32; f64
    transcendentals raise `TilecError`.  Where `Feature.DEVICE_LIBM` holds
    the target's rule returns None and the math op stays (the upstream GPU
    conversion calls the library: targets/nvidia/rules.py).
  - `hook.f32-div` (f32 `/` without fast-math flags): generic `arith.divf`;
    `Feature.FAST_FDIV` targets divide approximately (targets/nvidia/rules.py).

Input: an op name, result types, converted operands and attributes, at the
current insertion point and location.  Output: the result values.
Nearest upstream analogue: `populateMathToROCDLConversionPatterns` / MathToLLVM.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

from mlir import ir
from mlir.dialects import arith

from tilec.errors import TilecError, source_loc
from tilec.passes.analysis.layouts import Distribution
from tilec.passes.gpu.context import FuncLowering, Rule, is_i1, is_tile
from tilec.passes.rules import RuleSet
from tilec.targets import Feature

RULES: RuleSet[Rule] = RuleSet("gpu.math")

_LOG2E = 1.0 / math.log(2.0)
_LN2 = math.log(2.0)
# math op -> LLVM intrinsic base name, for targets without a device math library.
_INTRINSIC = {"math.exp2": "llvm.exp2", "math.log2": "llvm.log2", "math.sin": "llvm.sin",
              "math.cos": "llvm.cos", "math.floor": "llvm.floor", "math.ceil": "llvm.ceil",
              "math.exp": "llvm.exp2", "math.log": "llvm.log2"}
_TRANSCENDENTAL = {"math.exp2", "math.log2", "math.sin", "math.cos", "math.exp", "math.log"}
_CONTRACTIBLE = {"arith.addf", "arith.subf", "arith.mulf"}
_NO_FASTMATH = "#arith.fastmath<none>"
# extension -> the overflow flag of an add that lets it distribute over the add
_EXT_NO_WRAP = {"arith.extsi": "nsw", "arith.extui": "nuw"}


def _elem(t: ir.Type) -> ir.Type:
    return ir.VectorType(t).element_type if isinstance(t, ir.VectorType) else t


def _with_elem(t: ir.Type, e: ir.Type) -> ir.Type:
    return ir.VectorType.get(ir.VectorType(t).shape, e) if isinstance(t, ir.VectorType) else e


def _const(t: ir.Type, v: float) -> ir.Value:
    attr: ir.Attribute = ir.FloatAttr.get(_elem(t), v)
    if isinstance(t, ir.VectorType):
        attr = ir.DenseElementsAttr.get_splat(ir.VectorType(t), attr)
    return arith.ConstantOp(t, attr).result


def _int_zero(t: ir.Type) -> ir.Value:
    attr: ir.Attribute = ir.IntegerAttr.get(_elem(t), 0)
    if isinstance(t, ir.VectorType):
        attr = ir.DenseElementsAttr.get_splat(ir.VectorType(t), attr)
    return arith.ConstantOp(t, attr).result


def _abs_int(t: ir.Type, x: ir.Value) -> ir.Value:
    zero = _int_zero(t)
    neg = arith.CmpIOp(arith.CmpIPredicate.slt, x, zero).result
    return arith.SelectOp(neg, arith.SubIOp(zero, x).result, x).result


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


def _defining(v: ir.Value, name: str) -> ir.Operation | None:
    op = v.owner
    if not isinstance(op, ir.Operation) and hasattr(op, "operation"):
        op = op.operation
    return op if isinstance(op, ir.Operation) and op.name == name else None


def _offset(v: ir.Value) -> tuple[ir.Value, ir.Value] | None:
    """(a, c) where v is `a + c` for a constant c."""
    add = _defining(v, "arith.addi")
    if add is None or _defining(add.operands[1], "arith.constant") is None:
        return None
    return add.operands[0], add.operands[1]


def _constant_last(t: ir.Type, x: ir.Value, y: ir.Value) -> ir.Value | None:
    """`(a + c) + y` as `(a + y) + c` for a constant c (integer addition is
    associative; wrap flags are dropped): a coordinate's chunk constant stays
    the last term, so LLVM keeps one `a + y` per thread and folds c into
    immediate offsets rather than holding `a + c` per chunk.  None: neither
    operand is of that form, or both are."""
    for p, q in ((x, y), (y, x)):
        ac = _offset(p)
        if ac is not None and _offset(q) is None and _defining(q, "arith.constant") is None:
            a, c = ac
            return arith.AddIOp(arith.AddIOp(a, q).result, c).result
    return None


def _ext_of_offset(name: str, t: ir.Type, x: ir.Value) -> ir.Value | None:
    """`ext(a + c)` as `ext(a) + ext(c)` where the add of a constant `c` cannot
    wrap in the extension's sense (nsw for extsi, nuw for extui): a thread's
    coordinates are its base plus a chunk constant (FuncLowering.coordinates),
    and keeping the constant outside the extension lets `_constant_last` keep
    it the last term of the address arithmetic.  None: not of that form."""
    add = _defining(x, "arith.addi")
    if add is None or "overflowFlags" not in add.attributes:
        return None
    flags = add.attributes["overflowFlags"]
    const = _defining(add.operands[1], "arith.constant")
    if _EXT_NO_WRAP[name] not in str(flags) or const is None:
        return None
    signed = name == "arith.extsi"
    values = [v for v in ir.DenseIntElementsAttr(const.attributes["value"])] \
        if isinstance(t, ir.VectorType) else [ir.IntegerAttr(const.attributes["value"]).value]
    width = ir.IntegerType(ir.IntegerType(add.result.type) if not isinstance(t, ir.VectorType)
                           else ir.VectorType(add.result.type).element_type).width
    if not signed:
        values = [v % (1 << width) for v in values]
    e = _elem(t)
    if isinstance(t, ir.VectorType):
        wide_c = arith.ConstantOp(t, ir.DenseElementsAttr.get(
            [ir.IntegerAttr.get(e, v) for v in values], type=t)).result
    else:
        wide_c = arith.ConstantOp(t, ir.IntegerAttr.get(e, values[0])).result
    return arith.AddIOp(_op(name, t, [add.operands[0]]), wide_c, overflowFlags=flags).result


def _fastmath_none(attrs: dict[str, ir.Attribute]) -> bool:
    return str(attrs.get("fastmath", _NO_FASTMATH)) == _NO_FASTMATH


def emit(L: FuncLowering, name: str, rtypes: Sequence[ir.Type], operands: Sequence[ir.Value],
         attrs: dict[str, ir.Attribute]) -> list[ir.Value]:
    """Emit one per-thread arith/math op; returns its results."""
    if len(rtypes) == 1 and len(operands) == 1 and name in _INTRINSIC:
        t, x = rtypes[0], operands[0]
        v = L.hook("hook.math-fn")(L, name, t, x)
        if v is not None:
            return [v]
        if name == "math.exp" and L.target.has(Feature.FAST_EXP2):
            return [_in_f32(t, x, lambda tt, xx: _op("math.exp2", tt, [_op(
                "arith.mulf", tt, [xx, _const(tt, _LOG2E)])]))]
    if name == "math.absi":
        return [_abs_int(rtypes[0], operands[0])]
    last = L.target.has(Feature.CHUNK_CONSTANTS_LAST)
    if last and name == "arith.addi" and len(operands) == 2:
        v = _constant_last(rtypes[0], operands[0], operands[1])
        if v is not None:
            return [v]
    if last and name in _EXT_NO_WRAP and len(operands) == 1:
        v = _ext_of_offset(name, rtypes[0], operands[0])
        if v is not None:
            return [v]
    if name == "arith.divf" and _elem(rtypes[0]) == ir.F32Type.get() and _fastmath_none(attrs):
        return [L.hook("hook.f32-div")(L, rtypes[0], operands, attrs)]
    if name in _CONTRACTIBLE and L.target.has(Feature.FP_CONTRACT) and _fastmath_none(attrs):
        attrs = dict(attrs, fastmath=ir.Attribute.parse("#arith.fastmath<contract>"))
    op = ir.Operation.create(name, results=list(rtypes), operands=list(operands), attributes=attrs)
    return list(op.results)


@RULES.rule("hook.math-fn")
def native_math_fn(L: FuncLowering, name: str, t: ir.Type, x: ir.Value) -> ir.Value | None:
    """No device math library: LLVM intrinsics (see the module docstring)."""
    if name in _TRANSCENDENTAL and _elem(t) == ir.F64Type.get():
        raise TilecError(f"tl.{name.split('.')[1]} on float64 is not supported on "
                         f"{L.target.name} (it needs the ROCm device library, which tilec does "
                         "not link); compute in float32", source_loc(ir.Location.current))
    if name == "math.exp":
        return _in_f32(t, x, lambda tt, xx: _intrinsic("llvm.exp2", tt, _op(
            "arith.mulf", tt, [xx, _const(tt, _LOG2E)])))
    if name == "math.log":
        return _in_f32(t, x, lambda tt, xx: _op(
            "arith.mulf", tt, [_intrinsic("llvm.log2", tt, xx), _const(tt, _LN2)]))
    return _in_f32(t, x, lambda tt, xx: _intrinsic(_INTRINSIC[name], tt, xx))


@RULES.rule("hook.f32-div")
def ieee_f32_div(L: FuncLowering, t: ir.Type, operands: Sequence[ir.Value],
                 attrs: dict[str, ir.Attribute]) -> ir.Value:
    """The correctly rounded division."""
    return ir.Operation.create("arith.divf", results=[t], operands=list(operands),
                               attributes=attrs).result


@RULES.rule("arith.*", "math.*")
def elementwise(L: FuncLowering, op: ir.Operation) -> None:
    """Any arith/math op: copied per chunk (tiles) or once (scalars)."""
    attrs = {n: op.attributes[n] for n in op.attributes}
    if not any(is_tile(r.type) for r in op.results):
        results = emit(L, op.name, [L.scalar_type(r.type) for r in op.results],
                       [L.get(o) for o in op.operands], attrs)
        for old, r in zip(op.results, results):
            L.values[old] = r
        return
    d = L.dist(op.results[0].type)
    frags = [L.frag(o) if is_tile(o.type) else [L.get(o)] * d.num_chunks for o in op.operands]
    rtypes = [L.frag_types(r.type)[0] for r in op.results]
    outs: list[list[ir.Value]] = [[] for _ in op.results]
    runs = _mask_runs(L, op, d)
    done: dict[tuple[int, ...], list[ir.Value]] = {}
    for ci in range(d.num_chunks):
        run = runs[ci]
        if run is not None and run in done:
            results = done[run]
        elif run is not None:
            one = emit(L, op.name, [L.scalar_type(r.type.element_type) for r in op.results],
                       [L.extract(f[ci], 0) if is_tile(o.type) else f[ci]
                        for f, o in zip(frags, op.operands)], attrs)
            results = done[run] = [L.splat(v, d.vec_len) for v in one]
        else:
            results = emit(L, op.name, rtypes, [f[ci] for f in frags], attrs)
        for k, r in enumerate(results):
            outs[k].append(r)
    for old, vals in zip(op.results, outs):
        L.values[old] = vals


def _mask_runs(L: FuncLowering, op: ir.Operation, d: Distribution) -> list[tuple[int, ...] | None]:
    """Per chunk of a mask (an i1 tile result), the key of the run of equal
    values its elements all lie in (`Distribution.run_key` on the axis
    analysis' constancy), else None; for other ops all None.  A chunk whose
    run an earlier chunk computed takes that chunk's value, and a run is
    computed once on its first element: `offs < n` with n a multiple of 16 is
    one comparison per 8 or 16 columns a thread holds, not one per element
    (16 per row of a wgmma accumulator tile: ptxas kept the predicates
    of the attention backward's masks packed in a register, two LOP3s each)."""
    res = op.results[0]
    if len(op.results) != 1 or not is_i1(ir.RankedTensorType(res.type).element_type):
        return [None] * d.num_chunks
    constancy = L.axis.get(res).constancy
    out: list[tuple[int, ...] | None] = []
    for key in d.chunk_keys:
        keys = {d.run_key(constancy, tuple(k + (i if dim == d.fast else 0)
                                           for dim, k in enumerate(key)))
                for i in range(d.vec_len)}
        out.append(keys.pop() if len(keys) == 1 else None)
    return out

