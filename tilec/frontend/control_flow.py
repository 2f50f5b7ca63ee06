"""Control flow (`ControlFlowMixin`): `if`, `for` and `while` as `scf.if`,
`scf.for` and `scf.while`.

A condition or bound known at compile time unrolls or selects in Python (as
Triton does); a runtime one builds structured control flow.  Names a branch or
a loop body reassigns become the op's results: both branches (or the loop's
start and end) must give them one type and shape.  Names defined on one path
only are `Unassigned` afterwards, an error only when read.
"""
from __future__ import annotations

import builtins as py_builtins
from typing import Any, Callable

from lark import Tree
from mlir import ir
from mlir.dialects import arith, scf

from tilec.frontend.semantic import TValue, mlir_type
from tilec.frontend.values import CodeGenBase, Compound, Node, Unassigned, is_number
from tilec.language import core as tl

_MISSING = object()  # a name absent from one branch's scope


def _flat(vals: list[Any]) -> list[TValue]:
    """Carried values as the loop's operands: a `Compound` gives its parts."""
    out: list[TValue] = []
    for v in vals:
        out.extend(v.parts() if isinstance(v, Compound) else [v])
    return out


def _rebuild(init: list[Any], values: Any) -> list[Any]:
    """The carried values again, around `values` (block arguments or results)."""
    it = iter(list(values))
    out: list[Any] = []
    for v in init:
        if isinstance(v, Compound):
            out.append(v.with_parts([TValue(next(it), p.elem, p.shape) for p in v.parts()]))
        else:
            out.append(TValue(next(it), v.elem, v.shape))
    return out

# tl.range's scheduling hints: recorded on the scf.for as `tile.<name>` (integers
# as i32 attributes, true flags as unit attributes, choices whose default the
# compiler makes (None) as bool attributes when given); the loop runs the same.
_RANGE_INT_HINTS = ("num_stages", "loop_unroll_factor")
_RANGE_FLAG_HINTS = ("disallow_acc_multi_buffer", "flatten", "warp_specialize", "disable_licm")
_RANGE_CHOICE_HINTS = ("overlap_dots",)
_RANGE_HINTS = set(_RANGE_INT_HINTS + _RANGE_FLAG_HINTS + _RANGE_CHOICE_HINTS)


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



