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

`CodeGen` is this module's driver (the kernel function, the private combine
functions, which parameters are stored through) over one mixin per part of the
language, all sharing `values.CodeGenBase`'s state:

| module | part |
|---|---|
| `values.py` | state, errors at nodes, constants, casts, broadcasts, operand unification |
| `expressions.py` | operators, names, literals, attributes, indexing, `and`/`or`/`not`, `x if c else y` |
| `calls.py` | calls: the `tl.*` rule tables (`builtins*.py`), `.to()`, Python builtins on constexprs |
| `statements.py` | suites, assignments, `assert`, `return`, unsupported statements |
| `control_flow.py` | `if` / `for` / `while` -> `scf` |

Mixins rather than collaborating objects: the parts call each other at every
node (an `if` evaluates expressions, a call runs a combine function's
statements) and share the scope, insertion point and location, and the
builtin rules take one `cg` that offers all of them.
"""
from __future__ import annotations

from typing import Any, Callable

from mlir import ir
from mlir.dialects import func as func_d

from tilec.frontend.builtins_lang import host_descriptor
from tilec.frontend.calls import CallMixin
from tilec.frontend.control_flow import ControlFlowMixin
from tilec.frontend.expressions import ExpressionMixin
from tilec.frontend.inline import function_names, parsed
from tilec.frontend.semantic import TValue, mlir_scalar, mlir_type
from tilec.frontend.spec import KernelSpec
from tilec.frontend.statements import StatementMixin
from tilec.frontend.values import Node
from tilec.language import core as tl
from tilec.runtime.args import EQUAL_TO_1
from tilec.tools.tensor_descriptor import DescriptorType


class CodeGen(ExpressionMixin, CallMixin, StatementMixin, ControlFlowMixin):
    """Code generation for one kernel (or one combine function) into a module."""

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
        for p, v in spec.constexprs.items():   # host TensorDescriptor arguments
            if isinstance(v, DescriptorType):
                self.loc = self.location(spec.tree)
                self.scope[p] = host_descriptor(self, p, v)
        for p in arg_names:  # ints specialized to 1 are the constant 1 of their type
            t = spec.runtime_types[p]
            if spec.divisibility.get(p, 1) == EQUAL_TO_1 and isinstance(t, tl.dtype):
                with self.location(spec.tree):
                    self.scope[p] = self.constant(1, t)
        self.exec_suite(body, top_level=True)
        self.loc = self.location(spec.tree)
        func_d.ReturnOp([], loc=self.loc, ip=self.ip)
        spec.stored_params = _stored_params(fop.operation, arg_names,
                                            [isinstance(spec.runtime_types[p], tl.pointer_type)
                                             for p in arg_names])
        return module

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
        fop = func_d.FuncOp(name, ir.FunctionType.get(inputs, []), visibility="private",
                            loc=self.loc, ip=ir.InsertionPoint.at_block_begin(self.module.body))
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
            func_d.ReturnOp(values, loc=self.loc, ip=self.ip)
        finally:
            self.ip, self.scope = saved
        fop.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(inputs, [v.type for v in values]))
        return name

    def emit_user_function(self, node: Node, kernel: Any, arg_types: list[tl.dtype],
                           n_results: int) -> str:
        """Emit a user's @tilec.kernel function (e.g. a combine_fn) as a private function."""
        params = [p.name for p in kernel.params]
        if len(params) != len(arg_types):
            self.err(node, f"combine function '{kernel.name}' must take {len(arg_types)} "
                     f"arguments ({n_results} running values, then {n_results} new values); "
                     f"it takes {len(params)}")
        name = f"{kernel.name}_{'_'.join(t.short for t in arg_types)}"
        if name in self.functions:
            return name
        src, tree = parsed(kernel)
        spec = KernelSpec(name=name, source=src, tree=tree, params=params,
                          runtime_types=dict(zip(params, arg_types)), constexprs={},
                          divisibility={}, globals=function_names(kernel.fn))  # type: ignore[arg-type]
        sub = CodeGen(spec)
        sub.module, sub.functions = self.module, self.functions

        def body(args: list[TValue]) -> list[Any]:
            sub.scope = dict(zip(params, args))
            sub.ip = self.ip
            sub.returned = []
            sub.exec_suite(tree.children[-1], top_level=True)
            value = sub.return_values(tree)
            returned = [] if value is None else list(value) if isinstance(value, tuple) else [value]
            if len(returned) != n_results:
                sub.err(tree, f"combine function '{kernel.name}' must return {n_results} "
                        f"value(s), it returns {len(returned)}")
            return returned

        return self.emit_function(name, arg_types, body, node)


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
                       "tile.reshape", "tile.trans", "tile.convert_layout",
                       "tile.make_descriptor"):
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
                    if name in ("tile.store", "tile.descriptor_store") or \
                            name.startswith("tile.atomic"):
                        stored.update(roots(inner.operation.operands[0], set()))
                    walk(inner.operation)

    walk(func_op)
    return [n for i, n in enumerate(names) if i in stored]




def generate(spec: KernelSpec) -> ir.Module:
    """Build the tile-level module for one kernel specialization (needs an active context)."""
    return CodeGen(spec).generate()


__all__ = ["KernelSpec", "CodeGen", "generate"]
