"""Calls of `@tilec.jit` helper functions from kernel code: inlined.

A helper is a `Kernel` object called like a function inside a kernel (Triton's
`@triton.jit` functions called from a kernel).  Its body is generated at the
call site by a sub-generator that shares the module, the insertion point and
the emitted private functions, with its own scope (the bound arguments), its
own source (so locations and errors point at the helper's lines) and its own
names (the helper's module globals and closure cells).  Runtime values, tiles,
constexprs and tuples pass in and out unchanged: nothing is materialized at
the call boundary.  `noinline=True` is accepted and still inlined.

A helper calling itself (directly or through others) is an error at the call.
An error inside a helper names the helper's line and, in the message, the
call site (one line per level of helpers).
"""
from __future__ import annotations

import inspect
from collections import ChainMap
from typing import Any, Callable, Mapping

from tilec.errors import TilecError
from tilec.frontend.parser import get_source, parse_source
from tilec.frontend.spec import KernelSpec
from tilec.frontend.values import CodeGenBase, Node
from tilec.language import core as tl

MAX_DEPTH = 64


def function_names(fn: Callable[..., Any]) -> Mapping[str, Any]:
    """The names kernel code of `fn` sees: its closure cells, then its module's
    globals (Python's own order for a nested function's free variables)."""
    cells: dict[str, Any] = {}
    code = getattr(fn, "__code__", None)
    closure = getattr(fn, "__closure__", None) or ()
    if code is not None:
        for name, cell in zip(code.co_freevars, closure):
            try:
                cells[name] = cell.cell_contents
            except ValueError:  # an empty cell (assigned later in the outer function)
                continue
    g = getattr(fn, "__globals__", {})
    return ChainMap(cells, g) if cells else g


def parsed(kernel: Any) -> tuple[Any, Any]:
    """(KernelSource, funcdef tree) of a kernel or helper, parsed once."""
    if kernel._parsed is None:
        src = get_source(kernel.fn)
        kernel._parsed = (src, parse_source(src))
    return kernel._parsed


def inline_call(cg: CodeGenBase, helper: Any, args: list[Any], kwargs: dict[str, Any],
                node: Node) -> Any:
    """Generate `helper(*args, **kwargs)` in place; its return value (None, a
    value or a tuple)."""
    stack: tuple[Any, ...] = getattr(cg, "inline_stack", ())
    if any(h is helper for h in stack):
        chain = " -> ".join([h.name for h in stack] + [helper.name])
        cg.err(node, f"recursive call of '{helper.name}' ({chain}): helpers are inlined, so "
               "recursion is not supported; write it as a loop")
    if len(stack) >= MAX_DEPTH:
        cg.err(node, f"helpers nested deeper than {MAX_DEPTH} calls")
    sig = inspect.signature(helper.fn)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        cg.err(node, f"wrong arguments for '{helper.name}{sig}': {e}")
    bound.apply_defaults()
    scope: dict[str, Any] = {}
    for p in helper.params:
        v = bound.arguments[p.name]
        if isinstance(v, tl.constexpr):
            v = v.value
        # A helper's tl.constexpr annotation does not force a constant: a runtime
        # value passes through (Triton inlines helpers the same way; tutorial 06
        # passes tiles to `offs_m: tl.constexpr`).
        scope[p.name] = v
    src, tree = parsed(helper)
    spec = KernelSpec(name=helper.name, source=src, tree=tree, params=list(scope),
                      runtime_types={}, constexprs={}, divisibility={},
                      globals=function_names(helper.fn))  # type: ignore[arg-type]
    sub = type(cg)(spec)
    sub.module, sub.functions, sub.ip = cg.module, cg.functions, cg.ip
    sub.scope = scope
    sub.returned = []
    sub.inline_stack = stack + (helper,)  # type: ignore[attr-defined]
    call_loc = cg.src.loc(*_pos(node))
    try:
        sub.exec_suite(tree.children[-1], top_level=True)
        result = sub.return_values(tree)  # type: ignore[attr-defined]
    except TilecError as e:
        if e.loc is None:
            raise
        raise TilecError(f"{e.message}\n  in '{helper.name}', called at {call_loc}", e.loc,
                         e.source_line) from None
    cg.spec.used_globals.update(spec.used_globals)
    return result


def _pos(node: Node) -> tuple[int, int]:
    from tilec.frontend.parser import token_pos
    return token_pos(node) if node is not None else (1, 1)
