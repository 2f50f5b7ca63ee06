"""Value ranges of i32 offset tiles and the split of a pointer tile into a
uniform base and a bounded per-lane offset (for targets/amd/buffer_ops.py).

`lane_range(v)` is the closed interval [lo, hi] every element of the i32
tile-level value `v` lies in, computed structurally from its producers with
mathematical (unbounded) integers; a step whose exact result could leave the
i32 range (so the program's i32 arithmetic might wrap) gives None, as does any
producer not listed (block arguments, loads, runtime scalars).

`split_pointer(ptr)` writes a tile of pointers as

    ptr[i] = base + uniform + lane[i]          (in elements of the pointee)

where `base` is a scalar pointer (uniform over the program), `uniform` a list
of scalar i32 offsets and `lane` a list of i32 offset tiles, and proves that
this is the same address the program computes: each `tensor.splat(u) + r` the
split takes apart has `0 <= r < 2^k` and u divisible by 2^k (axis info), so the
program's i32 sum u + r cannot wrap.  It gives the range of sum(lane) too.

Nearest upstream analogue: `mlir::dataflow::IntegerRangeAnalysis` (here only
over the ops offset arithmetic uses); Triton's AMD ConvertToBufferOps
(non-negative 32-bit offsets from a scalar base).
"""
from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from tilec.passes.analysis.axis_lattice import AxisInfoMap

I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1
Range = tuple[int, int]
_SAME = ("tile.broadcast", "tile.expand_dims", "tile.reshape", "tile.convert_layout",
         "tile.trans")
_MAX_DEPTH = 24


def _is_i32(t: ir.Type) -> bool:
    et = t.element_type if isinstance(t, ir.RankedTensorType) else t
    return isinstance(et, ir.IntegerType) and ir.IntegerType(et).width == 32


def _producer(v: ir.Value) -> ir.Operation | None:
    """The op defining `v` (None for a block argument)."""
    owner = v.owner
    return None if isinstance(owner, ir.Block) else owner.operation


def _fits(r: Range) -> Range | None:
    return r if I32_MIN <= r[0] <= r[1] <= I32_MAX else None


def _const(v: ir.Value) -> Range | None:
    a = v.owner.attributes["value"]
    if isinstance(a, ir.IntegerAttr):
        x = ir.IntegerAttr(a).value
        return x, x
    if isinstance(a, ir.DenseIntElementsAttr):
        d = ir.DenseIntElementsAttr(a)
        vals = [d[0]] if d.is_splat else [d[i] for i in range(len(d))]
        return min(vals), max(vals)
    return None


def lane_range(v: ir.Value, depth: int = 0) -> Range | None:
    """[lo, hi] of every element of the i32 value `v` (see the module docstring)."""
    op = _producer(v)
    if depth > _MAX_DEPTH or not _is_i32(v.type) or op is None:
        return None
    name = op.name

    def sub(i: int) -> Range | None:
        return lane_range(op.operands[i], depth + 1)

    if name == "arith.constant":
        return _const(v)
    if name == "tile.range":
        start = ir.IntegerAttr(op.attributes["start"]).value
        end = ir.IntegerAttr(op.attributes["end"]).value
        return (start, end - 1) if end > start else None
    if name == "tensor.splat" or name in _SAME:
        return sub(0)
    if name in ("arith.addi", "arith.subi", "arith.muli", "arith.minsi", "arith.maxsi"):
        a, b = sub(0), sub(1)
        if a is None or b is None:
            return None
        if name == "arith.addi":
            return _fits((a[0] + b[0], a[1] + b[1]))
        if name == "arith.subi":
            return _fits((a[0] - b[1], a[1] - b[0]))
        if name == "arith.minsi":
            return min(a[0], b[0]), min(a[1], b[1])
        if name == "arith.maxsi":
            return max(a[0], b[0]), max(a[1], b[1])
        p = [x * y for x in a for y in b]
        return _fits((min(p), max(p)))
    if name in ("arith.remsi", "arith.remui", "arith.andi", "arith.divsi", "arith.divui",
                "arith.shli", "arith.shrsi", "arith.shrui"):
        a = sub(0)
        if a is None or a[0] < 0:
            return None
        b = sub(1)
        if name in ("arith.remsi", "arith.remui"):
            # The remainder of a non-negative dividend lies in [0, dividend]
            # whatever the divisor; a positive constant divisor bounds it more.
            return 0, a[1] if b is None or b[0] <= 0 else min(a[1], b[1] - 1)
        if b is None or b[0] < 0:
            return None
        if name == "arith.andi":
            return 0, min(a[1], b[1])
        if name in ("arith.divsi", "arith.divui"):
            return (a[0] // b[1], a[1] // b[0]) if b[0] > 0 else None
        if b[1] >= 31:
            return None
        if name == "arith.shli":
            return _fits((a[0] << b[0], a[1] << b[1]))
        return a[0] >> b[1], a[1] >> b[0]
    return None


@dataclass
class SplitPointer:
    """ptr = base + sum(uniform) + sum(lane), `lane_range` its lanes' range."""
    base: ir.Value
    uniform: list[ir.Value]
    lane: list[ir.Value]
    lane_range: Range


def _split_offset(off: ir.Value, axis: AxisInfoMap) -> tuple[list[ir.Value], list[ir.Value],
                                                               Range] | None:
    """An i32 offset (tile or scalar) as uniform scalars + bounded lane tiles."""
    if not _is_i32(off.type):
        return None
    if not isinstance(off.type, ir.RankedTensorType):
        return [off], [], (0, 0)
    op = _producer(off)
    if op is not None and op.name == "tensor.splat":
        return [op.operands[0]], [], (0, 0)
    if op is not None and op.name == "arith.addi":
        for s, r in ((0, 1), (1, 0)):
            sp = _producer(op.operands[s])
            if sp is None or sp.name != "tensor.splat":
                continue
            rr = lane_range(op.operands[r])
            if rr is None or rr[0] < 0:
                continue
            u = sp.operands[0]
            # u divisible by 2^k and 0 <= r < 2^k: u + r never wraps in i32.
            if rr[1] < axis.get(u).divisibility[0]:
                return [u], [op.operands[r]], rr
    rr = lane_range(off)
    return ([], [off], rr) if rr is not None else None


def split_pointer(ptr: ir.Value, axis: AxisInfoMap, depth: int = 0) -> SplitPointer | None:
    """The split of the tile-level pointer tile `ptr` (module docstring), or None."""
    op = _producer(ptr)
    if depth > _MAX_DEPTH or op is None:
        return None
    if op.name == "tensor.splat":
        return SplitPointer(op.operands[0], [], [], (0, 0))
    if op.name != "tile.addptr" or not isinstance(op.operands[0].type, ir.RankedTensorType):
        return None
    inner = split_pointer(op.operands[0], axis, depth + 1)
    parts = _split_offset(op.operands[1], axis)
    if inner is None or parts is None:
        return None
    uniform, lane, r = parts
    total = _fits((inner.lane_range[0] + r[0], inner.lane_range[1] + r[1]))
    if total is None:
        return None
    return SplitPointer(inner.base, inner.uniform + uniform, inner.lane + lane, total)
