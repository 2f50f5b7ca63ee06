"""Parse tree -> `tile` dialect IR.

`generate(spec)` walks the lark tree of one kernel and builds a `func.func`
whose body uses `tile`, `arith`, `math`, `tensor.splat` and `scf` ops.  Every
op gets the user's file:line:col.  Constexprs (parameters marked
`tl.constexpr`, Python numbers, dtypes, tuples) are evaluated here and never
reach the IR except as constants.  Every mistake in kernel code raises a
`TilecError` at the offending node.

Input: the kernel's `KernelSource`, its `funcdef` tree, the runtime
parameters' types and specialization facts, and the constexpr values.
Output: an `ir.Module` holding one `func.func` with attribute `tile.kernel`.
"""
from __future__ import annotations

import ast
import builtins as py_builtins
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, NoReturn, Sequence

from lark import Token, Tree
from mlir import ir
from mlir.dialects import func as func_d

from tilec.dialects import tile
from tilec.errors import TilecError
from tilec.frontend.parser import KernelSource, token_pos
from tilec.frontend.semantic import (
    ElemType, TValue, broadcast_shapes, literal_dtype, mlir_scalar, mlir_type, promote,
)
from tilec.language import core as tl
from tilec.runtime.args import EQUAL_TO_1

Node = Any  # lark Tree | Token | None


@dataclass
class KernelSpec:
    """Everything code generation needs for one specialization."""

    name: str
    source: KernelSource
    tree: Tree
    params: list[str]                       # all parameter names, in order
    runtime_types: dict[str, ElemType]      # non-constexpr parameters
    constexprs: dict[str, Any]              # constexpr parameters -> values
    divisibility: dict[str, int]            # runtime param -> 16 (aligned/divisible)
    globals: dict[str, Any]
    used_globals: dict[str, Any] = field(default_factory=dict)
    # Set by code generation: the runtime pointer parameters some tl.store may
    # write through (the launch refuses read-only arrays for those only).
    stored_params: list[str] | None = None


class _Unassigned:
    """A name that exists only on some paths (defined in one branch or inside a loop)."""

    def __init__(self, why: str) -> None:
        self.why = why


@dataclass
class _BoundMethod:
    obj: TValue
    name: str


_PY_BUILTINS = {"range", "float", "int", "bool", "min", "max", "abs", "len", "print",
                "isinstance", "tuple", "list"}


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, bool)) and not isinstance(v, TValue)