class ControlFlowMixin(CodeGenBase):
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
        # Generate both branches into a result-less scf.if first: which names
        # become results (and their types) is known only afterwards.
        tmp = scf.IfOp(cond.handle, [], has_else=True, loc=loc, ip=self.ip)
        scopes = []
        blocks = []
        for region, fn in zip(tmp.regions, (then_fn, else_fn)):
            block = region.blocks[0]
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
            if a is _MISSING or b is _MISSING or isinstance(a, Unassigned) or isinstance(b, Unassigned):
                merged[n] = Unassigned(f"'{n}' is assigned in only one branch of an if")
                continue
            if not isinstance(a, TValue) and not isinstance(b, TValue):
                if type(a) is type(b) and a == b:
                    merged[n] = a
                    continue
                if not (is_number(a) and is_number(b)):
                    merged[n] = Unassigned(f"'{n}' gets different compile-time values in the "
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
        real = scf.IfOp(cond.handle, result_types, has_else=True, loc=loc, ip=self.ip)
        for k, region in enumerate(real.regions):
            vals = [(a if k == 0 else b).handle for _, a, b in typed]
            y = scf.YieldOp(vals, loc=loc, ip=ir.InsertionPoint(region.blocks[0]))
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
        hints: dict[str, ir.Attribute] = {}
        if tag == "range":
            hints = self._range_hints(kwargs, iter_node)
            kwargs = {k: v for k, v in kwargs.items() if k not in _RANGE_HINTS}
        if kwargs or not 1 <= len(args) <= 3:
            self.err(iter_node, "range() takes 1 to 3 positional arguments")
        if tag == "static_range" and any(isinstance(v, TValue) for v in args):
            self.err(iter_node, "tl.static_range bounds must be compile-time constants")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else \
            (args[0], args[1], args[2] if len(args) == 3 else 1)
        if tag == "static_range":
            self._unrolled(str(target.children[0]), (start, stop, step), body, iter_node)
            return
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
            trips = self.arith_op(arith.maxsi, trips, zero)
            lb, ub, stp = zero, trips, self.constant(1, ity)
        else:
            lb, ub = lo, hi
            stp = self.cast(self.to_value(step, iter_node, ity), ity, iter_node)
        names, init = self._carried(body, st)
        loop = scf.ForOp(lb.handle, ub.handle, stp.handle, [v.handle for v in _flat(init)],
                         loc=self.loc, ip=self.ip)
        for k, attr in hints.items():
            loop.operation.attributes[k] = attr
        block = loop.body
        before = dict(self.scope)
        ip_saved = self.ip
        self.ip = ir.InsertionPoint(block)
        iv = TValue(block.arguments[0], ity)
        if neg:
            iv = self.binary("-", lo, self.binary("*", iv, -step, iter_node), iter_node)
        self.scope[str(target.children[0])] = iv
        self.scope.update(zip(names, _rebuild(init, list(block.arguments)[1:])))
        self.exec_suite(body)
        yields = self._loop_yields(names, init, st)
        self.loc = self.location(st)
        scf.YieldOp(yields, loc=self.loc, ip=self.ip)
        after_body = self.scope
        self.ip = ip_saved
        self.scope = before
        self._forget_loop_locals(body, names, before, after_body, st)
        self.scope.update(zip(names, _rebuild(init, loop.results)))

    def _unrolled(self, name: str, bounds: tuple[Any, Any, Any], body: Tree,
                  node: Node) -> None:
        """tl.static_range: the body once per value, the loop variable a constexpr
        (as Triton unrolls it)."""
        vals = [b.value if isinstance(b, tl.constexpr) else b for b in bounds]
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in vals) or vals[2] == 0:
            self.err(node, "tl.static_range needs integer constexpr bounds and a non-zero step")
        trips = py_builtins.range(*vals)
        if len(trips) > 4096:
            self.err(node, f"tl.static_range unrolls {len(trips)} iterations; at most 4096 are "
                     "allowed (use tl.range for a runtime loop)")
        for i in trips:
            self.scope[name] = i
            self.exec_suite(body)

    def _range_hints(self, kwargs: dict[str, Any], node: Node) -> dict[str, ir.Attribute]:
        """tl.range's keyword hints as scf.for attributes (checked: constexpr ints >= 0
        or None, constexpr bools or None)."""
        out: dict[str, ir.Attribute] = {}
        for k in _RANGE_HINTS & set(kwargs):
            v = kwargs[k]
            v = v.value if isinstance(v, tl.constexpr) else v
            if isinstance(v, TValue):
                self.err(node, f"tl.range's {k} must be a compile-time constant")
            if k in _RANGE_INT_HINTS:
                if v is None:
                    continue
                if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                    self.err(node, f"tl.range's {k} must be a non-negative int, got {v!r}")
                out[f"tile.{k}"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), v)
            else:
                if not isinstance(v, bool) and v is not None:
                    self.err(node, f"tl.range's {k} must be True or False, got {v!r}")
                if k in _RANGE_CHOICE_HINTS and v is not None:
                    out[f"tile.{k}"] = ir.BoolAttr.get(v)
                elif v:
                    out[f"tile.{k}"] = ir.UnitAttr.get()
        return out

    # ---- while
    def stmt_while_stmt(self, st: Tree) -> None:
        cond_node, body, else_suite = st.children
        if else_suite is not None:
            self.err(st, "while ... else is not supported in kernels")
        probe = self._probe(cond_node)
        if not isinstance(probe, TValue):
            if probe:
                self.err(cond_node, "this while loop never ends: its condition is a true "
                         "compile-time constant")
            return
        names, init = self._carried(body, st)
        types = [mlir_type(v.elem, v.shape) for v in _flat(init)]
        loc = self.location(st)
        loop = scf.WhileOp(types, [v.handle for v in _flat(init)], loc=loc, ip=self.ip)
        before_blk = loop.before.blocks.append(*types)
        after_blk = loop.after.blocks.append(*types)
        outer, ip_saved = dict(self.scope), self.ip
        # before: evaluate the condition on the carried values
        self.scope = dict(outer)
        self.ip = ir.InsertionPoint(before_blk)
        self.scope.update(zip(names, _rebuild(init, before_blk.arguments)))
        cond = self.eval(cond_node)
        cond = self.to_value(cond, cond_node)
        if cond.is_block or cond.is_ptr:
            self.err(cond_node, "a while condition must be a scalar")
        cond = cond if cond.dtype.is_bool() else self.cast(cond, tl.int1, cond_node)
        scf.ConditionOp(cond.handle, list(before_blk.arguments), loc=loc, ip=self.ip)
        # after: the body
        self.scope = dict(outer)
        self.ip = ir.InsertionPoint(after_blk)
        self.scope.update(zip(names, _rebuild(init, after_blk.arguments)))
        self.exec_suite(body)
        yields = self._loop_yields(names, init, st)
        self.loc = loc
        scf.YieldOp(yields, loc=loc, ip=self.ip)
        after_body = self.scope
        self.ip, self.scope = ip_saved, outer
        self._forget_loop_locals(body, names, outer, after_body, st)
        self.scope.update(zip(names, _rebuild(init, loop.results)))

    def _probe(self, node: Node) -> Any:
        """The value of `node` evaluated into a scratch region that is then erased:
        whether a while condition is a compile-time constant, without running its
        ops once more before the loop (a condition with a side effect, such as
        the `tl.atomic_cas` of a spin lock, must run once per test only)."""
        true = arith.ConstantOp(ir.IntegerType.get_signless(1), 1, loc=self.loc, ip=self.ip)
        scratch = scf.IfOp(true.result, [], has_else=False, loc=self.loc, ip=self.ip)
        saved_ip, saved_scope = self.ip, dict(self.scope)
        self.ip = ir.InsertionPoint(scratch.regions[0].blocks[0])
        try:
            value = self.eval(node)
        finally:
            self.ip, self.scope = saved_ip, saved_scope
            scratch.erase()
            true.erase()
        return value

    def _carried(self, body: Tree, st: Tree) -> tuple[list[str], list[Any]]:
        """Names a loop body reassigns that exist before it, with their initial values."""
        names: list[str] = []
        init: list[Any] = []
        for n in _assigned_names(body):
            v = self.scope.get(n)
            if v is None or isinstance(v, Unassigned):
                continue
            if isinstance(v, tl.constexpr):
                v = v.value
            if isinstance(v, Compound):
                names.append(n)
                init.append(v)
                continue
            if not isinstance(v, TValue):
                if not is_number(v):
                    continue
                v = self.to_value(v, st)
            names.append(n)
            init.append(v)
        return names, init

    def _loop_yields(self, names: list[str], init: list[Any], st: Tree) -> list[ir.Value]:
        yields: list[ir.Value] = []
        for n, v in zip(names, init):
            new = self.scope.get(n)
            if isinstance(new, Unassigned) or new is None:
                self.err(st, f"'{n}' is not defined at the end of the loop body")
            if isinstance(v, Compound):
                if not v.same_kind(new):
                    self.err(st, f"loop-carried variable '{n}' must stay the same kind of value "
                             "(a block pointer made before the loop, moved with tl.advance)")
                yields.extend(p.handle for p in new.parts())
                continue
            if not isinstance(new, TValue):
                if not is_number(new):
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
            self.scope[n] = Unassigned(f"'{n}' is assigned inside a loop body and is not "
                                        "visible after the loop; assign it before the loop")

