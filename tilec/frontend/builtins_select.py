"""Frontend rules for counting and selecting elements.

* `tl.histogram(input, num_bins, mask=None)`: a 1-D integer tile [M] ->
  int32 counts [num_bins]; bin b counts the elements equal to b (values outside
  [0, num_bins) are not counted, as in Triton; `mask=False` elements are not
  counted).  Built from existing ops: a [M, chunk] equality tile summed over M,
  for chunks of bins small enough that the equality tile stays within 2^13
  elements (larger i1 vectors overwhelm LLVM's CPU instruction selection), the
  chunks joined with `tile.restride` (tl.cat).
* `tl.gather(src, index, axis)`: a tile of the index's shape, `src` read at
  each element's coordinates with coordinate `axis` replaced by the index
  (Triton's semantics: same rank, the index as long as `src` in every other
  dimension, integer indices); one `tile.gather` (dialects/tile_elements.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tilec.dialects import tile
from tilec.dialects import tile_elements as el
from tilec.frontend.builtins import Rule, _constexpr_int, rule_table
from tilec.frontend.builtins_reduce import _add, combine_function, emit_reduce
from tilec.frontend.builtins_shape import cat
from tilec.frontend.semantic import TValue
from tilec.language import core as tl

if TYPE_CHECKING:
    from tilec.frontend.codegen import CodeGen

RULES: dict[str, Rule] = {}
rule = rule_table(RULES)

_MAX_ELEMENTS = 1 << 16
_MAX_CHUNK = 1 << 13


@rule("histogram")
def histogram(cg: CodeGen, node: Any, input: Any, num_bins: Any, mask: Any = None) -> TValue:
    if isinstance(input, tl.constexpr):
        input = input.value
    if not isinstance(input, TValue) or len(input.shape) != 1 or not input.dtype.is_int():
        cg.err(node, f"tl.histogram needs a 1-D tile of integers, got {cg.describe(input)}")
    n = _constexpr_int(cg, node, num_bins, "tl.histogram's num_bins")
    if n <= 0 or n & (n - 1):
        cg.err(node, f"tl.histogram's num_bins must be a positive power of two, got {n}")
    m = input.shape[0]
    if m > _MAX_ELEMENTS:
        cg.err(node, f"tl.histogram of {m} elements: at most {_MAX_ELEMENTS} are supported")
    if isinstance(mask, tl.constexpr):
        mask = mask.value
    x = cg.cast(input, tl.int32, node) if input.dtype.bits < 32 else input
    keep = None
    if mask is not None and mask is not True:
        keep = cg.to_value(mask, node)
        keep = cg.broadcast_to(cg.expand_dims(keep, 1), (m, 1), node)
    chunk = min(n, max(1, _MAX_CHUNK // m))
    combine = combine_function(cg, "sum", [tl.int32], _add)
    xs = cg.expand_dims(x, 1)
    parts = []
    for start in range(0, n, chunk):
        bins = TValue(tile.range_(start, start + chunk, loc=cg.loc, ip=cg.ip), tl.int32, (chunk,))
        bins = cg.cast(bins, x.dtype, node) if x.dtype != tl.int32 else bins
        eq = cg.compare("==", xs, cg.expand_dims(bins, 0), node)
        if keep is not None:
            eq = cg.binary("&", eq, keep, node)
        counts = cg.cast(eq, tl.int32, node)
        parts.append(emit_reduce(cg, node, [counts], 0, combine, False)[0])
    while len(parts) > 1:
        parts = [cat(cg, node, parts[i], parts[i + 1], True) for i in range(0, len(parts), 2)]
    return parts[0]


@rule("gather")
def gather(cg: CodeGen, node: Any, src: Any, index: Any, axis: Any) -> TValue:
    if isinstance(src, tl.constexpr):
        src = src.value
    if isinstance(index, tl.constexpr):
        index = index.value
    if not isinstance(src, TValue) or not src.shape or src.is_ptr:
        cg.err(node, f"tl.gather needs a tile of numbers to read from, got {cg.describe(src)}")
    if not isinstance(index, TValue) or index.is_ptr or not index.dtype.is_int() \
            or index.dtype.is_bool():
        cg.err(node, f"tl.gather's index must be a tile of integers, got {cg.describe(index)}")
    rank = len(src.shape)
    if len(index.shape) != rank:
        cg.err(node, f"tl.gather needs an index of the source's rank {rank}, got an index of "
               f"shape {list(index.shape)} for a source of shape {list(src.shape)}")
    a = _constexpr_int(cg, node, axis, "tl.gather's axis")
    a = a + rank if a < 0 else a
    if not 0 <= a < rank:
        cg.err(node, f"tl.gather: axis {axis} is out of range for a tile of rank {rank}")
    for d in range(rank):
        if d != a and index.shape[d] != src.shape[d]:
            cg.err(node, f"tl.gather: the index's dimension {d} ({index.shape[d]}) must equal the "
                   f"source's ({src.shape[d]}); only axis {a} may differ")
    idx = cg.cast(index, tl.int32, node) if index.dtype is not tl.int32 else index
    h = el.gather(src.handle, idx.handle, a, loc=cg.loc, ip=cg.ip)
    return TValue(h, src.elem, index.shape)


__all__ = ["RULES"]
