"""Frontend rules for sorting: `tl.sort(x, dim=None, descending=False)` and
`tl.topk(x, k, dim=None)` (Triton's semantics), built from tile ops only.

Both are bitonic networks along one dimension of size n (a power of two) of a
1-D or 2-D tile.  A compare-and-exchange step at distance j pairs the element
at position p with the one at p ^ j: the partner tile is one `tile.restride`
(the dimension viewed as [n / 2j, 2, j], the middle coordinate mirrored), and
each element keeps its own value or takes its partner's by
`where((left > right) ^ descending_here, partner, x)`, which is Triton's
exchange rule (so NaNs and signed zeros land where Triton puts them).
Merges of blocks of size 2^i below the last alternate in direction with bit i
of the position; the last merge runs in the requested direction.

`tl.topk` returns the k largest elements of each row, largest first: blocks
of k are sorted (alternating directions), then log2(n / k) times adjacent
block pairs are replaced by their elementwise maximum (the top k of a 2k-long
bitonic run) and re-merged, which halves the dimension each time; the result
has size k along `dim`.

Because only `tile.restride`, comparisons and selects are emitted, sort and
topk need no lowering of their own on any target.  Nearest upstream analogue:
Triton's `sort_impl` in `triton/language/standard.py` (a hypercube reshape,
which tilec's rank limit rules out, hence the restride views).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tilec.dialects import tile
from tilec.frontend.builtins import Rule, _constexpr_int, minmax_builder, rule_table, where
from tilec.frontend.builtins_shape import _restride, _row_major
from tilec.frontend.semantic import TValue
from tilec.language import core as tl

if TYPE_CHECKING:
    from tilec.frontend.codegen import CodeGen

RULES: dict[str, Rule] = {}
rule = rule_table(RULES)
METHODS: dict[str, Rule] = {}


def _flag(cg: CodeGen, node: Any, v: Any, what: str) -> bool:
    if isinstance(v, tl.constexpr):
        v = v.value
    if isinstance(v, TValue):
        cg.err(node, f"{what} must be a compile-time constant (a tl.constexpr), "
               "but it is a runtime value")
    if not isinstance(v, (bool, int)):
        cg.err(node, f"{what} must be True or False, got {cg.describe(v)}")
    return bool(v)


def _operand(cg: CodeGen, node: Any, x: Any, dim: Any, fn: str) -> tuple[TValue, int]:
    if isinstance(x, tl.constexpr):
        x = x.value
    if not isinstance(x, TValue) or not x.shape:
        cg.err(node, f"{fn} needs a tile, got {cg.describe(x)}")
    if x.is_ptr:
        cg.err(node, f"{fn} needs a tile of numbers, got {cg.describe(x)}")
    rank = len(x.shape)
    if isinstance(dim, tl.constexpr):
        dim = dim.value
    d = rank - 1 if dim is None else _constexpr_int(cg, node, dim, f"{fn}'s dim")
    d = d + rank if d < 0 else d
    if not 0 <= d < rank:
        cg.err(node, f"{fn}: dim {dim} is out of range for a tile of rank {rank}")
    n = x.shape[d]
    if n & (n - 1):
        cg.err(node, f"{fn} needs a power-of-two size along dim {d}, got {n}")
    return x, d


class _Network:
    """Compare-and-exchange steps along dimension `d` of tiles of one type."""

    def __init__(self, cg: CodeGen, node: Any, x: TValue, d: int) -> None:
        self.cg, self.node, self.d, self.elem = cg, node, d, x.elem

    def position(self, shape: tuple[int, ...]) -> TValue:
        """Each element's index along `d`, broadcast to `shape` (int32)."""
        cg, n = self.cg, shape[self.d]
        pos = TValue(tile.range_(0, n, loc=cg.loc, ip=cg.ip), tl.int32, (n,))
        if len(shape) == 2:
            pos = cg.expand_dims(pos, 1 - self.d)
        return cg.broadcast_to(pos, shape, self.node)

    def bit_set(self, pos: TValue, bit: int) -> TValue:
        cg = self.cg
        masked = cg.binary("&", pos, bit, self.node)
        return cg.compare("!=", masked, 0, self.node)

    def partner(self, x: TValue, j: int) -> TValue:
        """The element at position p ^ j along `d`, for every element."""
        d, shape = self.d, x.shape
        rm = _row_major(shape)
        view = [*shape[:d], shape[d] // (2 * j), 2, j, *shape[d + 1:]]
        strides = [*rm[:d], 2 * j * rm[d], -j * rm[d], rm[d], *rm[d + 1:]]
        return _restride(self.cg, [x], shape, view, strides, j * rm[d])

    def exchange(self, x: TValue, j: int, desc: TValue | bool) -> TValue:
        cg, node = self.cg, self.node
        pos = self.position(x.shape)
        other = self.partner(x, j)
        right = self.bit_set(pos, j)  # this element is the right one of its pair
        left_gt = cg.compare(">", x, other, node)
        right_gt = cg.compare(">", other, x, node)
        cond = where(cg, node, right, right_gt, left_gt)
        if isinstance(desc, TValue):
            cond = cg.compare("!=", cond, desc, node)
        elif desc:
            cond = cg.compare("==", cond, cg.constant(0, tl.int1), node)
        return where(cg, node, cond, other, x)

    def merge(self, x: TValue, block: int, desc: bool | None) -> TValue:
        """Bitonic runs of length `block` along `d` sorted; direction `desc`, or
        alternating with the position's bit of `block` when `desc` is None."""
        order: TValue | bool = self.bit_set(self.position(x.shape), block) if desc is None \
            else desc
        j = block // 2
        while j >= 1:
            x = self.exchange(x, j, order)
            j //= 2
        return x

    def halve(self, x: TValue, block: int, largest: bool) -> TValue:
        """Adjacent blocks of `block` elements along `d` replaced by their
        elementwise maximum (minimum): the size along `d` halves."""
        d, shape = self.d, x.shape
        rm = _row_major(shape)
        out = tuple(s // 2 if i == d else s for i, s in enumerate(shape))
        view = [*shape[:d], shape[d] // (2 * block), block, *shape[d + 1:]]
        strides = [*rm[:d], 2 * block * rm[d], rm[d], *rm[d + 1:]]
        even = _restride(self.cg, [x], out, view, strides, 0)
        odd = _restride(self.cg, [x], out, view, strides, block * rm[d])
        return self.cg.arith_op(minmax_builder(x.dtype, largest), even, odd)


def _sort(cg: CodeGen, node: Any, x: TValue, d: int, k: int, desc: bool) -> TValue:
    net = _Network(cg, node, x, d)
    n = x.shape[d]
    block = 2
    while block <= k:
        x = net.merge(x, block, desc if block == n else None)
        block *= 2
    size = n
    while size > k:
        x = net.halve(x, k, desc)
        size //= 2
        x = net.merge(x, k, desc if size == k else None)
    return x


@rule("sort")
def sort(cg: CodeGen, node: Any, x: Any, dim: Any = None, descending: Any = False) -> TValue:
    v, d = _operand(cg, node, x, dim, "tl.sort")
    desc = _flag(cg, node, descending, "tl.sort's descending")
    return _sort(cg, node, v, d, v.shape[d], desc)


@rule("topk")
def topk(cg: CodeGen, node: Any, x: Any, k: Any, dim: Any = None,
         descending: Any = True) -> TValue:
    v, d = _operand(cg, node, x, dim, "tl.topk")
    kk = _constexpr_int(cg, node, k, "tl.topk's k")
    n = v.shape[d]
    if kk <= 0 or kk & (kk - 1) or kk > n:
        cg.err(node, f"tl.topk's k must be a power of two of at most {n} (the size along "
               f"dim {d}), got {kk}")
    desc = _flag(cg, node, descending, "tl.topk's descending")
    return _sort(cg, node, v, d, kk, desc)


METHODS.update({"sort": sort, "topk": topk})

__all__ = ["RULES", "METHODS"]
