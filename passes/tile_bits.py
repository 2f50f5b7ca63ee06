"""Integer and float helpers that tile-level rewrites (tile-expand-fp8,
tile-dot-precision) use to build elementwise bit manipulation on a tile or a
scalar: constants are splats of the value's shape (with its layout encoding
when there is one), every op at the given location and insertion point.
"""
from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import arith


def like(t: ir.Type, elem: ir.Type) -> ir.Type:
    """`t` (a tile or a scalar type) with element type `elem`, encoding kept."""
    if isinstance(t, ir.RankedTensorType):
        rt = ir.RankedTensorType(t)
        return ir.RankedTensorType.get(list(rt.shape), elem, rt.encoding)
    return elem


class Bits:
    """Integer/float ops on values shaped like `shape_of` (tile or scalar)."""

    def __init__(self, shape_of: ir.Type, loc: ir.Location, ip: ir.InsertionPoint) -> None:
        self.t, self.at = shape_of, {"loc": loc, "ip": ip}
        self.i32 = like(shape_of, ir.IntegerType.get_signless(32))
        self.i1 = like(shape_of, ir.IntegerType.get_signless(1))
        self.f32 = like(shape_of, ir.F32Type.get())

    def c(self, v: int) -> ir.Value:
        v &= 0xFFFFFFFF
        e = ir.IntegerType.get_signless(32)
        attr = ir.IntegerAttr.get(e, v - (1 << 32) if v >= 1 << 31 else v)
        if isinstance(self.t, ir.RankedTensorType):
            attr = ir.DenseElementsAttr.get_splat(self.i32, attr)
        return arith.constant(self.i32, attr, **self.at)

    def bin(self, fn: Callable[..., ir.Value], a: ir.Value, b: ir.Value | int) -> ir.Value:
        return fn(a, self.c(b) if isinstance(b, int) else b, **self.at)

    def cmp(self, pred: arith.CmpIPredicate, a: ir.Value, b: ir.Value | int) -> ir.Value:
        return arith.cmpi(pred, a, self.c(b) if isinstance(b, int) else b, **self.at)

    def sel(self, c: ir.Value, a: ir.Value | int, b: ir.Value | int) -> ir.Value:
        return arith.select(c, self.c(a) if isinstance(a, int) else a,
                            self.c(b) if isinstance(b, int) else b, **self.at)
