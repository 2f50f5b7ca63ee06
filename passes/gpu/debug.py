"""`convert-tile-to-gpu` rules for the debug mode's `tile.debug_trap`
(dialects/tile_debug.py; made by passes/tile_debug_checks.py) and for
`tile.print` (`tl.device_print`, dialects/tile_print.py).

  * generic: nothing more (AMD): the error record in device memory says what
    failed, and the host raises a located `TilecError` from it after the
    launch (tilec/runtime/debug.py), as on the CPU.
  * `Feature.DEVICE_PRINTF` (NVIDIA's `vprintf`): thread 0 of the program also
    prints `tilec debug: <message> at file:line:col, program (x, y, z),
    element offset N` through `gpu.printf`.
No trap: measured on the H200, a trapping kernel loses its printf buffer and
ends the CUDA context, so neither the message nor the record reached the user;
the failed access itself is already masked off (or sent to the record's spare
word), so the kernel runs to its end without touching memory out of bounds.

The op is reached by the threads of one program together (its condition is a
reduction over the program's tile), so the print happens once per failing
program.

`tile.print`:
  * `Feature.DEVICE_PRINTF`: `gpu.printf` (vprintf), the same mechanism: each
    thread prints the elements it holds (the canonical copy only, where a
    layout replicates elements), one line per element with the program ids
    and the element's coordinates (`tile_print.line_format`); a scalar, or a
    call without values, is printed by thread 0 once per program.  Values are
    passed as vprintf expects them: floats as double, integers below 32 bits
    as i32, pointers as their 64-bit address.
  * `Feature.PRINTF_BUFFER` (AMD): the same `gpu.printf` calls, which the
    back end lowers for OpenCL's printf buffer (targets/amd/printf.py: LLVM's
    printf pass stores each call's arguments into `hidden_printf_buffer`; a
    runtime prints them after the kernel).  The debug mode's message stays
    `DEVICE_PRINTF` only (AMD reports the record alone, as before).
  * generic (no device printf): a TilecError at the user's line when the
    kernel is compiled.

Nearest upstream analogue: Triton's `tl.device_assert` lowering
(`__assertfail` on NVIDIA, `abort` on AMD) and its `PrintOpToLLVM`.
"""
from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import arith, gpu, llvm, scf

from tilec.dialects import tile_print
from tilec.errors import TilecError, source_loc
from tilec.passes.gpu.context import FuncLowering, Rule, i32, is_tile
from tilec.passes.gpu.memory import first_thread
from tilec.passes.gpu.reduce import canonical_thread
from tilec.passes.rules import RuleSet
from tilec.targets import Feature

RULES: RuleSet[Rule] = RuleSet("gpu.debug")


@RULES.rule("tile.debug_trap")
def _record_only(L: FuncLowering, op: ir.Operation) -> None:
    """The record is written; the host reports it."""


@RULES.rule("tile.debug_trap", feature=Feature.DEVICE_PRINTF)
def _print(L: FuncLowering, op: ir.Operation) -> None:
    message = ir.StringAttr(op.attributes["message"]).value.replace("%", "%%")
    loc = source_loc(op.location)
    where = f" at {loc}" if loc else ""
    fmt = (f"tilec debug: {message}{where}, program (%d, %d, %d), element offset %lld\n")
    tid = gpu.thread_id(gpu.Dimension.x)
    first = arith.cmpi(arith.CmpIPredicate.eq, tid, arith.constant(ir.IndexType.get(), 0))
    if_op = scf.IfOp(first, [], has_else=False)
    with ir.InsertionPoint(if_op.then_block):
        gpu.printf(fmt, *[L.get(v) for v in op.operands])
        scf.YieldOp([])


@RULES.rule("tile.print")
def _no_print(L: FuncLowering, op: ir.Operation) -> None:
    raise TilecError(f"tl.device_print / print() is not supported on {L.target.name}: the "
                     "target has no device printf that tilec links (NVIDIA GPUs and the CPU "
                     "have one)", source_loc(op.location))


def _vararg(v: ir.Value, fmt: str) -> ir.Value:
    t = v.type
    if isinstance(t, llvm.PointerType):  # %p takes the 64-bit address
        return llvm.PtrToIntOp(ir.IntegerType.get_signless(64), v).result
    if isinstance(t, ir.FloatType):
        return v if isinstance(t, ir.F64Type) else arith.ExtFOp(ir.F64Type.get(), v).result
    if isinstance(t, ir.IntegerType) and ir.IntegerType(t).width < 32:
        unsigned = ir.IntegerType(t).width == 1 or fmt.endswith(("u", "x"))
        return (arith.ExtUIOp if unsigned else arith.ExtSIOp)(i32(), v).result
    return v


def _when(cond: ir.Value | None, body: Callable[[], None]) -> None:
    if cond is None:
        body()
        return
    if_op = scf.IfOp(cond, [], has_else=False)
    with ir.InsertionPoint(if_op.then_block):
        body()
        scf.YieldOp([])


@RULES.rule("tile.print", feature=Feature.DEVICE_PRINTF)
@RULES.rule("tile.print", feature=Feature.PRINTF_BUFFER)
def _device_print(L: FuncLowering, op: ir.Operation) -> None:
    prefix, formats, which = tile_print.print_params(op)
    pids = [arith.IndexCastOp(i32(), gpu.BlockIdOp(d).result).result
            for d in (gpu.Dimension.x, gpu.Dimension.y, gpu.Dimension.z)]
    if not op.operands or not is_tile(op.operands[0].type):
        first = first_thread(L)
        if not op.operands:
            _when(first, lambda: gpu.printf(tile_print.line_format(prefix, "", 0, None), *pids))
        else:
            fmt, v = formats[0], L.get(op.operands[0])
            _when(first, lambda: gpu.printf(tile_print.line_format(prefix, fmt, 0, which),
                                            *pids, _vararg(v, fmt)))
        return
    src, fmt = op.operands[0], formats[0]
    d = L.dist(src.type)
    # A slice layout's distribution has the expanded rank: the tile's own
    # dimensions leave out the sliced one.
    dims = [dim for dim in range(d.rank) if dim != d.sliced_dim]
    text = tile_print.line_format(prefix, fmt, len(dims), which)
    coords = {dim: L.coordinates(d, dim, 0) for dim in dims}
    frags = L.frag(src)

    def emit() -> None:
        for c, frag in enumerate(frags):
            for i in range(d.vec_len):
                at = [L.extract(coords[dim][c], i) for dim in dims]
                gpu.printf(text, *pids, *at, _vararg(L.extract(frag, i), fmt))

    _when(canonical_thread(L, d), emit)
