"""Unit-dimension chains of rank-3/4 tiles, canonicalized for `tile-layout`.

A `tile.expand_dims` gives its operand the slice `#tile.slice<a, P>` of its
result's layout P, so it moves no data.  A chain through 3-D
(`[N] -> [N, 1] -> [N, 1, 1]`: the index tiles of a 3-D/4-D
`tl.make_block_ptr`, which `tile-lower-descriptors` builds one expand_dims per
dimension) would need a slice of a slice for its first operand, and the
`#tile.slice` layout has one blocked parent (`passes/analysis/layouts.py`'s
`Distribution` and every GPU rule reading `sliced_dim` rely on that).  Two
steps keep such chains inside the two layout kinds:

* `fold_unit_dim_chains` (before grouping): an expand_dims or reshape with a
  result of rank >= 3 whose operand is itself an expand_dims or reshape result
  becomes one `tile.reshape` of the chain's first operand (both keep row-major
  order, so any chain of them is one reshape); the intermediate ops are erased
  once unused.  The frontend already writes `x[:, None, None]` as a reshape;
  a folded chain costs one exchange through workgroup memory of the unbroadcast
  index tile (N elements) instead of one per rank above 2.
* what no fold reaches (an expand_dims result changed by an elementwise op and
  expanded again) gets a blocked layout in `tile-layout._assign`, and the
  second expand_dims converts its operand to the slice it needs.

Why not a nested slice layout: a slice of a slice is one more kind of
distribution for every GPU lowering rule (about fifteen sites test
`sliced_dim`), while the reshape keeps the chain's cost at one small exchange
with the layouts that exist.  The fold runs after the axis analysis, so the
pointers built from the chain keep the contiguity and divisibility that the
expand_dims chain proves (the analysis has no rule for reshapes).

Nearest upstream analogue: MLIR's `tensor.expand_shape` folding of
consecutive reassociations (`ComposeExpandOfCollapseOp` and friends).
"""
from __future__ import annotations

from mlir import ir

from tilec.dialects import tile

_UNIT_DIM_OPS = ("tile.expand_dims", "tile.reshape")


def _rank(v: ir.Value) -> int:
    return len(v.type.shape) if isinstance(v.type, ir.RankedTensorType) else 0


def _defining(v: ir.Value) -> ir.Operation | None:
    owner = v.owner
    return owner.operation if isinstance(owner, (ir.OpView, ir.Operation)) else None


def fold_unit_dim_chains(ops: list[ir.Operation]) -> int:
    """Fold the chains described in the module docstring in `ops` (a pre-order
    walk of one function); return how many ops were replaced by a reshape."""
    dead: list[ir.Operation] = []     # replaced ops and the chains they came from
    folded = 0
    for op in ops:
        if op.name not in _UNIT_DIM_OPS or _rank(op.results[0]) < 3:
            continue
        first = _defining(op.operands[0])
        if first is None or first.name not in _UNIT_DIM_OPS:
            continue
        root = first.operands[0]
        chain = [first]
        while (d := _defining(root)) is not None and d.name in _UNIT_DIM_OPS:
            chain.append(d)
            root = d.operands[0]
        res = op.results[0]
        if tuple(root.type.shape) == tuple(res.type.shape):
            new = root
        else:
            new = tile.reshape(root, tuple(res.type.shape), loc=op.location,
                               ip=ir.InsertionPoint(op))
        res.replace_all_uses_with(new)
        folded += 1
        dead += [d for d in (op, *chain) if d not in dead]
    while dead:             # erase what lost its last use, users before operands
        keep = [d for d in dead if any(True for _ in d.results[0].uses)]
        for d in dead:
            if d not in keep:
                d.erase()
        if len(keep) == len(dead):
            break
        dead = keep
    return folded
