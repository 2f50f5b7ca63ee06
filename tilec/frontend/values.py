"""What every part of code generation shares: `CodeGenBase`.

It holds the generator's state (the kernel being built, the scope, the
insertion point and the location of the node being lowered), reports errors
at a parse-tree node, and builds values: constants, casts, broadcasts and the
unification of two operands under Triton's typing rules (`semantic.promote`).
The expression, call, statement and control-flow parts (`expressions.py`,
`calls.py`, `statements.py`, `control_flow.py`) are mixins over this base;
`codegen.CodeGen` combines them.
"""
from __future__ import annotations


from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, NoReturn

from lark import Tree
from mlir import ir
from mlir.dialects import arith, tensor
from mlir.dialects import math as math_d

from tilec.dialects import tile
from tilec.errors import TilecError
from tilec.frontend.parser import token_pos
from tilec.frontend.semantic import (
    TValue, broadcast_shapes, literal_dtype, mlir_scalar, mlir_type, promote,
)
from tilec.frontend.spec import KernelSpec
from tilec.language import core as tl

Node = Any  # lark Tree | Token | None
# arith.truncf's `roundingmode` for fp_downcast_rounding='rtz' (MLIR's
# arith::RoundingMode::toward_zero; lowered by passes/float_rounding.py).
_TOWARD_ZERO = 3


class Unassigned:
    """A name that exists only on some paths (defined in one branch or inside a loop)."""

    def __init__(self, why: str) -> None:
        self.why = why


@dataclass
class BoundMethod:
    """`x.to` (or another method of a tile or a descriptor) before it is called."""

    obj: Any
    name: str


class Compound(ABC):
    """A compile-time object made of runtime values (a `tl.make_block_ptr`):
    loops carry it part by part, rebuilt around the loop's block arguments."""

    @abstractmethod
    def parts(self) -> list[TValue]:
        """The runtime values, in a fixed order."""

    @abstractmethod
    def with_parts(self, parts: list[TValue]) -> Compound:
        """The same object over other runtime values (the loop's arguments)."""

    @abstractmethod
    def same_kind(self, other: Any) -> bool:
        """Whether `other` can take this value's place in a loop (same static part)."""


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float, bool)) and not isinstance(v, TValue)


