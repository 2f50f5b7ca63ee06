"""The combine functions of `tile.reduce` / `tile.scan` on CPU vectors.

The combine function (`combine` attribute: a `func.func private` taking the
running values, then the new values) is cloned onto vectors when its body is
only `arith`/`math` ops (constants are splatted); otherwise it is called per
lane (`func.call`, inlined by LLVM).  A one-op commutative combine (addf, addi,
maxnumf, minsi, ...) is also recognised as a `vector.reduction` kind.
"""
from __future__ import annotations

from typing import Sequence

from mlir import ir
from mlir.dialects import func

from tilec.passes.cpu.context import clone, combine_func, extract, from_elements, vec_len

# Single-op combine bodies that map to `vector.reduction` kinds.
REDUCTION_KINDS = {
    "arith.addf": "add", "arith.addi": "add", "arith.mulf": "mul", "arith.muli": "mul",
    "arith.maxnumf": "maxnumf", "arith.minnumf": "minnumf", "arith.maximumf": "maximumf",
    "arith.minimumf": "minimumf", "arith.maxsi": "maxsi", "arith.minsi": "minsi",
    "arith.maxui": "maxui", "arith.minui": "minui", "arith.andi": "and", "arith.ori": "or",
    "arith.xori": "xor",
}


class Combiner:
    """Applies a `combine` function to lists of scalars or of equal-length vectors."""

    def __init__(self, op: ir.Operation) -> None:
        self.fn = combine_func(op)
        self.name = ir.StringAttr(self.fn.attributes["sym_name"]).value
        block = self.fn.regions[0].blocks[0]
        self.args = list(block.arguments)
        ops = [v.operation for v in block.operations]
        self.body, self.ret = ops[:-1], ops[-1]
        self.results = list(ir.FunctionType(
            ir.TypeAttr(self.fn.attributes["function_type"]).value).results)
        self.vectorizable = all(
            o.name.startswith(("arith.", "math.")) and len(o.regions) == 0 for o in self.body)
        self.kind = self._recognise()

    def _recognise(self) -> str | None:
        """The `vector.reduction` kind of a one-op commutative combine, else None."""
        if len(self.args) != 2 or len(self.body) != 1:
            return None
        o = self.body[0]
        kind = REDUCTION_KINDS.get(o.name)
        if kind is None or len(o.operands) != 2 or len(o.results) != 1:
            return None
        if set(o.operands) != set(self.args) or o.operands[0] == o.operands[1]:
            return None
        if list(self.ret.operands) != [o.results[0]]:
            return None
        return kind

    def _call(self, args: list[ir.Value]) -> list[ir.Value]:
        return list(func.CallOp(self.results, self.name, args).results)

    def __call__(self, lhs: Sequence[ir.Value], rhs: Sequence[ir.Value]) -> list[ir.Value]:
        width = vec_len(lhs[0]) if isinstance(lhs[0].type, ir.VectorType) else None
        if width is not None and not self.vectorizable:
            return self._per_lane(lhs, rhs, width)
        if width is None and not self.vectorizable:
            return self._call(list(lhs) + list(rhs))
        vmap: dict[ir.Value, ir.Value] = dict(zip(self.args, list(lhs) + list(rhs)))

        def widen(t: ir.Type) -> ir.Type:
            return ir.VectorType.get([width], t) if width is not None else t

        for o in self.body:
            attrs: dict[str, ir.Attribute] = {}
            if o.name == "arith.constant" and width is not None:
                vt = ir.VectorType(widen(o.results[0].type))
                attrs["value"] = ir.DenseElementsAttr.get_splat(vt, o.attributes["value"])
            new = clone(o, [vmap[v] for v in o.operands], [widen(r.type) for r in o.results],
                        attrs)
            for old, nv in zip(o.results, new.results):
                vmap[old] = nv
        return [vmap[v] for v in self.ret.operands]

    def _per_lane(self, lhs: Sequence[ir.Value], rhs: Sequence[ir.Value],
                  width: int) -> list[ir.Value]:
        lanes: list[list[ir.Value]] = [[] for _ in self.results]
        for k in range(width):
            res = self._call([extract(v, k) for v in list(lhs) + list(rhs)])
            for j, r in enumerate(res):
                lanes[j].append(r)
        return [from_elements(vals) for vals in lanes]
