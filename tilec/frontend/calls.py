"""Calls in kernel code (`CallMixin`): `tl.*` builtins, `.to()`, and the Python
builtins allowed on compile-time values.

A `tl.*` function carries a `__tilec_builtin__` tag; its code generation rule
is looked up by that tag in `BUILTIN_RULES`, the rule tables of the three
builtins modules, and called as `rule(cg, node, *args, **kwargs)` after the
arguments are checked against the rule's signature (a mismatch is a user error
that shows the expected signature).
"""
from __future__ import annotations

import builtins as py_builtins
import inspect
from typing import Any, Callable, NoReturn, Sequence

from lark import Tree

from tilec.frontend import builtins as builtins_core
from tilec.frontend import (
    builtins_asm, builtins_blockptr, builtins_compat, builtins_extra, builtins_lang, builtins_random,
    builtins_print, builtins_reduce, builtins_select, builtins_shape, builtins_sort,
)
from tilec.frontend.inline import inline_call
from tilec.frontend.semantic import TValue
from tilec.frontend.values import BoundMethod, CodeGenBase, Node
from tilec.language import core as tl

Rule = Callable[..., Any]

BUILTIN_RULES: dict[str, Rule] = {**builtins_core.RULES, **builtins_extra.RULES,
                                  **builtins_reduce.RULES, **builtins_compat.RULES,
                                  **builtins_lang.RULES, **builtins_random.RULES,
                                  **builtins_shape.RULES, **builtins_select.RULES,
                                  **builtins_blockptr.RULES, **builtins_sort.RULES,
                                  **builtins_print.RULES, **builtins_asm.RULES}
METHODS: dict[str, Rule] = {**builtins_lang.METHODS, **builtins_shape.METHODS,
                             **builtins_sort.METHODS}

_CONSTEXPR_BUILTINS = (py_builtins.float, py_builtins.int, py_builtins.bool, py_builtins.min,
                       py_builtins.max, py_builtins.abs, py_builtins.len, py_builtins.tuple,
                       py_builtins.isinstance)


def _accepts(fn: Rule, args: Sequence[Any], kwargs: dict[str, Any]) -> bool:
    try:
        inspect.signature(fn).bind(None, None, *args, **kwargs)
        return True
    except TypeError:
        return False


class CallMixin(CodeGenBase):
    builtins = BUILTIN_RULES

    def expr_call(self, node: Tree) -> Any:
        callee = self.eval(node.children[0])
        args, kwargs = self.eval_args(node.children[1])
        self.loc = self.location(node)
        if isinstance(callee, BoundMethod):
            if callee.name != "to":
                method = METHODS.get(callee.name) or self.builtins[callee.name]
                if not _accepts(method, [callee.obj, *args], kwargs):
                    self._bad_call(node, callee.name, method, [callee.obj, *args], kwargs)
                return method(self, node, callee.obj, *args, **kwargs)
            return self.method_to(callee.obj, args, kwargs, node)
        tag = getattr(callee, "__tilec_builtin__", None)
        if tag is not None:
            impl = self.builtins.get(tag)
            if impl is None:
                self.err(node, f"tl.{tag} is not supported yet")
            return impl(self, node, *args, **kwargs) if _accepts(impl, args, kwargs) else \
                self._bad_call(node, tag, impl, args, kwargs)
        if callee in (py_builtins.min, py_builtins.max) and len(args) >= 2 and not kwargs \
                and any(isinstance(a, TValue) for a in args):
            # min/max of runtime scalars or tiles: tl.minimum / tl.maximum folded (Triton)
            fold = self.builtins["minimum" if callee is py_builtins.min else "maximum"]
            acc = args[0]
            for a in args[1:]:
                acc = fold(self, node, acc, a)
            return acc
        if callee is py_builtins.isinstance and len(args) == 2 and isinstance(args[0], TValue):
            # a runtime value is a tl.tensor (Triton: `isinstance(x, tl.tensor)`)
            kinds = args[1] if isinstance(args[1], tuple) else (args[1],)
            return any(k is tl.tensor for k in kinds)
        if callee is tl.pointer_type:  # tl.pointer_type(tl.float16): a type, for .to()
            if len(args) != 1 or kwargs or not isinstance(args[0], tl.dtype):
                self.err(node, "tl.pointer_type takes one element dtype, e.g. "
                         "tl.pointer_type(tl.float16)")
            return tl.pointer_type(args[0])
        if callee in _CONSTEXPR_BUILTINS:
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
            return builtins_print.python_print(self, node, args, kwargs)
        if callee is py_builtins.range:
            self.err(node, "range() can only be used as the iterable of a for loop")
        if getattr(callee, "__tilec_kernel__", False):
            return inline_call(self, callee, args, kwargs, node)
        what = self.describe(callee)
        if callable(callee) and hasattr(callee, "__qualname__"):
            what = f"{getattr(callee, '__module__', None) or '?'}.{callee.__qualname__}"
        self.err(node, f"cannot call {what} in a kernel; only tl.* functions "
                 "and a few Python builtins on constexprs can be called")

    def _bad_call(self, node: Node, tag: str, impl: Rule, args: Sequence[Any],
                  kwargs: dict[str, Any]) -> NoReturn:
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
        bitcast = kwargs.pop("bitcast", False)
        bitcast = bool(bitcast.value if isinstance(bitcast, tl.constexpr) else bitcast)
        rounding = kwargs.pop("fp_downcast_rounding", None)
        if len(args) == 2 and rounding is None:
            args, rounding = args[:1], args[1]          # x.to(dtype, "rtz")
        if len(args) != 1 or kwargs:
            self.err(node, ".to() takes one dtype argument (and optionally "
                     "fp_downcast_rounding= and bitcast=)")
        if bitcast and rounding is not None:
            self.err(node, ".to(): fp_downcast_rounding= does not apply to a bitcast")
        dt = args[0]
        if isinstance(dt, tl.pointer_type) and not bitcast:
            return builtins_shape.to_pointer(self, node, v, dt)
        if v.is_ptr and isinstance(dt, tl.dtype) and not bitcast:
            return builtins_shape.from_pointer(self, node, v, dt)
        if not isinstance(dt, tl.dtype):
            self.err(node, f".to() needs a dtype such as tl.float32, got {self.describe(dt)}")
        return self.cast(v, dt, node, bitcast=bitcast, rounding=rounding)

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