class CodeGen:
    def __init__(self, spec: KernelSpec) -> None:
        self.spec = spec
        self.src = spec.source
        self.scope: dict[str, Any] = {}
        self.ip: ir.InsertionPoint | None = None
        self.loc: ir.Location = ir.Location.unknown()
        from tilec.frontend import builtins as bi  # local: avoids an import cycle
        from tilec.frontend import builtins_extra, builtins_reduce  # noqa: F401  (register rules)
        self.builtins: dict[str, Callable[..., Any]] = bi.REGISTRY
        self.module: ir.Module | None = None
        self.functions: set[str] = set()        # private functions emitted into the module
        self.returned: list[Any] | None = None  # set when generating a function with results

    # ------------------------------------------------------------ errors/locs
    def err(self, node: Node, msg: str) -> NoReturn:
        line, col = token_pos(node) if node is not None else (1, 1)
        raise TilecError(msg, self.src.loc(line, col), self.src.line_text(line))

    def location(self, node: Node) -> ir.Location:
        line, col = token_pos(node)
        loc = self.src.loc(line, col)
        return ir.Location.file(loc.file, loc.line, loc.col)

    # ------------------------------------------------------------ IR helpers
    def create(self, name: str, results: Sequence[ir.Type], operands: Sequence[ir.Value],
               attrs: dict[str, ir.Attribute] | None = None, regions: int = 0) -> ir.Operation:
        return ir.Operation.create(name, results=list(results), operands=list(operands),
                                   attributes=attrs or {}, regions=regions, loc=self.loc,
                                   ip=self.ip)

    def op1(self, name: str, elem: ElemType, shape: tuple[int, ...], operands: Sequence[ir.Value],
            attrs: dict[str, ir.Attribute] | None = None) -> TValue:
        res = self.create(name, [mlir_type(elem, shape)], operands, attrs).result
        return TValue(res, elem, shape)

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
        return self.op1("arith.constant", dtype, shape, [], {"value": attr})

    def to_value(self, x: Any, node: Node, dtype: tl.dtype | None = None) -> TValue:
        """Materialize a Python number (or check a TValue) as a runtime value."""
        if isinstance(x, TValue):
            return x
        if isinstance(x, tl.constexpr):
            x = x.value
        if _is_number(x):
            try:
                dt = dtype or literal_dtype(x)
            except OverflowError as e:
                self.err(node, str(e))
            return self.constant(x, dt)
        self.err(node, f"expected a number or a tile here, got {self.describe(x)}")

    def describe(self, x: Any) -> str:
        if isinstance(x, TValue):
            return f"a {'tile' if x.is_block else 'scalar'} of type {x.type_str()}"
        if isinstance(x, tl.dtype):
            return f"the dtype {x!r}"
        if x is None:
            return "None"
        return f"a Python {type(x).__name__} ({x!r})"

    # ------------------------------------------------------------ casts/shapes
    def cast(self, v: TValue, dst: tl.dtype, node: Node, bitcast: bool = False) -> TValue:
        if v.is_ptr:
            self.err(node, f"cannot convert a pointer ({v.type_str()}) to {dst!r}")
        src = v.dtype
        if src is dst:
            return v
        if bitcast:
            if src.bits != dst.bits:
                self.err(node, f"bitcast needs types of the same width: {src!r} is {src.bits} bits, "
                         f"{dst!r} is {dst.bits}")
            return self.op1("arith.bitcast", dst, v.shape, [v.handle])
        if dst.is_bool():
            zero = self.broadcast_to(self.constant(0, src), v.shape, node)
            return self.compare("!=", v, zero, node)
        if src.is_floating() and dst.is_floating():
            if src.bits == dst.bits:  # fp16 <-> bf16 through fp32
                return self.cast(self.cast(v, tl.float32, node), dst, node)
            if src is tl.float64 and dst is tl.bfloat16:
                return self.f64_to_bf16(v)
            return self.op1("arith.extf" if dst.bits > src.bits else "arith.truncf", dst, v.shape,
                            [v.handle])
        if src.is_int() and dst.is_int():
            if src.bits == dst.bits:
                return TValue(v.handle, dst, v.shape)
            if dst.bits < src.bits:
                return self.op1("arith.trunci", dst, v.shape, [v.handle])
            return self.op1("arith.extsi" if src.is_signed() else "arith.extui", dst, v.shape,
                            [v.handle])
        if src.is_int() and dst.is_floating():
            return self.op1("arith.sitofp" if src.is_signed() else "arith.uitofp", dst, v.shape,
                            [v.handle])
        # float -> int
        return self.op1("arith.fptosi" if dst.is_signed() else "arith.fptoui", dst, v.shape,
                        [v.handle])

    def f64_to_bf16(self, v: TValue) -> TValue:
        """fp64 -> bf16, rounded once to nearest even.

        Targets lack a direct conversion (on the CPU it is a libgcc/compiler-rt
        call that older runtimes do not have), and fp64 -> fp32 -> bf16 with two
        round-to-nearest steps can round twice.  So round to odd in fp32 (round
        to nearest, step back toward zero if that rounded away, set the last bit
        if inexact), then to nearest even in bf16: that is exact rounding.
        """
        shape = v.shape
        f = self.op1("arith.truncf", tl.float32, shape, [v.handle])
        back = self.op1("arith.extf", tl.float64, shape, [f.handle])
        i64 = ir.IntegerType.get_signless(64)

        def cmpf(pred: int, a: TValue, b: TValue) -> TValue:
            return self.op1("arith.cmpf", tl.int1, shape, [a.handle, b.handle],
                            {"predicate": ir.IntegerAttr.get(i64, pred)})

        def as_i32(b: TValue) -> ir.Value:
            return self.op1("arith.extui", tl.int32, shape, [b.handle]).handle

        away = cmpf(self._CMP_F[">"], self.op1("math.absf", tl.float64, shape, [back.handle]),
                    self.op1("math.absf", tl.float64, shape, [v.handle]))
        inexact = cmpf(self._CMP_F["!="], back, v)
        bits = self.op1("arith.bitcast", tl.int32, shape, [f.handle])
        bits = self.op1("arith.subi", tl.int32, shape, [bits.handle, as_i32(away)])
        bits = self.op1("arith.ori", tl.int32, shape, [bits.handle, as_i32(inexact)])
        odd = self.op1("arith.bitcast", tl.float32, shape, [bits.handle])
        return self.op1("arith.truncf", tl.bfloat16, shape, [odd.handle])

    def broadcast_to(self, v: TValue, shape: tuple[int, ...], node: Node) -> TValue:
        if v.shape == shape:
            return v
        if not v.shape:
            return TValue(self.create("tensor.splat", [mlir_type(v.elem, shape)], [v.handle]).result,
                          v.elem, shape)
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
            cur = self.op1("tile.broadcast", cur.elem, shape, [cur.handle])
        return cur

    def expand_dims(self, v: TValue, axis: int) -> TValue:
        shape = list(v.shape)
        shape.insert(axis, 1)
        return self.op1("tile.expand_dims", v.elem, tuple(shape), [v.handle],
                        {"axis": ir.IntegerAttr.get(ir.IntegerType.get_signless(32), axis)})

    def unify(self, a: Any, b: Any, node: Node, div_or_mod: bool = False,
              arithmetic: bool = True) -> tuple[TValue, TValue]:
        """Cast and broadcast two operands to their common type and shape."""
        a_lit, b_lit = not isinstance(a, TValue), not isinstance(b, TValue)
        for x in (a, b):
            if not isinstance(x, TValue) and not _is_number(x):
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

    # ------------------------------------------------------------ operators
    _CMP_I = {"==": 0, "!=": 1, "<": 2, "<=": 3, ">": 4, ">=": 5}
    _CMP_U = {"==": 0, "!=": 1, "<": 6, "<=": 7, ">": 8, ">=": 9}
    _CMP_F = {"==": 1, ">": 2, ">=": 3, "<": 4, "<=": 5, "!=": 13}

    def compare(self, op: str, a: Any, b: Any, node: Node) -> TValue:
        if isinstance(a, TValue) and a.is_ptr and isinstance(b, TValue) and b.is_ptr:
            self.err(node, "comparing pointers is not supported")
        av, bv = self.unify(a, b, node, arithmetic=False)
        dt = av.dtype
        if dt.is_floating():
            name, pred = "arith.cmpf", self._CMP_F[op]
        else:
            name, pred = "arith.cmpi", (self._CMP_U if dt.kind in ("uint", "bool") else self._CMP_I)[op]
        attrs = {"predicate": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), pred)}
        return self.op1(name, tl.int1, av.shape, [av.handle, bv.handle], attrs)

    def binary(self, op: str, a: Any, b: Any, node: Node) -> Any:
        if not isinstance(a, TValue) and not isinstance(b, TValue):
            return self.fold_constexpr(op, a, b, node)
        if op in ("<", "<=", ">", ">=", "==", "!="):
            return self.compare(op, a, b, node)
        if op in ("+", "-") and isinstance(a, TValue) and a.is_ptr:
            return self.addptr(a, b, node, negate=(op == "-"))
        if op == "+" and isinstance(b, TValue) and b.is_ptr:
            return self.addptr(b, a, node)
        if op == "**":
            self.err(node, "** is only supported between constexprs; use tl.exp2/tl.exp or a product")
        if op == "@":
            self.err(node, "matrix multiplication (@ / tl.dot) is not supported yet")
        if op == "/":
            av, bv = self.unify(a, b, node, div_or_mod=True)
            if av.dtype.is_int():
                av, bv = self.cast(av, tl.float32, node), self.cast(bv, tl.float32, node)
            return self.op1("arith.divf", av.dtype, av.shape, [av.handle, bv.handle])
        div_or_mod = op in ("//", "%")
        av, bv = self.unify(a, b, node, div_or_mod=div_or_mod)
        dt = av.dtype
        fl = dt.is_floating()
        signed = dt.kind == "int"
        if op in ("&", "|", "^", "<<", ">>") and fl:
            self.err(node, f"'{op}' needs integer operands, got {dt!r}")
        if op == "//" and fl:
            self.err(node, "'//' needs integer operands; for floats use tl.floor(x / y)")
        name = {
            "+": "arith.addf" if fl else "arith.addi",
            "-": "arith.subf" if fl else "arith.subi",
            "*": "arith.mulf" if fl else "arith.muli",
            "//": "arith.divsi" if signed else "arith.divui",
            "%": "arith.remf" if fl else ("arith.remsi" if signed else "arith.remui"),
            "&": "arith.andi", "|": "arith.ori", "^": "arith.xori", "<<": "arith.shli",
            ">>": "arith.shrsi" if signed else "arith.shrui",
        }.get(op)
        if name is None:
            self.err(node, f"operator '{op}' is not supported")
        return self.op1(name, dt, av.shape, [av.handle, bv.handle])

    def fold_constexpr(self, op: str, a: Any, b: Any, node: Node) -> Any:
        fns: dict[str, Callable[[Any, Any], Any]] = {
            "+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
            "/": lambda x, y: x / y, "//": lambda x, y: x // y, "%": lambda x, y: x % y,
            "**": lambda x, y: x ** y, "&": lambda x, y: x & y, "|": lambda x, y: x | y,
            "^": lambda x, y: x ^ y, "<<": lambda x, y: x << y, ">>": lambda x, y: x >> y,
            "<": lambda x, y: x < y, "<=": lambda x, y: x <= y, ">": lambda x, y: x > y,
            ">=": lambda x, y: x >= y, "==": lambda x, y: x == y, "!=": lambda x, y: x != y,
            "is": lambda x, y: x is y, "is not": lambda x, y: x is not y,
            "in": lambda x, y: x in y, "not in": lambda x, y: x not in y,
        }
        try:
            return fns[op](a, b)
        except Exception as e:  # a Python error in constexpr arithmetic is the user's
            self.err(node, f"cannot evaluate {self.describe(a)} {op} {self.describe(b)}: {e}")

    def addptr(self, p: TValue, off: Any, node: Node, negate: bool = False) -> TValue:
        ov = self.to_value(off, node)
        if ov.is_ptr or not ov.dtype.is_int():
            self.err(node, f"a pointer offset must be an integer, got {self.describe(off)}")
        if negate:
            zero = self.broadcast_to(self.constant(0, ov.dtype), ov.shape, node)
            ov = self.op1("arith.subi", ov.dtype, ov.shape, [zero.handle, ov.handle])
        if ov.dtype.bits < 32 or ov.dtype.is_bool():
            ov = self.cast(ov, tl.int32 if ov.dtype.bits < 32 and ov.dtype.is_signed() else tl.int64,
                           node) if not ov.dtype.is_bool() else self.cast(ov, tl.int32, node)
        shape = broadcast_shapes(p.shape, ov.shape)
        pv = self.broadcast_to(p, shape, node)
        ov = self.broadcast_to(ov, shape, node)
        return self.op1("tile.addptr", p.elem, shape, [pv.handle, ov.handle])

    def unary(self, op: str, v: Any, node: Node) -> Any:
        if not isinstance(v, TValue):
            if not _is_number(v):
                self.err(node, f"unary '{op}' is not defined on {self.describe(v)}")
            return {"-": lambda x: -x, "+": lambda x: +x, "~": lambda x: ~x}[op](v)
        if v.is_ptr:
            self.err(node, f"unary '{op}' is not defined on pointers")
        if op == "+":
            return v
        if op == "-":
            if v.dtype.is_floating():
                return self.op1("arith.negf", v.dtype, v.shape, [v.handle])
            return self.binary("-", self.broadcast_to(self.constant(0, v.dtype), v.shape, node), v,
                               node)
        if v.dtype.is_floating():
            self.err(node, f"'~' needs an integer operand, got {v.dtype!r}")
        ones = self.broadcast_to(self.constant(-1 if not v.dtype.is_bool() else 1, v.dtype),
                                 v.shape, node)
        return self.op1("arith.xori", v.dtype, v.shape, [v.handle, ones.handle])

    # ------------------------------------------------------------ entry
    def generate(self) -> ir.Module:
        spec = self.spec
        module = ir.Module.create(loc=self.location(spec.tree))
        self.module = module
        arg_names = [p for p in spec.params if p in spec.runtime_types]
        arg_types = [mlir_type(spec.runtime_types[p], ()) for p in arg_names]
        with ir.InsertionPoint(module.body):
            fop = func_d.FuncOp(spec.name, ir.FunctionType.get(arg_types, []),
                                loc=self.location(spec.tree))
        fop.attributes["tile.kernel"] = ir.UnitAttr.get()
        arg_attrs = []
        for p in arg_names:
            d = spec.divisibility.get(p, 1)
            attrs = {"tile.name": ir.StringAttr.get(p)}
            if d == EQUAL_TO_1:
                attrs["tile.equal_to_1"] = ir.UnitAttr.get()
            if d > 1:
                attrs["tile.divisibility"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), d)
            arg_attrs.append(ir.DictAttr.get(attrs))
        fop.attributes["arg_attrs"] = ir.ArrayAttr.get(arg_attrs)
        with self.location(spec.tree):
            entry = fop.add_entry_block()
        for p, a in zip(arg_names, entry.arguments):
            self.scope[p] = TValue(a, spec.runtime_types[p])
        for p, v in spec.constexprs.items():
            self.scope[p] = v
        body = spec.tree.children[-1]
        self.ip = ir.InsertionPoint(entry)
        for p in arg_names:  # ints specialized to 1 are the constant 1 of their type
            t = spec.runtime_types[p]
            if spec.divisibility.get(p, 1) == EQUAL_TO_1 and isinstance(t, tl.dtype):
                with self.location(spec.tree):
                    self.scope[p] = self.constant(1, t)
        self.exec_suite(body, top_level=True)
        self.loc = self.location(spec.tree)
        self.create("func.return", [], [])
        spec.stored_params = _stored_params(fop.operation, arg_names,
                                            [isinstance(spec.runtime_types[p], tl.pointer_type)
                                             for p in arg_names])
        return module

    # ------------------------------------------------------------ statements
    def suite_stmts(self, suite: Tree) -> Iterator[Tree]:
        for child in suite.children:
            if isinstance(child, Tree) and child.data == "simple_stmt":
                for small in child.children:
                    if small is not None:
                        yield small
            elif isinstance(child, Tree):
                yield child

    def exec_suite(self, suite: Tree, top_level: bool = False) -> None:
        stmts = list(self.suite_stmts(suite))
        for i, st in enumerate(stmts):
            if st.data == "return_stmt":
                if not top_level or i != len(stmts) - 1:
                    self.err(st, "'return' is only supported as the last statement of a kernel")
                if st.children[0] is not None:
                    if self.returned is None:
                        self.err(st, "kernels cannot return a value; store results with tl.store")
                    value = self.eval(st.children[0])
                    self.returned = list(value) if isinstance(value, tuple) else [value]
                continue
            self.exec_stmt(st)

    # ------------------------------------------------------------ functions
    def emit_function(self, name: str, arg_types: list[tl.dtype],
                      body: Callable[[list[TValue]], list[Any]], node: Node = None) -> str:
        """Emit `func.func private @name` once into the module; its results are
        what `body` returns for the arguments (scalars only)."""
        if name in self.functions:
            return name
        assert self.module is not None
        self.functions.add(name)
        inputs = [mlir_scalar(t) for t in arg_types]
        fop = ir.Operation.create("func.func", regions=1, loc=self.loc,
                                  ip=ir.InsertionPoint.at_block_begin(self.module.body),
                                  attributes={
                                      "sym_name": ir.StringAttr.get(name),
                                      "function_type": ir.TypeAttr.get(
                                          ir.FunctionType.get(inputs, [])),
                                      "sym_visibility": ir.StringAttr.get("private")})
        block = fop.regions[0].blocks.append(*inputs)
        saved = (self.ip, self.scope)
        self.ip = ir.InsertionPoint(block)
        try:
            results = body([TValue(a, t) for a, t in zip(block.arguments, arg_types)])
            values = []
            for r, t in zip(results, arg_types):
                v = self.to_value(r, node, t if not isinstance(r, TValue) else None)
                if v.is_block or v.elem != t:
                    self.err(node, f"a combine function must return scalars of type "
                             f"{', '.join(x.short for x in arg_types[:len(results)])}; got "
                             f"{v.type_str()}")
                values.append(v.handle)
            self.create("func.return", [], values)
        finally:
            self.ip, self.scope = saved
        fop.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(inputs, [v.type for v in values]))
        return name

    def emit_user_function(self, node: Node, kernel: Any, arg_types: list[tl.dtype],
                           n_results: int) -> str:
        """Emit a user's @tilec.kernel function (e.g. a combine_fn) as a private function."""
        from tilec.frontend.parser import get_source, parse_source
        params = [p.name for p in kernel.params]
        if len(params) != len(arg_types):
            self.err(node, f"combine function '{kernel.name}' must take {len(arg_types)} "
                     f"arguments ({n_results} running values, then {n_results} new values); "
                     f"it takes {len(params)}")
        name = f"{kernel.name}_{'_'.join(t.short for t in arg_types)}"
        if name in self.functions:
            return name
        if kernel._parsed is None:
            src = get_source(kernel.fn)
            kernel._parsed = (src, parse_source(src))
        src, tree = kernel._parsed
        spec = KernelSpec(name=name, source=src, tree=tree, params=params,
                          runtime_types=dict(zip(params, arg_types)), constexprs={},
                          divisibility={}, globals=kernel.fn.__globals__)
        sub = CodeGen(spec)
        sub.module, sub.functions = self.module, self.functions

        def body(args: list[TValue]) -> list[Any]:
            sub.scope = dict(zip(params, args))
            sub.ip = self.ip
            sub.returned = []
            sub.exec_suite(tree.children[-1], top_level=True)
            if len(sub.returned) != n_results:
                sub.err(tree, f"combine function '{kernel.name}' must return {n_results} "
                        f"value(s), it returns {len(sub.returned)}")
            return sub.returned

        return self.emit_function(name, arg_types, body, node)

    def exec_stmt(self, st: Tree) -> None:
        self.loc = self.location(st)
        handler = getattr(self, f"stmt_{st.data}", None)
        if handler is None:
            what = {
                "try_stmt": "try/except is not supported in kernels",
                "with_stmt": "'with' is not supported in kernels",
                "funcdef": "nested function definitions are not supported in kernels",
                "decorated": "nested function definitions are not supported in kernels",
                "classdef": "class definitions are not supported in kernels",
                "break_stmt": "'break' is not supported in kernels",
                "continue_stmt": "'continue' is not supported in kernels",
                "raise_stmt": "'raise' is not supported in kernels",
                "global_stmt": "'global'/'nonlocal' are not supported in kernels",
                "import_stmt": "imports are not allowed inside kernels; import at module level",
                "del_stmt": "'del' is not supported in kernels",
            }.get(st.data, f"'{st.data}' statements are not supported in kernels")
            self.err(st, what)
        handler(st)

    def stmt_pass_stmt(self, st: Tree) -> None:
        pass

    def stmt_expr_stmt(self, st: Tree) -> None:
        expr = st.children[0]
        if isinstance(expr, Tree) and expr.data == "string":
            return  # docstring or comment string
        self.eval(expr)

    def stmt_assert_stmt(self, st: Tree) -> None:
        cond = self.eval(st.children[0])
        if isinstance(cond, TValue):
            self.err(st, "assert on runtime values is not supported; use it on constexprs only")
        if not cond:
            msg = self.eval(st.children[1]) if st.children[1] is not None else None
            self.err(st, f"assertion failed{': ' + str(msg) if msg is not None else ''}")

    def assign_target(self, target: Node, value: Any) -> None:
        if isinstance(target, Tree) and target.data == "var":
            name = str(target.children[0])
            if isinstance(value, _BoundMethod):
                self.err(target, "methods cannot be stored in variables")
            self.scope[name] = value
            return
        if isinstance(target, Tree) and target.data in ("tuple", "testlist_tuple", "paren", "list"):
            items = [c for c in self._items(target)]
            if not isinstance(value, (tuple, list)) or len(value) != len(items):
                n = len(value) if isinstance(value, (tuple, list)) else 1
                self.err(target, f"cannot unpack {n} value(s) into {len(items)} names")
            for t, v in zip(items, value):
                self.assign_target(t, v)
            return
        if isinstance(target, Tree) and target.data == "getitem":
            self.err(target, "assigning to a subscript is not supported; tiles are values "
                     "(use tl.where to combine, tl.store to write memory)")
        self.err(target, "this assignment target is not supported; assign to a name")

    def _items(self, node: Tree) -> list[Node]:
        if node.data == "paren":
            return self._items(node.children[0]) if isinstance(node.children[0], Tree) else [node]
        out: list[Node] = []
        for c in node.children:
            if isinstance(c, Tree) and c.data in ("tuple_items", "list_items"):
                out.extend(x for x in c.children if x is not None)
            elif c is not None:
                out.append(c)
        return out

    def stmt_assign(self, st: Tree) -> None:
        *targets, value_node = st.children
        value = self.eval(value_node)
        if isinstance(value, _BoundMethod):
            self.err(value_node, "methods cannot be stored in variables")
        for t in targets:
            self.assign_target(t, value)

    def stmt_annassign(self, st: Tree) -> None:
        target, _ann, value_node = st.children
        if value_node is None:
            return
        self.assign_target(target, self.eval(value_node))

    def stmt_augassign(self, st: Tree) -> None:
        target, op_tok, value_node = st.children
        if not (isinstance(target, Tree) and target.data == "var"):
            self.err(target, "augmented assignment needs a plain name on the left")
        current = self.eval(target)
        value = self.eval(value_node)
        self.loc = self.location(st)
        self.assign_target(target, self.binary(str(op_tok)[:-1], current, value, op_tok))

    # ---- if
    def stmt_if_stmt(self, st: Tree) -> None:
        cond_node, then_suite, *rest = st.children
        elifs = [c for c in rest if isinstance(c, Tree) and c.data == "elif_clause"]
        else_suite = rest[-1] if rest and not (isinstance(rest[-1], Tree) and
                                               rest[-1].data == "elif_clause") else None
        self._if(cond_node, then_suite, elifs, else_suite, st)

    def _if(self, cond_node: Node, then_suite: Tree, elifs: list[Tree], else_suite: Tree | None,
            st: Tree) -> None:
        cond = self.eval(cond_node)
        if isinstance(cond, tl.constexpr):
            cond = cond.value
        if not isinstance(cond, TValue):
            if cond:
                self.exec_suite(then_suite)
            elif elifs:
                e = elifs[0]
                self._if(e.children[0], e.children[1], elifs[1:], else_suite, e)
            elif else_suite is not None:
                self.exec_suite(else_suite)
            return
        if cond.is_block:
            self.err(cond_node, "an if condition must be a scalar; for tiles use tl.where")
        cond = self.cast(cond, tl.int1, cond_node) if not cond.dtype.is_bool() else cond

        def run_else() -> None:
            if elifs:
                e = elifs[0]
                self._if(e.children[0], e.children[1], elifs[1:], else_suite, e)
            elif else_suite is not None:
                self.exec_suite(else_suite)

        self.loc = self.location(st)
        self._structured_if(cond, lambda: self.exec_suite(then_suite), run_else, st)

    def _structured_if(self, cond: TValue, then_fn: Callable[[], None],
                       else_fn: Callable[[], None], st: Tree) -> None:
        loc = self.loc
        before = dict(self.scope)
        ip_saved = self.ip
        tmp = self.create("scf.if", [], [cond.handle], regions=2)
        scopes = []
        blocks = []
        for region, fn in zip(tmp.regions, (then_fn, else_fn)):
            block = region.blocks.append()
            blocks.append(block)
            self.scope = dict(before)
            self.ip = ir.InsertionPoint(block)
            fn()
            scopes.append(self.scope)
        self.ip = ip_saved
        self.scope = before
        # Names visible after the if: defined in both branches with one type.
        names = [n for n in dict.fromkeys(list(scopes[0]) + list(scopes[1]))
                 if scopes[0].get(n) is not before.get(n) or scopes[1].get(n) is not before.get(n)]
        results: list[tuple[str, TValue | None, TValue | None, Any]] = []
        merged: dict[str, Any] = {}
        for n in names:
            a, b = scopes[0].get(n, _MISSING), scopes[1].get(n, _MISSING)
            if a is _MISSING or b is _MISSING or isinstance(a, _Unassigned) or isinstance(b, _Unassigned):
                merged[n] = _Unassigned(f"'{n}' is assigned in only one branch of an if")
                continue
            if not isinstance(a, TValue) and not isinstance(b, TValue):
                if type(a) is type(b) and a == b:
                    merged[n] = a
                    continue
                if not (_is_number(a) and _is_number(b)):
                    merged[n] = _Unassigned(f"'{n}' gets different compile-time values in the "
                                            "branches of an if on a runtime condition")
                    continue
            results.append((n, a, b, None))
        # Materialize constexpr numbers against the other branch's type.
        typed: list[tuple[str, TValue, TValue]] = []
        for i, (n, a, b, _) in enumerate(results):
            if not isinstance(a, TValue) or not isinstance(b, TValue):
                ref = a if isinstance(a, TValue) else b if isinstance(b, TValue) else None
                dt = ref.dtype if isinstance(ref, TValue) and not ref.is_ptr else None
                a = self._materialize_in(blocks[0], a, dt, st)
                b = self._materialize_in(blocks[1], b, dt, st)
            if a.elem != b.elem or a.shape != b.shape:
                self.err(st, f"'{n}' has type {a.type_str()} in one branch of the if and "
                         f"{b.type_str()} in the other; convert one with .to(...)")
            typed.append((n, a, b))
        result_types = [mlir_type(a.elem, a.shape) for _, a, _ in typed]
        real = ir.Operation.create("scf.if", results=result_types, operands=[cond.handle],
                                   regions=2, loc=loc, ip=self.ip)
        for k, region in enumerate(real.regions):
            block = region.blocks.append()
            vals = [(a if k == 0 else b).handle for _, a, b in typed]
            y = ir.Operation.create("scf.yield", results=[], operands=vals, loc=loc,
                                    ip=ir.InsertionPoint(block))
            for op in list(blocks[k].operations):
                op.move_before(y)
        tmp.erase()
        self.scope.update(merged)
        for (n, a, _), r in zip(typed, real.results):
            self.scope[n] = TValue(r, a.elem, a.shape)

    def _materialize_in(self, block: ir.Block, v: Any, dt: tl.dtype | None, node: Node) -> TValue:
        if isinstance(v, TValue):
            return v
        saved = self.ip
        self.ip = ir.InsertionPoint(block)
        try:
            return self.to_value(v, node, dt)
        finally:
            self.ip = saved

    # ---- for
    def stmt_for_stmt(self, st: Tree) -> None:
        target, iter_node, body, else_suite = st.children
        if else_suite is not None:
            self.err(st, "for ... else is not supported in kernels")
        if not (isinstance(target, Tree) and target.data == "var"):
            self.err(target, "the loop variable must be a single name")
        if not (isinstance(iter_node, Tree) and iter_node.data == "call"):
            self.err(iter_node, "kernels can only loop over range(...)")
        callee = self.eval(iter_node.children[0])
        tag = getattr(callee, "__tilec_builtin__", None)
        if callee is not py_builtins.range and tag not in ("range", "static_range"):
            self.err(iter_node, "kernels can only loop over range(...), tl.range(...) or "
                     "tl.static_range(...)")
        args, kwargs = self.eval_args(iter_node.children[1])
        # tl.range's scheduling hints are accepted; the loop runs the same.
        hints = {"num_stages", "loop_unroll_factor", "disallow_acc_multi_buffer", "flatten",
                 "warp_specialize", "disable_licm"}
        if tag == "range":
            kwargs = {k: v for k, v in kwargs.items() if k not in hints}
        if kwargs or not 1 <= len(args) <= 3:
            self.err(iter_node, "range() takes 1 to 3 positional arguments")
        if tag == "static_range" and any(isinstance(v, TValue) for v in args):
            self.err(iter_node, "tl.static_range bounds must be compile-time constants")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else \
            (args[0], args[1], args[2] if len(args) == 3 else 1)
        for v in (start, stop, step):
            if isinstance(v, TValue) and (v.is_block or v.is_ptr or not v.dtype.is_int()):
                self.err(iter_node, f"range() bounds must be integer scalars, got {self.describe(v)}")
            if not isinstance(v, TValue) and not isinstance(v, int):
                self.err(iter_node, f"range() bounds must be integers, got {self.describe(v)}")
        if isinstance(step, int) and step == 0:
            self.err(iter_node, "range() step must not be zero")
        self.loc = self.location(st)
        # All bounds in one integer type: i64 if any is i64, else i32.
        wide = any(isinstance(v, TValue) and v.dtype.bits == 64 for v in (start, stop, step))
        ity = tl.int64 if wide else tl.int32
        neg = isinstance(step, int) and step < 0
        lo = self.cast(self.to_value(start, iter_node, ity), ity, iter_node)
        hi = self.cast(self.to_value(stop, iter_node, ity), ity, iter_node)
        if neg:
            # for i in range(a, b, -s): trip = cdiv(a - b, s); i = a - k * s
            s = -step
            diff = self.binary("-", lo, hi, iter_node)
            trips = self.binary("//", self.binary("+", diff, s - 1, iter_node), s, iter_node)
            zero = self.constant(0, ity)
            trips = self.op1("arith.maxsi", ity, (), [trips.handle, zero.handle])
            lb, ub, stp = zero, trips, self.constant(1, ity)
        else:
            lb, ub = lo, hi
            stp = self.cast(self.to_value(step, iter_node, ity), ity, iter_node)
        names, init = self._carried(body, st)
        loop = self.create("scf.for", [mlir_type(v.elem, v.shape) for v in init],
                           [lb.handle, ub.handle, stp.handle] + [v.handle for v in init], regions=1)
        block = loop.regions[0].blocks.append(lb.handle.type, *[v.handle.type for v in init])
        before = dict(self.scope)
        ip_saved = self.ip
        self.ip = ir.InsertionPoint(block)
        iv = TValue(block.arguments[0], ity)
        if neg:
            iv = self.binary("-", lo, self.binary("*", iv, -step, iter_node), iter_node)
        self.scope[str(target.children[0])] = iv
        for n, v, arg in zip(names, init, list(block.arguments)[1:]):
            self.scope[n] = TValue(arg, v.elem, v.shape)
        self.exec_suite(body)
        yields = self._loop_yields(names, init, st)
        self.loc = self.location(st)
        self.create("scf.yield", [], yields)
        after_body = self.scope
        self.ip = ip_saved
        self.scope = before
        self._forget_loop_locals(body, names, before, after_body, st)
        for n, v, r in zip(names, init, loop.results):
            self.scope[n] = TValue(r, v.elem, v.shape)

    # ---- while
    def stmt_while_stmt(self, st: Tree) -> None:
        cond_node, body, else_suite = st.children
        if else_suite is not None:
            self.err(st, "while ... else is not supported in kernels")
        probe = self.eval(cond_node)
        if not isinstance(probe, TValue):
            if probe:
                self.err(cond_node, "this while loop never ends: its condition is a true "
                         "compile-time constant")
            return
        names, init = self._carried(body, st)
        types = [mlir_type(v.elem, v.shape) for v in init]
        loc = self.location(st)
        loop = ir.Operation.create("scf.while", results=types, operands=[v.handle for v in init],
                                   regions=2, loc=loc, ip=self.ip)
        before_blk = loop.regions[0].blocks.append(*types)
        after_blk = loop.regions[1].blocks.append(*types)
        outer, ip_saved = dict(self.scope), self.ip
        # before: evaluate the condition on the carried values
        self.scope = dict(outer)
        self.ip = ir.InsertionPoint(before_blk)
        for n, v, a in zip(names, init, before_blk.arguments):
            self.scope[n] = TValue(a, v.elem, v.shape)
        cond = self.eval(cond_node)
        cond = self.to_value(cond, cond_node)
        if cond.is_block or cond.is_ptr:
            self.err(cond_node, "a while condition must be a scalar")
        cond = cond if cond.dtype.is_bool() else self.cast(cond, tl.int1, cond_node)
        ir.Operation.create("scf.condition", results=[], operands=[cond.handle] +
                            list(before_blk.arguments), loc=loc, ip=self.ip)
        # after: the body
        self.scope = dict(outer)
        self.ip = ir.InsertionPoint(after_blk)
        for n, v, a in zip(names, init, after_blk.arguments):
            self.scope[n] = TValue(a, v.elem, v.shape)
        self.exec_suite(body)
        yields = self._loop_yields(names, init, st)
        self.loc = loc
        self.create("scf.yield", [], yields)
        after_body = self.scope
        self.ip, self.scope = ip_saved, outer
        self._forget_loop_locals(body, names, outer, after_body, st)
        for n, v, r in zip(names, init, loop.results):
            self.scope[n] = TValue(r, v.elem, v.shape)

    def _carried(self, body: Tree, st: Tree) -> tuple[list[str], list[TValue]]:
        """Names a loop body reassigns that exist before it, with their initial values."""
        names: list[str] = []
        init: list[TValue] = []
        for n in _assigned_names(body):
            v = self.scope.get(n)
            if v is None or isinstance(v, _Unassigned):
                continue
            if isinstance(v, tl.constexpr):
                v = v.value
            if not isinstance(v, TValue):
                if not _is_number(v):
                    continue
                v = self.to_value(v, st)
            names.append(n)
            init.append(v)
        return names, init

    def _loop_yields(self, names: list[str], init: list[TValue], st: Tree) -> list[ir.Value]:
        yields = []
        for n, v in zip(names, init):
            new = self.scope.get(n)
            if isinstance(new, _Unassigned) or new is None:
                self.err(st, f"'{n}' is not defined at the end of the loop body")
            if not isinstance(new, TValue):
                if not _is_number(new):
                    self.err(st, f"loop-carried variable '{n}' must stay a number or a tile")
                new = self.to_value(new, st, None if v.is_ptr else v.dtype)
            if new.elem != v.elem or new.shape != v.shape:
                self.err(st, f"loop-carried variable '{n}' has type {v.type_str()} before the loop "
                         f"but {new.type_str()} at the end of the body; give it its final type "
                         "before the loop (e.g. with .to(...))")
            yields.append(new.handle)
        return yields

    def _forget_loop_locals(self, body: Tree, carried: list[str], before: dict[str, Any],
                            after_body: dict[str, Any], st: Tree) -> None:
        for n in _assigned_names(body):
            if n in carried:
                continue
            if n in before and not isinstance(after_body.get(n), TValue) and \
                    after_body.get(n) == before[n]:
                continue
            if n in before and isinstance(before[n], (tl.dtype, str, tuple)) and \
                    after_body.get(n) != before[n]:
                self.err(st, f"'{n}' is a compile-time value that the loop body changes")
            self.scope[n] = _Unassigned(f"'{n}' is assigned inside a loop body and is not "
                                        "visible after the loop; assign it before the loop")

    # ------------------------------------------------------------ expressions
    def eval(self, node: Node) -> Any:
        if isinstance(node, Token):
            self.err(node, f"unexpected token '{node}'")
        handler = getattr(self, f"expr_{node.data}", None)
        if handler is None:
            what = {
                "comprehension": "comprehensions are not supported in kernels",
                "lambdef": "lambda expressions are not supported in kernels",
                "dict": "dict displays are not supported in kernels",
                "ellipsis": "'...' is not supported in kernels",
                "kwarg": "keyword arguments are only allowed in calls",
                "star_arg": "*args / **kwargs are not supported in kernels",
                "slice": "slices are only allowed as x[:, None] / x[None, :] indexing",
            }.get(node.data, f"'{node.data}' expressions are not supported in kernels")
            self.err(node, what)
        saved = self.loc
        self.loc = self.location(node)
        try:
            return handler(node)
        finally:
            self.loc = saved

    def expr_var(self, node: Tree) -> Any:
        name = str(node.children[0])
        if name in self.scope:
            v = self.scope[name]
            if isinstance(v, _Unassigned):
                self.err(node, v.why)
            return v
        g = self.spec.globals
        if name in g:
            v = g[name]
            if isinstance(v, tl.constexpr):
                v = v.value
            if isinstance(v, (bool, int, float, str, tl.dtype)) or v is None:
                self.spec.used_globals[name] = v
            return v
        if name in _PY_BUILTINS:
            return getattr(py_builtins, name)
        self.err(node, f"name '{name}' is not defined")

    def expr_number(self, node: Tree) -> Any:
        text = str(node.children[0]).replace("_", "")
        if text[-1] in "jJ":
            self.err(node, "complex numbers are not supported")
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            self.err(node, f"invalid number '{text}'")

    def expr_string(self, node: Tree) -> str:
        try:
            return "".join(ast.literal_eval(str(t)) for t in node.children)
        except (ValueError, SyntaxError):
            self.err(node, "f-strings and byte strings are not supported in kernels")

    def expr_const_none(self, node: Tree) -> None:
        return None

    def expr_const_true(self, node: Tree) -> bool:
        return True

    def expr_const_false(self, node: Tree) -> bool:
        return False

    def expr_paren(self, node: Tree) -> Any:
        return self.eval(node.children[0])

    def expr_tuple(self, node: Tree) -> tuple[Any, ...]:
        return tuple(self.eval(c) for c in self._items(node))

    expr_testlist_tuple = expr_tuple

    def expr_list(self, node: Tree) -> tuple[Any, ...]:
        return tuple(self.eval(c) for c in self._items(node))

    def expr_getattr(self, node: Tree) -> Any:
        base = self.eval(node.children[0])
        name = str(node.children[1])
        if isinstance(base, TValue):
            if name == "dtype":
                return base.elem
            if name == "shape":
                return base.shape
            if name == "to":
                return _BoundMethod(base, name)
            self.err(node, f"tiles have no attribute '{name}' (available: .to, .dtype, .shape)")
        try:
            v = getattr(base, name)
        except AttributeError:
            if getattr(base, "__name__", None) == "tilec.language":
                self.err(node, f"tl.{name} is not part of tilec.language")
            self.err(node, f"{self.describe(base)} has no attribute '{name}'")
        return v.value if isinstance(v, tl.constexpr) else v

    def expr_getitem(self, node: Tree) -> Any:
        base = self.eval(node.children[0])
        subs = node.children[1].children
        if not isinstance(base, TValue):
            if len(subs) == 1 and isinstance(base, (tuple, list, str)):
                idx = self.eval(subs[0])
                if isinstance(idx, int):
                    try:
                        return base[idx]
                    except IndexError:
                        self.err(node, f"index {idx} is out of range")
            self.err(node, f"cannot index {self.describe(base)}")
        out = base
        dim = 0
        for s in subs:
            if s is None:
                continue
            if isinstance(s, Tree) and s.data == "slice":
                if any(c is not None for c in s.children):
                    self.err(s, "only full slices ':' are supported when indexing tiles")
                if dim >= len(out.shape):
                    self.err(s, f"too many indices for a tile of rank {len(base.shape)}")
                dim += 1
                continue
            if isinstance(s, Tree) and s.data == "const_none":
                out = self.expand_dims(out, dim)
                dim += 1
                continue
            self.err(s, "tiles can only be indexed with ':' and None (e.g. x[:, None])")
        return out

    def expr_call(self, node: Tree) -> Any:
        callee = self.eval(node.children[0])
        args, kwargs = self.eval_args(node.children[1])
        self.loc = self.location(node)
        if isinstance(callee, _BoundMethod):
            return self.method_to(callee.obj, args, kwargs, node)
        tag = getattr(callee, "__tilec_builtin__", None)
        if tag is not None:
            impl = self.builtins.get(tag)
            if impl is None:
                self.err(node, f"tl.{tag} is not supported yet")
            return impl(self, node, *args, **kwargs) if _accepts(impl, args, kwargs) else \
                self._bad_call(node, tag, impl, args, kwargs)
        if callee in (py_builtins.float, py_builtins.int, py_builtins.bool, py_builtins.min,
                      py_builtins.max, py_builtins.abs, py_builtins.len, py_builtins.tuple,
                      py_builtins.isinstance):
            if any(isinstance(a, TValue) for a in list(args) + list(kwargs.values())):
                name = callee.__name__
                hint = {"min": "tl.minimum", "max": "tl.maximum", "abs": "tl.abs",
                        "float": ".to(tl.float32)", "int": ".to(tl.int32)"}.get(name, "")
                self.err(node, f"{name}() works on compile-time values only"
                         + (f"; for runtime values use {hint}" if hint else ""))
            try:
                return callee(*args, **kwargs)
            except Exception as e:
                self.err(node, f"{callee.__name__}() failed: {e}")
        if callee is py_builtins.print:
            self.err(node, "print() is not supported in kernels")
        if callee is py_builtins.range:
            self.err(node, "range() can only be used as the iterable of a for loop")
        if getattr(callee, "__tilec_kernel__", False):
            self.err(node, "calling another @tilec.kernel function is not supported yet")
        what = self.describe(callee)
        if callable(callee) and hasattr(callee, "__qualname__"):
            what = f"{getattr(callee, '__module__', None) or '?'}.{callee.__qualname__}"
        self.err(node, f"cannot call {what} in a kernel; only tl.* functions "
                 "and a few Python builtins on constexprs can be called")

    def _bad_call(self, node: Node, tag: str, impl: Callable[..., Any], args: Sequence[Any],
                  kwargs: dict[str, Any]) -> NoReturn:
        import inspect
        sig = inspect.signature(impl)
        params = [p.name if p.default is p.empty else f"{p.name}={p.default!r}"
                  for p in list(sig.parameters.values())[2:]]
        try:
            sig.bind(None, None, *args, **kwargs)
            why = ""
        except TypeError as e:  # e.g. "got an unexpected keyword argument 'msk'"
            why = f" ({e})"
        self.err(node, f"wrong arguments for tl.{tag}{why}; expected "
                 f"tl.{tag}({', '.join(params)})")

    def method_to(self, v: TValue, args: Sequence[Any], kwargs: dict[str, Any], node: Node) -> TValue:
        bitcast = bool(kwargs.pop("bitcast", False))
        if len(args) != 1 or kwargs:
            self.err(node, ".to() takes one dtype argument (and optionally bitcast=True)")
        dt = args[0]
        if not isinstance(dt, tl.dtype):
            self.err(node, f".to() needs a dtype such as tl.float32, got {self.describe(dt)}")
        return self.cast(v, dt, node, bitcast=bitcast)

    def eval_args(self, node: Node) -> tuple[list[Any], dict[str, Any]]:
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        if node is None:
            return args, kwargs
        for a in node.children:
            if a is None:
                continue
            if isinstance(a, Tree) and a.data == "kwarg":
                kwargs[str(a.children[0])] = self.eval(a.children[1])
            else:
                if kwargs:
                    self.err(a, "positional argument follows keyword argument")
                args.append(self.eval(a))
        return args, kwargs

    def _fold_ops(self, node: Tree) -> Any:
        children = node.children
        acc = self.eval(children[0])
        for i in range(1, len(children), 2):
            op = str(children[i])
            rhs = self.eval(children[i + 1])
            self.loc = self.location(children[i])
            acc = self.binary(op, acc, rhs, children[i])
        return acc

    expr_arith_expr = _fold_ops
    expr_term = _fold_ops
    expr_shift_expr = _fold_ops

    def _fold_same(self, node: Tree, op: str) -> Any:
        acc = self.eval(node.children[0])
        for c in node.children[1:]:
            acc = self.binary(op, acc, self.eval(c), node)
        return acc

    def expr_bitor(self, node: Tree) -> Any:
        return self._fold_same(node, "|")

    def expr_bitxor(self, node: Tree) -> Any:
        return self._fold_same(node, "^")

    def expr_bitand(self, node: Tree) -> Any:
        return self._fold_same(node, "&")

    def expr_comparison(self, node: Tree) -> Any:
        if len(node.children) > 3:
            self.err(node, "chained comparisons (a < b < c) are not supported; use & between "
                     "two comparisons")
        a, op_tok, b = node.children
        op = " ".join(str(op_tok).split())
        lhs, rhs = self.eval(a), self.eval(b)
        if op in ("is", "is not", "in", "not in"):
            if isinstance(lhs, TValue) or isinstance(rhs, TValue):
                self.err(op_tok, f"'{op}' works on compile-time values only")
            return self.fold_constexpr(op, lhs, rhs, op_tok)
        return self.binary(op, lhs, rhs, op_tok)

    def expr_unary(self, node: Tree) -> Any:
        return self.unary(str(node.children[0]), self.eval(node.children[1]), node)

    def expr_power(self, node: Tree) -> Any:
        return self.binary("**", self.eval(node.children[0]), self.eval(node.children[2]), node)

    def _truth(self, v: Any, node: Node) -> Any:
        if isinstance(v, TValue):
            if v.is_block:
                self.err(node, "'and'/'or'/'not' need scalars; for tiles use & | ~")
            return self.cast(v, tl.int1, node)
        return v

    def expr_not_op(self, node: Tree) -> Any:
        v = self._truth(self.eval(node.children[0]), node)
        if isinstance(v, TValue):
            return self.unary("~", v, node)
        return not v

    def _logic(self, node: Tree, op: str) -> Any:
        acc = self._truth(self.eval(node.children[0]), node)
        for c in node.children[1:]:
            if not isinstance(acc, TValue):
                if (op == "&" and not acc) or (op == "|" and acc):
                    return acc  # short-circuit on constexprs, like Python
                acc = self._truth(self.eval(c), c)
                continue
            rhs = self._truth(self.eval(c), c)
            if not isinstance(rhs, TValue):
                rhs = bool(rhs)
            acc = self.binary(op, acc, rhs, c)
        return acc

    def expr_and_op(self, node: Tree) -> Any:
        return self._logic(node, "&")

    def expr_or_op(self, node: Tree) -> Any:
        return self._logic(node, "|")

    def expr_ternary(self, node: Tree) -> Any:
        then_node, cond_node, else_node = node.children
        cond = self.eval(cond_node)
        if not isinstance(cond, TValue):
            return self.eval(then_node) if cond else self.eval(else_node)
        if cond.is_block:
            self.err(cond_node, "a conditional expression needs a scalar condition; use tl.where")
        return self.builtins["where"](self, node, cond, self.eval(then_node), self.eval(else_node))


