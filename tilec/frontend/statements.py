"""Statements (`StatementMixin`): suites, assignments, expression statements,
`assert`, `pass` and `return`; every other statement is a user error naming it.

`exec_stmt` dispatches on the parse-tree rule to `stmt_<rule>`; `if`, `for`
and `while` are `control_flow.py`'s.  Assignment binds names in the scope
(tiles are values: nothing is written to memory except by `tl.store`).
"""
from __future__ import annotations

from typing import Any, Iterator

from lark import Tree

from tilec.frontend.semantic import TValue
from tilec.frontend.values import BoundMethod, CodeGenBase, Node, Unassigned

RET = "@ret"            # scope names of returned values: @ret0, @ret1, ...
RET_COUNT = "@ret#"      # -1: None, 0: one value, n: a tuple of n

_UNSUPPORTED = {
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
}


def _has_return(st: Tree) -> bool:
    return any(s.data == "return_stmt" for s in st.iter_subtrees_topdown())


def _with_continuation(st: Tree, rest: list[Tree]) -> Tree:
    """A copy of the if statement `st` whose every branch ends with `rest`."""
    def extend(suite: Tree | None) -> Tree:
        body = [] if suite is None else [c for c in suite.children if isinstance(c, Tree)]
        return Tree("suite", body + rest, suite.meta if suite is not None else st.meta)

    cond, then_suite, *others = st.children
    out: list[Any] = [cond, extend(then_suite)]
    has_else = False
    for c in others:
        if isinstance(c, Tree) and c.data == "elif_clause":
            out.append(Tree("elif_clause", [c.children[0], extend(c.children[1])], c.meta))
        elif c is not None:
            out.append(extend(c))
            has_else = True
    if not has_else:
        out.append(extend(None))
    return Tree("if_stmt", out, st.meta)


class StatementMixin(CodeGenBase):
    def suite_stmts(self, suite: Tree) -> Iterator[Tree]:
        for child in suite.children:
            if isinstance(child, Tree) and child.data == "simple_stmt":
                for small in child.children:
                    if small is not None:
                        yield small
            elif isinstance(child, Tree):
                yield child

    def exec_suite(self, suite: Tree, top_level: bool = False) -> None:
        self.exec_stmts(list(self.suite_stmts(suite)))

    def exec_stmts(self, stmts: list[Tree]) -> None:
        """Run statements up to a `return`.  An `if` with a `return` inside takes
        the statements after it into each of its branches (an absent `else`
        becomes them), so a return on one path skips the rest on that path only;
        the returned values are the scope's `@ret` names, merged by the if."""
        for i, st in enumerate(stmts):
            if st.data == "return_stmt":
                self.do_return(st)
                return
            if st.data in ("for_stmt", "while_stmt") and _has_return(st):
                ret = next(s for s in st.iter_subtrees_topdown() if s.data == "return_stmt")
                self.err(ret, "'return' inside a loop is not supported")
            if st.data == "if_stmt" and _has_return(st) and i + 1 < len(stmts):
                self.exec_stmt(_with_continuation(st, stmts[i + 1:]))
                return
            self.exec_stmt(st)

    def do_return(self, st: Tree) -> None:
        value = self.eval(st.children[0]) if st.children[0] is not None else None
        if value is not None and self.returned is None:
            self.err(st, "kernels cannot return a value; store results with tl.store")
        if isinstance(value, tuple):
            self.scope[RET_COUNT] = len(value)
            for k, v in enumerate(value):
                self.scope[f"{RET}{k}"] = v
        else:
            self.scope[RET_COUNT] = -1 if value is None else 0
            self.scope[f"{RET}0"] = value

    def return_values(self, node: Node) -> Any:
        """What the function generated into this scope returned: None, a value
        or a tuple (its `return` statements must agree on how many values)."""
        n = self.scope.get(RET_COUNT, -1)
        if isinstance(n, Unassigned):
            self.err(node, "this function returns a value on some paths but not on others "
                     "(or tuples of different lengths)")
        if n == -1:
            return None
        vals = [self.scope.get(f"{RET}{k}") for k in range(max(n, 1))]
        for v in vals:
            if isinstance(v, Unassigned):
                self.err(node, "the values this function returns on different paths differ in "
                         "type or are compile-time values that differ; convert them to one type")
        return vals[0] if n == 0 else tuple(vals)

    def exec_stmt(self, st: Tree) -> None:
        self.loc = self.location(st)
        handler = getattr(self, f"stmt_{st.data}", None)
        if handler is None:
            what = _UNSUPPORTED.get(st.data, f"'{st.data}' statements are not supported in kernels")
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
            if isinstance(value, BoundMethod):
                self.err(target, "methods cannot be stored in variables")
            self.scope[name] = value
            return
        if isinstance(target, Tree) and target.data == "paren" and len(target.children) == 1:
            return self.assign_target(target.children[0], value)    # `(x) = ...` is `x = ...`
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

    def stmt_assign(self, st: Tree) -> None:
        *targets, value_node = st.children
        value = self.eval(value_node)
        if isinstance(value, BoundMethod):
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

