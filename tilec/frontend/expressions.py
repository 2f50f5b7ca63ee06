"""Expressions: Python operators on tiles and scalars, names, literals, attributes,
indexing, and the boolean and conditional forms (`ExpressionMixin`).

`eval(node)` dispatches on the parse-tree rule to `expr_<rule>`; each returns
a `TValue` or a compile-time Python value (constexprs fold in Python, as in
Triton).  Arithmetic and comparisons become `arith`/`math` ops on the unified
operands, `ptr + offset` becomes `tile.addptr`.  Calls are `calls.py`'s.
"""
from __future__ import annotations

import ast
import builtins as py_builtins
from typing import Any, Callable

from lark import Token, Tree
from mlir.dialects import arith

from tilec.dialects import tile
from tilec.frontend.semantic import TValue, broadcast_shapes
from tilec.frontend.values import BoundMethod, CodeGenBase, Node, Unassigned, is_number
from tilec.language import core as tl

_PY_BUILTINS = {"range", "float", "int", "bool", "min", "max", "abs", "len", "print",
                "isinstance", "tuple", "list"}

# Triton's tensor member functions: `x.NAME(...)` is `tl.NAME(x, ...)`.
TENSOR_MEMBERS = frozenset(
    "cast broadcast_to expand_dims view ravel sum max min argmax argmin xor_sum reduce cumsum "
    "cumprod associative_scan histogram sort topk gather sigmoid softmax umulhi exp exp2 log "
    "log2 cos sin sqrt sqrt_rn rsqrt abs div_rn erf floor ceil fma".split())
_CMP_SIGNED = {"==": arith.CmpIPredicate.eq, "!=": arith.CmpIPredicate.ne,
               "<": arith.CmpIPredicate.slt, "<=": arith.CmpIPredicate.sle,
               ">": arith.CmpIPredicate.sgt, ">=": arith.CmpIPredicate.sge}
_CMP_UNSIGNED = {"==": arith.CmpIPredicate.eq, "!=": arith.CmpIPredicate.ne,
                 "<": arith.CmpIPredicate.ult, "<=": arith.CmpIPredicate.ule,
                 ">": arith.CmpIPredicate.ugt, ">=": arith.CmpIPredicate.uge}
# Ordered comparisons are false on NaN; != is unordered (true on NaN), as in Python.
_CMP_FLOAT = {"==": arith.CmpFPredicate.OEQ, "!=": arith.CmpFPredicate.UNE,
              "<": arith.CmpFPredicate.OLT, "<=": arith.CmpFPredicate.OLE,
              ">": arith.CmpFPredicate.OGT, ">=": arith.CmpFPredicate.OGE}

# operator -> (float builder, signed-integer builder, unsigned-integer builder);
# None where the operator does not apply (checked before the lookup).
_BINARY: dict[str, tuple[Any, Any, Any]] = {
    "+": (arith.addf, arith.addi, arith.addi),
    "-": (arith.subf, arith.subi, arith.subi),
    "*": (arith.mulf, arith.muli, arith.muli),
    "//": (None, arith.divsi, arith.divui),
    "%": (arith.remf, arith.remsi, arith.remui),
    "&": (None, arith.andi, arith.andi),
    "|": (None, arith.ori, arith.ori),
    "^": (None, arith.xori, arith.xori),
    "<<": (None, arith.shli, arith.shli),
    ">>": (None, arith.shrsi, arith.shrui),
}

_CONSTEXPR_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
    "/": lambda x, y: x / y, "//": lambda x, y: x // y, "%": lambda x, y: x % y,
    "**": lambda x, y: x ** y, "&": lambda x, y: x & y, "|": lambda x, y: x | y,
    "^": lambda x, y: x ^ y, "<<": lambda x, y: x << y, ">>": lambda x, y: x >> y,
    "<": lambda x, y: x < y, "<=": lambda x, y: x <= y, ">": lambda x, y: x > y,
    ">=": lambda x, y: x >= y, "==": lambda x, y: x == y, "!=": lambda x, y: x != y,
    "is": lambda x, y: x is y, "is not": lambda x, y: x is not y,
    "in": lambda x, y: x in y, "not in": lambda x, y: x not in y,
}


