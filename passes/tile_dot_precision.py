"""`tile-dot-precision`: the `input_precision` of f32 `tile.dot`s as operand rounding.

Input: tile-level IR whose `tile.dot`s may carry `input_precision` ("ieee",
"tf32", "tf32x3"; tile-verify allows the last two on f32 operands only).
Output:
  * "ieee" or no attribute: unchanged (exact f32 products, the default);
  * "tf32": both operands rounded to tf32 (10 mantissa bits, to nearest with
    ties away from zero, as `cvt.rna.tf32.f32`; inf/NaN kept) in integer bit
    ops before the dot, which keeps its attribute: the products of tf32 values
    are exact in f32, so the FMA lowerings give tensor-core semantics, and a
    tensor-core lowering may run on the rounded operands unchanged;
  * "tf32x3": big = tf32(x), small = tf32(x - big) for both operands and three
    "tf32" dots accumulated in this order: small_a @ big_b, big_a @ small_b,
    big_a @ big_b (Triton's 3xTF32 split).
Every new op carries the dot's location.  A pass that maps tf32 dots to
tensor cores natively runs before this one.

Nearest upstream analogue: none in MLIR; Triton's F32DotTC decomposition.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from tilec.dialects import tile
from tilec.options import CompileOptions
from tilec.passes.tile_bits import Bits
from tilec.targets import Target

NAME = "tile-dot-precision"
PRECISIONS = ("ieee", "tf32", "tf32x3")
_P = arith.CmpIPredicate


def round_tf32(x: ir.Value, b: Bits) -> ir.Value:
    """`x` (f32) rounded to tf32, to nearest with ties away from zero."""
    bits = arith.bitcast(b.i32, x, **b.at)
    rounded = b.bin(arith.andi, b.bin(arith.addi, bits, 0x1000), 0xFFFFE000)
    special = b.cmp(_P.eq, b.bin(arith.andi, bits, 0x7F800000), 0x7F800000)
    return arith.bitcast(b.f32, b.sel(special, bits, rounded), **b.at)


def _precision(op: ir.Operation) -> str:
    if "input_precision" not in op.attributes:
        return "ieee"
    return ir.StringAttr(op.attributes["input_precision"]).value


def _walk(op: ir.Operation, out: list[ir.Operation]) -> None:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                if inner.operation.name == "tile.dot" and \
                        _precision(inner.operation) in ("tf32", "tf32x3"):
                    out.append(inner.operation)
                _walk(inner.operation, out)


def _split(op: ir.Operation) -> None:
    ip, loc = ir.InsertionPoint(op), op.location
    a, b, acc = op.operands
    at = {"loc": loc, "ip": ip}
    ba, bb = Bits(a.type, loc, ip), Bits(b.type, loc, ip)
    big_a, big_b = round_tf32(a, ba), round_tf32(b, bb)
    tf32 = ir.StringAttr.get("tf32")
    if _precision(op) == "tf32":
        new = tile.dot(big_a, big_b, acc, **at)
    else:
        small_a = round_tf32(arith.subf(a, big_a, **at), ba)
        small_b = round_tf32(arith.subf(b, big_b, **at), bb)
        new = acc
        for x, y in ((small_a, big_b), (big_a, small_b)):
            new = tile.dot(x, y, new, **at)
            new.owner.attributes["input_precision"] = tf32
        new = tile.dot(big_a, big_b, new, **at)
    new.owner.attributes["input_precision"] = tf32
    op.results[0].replace_all_uses_with(new)
    op.erase()


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    with module.context:
        dots: list[ir.Operation] = []
        _walk(module.operation, dots)
        for op in dots:
            _split(op)