class CodeGenBase(ABC):
    builtins: dict[str, Callable[..., Any]]  # the tl.* rules by name (calls.py)

    def __init__(self, spec: KernelSpec) -> None:
        self.spec = spec
        self.src = spec.source
        self.scope: dict[str, Any] = {}
        self.ip: ir.InsertionPoint | None = None
        self.loc: ir.Location = ir.Location.unknown()
        self.module: ir.Module | None = None
        self.functions: set[str] = set()        # private functions emitted into the module
        self.returned: list[Any] | None = None  # set when generating a function with results

    # The entry points the parts call on each other.
    @abstractmethod
    def eval(self, node: Node) -> Any:
        """The value of an expression node (a TValue or a compile-time Python value)."""

    @abstractmethod
    def exec_suite(self, suite: Tree, top_level: bool = False) -> None:
        """Generate the statements of a suite into the current insertion point."""

    @abstractmethod
    def compare(self, op: str, a: Any, b: Any, node: Node) -> TValue:
        """`a op b` for a comparison operator, as an i1 value."""

    @abstractmethod
    def binary(self, op: str, a: Any, b: Any, node: Node) -> Any:
        """`a op b` for a Python binary operator (folded when both are constexprs)."""

    @abstractmethod
    def eval_args(self, node: Node) -> tuple[list[Any], dict[str, Any]]:
        """The positional and keyword values of a call's argument list."""

    # ------------------------------------------------------------ errors/locs
    def err(self, node: Node, msg: str) -> NoReturn:
        line, col = token_pos(node) if node is not None else (1, 1)
        raise TilecError(msg, self.src.loc(line, col), self.src.line_text(line))

    def location(self, node: Node) -> ir.Location:
        line, col = token_pos(node)
        loc = self.src.loc(line, col)
        return ir.Location.file(loc.file, loc.line, loc.col)

    def _items(self, node: Tree) -> list[Node]:
        """The elements of a tuple, list or parenthesized parse-tree node."""
        if node.data == "paren":
            return self._items(node.children[0]) if isinstance(node.children[0], Tree) else [node]
        out: list[Node] = []
        for c in node.children:
            if isinstance(c, Tree) and c.data in ("tuple_items", "list_items"):
                out.extend(x for x in c.children if x is not None)
            elif c is not None:
                out.append(c)
        return out

    def describe(self, x: Any) -> str:
        if isinstance(x, TValue):
            return f"a {'tile' if x.is_block else 'scalar'} of type {x.type_str()}"
        if isinstance(x, tl.dtype):
            return f"the dtype {x!r}"
        if x is None:
            absent = [p for p, v in self.spec.constexprs.items()
                      if v is None and p in self.spec.runtime_types]
            if absent:  # most likely one of them: say why it is None
                names = ", ".join(f"'{p}'" for p in absent)
                return (f"None (the launch passed None for {names}; such a parameter is a "
                        "constexpr None, which cannot be used as a value)")
            return "None"
        return f"a Python {type(x).__name__} ({x!r})"

    # ------------------------------------------------------------ constants
    def constant(self, value: Any, dtype: tl.dtype, shape: tuple[int, ...] = ()) -> TValue:
        st = mlir_scalar(dtype)
        if dtype.is_floating():
            attr: ir.Attribute = ir.FloatAttr.get(st, float(value))
        else:
            v = int(value)
            if dtype.kind == "uint" and v < 0:
                v &= (1 << dtype.bits) - 1
            if dtype.bits < 64 and v >= 1 << (dtype.bits - 1) and dtype.kind != "bool":
                v -= 1 << dtype.bits  # signless storage of an unsigned value
            if dtype.bits == 64 and v >= 1 << 63:
                v -= 1 << 64
            attr = ir.IntegerAttr.get(st, int(bool(v)) if dtype.is_bool() else v)
        if shape:
            attr = ir.DenseElementsAttr.get_splat(tile.tensor_type(shape, st), attr)
        op = arith.ConstantOp(mlir_type(dtype, shape), attr, loc=self.loc, ip=self.ip)
        return TValue(op.result, dtype, shape)

    def to_value(self, x: Any, node: Node, dtype: tl.dtype | None = None) -> TValue:
        """Materialize a Python number (or check a TValue) as a runtime value."""
        if isinstance(x, TValue):
            return x
        if isinstance(x, tl.constexpr):
            x = x.value
        if is_number(x):
            try:
                dt = dtype or literal_dtype(x)
            except OverflowError as e:
                self.err(node, str(e))
            return self.constant(x, dt)
        self.err(node, f"expected a number or a tile here, got {self.describe(x)}")

    def arith_op(self, builder: Any, *operands: TValue) -> TValue:
        """An elementwise `arith`/`math` op (an upstream builder such as
        `arith.addf`) on operands of one type and shape."""
        first = operands[0]
        res = builder(*(v.handle for v in operands), loc=self.loc, ip=self.ip)
        return TValue(res, first.elem, first.shape)

    # ------------------------------------------------------------ casts
    def cast(self, v: TValue, dst: tl.dtype, node: Node, bitcast: bool = False,
             rounding: Any = None) -> TValue:
        if v.is_ptr:
            self.err(node, f"cannot convert a pointer ({v.type_str()}) to {dst!r}")
        src = v.dtype
        if rounding is not None and self._toward_zero(src, dst, rounding, node):
            h = arith.truncf(mlir_type(dst, v.shape), v.handle, roundingmode=ir.IntegerAttr.get(
                ir.IntegerType.get_signless(32), _TOWARD_ZERO), loc=self.loc, ip=self.ip)
            return TValue(h, dst, v.shape)
        if src is dst:
            return v
        if bitcast:
            if src.bits != dst.bits:
                self.err(node, f"bitcast needs types of the same width: {src!r} is {src.bits} bits, "
                         f"{dst!r} is {dst.bits}")
            return self.convert(arith.bitcast, v, dst)
        if (src in tl.FP8_DTYPES or dst in tl.FP8_DTYPES) and \
                not (src.is_floating() and dst.is_floating()):  # fp8 <-> int/bool via f32
            return self.cast(self.cast(v, tl.float32, node), dst, node)
        if dst.is_bool():
            zero = self.broadcast_to(self.constant(0, src), v.shape, node)
            return self.compare("!=", v, zero, node)
        if src.is_floating() and dst.is_floating():
            if src.bits == dst.bits:  # fp16 <-> bf16 through fp32
                return self.cast(self.cast(v, tl.float32, node), dst, node)
            if src is tl.float64 and dst is tl.bfloat16:
                return self.f64_to_bf16(v)
            return self.convert(arith.extf if dst.bits > src.bits else arith.truncf, v, dst)
        if src.is_int() and dst.is_int():
            if src.bits == dst.bits:
                return TValue(v.handle, dst, v.shape)
            if dst.bits < src.bits:
                return self.convert(arith.trunci, v, dst)
            return self.convert(arith.extsi if src.is_signed() else arith.extui, v, dst)
        if src.is_int() and dst.is_floating():
            return self.convert(arith.sitofp if src.is_signed() else arith.uitofp, v, dst)
        # float -> int
        return self.convert(arith.fptosi if dst.is_signed() else arith.fptoui, v, dst)

    def _toward_zero(self, src: tl.dtype, dst: tl.dtype, rounding: Any, node: Node) -> bool:
        """Triton's `fp_downcast_rounding=` checks: 'rtne' (the default) or
        'rtz', only on a float conversion to fewer bits; True for 'rtz'."""
        if isinstance(rounding, tl.constexpr):
            rounding = rounding.value
        if rounding not in ("rtne", "rtz"):
            self.err(node, f"fp_downcast_rounding={rounding!r} is not a rounding mode: "
                     "'rtne' (to nearest even) and 'rtz' (toward zero) are")
        if not (src.is_floating() and dst.is_floating() and src.bits > dst.bits):
            self.err(node, f"fp_downcast_rounding= is only for float conversions to fewer "
                     f"bits (as in Triton), not {src!r} -> {dst!r}")
        if rounding == "rtne":
            return False
        if dst in tl.FP8_DTYPES:
            self.err(node, f"fp_downcast_rounding='rtz' to {dst!r} is not supported "
                     "(fp16, bf16 and fp32 destinations are)")
        if not self._in_kernel_body():
            self.err(node, "fp_downcast_rounding='rtz' inside a combine function is not "
                     "supported; round in the kernel before the reduction or scan")
        return True

    def _in_kernel_body(self) -> bool:
        """Whether code goes into the kernel (not a private combine function)."""
        if self.ip is None:
            return True
        op: Any = self.ip.block.owner
        while op is not None and op.operation.name != "func.func":
            op = op.operation.parent
        return op is None or "sym_visibility" not in op.operation.attributes

    def convert(self, builder: Any, v: TValue, dst: tl.dtype) -> TValue:
        """`v` converted to `dst` by an `arith` cast builder (extf, bitcast, ...)."""
        out = builder(mlir_type(dst, v.shape), v.handle, loc=self.loc, ip=self.ip)
        return TValue(out, dst, v.shape)

    def f64_to_bf16(self, v: TValue) -> TValue:
        """fp64 -> bf16, rounded once to nearest even.

        Targets lack a direct conversion (on the CPU it is a libgcc/compiler-rt
        call that older runtimes do not have), and fp64 -> fp32 -> bf16 with two
        round-to-nearest steps can round twice.  So round to odd in fp32 (round
        to nearest, step back toward zero if that rounded away, set the last bit
        if inexact), then to nearest even in bf16: that is exact rounding.
        """
        at = {"loc": self.loc, "ip": self.ip}
        f = self.convert(arith.truncf, v, tl.float32)
        back = self.convert(arith.extf, f, tl.float64).handle
        away = arith.cmpf(arith.CmpFPredicate.OGT, math_d.absf(back, **at),
                          math_d.absf(v.handle, **at), **at)
        inexact = arith.cmpf(arith.CmpFPredicate.UNE, back, v.handle, **at)
        i32 = mlir_type(tl.int32, v.shape)
        bits = arith.bitcast(i32, f.handle, **at)
        bits = arith.subi(bits, arith.extui(i32, away, **at), **at)
        bits = arith.ori(bits, arith.extui(i32, inexact, **at), **at)
        odd = arith.bitcast(mlir_type(tl.float32, v.shape), bits, **at)
        return TValue(arith.truncf(mlir_type(tl.bfloat16, v.shape), odd, **at), tl.bfloat16,
                      v.shape)

    # ------------------------------------------------------------ shapes
    def broadcast_to(self, v: TValue, shape: tuple[int, ...], node: Node) -> TValue:
        if v.shape == shape:
            return v
        if not v.shape:
            splat = tensor.splat(mlir_type(v.elem, shape), v.handle, [], loc=self.loc, ip=self.ip)
            return TValue(splat, v.elem, shape)
        try:
            target = broadcast_shapes(v.shape, shape)
        except ValueError as e:
            self.err(node, str(e))
        if target != shape:
            self.err(node, f"cannot broadcast a tile of shape {list(v.shape)} to {list(shape)}")
        cur = v
        while len(cur.shape) < len(shape):
            cur = self.expand_dims(cur, 0)
        if cur.shape != shape:
            out = tile.broadcast(cur.handle, mlir_type(cur.elem, shape), loc=self.loc, ip=self.ip)
            cur = TValue(out, cur.elem, shape)
        return cur

    def expand_dims(self, v: TValue, axis: int) -> TValue:
        if not v.shape:     # a scalar: a [1] tile (`Z[None]`, `Z[None, None, :]`)
            return TValue(tensor.splat(mlir_type(v.elem, (1,)), v.handle, [], loc=self.loc,
                                       ip=self.ip), v.elem, (1,))
        shape = list(v.shape)
        shape.insert(axis, 1)
        if len(shape) >= 3:
            # A rank-3/4 tile from a lower-rank one is a reshape (free on the CPU): GPU
            # layouts give expand_dims a slice of its result's layout, and a slice
            # of a slice (arange(B)[:, None, None]) has no distribution.
            return TValue(tile.reshape(v.handle, tuple(shape), loc=self.loc, ip=self.ip),
                          v.elem, tuple(shape))
        return TValue(tile.expand_dims(v.handle, axis, loc=self.loc, ip=self.ip), v.elem,
                      tuple(shape))

    # ------------------------------------------------------------ operands
    def unify(self, a: Any, b: Any, node: Node, div_or_mod: bool = False,
              arithmetic: bool = True) -> tuple[TValue, TValue]:
        """Cast and broadcast two operands to their common type and shape."""
        a_lit, b_lit = not isinstance(a, TValue), not isinstance(b, TValue)
        for x in (a, b):
            if not isinstance(x, TValue) and not is_number(x):
                self.err(node, f"expected a number or a tile, got {self.describe(x)}")
        if isinstance(a, TValue) and a.is_ptr or isinstance(b, TValue) and b.is_ptr:
            self.err(node, "this operation is not defined on pointers")
        try:
            a_dt = a.dtype if isinstance(a, TValue) else literal_dtype(a)
            b_dt = b.dtype if isinstance(b, TValue) else literal_dtype(b)
        except OverflowError as e:
            self.err(node, str(e))
        try:
            dt = promote(a_dt, a_lit, b_dt, b_lit, div_or_mod) if arithmetic else \
                promote(a_dt, a_lit, b_dt, b_lit)
        except TypeError as e:
            self.err(node, str(e))
        for lit, x in ((a_lit, a), (b_lit, b)):
            # Triton: a Python integer must fit the integer type it takes.
            if lit and dt.is_int() and not dt.is_bool() and not isinstance(x, bool) \
                    and isinstance(x, int):
                if x < 0 and dt.kind == "uint":
                    self.err(node, f"cannot combine a tile of {dt!r} with the negative number {x};"
                             " convert one of them with .to(...)")
                lo, hi = (0, 2 ** dt.bits - 1) if dt.kind == "uint" else \
                    (-(2 ** (dt.bits - 1)), 2 ** (dt.bits - 1) - 1)
                if not lo <= x <= hi:
                    self.err(node, f"the number {x} is out of range for {dt!r} (the type of the "
                             "other operand); convert that operand with .to(...)")
        av = self.cast(self.to_value(a, node, dt if a_lit else None), dt, node)
        bv = self.cast(self.to_value(b, node, dt if b_lit else None), dt, node)
        try:
            shape = broadcast_shapes(av.shape, bv.shape)
        except ValueError as e:
            self.err(node, str(e))
        return self.broadcast_to(av, shape, node), self.broadcast_to(bv, shape, node)