class ExpressionMixin(CodeGenBase):
    # ------------------------------------------------------------ operators
    def compare(self, op: str, a: Any, b: Any, node: Node) -> TValue:
        if isinstance(a, TValue) and a.is_ptr and isinstance(b, TValue) and b.is_ptr:
            self.err(node, "comparing pointers is not supported")
        av, bv = self.unify(a, b, node, arithmetic=False)
        dt = av.dtype
        if dt.is_floating():
            res = arith.cmpf(_CMP_FLOAT[op], av.handle, bv.handle, loc=self.loc, ip=self.ip)
        else:
            preds = _CMP_UNSIGNED if dt.kind in ("uint", "bool") else _CMP_SIGNED
            res = arith.cmpi(preds[op], av.handle, bv.handle, loc=self.loc, ip=self.ip)
        return TValue(res, tl.int1, av.shape)

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
            return self.arith_op(arith.divf, av, bv)
        div_or_mod = op in ("//", "%")
        av, bv = self.unify(a, b, node, div_or_mod=div_or_mod)
        dt = av.dtype
        fl = dt.is_floating()
        if op in ("&", "|", "^", "<<", ">>") and fl:
            # "invalid operands of type": Triton's wording, which its tests match
            self.err(node, f"invalid operands of type {dt!r} for '{op}': it needs integer operands")
        if op == "//" and fl:
            self.err(node, "'//' needs integer operands; for floats use tl.floor(x / y)")
        builders = _BINARY.get(op)
        if builders is None:
            self.err(node, f"operator '{op}' is not supported")
        if op == ">>":
            # Triton picks the shift by the left operand's own signedness, then
            # types the result by the promoted dtype: int8 >> uint16 sign-extends
            # x to 16 bits, shifts arithmetically, and is a uint16.
            signed = a.dtype.is_signed() if isinstance(a, TValue) and not a.is_ptr else True
            return self.arith_op(arith.shrsi if signed else arith.shrui, av, bv)
        return self.arith_op(builders[0 if fl else 1 if dt.kind == "int" else 2], av, bv)

    def fold_constexpr(self, op: str, a: Any, b: Any, node: Node) -> Any:
        try:
            return _CONSTEXPR_OPS[op](a, b)
        except Exception as e:  # a Python error in constexpr arithmetic is the user's
            self.err(node, f"cannot evaluate {self.describe(a)} {op} {self.describe(b)}: {e}")

    def addptr(self, p: TValue, off: Any, node: Node, negate: bool = False) -> TValue:
        ov = self.to_value(off, node)
        if ov.is_ptr or not ov.dtype.is_int():
            self.err(node, f"a pointer offset must be an integer, got {self.describe(off)}")
        if negate:
            zero = self.broadcast_to(self.constant(0, ov.dtype), ov.shape, node)
            ov = self.arith_op(arith.subi, zero, ov)
        if ov.dtype.bits < 32 or ov.dtype.is_bool():
            ov = self.cast(ov, tl.int32 if ov.dtype.bits < 32 and ov.dtype.is_signed() else tl.int64,
                           node) if not ov.dtype.is_bool() else self.cast(ov, tl.int32, node)
        try:
            shape = broadcast_shapes(p.shape, ov.shape)
        except ValueError:
            self.err(node, f"cannot add offsets of shape {list(ov.shape)} to pointers of shape "
                     f"{list(p.shape)}")
        pv = self.broadcast_to(p, shape, node)
        ov = self.broadcast_to(ov, shape, node)
        return TValue(tile.addptr(pv.handle, ov.handle, loc=self.loc, ip=self.ip), p.elem, shape)

    def unary(self, op: str, v: Any, node: Node) -> Any:
        if not isinstance(v, TValue):
            if not is_number(v):
                self.err(node, f"unary '{op}' is not defined on {self.describe(v)}")
            return {"-": lambda x: -x, "+": lambda x: +x, "~": lambda x: ~x}[op](v)
        if v.is_ptr:
            self.err(node, f"unary '{op}' is not defined on pointers")
        if op == "+":
            return v
        if op == "-":
            if v.dtype.is_floating():
                return self.arith_op(arith.negf, v)
            return self.binary("-", self.broadcast_to(self.constant(0, v.dtype), v.shape, node), v,
                               node)
        if v.dtype.is_floating():
            self.err(node, f"'~' needs an integer operand, got {v.dtype!r}")
        ones = self.broadcast_to(self.constant(-1 if not v.dtype.is_bool() else 1, v.dtype),
                                 v.shape, node)
        return self.arith_op(arith.xori, v, ones)

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
            if isinstance(v, Unassigned):
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
            parts = [ast.literal_eval(str(t)) for t in node.children]
        except (ValueError, SyntaxError):
            self.err(node, "f-strings and byte strings are not supported in kernels")
        if not all(isinstance(p, str) for p in parts):
            self.err(node, "byte strings are not supported in kernels")
        return "".join(parts)

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
        """`x.name`: a tile's dtype/shape, its methods (Triton's tensor member
        functions: the `tl.*` function with the tile as first argument), or a
        compile-time object's attribute."""
        base = self.eval(node.children[0])
        name = str(node.children[1])
        if name == "to" and isinstance(base, (int, float)) and not isinstance(base, bool):
            # A Python number held in a variable (e.g. summed in a static_range):
            # Triton treats it as a scalar of its default type, so .to() casts it.
            base = self.to_value(base, node)
        if isinstance(base, TValue):
            if name == "dtype":
                return base.elem
            if name == "type":   # Triton's x.type: the scalar type, or a block type
                return base.elem if not base.shape else tl.block_type(base.elem, base.shape)
            if name == "shape":
                return base.shape
            if name in ("to", "permute", "trans", "reshape", "split", "flip", "join", "interleave"):
                return BoundMethod(base, name)
            if name in TENSOR_MEMBERS and name in self.builtins:
                return BoundMethod(base, name)     # x.sum(axis=0) is tl.sum(x, axis=0)
            if name == "T":
                return self.builtins["trans"](self, node, base)
            self.err(node, f"tiles have no attribute '{name}' (available: .to, .dtype, .type, .shape, "
                     ".T, .trans, .permute, .reshape, .split, .flip, .join, .interleave, and the "
                     "tl functions Triton makes tensor methods: .cast, .sum, .max, .exp, ...)")
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
                # As in Triton, a ':' past the last dimension is ignored
                # (`Z[None, None, :]` on a scalar pointer is a [1, 1] tile).
                dim += 1
                continue
            if isinstance(s, Tree) and s.data == "const_none":
                out = self.expand_dims(out, dim)
                dim += 1
                continue
            self.err(s, "tiles can only be indexed with ':' and None (e.g. x[:, None])")
        return out

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
            if op in ("is", "is not") and (lhs is None or rhs is None):
                # a runtime value is never None (`if bias_ptr is not None:`, as Triton folds it)
                return (lhs is rhs) == (op == "is")
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

