"""The state of one kernel's CPU lowering, and the IR helpers its rules share.

Rules are `fn(lw: Lowering, op)`: they read the converted operands of the tile
op `op` (`lw.mapped`), build upstream ops and bind the op's results to the new
values (`lw.bind`).  Ops are built with the typed builders of `mlir.dialects`
at the ambient location and insertion point: `Lowering.lower_op` enters the
matched op's location, so every new op carries it, and a rule that fills a
region enters that block (`with ir.InsertionPoint(block):`).
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, llvm, scf, vector

from tilec.dialects import tile
from tilec.errors import CompilerBugError, source_loc
from tilec.passes.analysis import axis_info as ai
from tilec.passes.rules import RuleSet, RuleTable
from tilec.targets import Target

NAME = "convert-tile-to-cpu"
# A unit attribute on the module: its loops are to stay rolled in LLVM
# (set by tiled.py's kernels, read and removed by targets/cpu/backend.py).
ROLLED_LOOPS = "tilec.cpu_rolled_loops"

Rule = Callable[["Lowering", ir.Operation], None]
CpuRules = RuleSet[Rule]
# The `rawConstantIndices` entry of an `llvm.getelementptr` index that is an operand.
GEP_DYNAMIC = -2 ** 31


class Lowering:
    """Lowers the body of one tile-level kernel `func_op` for `target`."""

    def __init__(self, func_op: ir.Operation, info: ai.AxisInfoMap, target: Target,
                 rules: RuleTable[Rule]) -> None:
        self.src = func_op
        self.info = info
        self.target = target
        self.rules = rules
        # The SIMD register width: strip-mining widths, reduction trees, scan
        # chunks and the alignment of stack buffers follow it.
        self.vector_bytes = target.vector_bytes
        self.vmap: dict[ir.Value, ir.Value] = {}
        self.llvm_ptr = llvm.PointerType.get()
        self.pids: list[ir.Value] = []
        self.nprogs: list[ir.Value] = []
        self.cta_rank: ir.Value | None = None   # a cluster's CTA (control_flow.cluster_ids)
        self.width: int | None = None          # strip-mining width, when strip-mining
        self.chunk_start: ir.Value | None = None
        # Vector stores get non-temporal hints: only in purely elementwise
        # strip-mined kernels (see memory.store), never in row kernels (rows.py).
        self.streaming = False
        # Set by tiled.py for kernels whose tiles live in stack buffers: it sees
        # every op first and lowers those that touch a buffered tile itself.
        self.intercept: Callable[[ir.Operation], None] | None = None

    # ---------------------------------------------------------------- types
    def scalar(self, t: ir.Type) -> ir.Type:
        return self.llvm_ptr if tile.is_ptr(t) else t

    def convert(self, t: ir.Type) -> ir.Type:
        """A tile becomes a flat vector (of the strip width when strip-mining)."""
        if isinstance(t, ir.RankedTensorType):
            n = self.width if self.width is not None else math.prod(tile.shape_of(t))
            return ir.VectorType.get([n], self.scalar(tile.element_type(t)))
        return self.scalar(t)

    # ---------------------------------------------------------------- values
    def mapped(self, v: ir.Value) -> ir.Value:
        return self.vmap[v]

    def bind(self, old: ir.Value, new: ir.Value) -> None:
        self.vmap[old] = new

    def bind_all(self, old: Sequence[ir.Value], new: Sequence[ir.Value]) -> None:
        for o, n in zip(old, new):
            self.vmap[o] = n

    # ---------------------------------------------------------------- driving
    def lower_block(self, block: ir.Block) -> None:
        for view in block.operations:
            self.lower_op(view.operation)

    def lower_op(self, op: ir.Operation) -> None:
        """Lower `op` (through `intercept` when one is set)."""
        if self.intercept is not None:
            self.intercept(op)
        else:
            self.apply_rule(op)

    def apply_rule(self, op: ir.Operation) -> None:
        """Lower `op` by its rule, at its location (CompilerBugError if it has none)."""
        loc = source_loc(op.location)
        rule = self.rules.get(op.name, self.target, str(loc) if loc else "")
        with op.location:
            rule(self, op)

    def copy(self, op: ir.Operation) -> None:
        """`op` again on the converted operands, with converted result types."""
        new = clone(op, [self.mapped(v) for v in op.operands],
                    [self.convert(r.type) for r in op.results])
        self.bind_all(list(op.results), list(new.results))


def clone(op: ir.Operation, operands: Sequence[ir.Value], results: Sequence[ir.Type],
          attributes: dict[str, ir.Attribute] | None = None) -> ir.Operation:
    """`op` with new operands and result types (and, optionally, attributes).

    The one op built by name in the CPU lowering, on purpose: it serves the
    elementwise `arith`/`math` ops (about a hundred, each with its own builder
    signature) whose only change from tiles to vectors is their types, and the
    combine bodies cloned onto vectors."""
    attrs = {name: op.attributes[name] for name in op.attributes}
    attrs.update(attributes or {})
    return ir.Operation.create(op.name, results=list(results), operands=list(operands),
                               attributes=attrs)


# ---------------------------------------------------------------- op attributes

def segments(op: ir.Operation) -> list[int]:
    return list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))


def int_attr(op: ir.Operation, name: str) -> int:
    return int(ir.IntegerAttr(op.attributes[name]).value)


def touches_tiles(op: ir.Operation) -> bool:
    return any(isinstance(v.type, ir.RankedTensorType)
               for v in list(op.results) + list(op.operands))


def combine_func(op: ir.Operation) -> ir.Operation:
    f = tile.combine_function(op)
    if f is None:
        raise CompilerBugError(f"{NAME}: the combine function of {op.name} is not in the module")
    return f


# ---------------------------------------------------------------- types

def int_t(width: int) -> ir.IntegerType:
    return ir.IntegerType.get_signless(width)


def elem_of(t: ir.Type) -> ir.Type:
    """The element type of a vector type, or the scalar type itself."""
    return ir.VectorType(t).element_type if isinstance(t, ir.VectorType) else t


def like(t: ir.Type, elem: ir.Type) -> ir.Type:
    """`elem`, or a vector of `elem` with the shape of vector type `t`."""
    return ir.VectorType.get(ir.VectorType(t).shape, elem) if isinstance(t, ir.VectorType) else elem


def vec_len(v: ir.Value) -> int:
    return int(ir.VectorType(v.type).shape[0])


def elem_bits(t: ir.Type) -> int:
    if isinstance(t, (ir.IntegerType, ir.FloatType)):
        return int(t.width)
    return 64


def scalar_bytes(t: ir.Type) -> int:
    return max(1, elem_bits(t) // 8)


def is_bool(t: ir.Type) -> bool:
    """Whether a scalar or vector type has i1 elements."""
    et = elem_of(t)
    return isinstance(et, ir.IntegerType) and ir.IntegerType(et).width == 1


def as_bytes(t: ir.Type) -> ir.Type:
    """The in-memory type of an i1 scalar or vector: one byte per element."""
    return like(t, int_t(8))


# ---------------------------------------------------------------- constants

def const_int(t: ir.Type, v: int) -> ir.Value:
    return arith.ConstantOp(t, ir.IntegerAttr.get(t, v)).result


def zero_attr(t: ir.Type) -> ir.Attribute:
    return ir.FloatAttr.get(t, 0.0) if isinstance(t, ir.FloatType) else ir.IntegerAttr.get(t, 0)


def splat(t: ir.Type, value: ir.Attribute) -> ir.Value:
    """A constant vector of type `t` with every lane `value`."""
    return arith.ConstantOp(t, ir.DenseElementsAttr.get_splat(ir.VectorType(t), value)).result


def zeros(t: ir.Type) -> ir.Value:
    return splat(t, zero_attr(ir.VectorType(t).element_type))


def scalar_zero(t: ir.Type) -> ir.Value:
    return arith.ConstantOp(t, zero_attr(t)).result


def zero(t: ir.Type) -> ir.Value:
    """Zero of a vector, integer, float or pointer type."""
    if isinstance(t, ir.VectorType):
        return zeros(t)
    if isinstance(t, (ir.IntegerType, ir.FloatType)):
        return scalar_zero(t)
    return llvm.ZeroOp(t).result


def all_true(n: int) -> ir.Value:
    return splat(ir.VectorType.get([n], int_t(1)), ir.IntegerAttr.get(int_t(1), 1))


def bool_vector(bits: Sequence[bool]) -> ir.Value:
    vt = ir.VectorType.get([len(bits)], int_t(1))
    if all(bits) or not any(bits):
        return splat(vt, ir.IntegerAttr.get(int_t(1), int(bool(bits[0]))))
    text = ", ".join("true" if b else "false" for b in bits)
    return arith.ConstantOp(vt, ir.Attribute.parse(f"dense<[{text}]> : {vt}")).result


# ---------------------------------------------------------------- vectors

def extract(vec: ir.Value, pos: int) -> ir.Value:
    return vector.ExtractOp(vec, [], [pos]).result


def slice_(vec: ir.Value, offset: int, size: int) -> ir.Value:
    """Lanes [offset, offset + size) of `vec` (`vec` itself when that is all of it)."""
    vt = ir.VectorType(vec.type)
    if size == vt.shape[0]:
        return vec
    rt = ir.VectorType.get([size], vt.element_type)
    return vector.ExtractStridedSliceOp(rt, vec, [offset], [size], [1]).result


def insert_slice(piece: ir.Value, dest: ir.Value, offset: int) -> ir.Value:
    return vector.InsertStridedSliceOp(piece, dest, [offset], [1]).result


def shuffle2(a: ir.Value, b: ir.Value, idx: Sequence[int]) -> ir.Value:
    """Lanes `idx` of the concatenation a ++ b."""
    return vector.ShuffleOp(a, b, list(idx)).result


def gather(v: ir.Value, idx: Sequence[int]) -> ir.Value:
    """The lanes `idx` of vector `v`, as a new vector."""
    if list(idx) == list(range(vec_len(v))):
        return v
    if list(idx) == list(range(idx[0], idx[0] + len(idx))):
        return slice_(v, idx[0], len(idx))
    return shuffle2(v, v, idx)


def concat(pieces: list[ir.Value]) -> ir.Value:
    """Concatenate equal-length vectors with a tree of two-operand shuffles."""
    while len(pieces) > 1:
        nxt = []
        for k in range(0, len(pieces) - 1, 2):
            a, b = pieces[k], pieces[k + 1]
            nxt.append(shuffle2(a, b, range(vec_len(a) + vec_len(b))))
        if len(pieces) % 2:
            nxt.append(pieces[-1])
        pieces = nxt
    return pieces[0]


def from_elements(elems: Sequence[ir.Value]) -> ir.Value:
    return vector.FromElementsOp(ir.VectorType.get([len(elems)], elems[0].type),
                                 list(elems)).result


# ---------------------------------------------------------------- memory

def lane_ptr(base: ir.Value, index: ir.Value, elem: ir.Type) -> ir.Value:
    """&base[index] for elements of type `elem`."""
    return llvm.GEPOp(base.type, base, [index], [GEP_DYNAMIC], elem,
                      llvm.GEPNoWrapFlags.none).result


def entry_alloca(lw: Lowering, elem: ir.Type, count: int) -> ir.Value:
    """A stack buffer of `count` elements aligned to the SIMD width, allocated
    in the entry block of the function being built (so that allocas inside
    loops do not grow the stack)."""
    owner: ir.Operation | None = ir.InsertionPoint.current.block.owner.operation
    while owner is not None and owner.name != "func.func":
        parent = owner.parent
        owner = parent.operation if parent is not None else None
    assert owner is not None
    entry = owner.regions[0].blocks[0]
    ops = list(entry.operations)
    ip = ir.InsertionPoint(ops[0]) if ops else ir.InsertionPoint(entry)
    n = llvm.ConstantOp(int_t(64), ir.IntegerAttr.get(int_t(64), count), ip=ip).result
    return llvm.AllocaOp(lw.llvm_ptr, n, elem, alignment=lw.vector_bytes, ip=ip).result


# ---------------------------------------------------------------- control flow

def for_loop(upper: int, step: int = 1, carried: Sequence[ir.Value] = ()) -> scf.ForOp:
    """`scf.for` over i32 [0, upper) by `step`, carrying `carried`."""
    i32 = int_t(32)
    return scf.ForOp(const_int(i32, 0), const_int(i32, upper), const_int(i32, step), list(carried))


def if_else(cond: ir.Value, then: Callable[[], ir.Value | None],
            other: Callable[[], ir.Value | None], result: ir.Type | None) -> ir.Value | None:
    """`scf.if cond` yielding then() or other() (their values only if `result`)."""
    if_op = scf.IfOp(cond, [result] if result is not None else [], has_else=True)
    for block, fn in ((if_op.then_block, then), (if_op.else_block, other)):
        with ir.InsertionPoint(block):
            v = fn()
            scf.YieldOp([v] if result is not None and v is not None else [])
    return if_op.results[0] if result is not None else None
