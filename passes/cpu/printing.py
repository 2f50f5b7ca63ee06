"""CPU lowering of `tile.print` (`tl.device_print` / `print` in kernels,
dialects/tile_print.py): the C library's `printf`, then `fflush(NULL)`.

Each operand is printed element by element, one line each, in row-major
order: a tile is copied to a stack buffer and an `scf.for` over its elements
loads one, computes its coordinates (div/rem by the row length), widens it to
the printf argument type (floats to double, integers below 32 bits to i32,
booleans zero-extended) and calls `printf` with the line format of
`tile_print.line_format` (program ids first).  `printf` and `fflush` are
declared once per module and the formats are private string constants; the
shared object resolves both from the C library when it is loaded.  `fflush`
makes the output reach the process's stdout before the launch returns (the C
library buffers it apart from Python's `sys.stdout`).

Nearest upstream analogue: none in MLIR for host code (`gpu.printf` is
lowered for GPUs only); Triton's interpreter prints with Python's `print`.
"""
from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith, llvm, scf

from tilec.dialects import tile
from tilec.dialects import tile_print
from tilec.passes.cpu.context import (
    CpuRules, Lowering, const_int, entry_alloca, for_loop, int_t, is_bool, lane_ptr, scalar_bytes,
)

RULES = CpuRules("cpu.printing")

_PRINTF = "printf"
_FFLUSH = "fflush"


def _module_body(lw: Lowering) -> ir.Block:
    op = lw.src
    while op.name != "builtin.module":
        parent = op.parent
        assert parent is not None
        op = parent.operation if hasattr(parent, "operation") else parent
    return op.regions[0].blocks[0]


def _symbols(body: ir.Block) -> set[str]:
    return {ir.StringAttr(o.operation.attributes["sym_name"]).value for o in body.operations
            if "sym_name" in o.operation.attributes}


def _declare(lw: Lowering, body: ir.Block) -> None:
    names = _symbols(body)
    ptr = lw.llvm_ptr
    with ir.InsertionPoint.at_block_begin(body), ir.Location.unknown():
        if _PRINTF not in names:
            llvm.LLVMFuncOp(_PRINTF, ir.TypeAttr.get(ir.Type.parse("!llvm.func<i32 (ptr, ...)>")),
                            linkage=ir.Attribute.parse("#llvm.linkage<external>"))
        if _FFLUSH not in names:
            llvm.LLVMFuncOp(_FFLUSH, ir.TypeAttr.get(ir.Type.parse("!llvm.func<i32 (ptr)>")),
                            linkage=ir.Attribute.parse("#llvm.linkage<external>"))


def _string(lw: Lowering, body: ir.Block, text: str) -> ir.Value:
    """The address of a private NUL-terminated constant holding `text`."""
    data = text.encode() + b"\0"
    names = _symbols(body)
    k = 0
    while f"__tilec_fmt_{k}" in names:
        k += 1
    name = f"__tilec_fmt_{k}"
    arr = ir.Type.parse(f"!llvm.array<{len(data)} x i8>")
    with ir.InsertionPoint.at_block_begin(body), ir.Location.unknown():
        llvm.GlobalOp(arr, name, ir.Attribute.parse("#llvm.linkage<private>"), constant=True,
                      value=ir.StringAttr.get(data.decode("latin-1")))
    return llvm.AddressOfOp(lw.llvm_ptr, name).result


def _call(callee: str, args: list[ir.Value], var_type: str | None = None) -> None:
    kw = {"var_callee_type": ir.TypeAttr.get(ir.Type.parse(var_type))} if var_type else {}
    llvm.CallOp(int_t(32), args, [], [], callee=ir.FlatSymbolRefAttr.get(callee), **kw)


def _arg(v: ir.Value, fmt: str) -> ir.Value:
    """`v` as a C variadic argument: floats as double, integers below 32 bits
    as i32 (zero-extended for booleans and the unsigned / hex conversions)."""
    t = v.type
    if isinstance(t, ir.FloatType):
        return v if isinstance(t, ir.F64Type) else arith.ExtFOp(ir.F64Type.get(), v).result
    if isinstance(t, ir.IntegerType) and ir.IntegerType(t).width < 32:
        unsigned = ir.IntegerType(t).width == 1 or fmt.endswith(("u", "x"))
        return (arith.ExtUIOp if unsigned else arith.ExtSIOp)(int_t(32), v).result
    return v


@RULES.rule("tile.print")
def print_values(lw: Lowering, op: ir.Operation) -> None:
    prefix, formats, which = tile_print.print_params(op)
    body = _module_body(lw)
    _declare(lw, body)
    pids = list(lw.pids)
    var = "!llvm.func<i32 (ptr, ...)>"
    if not op.operands:
        _call(_PRINTF, [_string(lw, body, tile_print.line_format(prefix, "", 0, None)), *pids], var)
    for v, fmt in zip(op.operands, formats):
        shape = tile.shape_of(v.type) if isinstance(v.type, ir.RankedTensorType) else ()
        text = tile_print.line_format(prefix, fmt, len(shape), which)
        fmt_ptr = _string(lw, body, text)
        value = lw.mapped(v)
        if not shape:
            _call(_PRINTF, [fmt_ptr, *pids, _arg(value, fmt)], var)
            continue
        n = math.prod(shape)
        vt = ir.VectorType(value.type)
        mem = int_t(8) if is_bool(vt) else vt.element_type
        if mem != vt.element_type:
            value = arith.ExtUIOp(ir.VectorType.get([n], mem), value).result
        buf = entry_alloca(lw, mem, n)
        llvm.StoreOp(value, buf, alignment=scalar_bytes(mem))
        loop = for_loop(n)
        with ir.InsertionPoint(loop.body):
            i = loop.induction_variable
            elem = llvm.LoadOp(mem, lane_ptr(buf, i, mem)).result
            if mem != vt.element_type:
                elem = arith.TruncIOp(vt.element_type, elem).result
            coords = [i] if len(shape) == 1 else [
                arith.DivUIOp(i, const_int(int_t(32), shape[1])).result,
                arith.RemUIOp(i, const_int(int_t(32), shape[1])).result]
            _call(_PRINTF, [fmt_ptr, *pids, *coords, _arg(elem, fmt)], var)
            scf.YieldOp([])
    _call(_FFLUSH, [llvm.ZeroOp(lw.llvm_ptr).result])
