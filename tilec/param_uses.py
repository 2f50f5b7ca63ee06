"""Which parameters a kernel addresses memory through, read from its Python source.

`pointer_uses(fn)` returns (written, addressed): the parameters that the
pointer operand of a `tl.store` / `tl.atomic_*` may derive from, and those
that the pointer operand of any `tl.load`, `tl.store` or `tl.atomic_*` may
derive from.  It needs neither MLIR nor a compile: the torch integration uses
it while `torch.compile` traces a launch (the written tensors are declared
as mutated by the `tilec::launch` operator), and the launch uses it to tell a
0-d tensor passed for a scalar parameter from a pointer to one element.

The analysis is flow-insensitive: a name depends on every name in every
expression ever assigned to it (tuple targets, for-loop targets, augmented
assignments, walrus), closed transitively.  That over-approximates the
frontend's exact analysis on the IR (`tilec.frontend.codegen._stored_params`,
which follows each stored pointer through addptr, splat, select, scf results,
...): every parameter the IR analysis finds, this one finds too
(tests/test_torch_trace.py checks that on the examples and test kernels).
When the source cannot be read, every parameter counts.
"""
from __future__ import annotations

import ast
import functools
import inspect
import textwrap
from typing import Any, Callable

_WRITES = ("store",)
_READS = ("load",)


def _called_name(call: ast.Call) -> str:
    f = call.func
    if isinstance(f, ast.Attribute):
        return f.attr
    if isinstance(f, ast.Name):
        return f.id
    return ""


def _pointer_operand(call: ast.Call) -> ast.expr | None:
    f = call.func
    if isinstance(f, ast.Attribute) and call.args and \
            isinstance(call.args[0], (ast.List, ast.Tuple)):
        # `desc.store([m, n], value)` / `desc.load([m, k])`: the offsets are a
        # list, the memory is the tensor descriptor's (its base pointer's).
        return f.value
    for kw in call.keywords:
        if kw.arg in ("pointer", "ptr"):
            return kw.value
    return call.args[0] if call.args else None


def _names(node: ast.AST | None) -> set[str]:
    if node is None:
        return set()
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


class _Deps(ast.NodeVisitor):
    """name -> names its assigned values mention; pointer operands of memory calls."""

    def __init__(self) -> None:
        self.deps: dict[str, set[str]] = {}
        self.written: list[ast.expr] = []
        self.addressed: list[ast.expr] = []

    def _assign(self, targets: list[ast.expr], value: ast.AST | None) -> None:
        used = _names(value)
        for t in targets:
            for name in _names(t):
                self.deps.setdefault(name, set()).update(used)

    def visit_Assign(self, node: ast.Assign) -> None:
        self._assign(list(node.targets), node.value)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._assign([node.target], node.value)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._assign([node.target], node.value)
        self.generic_visit(node)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self._assign([node.target], node.value)
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        self._assign([node.target], node.iter)
        self.generic_visit(node)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self._assign([node.target], node.iter)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = _called_name(node)
        ptr = _pointer_operand(node)
        if ptr is not None:
            if name in _WRITES or name.startswith("atomic_"):
                self.written.append(ptr)
                self.addressed.append(ptr)
            elif name in _READS:
                self.addressed.append(ptr)
        self.generic_visit(node)


def _closure(roots: set[str], deps: dict[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        todo.extend(deps.get(n, ()))
    return seen


@functools.lru_cache(maxsize=512)
def _analyse(source: str, params: tuple[str, ...]) -> tuple[frozenset[str], frozenset[str]]:
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return frozenset(params), frozenset(params)
    v = _Deps()
    v.visit(tree)
    written: set[str] = set()
    for e in v.written:
        written |= _names(e)
    addressed: set[str] = set()
    for e in v.addressed:
        addressed |= _names(e)
    ps = set(params)
    return (frozenset(_closure(written, v.deps) & ps), frozenset(_closure(addressed, v.deps) & ps))


def pointer_uses(fn: Callable[..., Any]) -> tuple[frozenset[str], frozenset[str]]:
    """(written, addressed) parameter names of kernel function `fn` (see the module
    docstring); every parameter for both when its source cannot be read."""
    params = tuple(inspect.signature(fn).parameters)
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        return frozenset(params), frozenset(params)
    return _analyse(source, params)
