"""Frontend rules for counting and selecting elements.

* `tl.histogram(input, num_bins, mask=None)`: a 1-D integer tile [M] ->
  int32 counts [num_bins]; bin b counts the elements equal to b (values outside
  [0, num_bins) are not counted, as in Triton; `mask=False` elements are not
  counted).  Built from existing ops: a [M, chunk] equality tile summed over M,
  for chunks of bins small enough that the equality tile stays within 2^13
  elements (larger i1 vectors overwhelm LLVM's CPU instruction selection); with
  several chunks, an `scf.for` over them, each chunk's counts selected into its
  row of a [num_bins / chunk, chunk] carry (the tiles of one chunk live at a
  time).
* `tl.gather(src, index, axis)`: a tile of the index's shape, `src` read at
  each element's coordinates with coordinate `axis` replaced by the index
  (Triton's semantics: same rank, the index as long as `src` in every other
  dimension, integer indices); one `tile.gather` (dialects/tile_elements.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mlir import ir
from mlir.dialects import arith, scf

from tilec.dialects import tile
from tilec.dialects import tile_elements as el
from tilec.frontend.builtins import Rule, _constexpr_int, rule_table, where
from tilec.frontend.builtins_reduce import _add, combine_function, emit_reduce, reshape
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

    def counts(start: TValue | int) -> TValue:
        """The [chunk] counts of the bins start .. start + chunk - 1."""
        bins = TValue(tile.range_(0, chunk, loc=cg.loc, ip=cg.ip), tl.int32, (chunk,))
        bins = cg.binary("+", bins, start, node) if not isinstance(start, int) or start else bins
        bins = cg.cast(bins, x.dtype, node) if x.dtype != tl.int32 else bins
        eq = cg.compare("==", xs, cg.expand_dims(bins, 0), node)
        if keep is not None:
            eq = cg.binary("&", eq, keep, node)
        return emit_reduce(cg, node, [cg.cast(eq, tl.int32, node)], 0, combine, False)[0]
    if chunk == n:
        return counts(0)
    # One chunk of bins per iteration of a loop, its counts put in row r of a
    # [n / chunk, chunk] carry: the kernel holds one chunk's tiles at a time
    # (unrolled, a 1024-bin histogram of 1024 values took 128 chunks' tiles,
    # megabytes of a CPU thread's stack).
    rows = n // chunk
    i32 = ir.IntegerType.get_signless(32)
    acc = cg.broadcast_to(cg.constant(0, tl.int32), (rows, chunk), node)
    lb, ub, one = (arith.ConstantOp(i32, v, loc=cg.loc, ip=cg.ip).result for v in (0, rows, 1))
    loop = scf.ForOp(lb, ub, one, [acc.handle], loc=cg.loc, ip=cg.ip)
    saved, cg.ip = cg.ip, ir.InsertionPoint(loop.body)
    try:
        r = TValue(loop.induction_variable, tl.int32)
        part = counts(cg.binary("*", r, chunk, node))
        row_ids = TValue(tile.range_(0, rows, loc=cg.loc, ip=cg.ip), tl.int32, (rows,))
        here = cg.broadcast_to(cg.expand_dims(cg.compare("==", row_ids, r, node), 1),
                               (rows, chunk), node)
        carry = TValue(loop.inner_iter_args[0], tl.int32, (rows, chunk))
        new = where(cg, node, here, cg.broadcast_to(cg.expand_dims(part, 0), (rows, chunk), node),
                    carry)
        scf.YieldOp([new.handle], loc=cg.loc, ip=cg.ip)
    finally:
        cg.ip = saved
    return reshape(cg, node, TValue(loop.results[0], tl.int32, (rows, chunk)), n)


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
