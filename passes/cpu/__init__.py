"""convert-tile-to-cpu: tile-level kernels -> vector code for the host CPU.

The CPU target is one "lane" per program instance: each program computes its
whole tile as SIMD vectors, and program ids become a loop that the runtime
splits over a thread pool.

Input invariants: a module of tile-level `func.func` kernels (attribute
`tile.kernel`), verified by `tile-verify`; tiles have static shapes.
Output invariants: for kernel `K`,
* `func.func private @K_body(args..., pid0, pid1, pid2, np0, np1, np2)` where
  every tile is a flat 1-D `vector<prod(shape) x T>` (row-major), pointers are
  `!llvm.ptr`, memory accesses are `llvm.load/store`, `llvm.intr.masked.load/
  store` (contiguous rows, as proven by axis info) or masked gather/scatter;
* `func.func @tilec_K(args..., g0: i32, g1: i32, g2: i32, start: i64, end: i64)`
  which runs the programs with linear ids [start, end), and
  `func.func @tilec_K_packed(void **args, g0, g1, g2, start, end)`;
* no `tile` op or `!tile.ptr` type remains; only upstream dialects.
Every new op carries the location of the tile op it replaces.

The target's `vector_bytes` (its SIMD register width) sets the strip-mining
width, where reduction trees stop, the scan chunk and the alignment of stack
buffers.  Each op is lowered by the rule `RULES` finds for it on the target
(rule files: memory, math, shape, control_flow, reduce, scan, atomic, dot,
elements, debug, printing);
an op without one is a CompilerBugError naming the op, the target and the
user's line.  Bodies that are 1-D elementwise work, or 1-D rows with
reductions, are strip-mined first (rows.py); bodies with big 2-D tiles keep
those tiles in stack buffers and lower their ops as loops over register-sized
chunks (tiled.py; `tile.dot` as a register-blocked microkernel,
microkernel.py).

Nearest upstream analogue: `convert-vector-to-llvm` (with a type converter).
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, func, llvm, scf

from tilec.options import CompileOptions
from tilec.passes.analysis import axis_info as ai
from tilec.passes.cpu import (
    atomic, control_flow, debug, dot, elements, math, memory, printing, reduce, rows, scan, shape,
    tiled,
)
from tilec.passes.cpu.context import NAME, ROLLED_LOOPS, Lowering, Rule, const_int, int_t
from tilec.passes.rules import RuleTable
from tilec.targets import Target

__all__ = ["NAME", "RULES", "run"]

RULES: RuleTable[Rule] = RuleTable([memory.RULES, math.RULES, shape.RULES, control_flow.RULES,
                                    reduce.RULES, scan.RULES, atomic.RULES, dot.RULES,
                                    elements.RULES, debug.RULES, printing.RULES])


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    """Replace every tile-level kernel in `module` by its CPU form for `target` (in place)."""
    kernels = [v.operation for v in module.body.operations
               if v.operation.name == "func.func" and "tile.kernel" in v.operation.attributes]
    rolled = False
    for fn in kernels:
        rolled = _lower_kernel(Lowering(fn, ai.analyze(fn), target, RULES), module.body) or rolled
        fn.erase()
    if rolled:
        module.operation.attributes[ROLLED_LOOPS] = ir.UnitAttr.get()


def _lower_kernel(lw: Lowering, module_body: ir.Block) -> bool:
    """Lower one kernel; True if its big tiles became loops (tiled.py)."""
    fn = lw.src
    name = ir.StringAttr(fn.attributes["sym_name"]).value
    ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    arg_types = [lw.convert(t) for t in ftype.inputs]
    body_type = ir.FunctionType.get(arg_types + [int_t(32)] * 6, [])
    with fn.location, ir.InsertionPoint(module_body):
        body_fn = func.FuncOp(f"{name}_body", body_type, visibility="private")
    entry = _entry_block(body_fn, body_type)
    src_entry = fn.regions[0].blocks[0]
    lw.bind_all(list(src_entry.arguments), list(entry.arguments))
    args = list(entry.arguments)
    lw.pids = args[len(arg_types):len(arg_types) + 3]
    lw.nprogs = args[len(arg_types) + 3:]
    with fn.location, ir.InsertionPoint(entry):
        control_flow.cluster_ids(lw, fn)
        rolled = False
        if not (rows.lower_elementwise(lw, src_entry) or rows.lower_rows(lw, src_entry)):
            rolled = tiled.lower_tiled(lw, src_entry)
            if not rolled:
                lw.lower_block(src_entry)
    with fn.location, ir.InsertionPoint(module_body):
        abi_types = _grid_function(lw, name, arg_types)
        _packed_function(lw, name, abi_types)
    return rolled


def _entry_block(fn: func.FuncOp, ftype: ir.FunctionType) -> ir.Block:
    """The entry block of `fn`; its arguments have no source position."""
    return fn.body.blocks.append(*ftype.inputs,
                                 arg_locs=[ir.Location.unknown()] * len(ftype.inputs))


def _grid_function(lw: Lowering, name: str, arg_types: list[ir.Type]) -> list[ir.Type]:
    """`tilec_<name>(args..., g0, g1, g2, start, end)`: calls the body for the
    programs with linear ids [start, end).  Returns its argument types."""
    i32, i64 = int_t(32), int_t(64)
    # fp16/bf16 scalars cross the C ABI as their bits (i16): callers such as
    # ctypes have no 16-bit float type.
    abi_types = [int_t(16) if isinstance(t, (ir.F16Type, ir.BF16Type)) else t for t in arg_types]
    ftype = ir.FunctionType.get(abi_types + [i32, i32, i32, i64, i64], [])
    grid_fn = func.FuncOp(f"tilec_{name}", ftype)
    entry = _entry_block(grid_fn, ftype)
    a = list(entry.arguments)
    kargs, (g0, g1, g2, start, end) = a[:len(arg_types)], a[len(arg_types):]
    with ir.InsertionPoint(entry):
        kargs = [arith.BitcastOp(t, v).result if t != v.type else v
                 for t, v in zip(arg_types, kargs)]
        loop = scf.ForOp(start, end, const_int(i64, 1))
        with ir.InsertionPoint(loop.body):
            lin = loop.induction_variable
            g0w = arith.ExtSIOp(i64, g0).result
            g1w = arith.ExtSIOp(i64, g1).result
            p0 = arith.RemSIOp(lin, g0w).result
            rest = arith.DivSIOp(lin, g0w).result
            p1 = arith.RemSIOp(rest, g1w).result
            p2 = arith.DivSIOp(rest, g1w).result
            pids = [arith.TruncIOp(i32, p).result for p in (p0, p1, p2)]
            func.CallOp([], f"{name}_body", kargs + pids + [g0, g1, g2])
            scf.YieldOp([])
        func.ReturnOp([])
    return abi_types


def _packed_function(lw: Lowering, name: str, abi_types: list[ir.Type]) -> None:
    """`tilec_<name>_packed(void **args, g0, g1, g2, start, end)`: the grid
    function with its arguments passed as an array of pointers to their values
    (one signature for every kernel, so the C launch path can call any)."""
    i32, i64 = int_t(32), int_t(64)
    ftype = ir.FunctionType.get([lw.llvm_ptr, i32, i32, i32, i64, i64], [])
    fn = func.FuncOp(f"tilec_{name}_packed", ftype)
    entry = _entry_block(fn, ftype)
    params, rest = entry.arguments[0], list(entry.arguments)[1:]
    with ir.InsertionPoint(entry):
        values = []
        for k, t in enumerate(abi_types):
            slot = llvm.GEPOp(lw.llvm_ptr, params, [], [k], lw.llvm_ptr,
                              llvm.GEPNoWrapFlags.none).result
            where = llvm.LoadOp(lw.llvm_ptr, slot).result
            values.append(llvm.LoadOp(t, where).result)
        func.CallOp([], f"tilec_{name}", values + rest)
        func.ReturnOp([])
