"""The axis-info lattice: what is known about one value (`AxisInfo`), the
analysis result (`AxisInfoMap`), and the arithmetic the transfer rules share.
See axis_info.py for what the three components mean."""
from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir

from tilec.dialects import tile

MAX_DIVISIBILITY = 1 << 16


@dataclass(frozen=True)
class AxisInfo:
    contiguity: tuple[int, ...]
    divisibility: tuple[int, ...]
    constancy: tuple[int, ...]

    @property
    def rank(self) -> int:
        return len(self.contiguity)


def pow2_divisor(v: int) -> int:
    """The largest power of two dividing `v` (`MAX_DIVISIBILITY` for 0)."""
    if v == 0:
        return MAX_DIVISIBILITY
    return min(v & -v, MAX_DIVISIBILITY)


def shape(t: ir.Type) -> tuple[int, ...]:
    return tuple(t.shape) if isinstance(t, ir.RankedTensorType) else ()


def scalar_type(t: ir.Type) -> ir.Type:
    return t.element_type if isinstance(t, ir.RankedTensorType) else t


def type_bytes(t: ir.Type) -> int:
    """Storage size of a scalar element type in bytes (i1 counts as 1)."""
    if isinstance(t, (ir.IntegerType, ir.FloatType)):
        return max(1, t.width // 8)
    if tile.is_ptr(t):
        return 8
    raise ValueError(f"no byte size for {t}")


def pointee_bytes(t: ir.Type) -> int | None:
    """Element size of `!tile.ptr<T>` (or a tile of them), None for other types."""
    s = scalar_type(t)
    return type_bytes(tile.pointee(s)) if tile.is_ptr(s) else None


def conservative(t: ir.Type) -> AxisInfo:
    """What is known about a value of type `t` without looking at its producer."""
    rank = max(len(shape(t)), 1)
    div = pointee_bytes(t) or 1
    return AxisInfo((1,) * rank, (div,) * rank, (1,) * rank)


class AxisInfoMap:
    """The analysis result: `get(value)` never fails (unknown -> conservative)."""

    def __init__(self) -> None:
        self._info: dict[ir.Value, AxisInfo] = {}

    def get(self, value: ir.Value) -> AxisInfo:
        info = self._info.get(value)
        return info if info is not None else conservative(value.type)

    def set(self, value: ir.Value, info: AxisInfo) -> None:
        self._info[value] = info

    def __contains__(self, value: ir.Value) -> bool:
        return value in self._info

    def __len__(self) -> int:
        return len(self._info)


def restrict_div(div: int, contig: int, new_contig: int, unit: int) -> int:
    """Divisibility of run starts after runs of `contig` are cut to `new_contig`:
    the new starts are old starts plus multiples of new_contig * unit."""
    if new_contig >= contig:
        return div
    return math.gcd(div, new_contig * unit)


def every_div(info: AxisInfo, unit: int) -> int:
    """A power of two dividing every element (not only run starts)."""
    return min(restrict_div(v, c, 1, unit) for v, c in zip(info.divisibility, info.contiguity))


def const_int(value: ir.Value) -> int | None:
    """The integer a scalar or splat-tile constant holds, if `value` is one."""
    owner = value.owner
    if not isinstance(owner, ir.OpView) and not isinstance(owner, ir.Operation):
        return None
    op = owner.operation if isinstance(owner, ir.OpView) else owner
    if op.name != "arith.constant":
        return None
    attr = op.attributes["value"]
    if isinstance(attr, ir.IntegerAttr):
        return int(attr.value)
    if isinstance(attr, ir.DenseIntElementsAttr) and attr.is_splat:
        return int(attr.get_splat_value().value)
    return None


def meet(x: AxisInfo, y: AxisInfo, unit: int) -> AxisInfo:
    """What holds for a value that is either `x` or `y` (`unit`: bytes per
    element for pointers, 1 for integers)."""
    contig, div = [], []
    for d in range(x.rank):
        c = math.gcd(x.contiguity[d], y.contiguity[d])
        contig.append(c)
        div.append(math.gcd(restrict_div(x.divisibility[d], x.contiguity[d], c, unit),
                            restrict_div(y.divisibility[d], y.contiguity[d], c, unit)))
    const = tuple(math.gcd(p, q) for p, q in zip(x.constancy, y.constancy))
    return AxisInfo(tuple(contig), tuple(div), const)