class _Missing:
    pass


_MISSING = _Missing()


def _accepts(fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]) -> bool:
    import inspect
    try:
        inspect.signature(fn).bind(None, None, *args, **kwargs)
        return True
    except TypeError:
        return False


def _assigned_names(node: Tree) -> list[str]:
    """Names assigned anywhere inside `node` (assignments, for targets), in order."""
    out: list[str] = []

    def targets(t: Node) -> None:
        if isinstance(t, Tree):
            if t.data == "var":
                out.append(str(t.children[0]))
            elif t.data in ("tuple", "testlist_tuple", "tuple_items", "paren", "list", "list_items"):
                for c in t.children:
                    targets(c)

    for sub in node.iter_subtrees_topdown():
        if sub.data == "assign":
            for t in sub.children[:-1]:
                targets(t)
        elif sub.data in ("augassign", "annassign"):
            targets(sub.children[0])
        elif sub.data == "for_stmt":
            targets(sub.children[0])
    return list(dict.fromkeys(out))


def _stored_params(func_op: ir.Operation, names: list[str], is_ptr: list[bool]) -> list[str]:
    """The parameters that the pointers of the kernel's stores and atomics derive from.

    Follows each written pointer back through addptr, splat, broadcast,
    expand_dims, reshape, trans, select and the results and iteration arguments
    of scf.if and scf.for to the kernel's arguments; anything else counts as
    every pointer parameter.
    """
    every = {i for i, p in enumerate(is_ptr) if p}

    def last_op(block: ir.Block) -> ir.Operation:
        ops = list(block.operations)
        return ops[-1].operation

    def roots(v: ir.Value, seen: set[ir.Value]) -> set[int]:
        if v in seen:
            return set()
        seen.add(v)
        owner = v.owner
        if isinstance(owner, ir.Block):
            idx = ir.BlockArgument(v).arg_number
            parent = owner.owner.operation
            if parent.name == "func.func":
                return {idx}
            if parent.name == "scf.for" and idx >= 1:
                return roots(parent.operands[2 + idx], seen) | \
                    roots(last_op(owner).operands[idx - 1], seen)
            return every
        op = owner.operation
        if op.name in ("tile.addptr", "tensor.splat", "tile.broadcast", "tile.expand_dims",
                       "tile.reshape", "tile.trans", "tile.convert_layout"):
            return roots(op.operands[0], seen)
        if op.name == "arith.select":
            return roots(op.operands[1], seen) | roots(op.operands[2], seen)
        if op.name in ("scf.if", "scf.for"):
            i = ir.OpResult(v).result_number
            out = roots(op.operands[3 + i], seen) if op.name == "scf.for" else set()
            for region in op.regions:
                for block in region.blocks:
                    out |= roots(last_op(block).operands[i], seen)
            return out
        return every

    stored: set[int] = set()

    def walk(op: ir.Operation) -> None:
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    name = inner.operation.name
                    if name == "tile.store" or name.startswith("tile.atomic"):
                        stored.update(roots(inner.operation.operands[0], set()))
                    walk(inner.operation)

    walk(func_op)
    return [n for i, n in enumerate(names) if i in stored]


def generate(spec: KernelSpec) -> ir.Module:
    """Build the tile-level module for one kernel specialization (needs an active context)."""
    return CodeGen(spec).generate()


__all__ = ["KernelSpec", "CodeGen", "generate", "math"]
