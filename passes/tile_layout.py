"""`tile-layout`: give every tile a distribution over threads.

Input: a `builtin.module` of tile-level kernels (`func.func`, tiles are ranked
tensors without encodings, 1-D to 4-D, static power-of-two shapes; chains of
expand_dims/reshape through 3-D are folded first: `tile_layout_chains`).
Output: the same IR where every tensor type carries a `#tile.blocked` or
`#tile.slice` encoding, such that
  * operands and results of every elementwise op, `tile.addptr`, `tile.load`,
    `tile.store`, `tile.broadcast` and the carried values of `scf.for`/`scf.if`
    have one and the same encoding;
  * the operand of `tile.expand_dims {axis = a}` has `#tile.slice<a, P>` where P
    is the encoding of its result (so expand_dims and broadcast move no data);
  * the operands of `tile.reduce`/`tile.scan` share one encoding (scan results
    too); a `tile.reduce {axis = a}` whose operands have encoding P gives its
    tile results `#tile.slice<a, P>` (scalar results need none);
  * `tile.atomic_rmw`/`tile.atomic_cas` operands and results share one
    encoding, like loads and stores (the lowering goes element by element);
  * `tile.reshape`/`tile.trans`/`tile.restride`/`tile.gather` results get their own encoding (the lowering
    goes through workgroup memory); so do `tile.dot`'s operands, while its
    accumulator and result share one, which is the accumulator fragment layout
    of the instruction family `tile-accelerate-dot` chose (`tile.mma`:
    `layouts.wgmma_accumulator_layout` / `layouts.mma_accumulator_layout`; it
    then wins over the group's memory proposals);
  * where one value would need two encodings, an explicit `tile.convert_layout`
    is inserted (before an `expand_dims` whose source was already given a
    different slice, e.g. a reduce result expanded along another axis; after a
    `tile.reduce` of a 3-D/4-D tile whose result group is also an expand_dims
    result or the operand of another reduce to a tile, which would need a slice
    of a slice: that group gets a blocked layout of its own).  A 1-D index tile computed by a short chain of cheap ops
    (range, splat, constant, add/sub/mul, ext) and expanded along two axes is
    recomputed per axis instead, as Triton's rematerialization does.

Choice of layouts (Triton's "coalesce" idea, done once per group of values that
must share an encoding): each load/store proposes the blocked layout whose
per-thread chunk along the pointer's most contiguous dimension is as wide as a
single `target.vector_bytes` access that the axis info proves contiguous and
aligned (fp32 -> 4, fp16 -> 8 for 16-byte accesses); lanes = `target.warp_size`
and warps = `num_warps` are spread over the tile, fastest dimension first.  The
widest proposal wins (a `tile.inline_asm` with pack > 1 requires `pack`
elements per thread along the last dimension: its proposal always wins).  Groups without memory ops get
a row-major default.

Nearest upstream analogue: none in MLIR; Triton's `ConvertTritonToTritonGPU`
plus `TritonGPUCoalesce` and the forward part of `RemoveLayoutConversions`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator

from mlir import ir

from tilec.dialects import tile
from tilec.dialects.tile import Blocked, Layout, Slice
from tilec.errors import CompilerBugError, TilecError
from tilec.passes.analysis import axis_info, matrix_tiling
from tilec.passes.analysis.layouts import log2, make_blocked
from tilec.passes.tile_layout_chains import fold_unit_dim_chains
from tilec.options import CompileOptions
from tilec.passes.tile_layout_dots import (
    dot_result_layout, kmajor_rows, kmajor_trans_layouts, transposed_dot_layout,
)
from tilec.targets import Feature, Target


def _shape(t: ir.Type) -> tuple[int, ...]:
    return tuple(t.shape) if isinstance(t, ir.RankedTensorType) else ()


def _is_tile(v: ir.Value) -> bool:
    return isinstance(v.type, ir.RankedTensorType)


def _ops(block: ir.Block) -> Iterator[ir.Operation]:
    """Pre-order walk of the ops in `block` and its nested regions."""
    for op in block.operations:
        op = op.operation
        yield op
        for region in op.regions:
            for b in region.blocks:
                yield from _ops(b)


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[ir.Value, ir.Value] = {}

    def add(self, v: ir.Value) -> None:
        self.parent.setdefault(v, v)

    def find(self, v: ir.Value) -> ir.Value:
        self.add(v)
        root = v
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[v] != root:
            self.parent[v], v = root, self.parent[v]
        return root

    def union(self, a: ir.Value, b: ir.Value) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


@dataclass
class _Proposal:
    layout: Blocked
    access_bytes: int


_REQUIRED = 1 << 20   # the access size a proposal that must win claims


def propose(ptr: ir.Value, mask: ir.Value | None, info: axis_info.AxisInfoMap,
            target: Target, num_warps: int) -> _Proposal:
    """The layout a load/store through the pointer tile `ptr` would like."""
    shape = _shape(ptr.type)
    pinfo = info.get(ptr)
    eb = axis_info.pointee_bytes(ptr.type) or 1
    rank = len(shape)
    # Most contiguous dimension first; ties keep row-major order.
    order = tuple(sorted(range(rank), key=lambda d: (-pinfo.contiguity[d], -d)))
    f = order[0]
    numel = 1
    for s in shape:
        numel *= s
    threads = target.warp_size * num_warps
    vec = min(pinfo.contiguity[f], max(1, pinfo.divisibility[f] // eb),
              max(1, target.vector_bytes // eb), max(1, numel // threads), shape[f])
    if mask is not None and _is_tile(mask):
        vec = min(vec, info.get(mask).constancy[f])
    layout = make_blocked(shape, order, vec, target.warp_size, num_warps)
    return _Proposal(layout, vec * eb)


def default_layout(shape: tuple[int, ...], target: Target, num_warps: int) -> Blocked:
    numel = 1
    for s in shape:
        numel *= s
    vec = max(1, min(4, numel // (target.warp_size * num_warps)))
    order = tuple(reversed(range(len(shape))))
    return make_blocked(shape, order, vec, target.warp_size, num_warps)


def _stores_in_place(layout: Layout, value: ir.Value, target: Target,
                     dot: ir.Operation) -> bool:
    """A dot result in `layout` is stored without a conversion when each thread
    holds at least 4 elements and 8 bytes contiguous along the last dimension
    (AMD's MFMA/WMMA accumulators with 4 columns per lane), or where the target
    has `Feature.DIRECT_ACC_STORES`, 4 bytes and the exchange would outgrow
    the dot's operand tiles (their bytes as loaded: fp8 ones for `tile.mma_fp8`
    / `tile.fp8_decoded`): the exchange would set the kernel's LDS bytes;
    mma.sync/wgmma's 2 columns are converted (through shared memory) to wider
    stores."""
    if not isinstance(layout, Blocked) or layout.order[0] != layout.rank - 1:
        return False
    eb = axis_info.type_bytes(tile.element_type(value.type))
    if layout.per_thread[-1] >= 4 and layout.per_thread[-1] * eb >= 8:
        return True
    if not target.has(Feature.DIRECT_ACC_STORES) or layout.per_thread[-1] * eb < 4:
        return False
    a, b = (o.type for o in list(dot.operands)[:2])
    fp8 = "tile.mma_fp8" in dot.attributes or "tile.fp8_decoded" in dot.attributes
    operand_bytes = (math.prod(a.shape) + math.prod(b.shape)) * (
        1 if fp8 else axis_info.type_bytes(tile.element_type(a)))
    return math.prod(value.type.shape) * eb > operand_bytes


class _LayoutFunc:
    def __init__(self, func: ir.Operation, target: Target, num_warps: int) -> None:
        self.func = func
        self.target = target
        self.num_warps = num_warps
        self.uf = _UnionFind()
        self.expands: list[ir.Operation] = []
        self.reduces: list[ir.Operation] = []
        self.anchors: dict[ir.Value, list[_Proposal]] = {}
        self.forced: dict[ir.Value, Layout] = {}  # group root -> layout a dot requires
        self.members: dict[ir.Value, list[ir.Value]] = {}
        self.stores: list[ir.Operation] = []
        self.converted_stores: list[ir.Operation] = []
        self.converted_reduces: list[ir.Operation] = []
        self.transposes: list[ir.Operation] = []
        self.transposed_b: set[ir.Value] = set()   # B operands of transposed products

    def run(self) -> None:
        info = axis_info.analyze(self.func)
        entry = self.func.regions[0].blocks[0]
        for arg in entry.arguments:
            if _is_tile(arg):
                raise TilecError("kernel arguments cannot be tiles")
        fold_unit_dim_chains(list(_ops(entry)))
        _rematerialize_index_chains(list(_ops(entry)))
        ops = list(_ops(entry))
        for op in ops:
            self._collect(op)
        forced: dict[ir.Value, Layout] = {}
        dots: dict[ir.Value, ir.Operation] = {}
        for op in ops:
            if op.name == "tile.dot":
                layout = dot_result_layout(op, self.target, self.num_warps,
                                           forced.get(self.uf.find(op.operands[0])))
                if layout is not None:
                    forced[self.uf.find(op.results[0])] = layout
                    dots[self.uf.find(op.results[0])] = op
                if transposed_dot_layout(layout, op):
                    self.transposed_b.add(op.operands[1])
        for op in self.stores:
            value, ptr = op.operands[1], op.operands[0]
            root = self.uf.find(value)
            if root in forced and root != self.uf.find(ptr) \
                    and not _stores_in_place(forced[root], value, self.target, dots[root]):
                self.converted_stores.append(op)
            else:
                self.uf.union(ptr, value)
        for op in ops:
            if op.name in ("tile.load", "tile.store"):
                ptr = op.operands[0]
                if not _is_tile(ptr):
                    continue
                has_mask = _segment(op, 2 if op.name == "tile.store" else 1)
                mask = op.operands[2 if op.name == "tile.store" else 1] if has_mask else None
                self.anchors.setdefault(self.uf.find(ptr), []).append(
                    propose(ptr, mask, info, self.target, self.num_warps))
            elif op.name == "tile.inline_asm" and op.results and _is_tile(op.results[0]):
                # pack > 1: each call takes `pack` consecutive elements of a thread.
                pack = int(ir.IntegerAttr(op.attributes["pack"]).value)
                shape = _shape(op.results[0].type)
                if pack > 1:
                    eb = axis_info.type_bytes(ir.RankedTensorType(op.results[0].type)
                                              .element_type)
                    layout = make_blocked(shape, tuple(reversed(range(len(shape)))), pack,
                                          self.target.warp_size, self.num_warps)
                    # A requirement, not a preference: it outbids every access.
                    self.anchors.setdefault(self.uf.find(op.results[0]), []).append(
                        _Proposal(layout, _REQUIRED + pack * eb))
        for root, layout in forced.items():
            self.forced[self.uf.find(root)] = layout
        for v in list(self.uf.parent):
            self.members.setdefault(self.uf.find(v), []).append(v)
        layouts = self._assign()
        self._rewrite(layouts)

    # -- grouping
    def _collect(self, op: ir.Operation) -> None:
        name = op.name
        for r in op.results:
            if _is_tile(r):
                self.uf.add(r)
        if name == "tile.expand_dims":
            self.uf.add(op.operands[0])
            self.expands.append(op)
        elif name == "scf.for":
            body = op.regions[0].blocks[0]
            yield_op = _terminator(body)
            for i, r in enumerate(op.results):
                if _is_tile(r):
                    self.uf.union(r, op.operands[3 + i])
                    self.uf.union(r, body.arguments[1 + i])
                    self.uf.union(r, yield_op.operands[i])
        elif name == "scf.if":
            for region in op.regions:
                for b in region.blocks:
                    y = _terminator(b)
                    for i, r in enumerate(op.results):
                        if _is_tile(r):
                            self.uf.union(r, y.operands[i])
        elif name == "tile.reduce":
            srcs = [v for v in op.operands if _is_tile(v)]
            for v in srcs[1:]:
                self.uf.union(srcs[0], v)
            tiles = [r for r in op.results if _is_tile(r)]
            for r in tiles[1:]:
                self.uf.union(tiles[0], r)
            if srcs and tiles:
                self.reduces.append(op)
        elif name == "tile.dot":
            # The operands go through workgroup memory (any encoding will do);
            # the accumulator and the result are the same fragments.
            self.uf.add(op.operands[0])
            self.uf.add(op.operands[1])
            self.uf.union(op.operands[2], op.results[0])
        elif name == "tile.store" and _is_tile(op.operands[0]):
            # The value joins the pointer's group in `run`, unless a dot forces
            # its group's layout (the accumulator): then it is converted.
            tiles = [v for v in op.operands if _is_tile(v)]
            for v in tiles:
                self.uf.add(v)
            if _segment(op, 2):
                self.uf.union(op.operands[0], op.operands[2])
            self.stores.append(op)
        elif name in ("scf.yield", "func.return", "tile.convert_layout", "tile.reshape",
                      "tile.trans", "tile.restride", "tile.gather", "tile.print"):
            if name == "tile.trans":
                self.transposes.append(op)
            for v in op.operands:
                if _is_tile(v):
                    self.uf.add(v)
        else:
            tiles = [v for v in list(op.operands) + list(op.results) if _is_tile(v)]
            for v in tiles[1:]:
                self.uf.union(tiles[0], v)

    # -- choice
    def _assign(self) -> dict[ir.Value, Layout]:
        layouts: dict[ir.Value, Layout] = {}
        parents: dict[ir.Value, list[ir.Operation]] = {}
        for e in self.expands:
            parents.setdefault(self.uf.find(e.operands[0]), []).append(e)
        reduced: dict[ir.Value, ir.Operation] = {}
        for r in self.reduces:
            reduced.setdefault(self.uf.find(_tile_results(r)[0]), r)
        # A reduce result that is also an expand_dims result, or the operand of
        # a reduce with tile results (3-D and 4-D tiles), would need a slice of
        # a slice: such a group gets a blocked layout of its own, and each
        # reduce into it converts its slice-layout results (`_rewrite`).
        expanded = {self.uf.find(e.results[0]) for e in self.expands}
        need_blocked = expanded | {self.uf.find(r.operands[0]) for r in self.reduces}
        roots = sorted(self.members, key=lambda r: -len(_shape(r.type)))
        for root in roots:
            red = reduced.get(root)
            if red is not None and root in need_blocked:
                self.converted_reduces += [r for r in self.reduces
                                           if self.uf.find(_tile_results(r)[0]) == root]
            elif red is not None:
                # The reduction leaves its results in the slice of its operand's
                # layout; an expand_dims that wants another slice converts.
                layouts[root] = Slice(_axis(red), _blocked(layouts[self.uf.find(red.operands[0])]))
                continue
            # An expand_dims result expanded again after other ops (unfolded
            # chains: tile_layout_chains) gets a blocked layout; the expand converts.
            edges = parents.get(root) if red is None and root not in expanded else None
            if edges:
                first = edges[0]
                parent = layouts[self.uf.find(first.results[0])]
                if not isinstance(parent, Blocked):
                    raise CompilerBugError(f"tile-layout: an expand_dims result with the "
                                           f"layout {parent} (a blocked one was expected)")
                layouts[root] = Slice(_axis(first), parent)
                continue
            shape = tuple(max(s) for s in zip(*(_shape(v.type) for v in self.members[root])))
            if root in self.forced:
                layouts[root] = self.forced[root]
                continue
            props = self.anchors.get(root)
            if props:
                best = max(props, key=lambda p: p.access_bytes)
                layouts[root] = best.layout
                if any(v in self.transposed_b for v in self.members[root]):
                    layouts[root] = kmajor_rows(best.layout, shape)
            else:
                layouts[root] = default_layout(shape, self.target, self.num_warps)
        kmajor_trans_layouts(self.transposes, layouts, self.uf.find, self.members,
                             self.transposed_b)
        return layouts

    # -- rewriting
    def _rewrite(self, layouts: dict[ir.Value, Layout]) -> None:
        for root, members in self.members.items():
            layout = layouts[root]
            for v in members:
                v.set_type(tile.with_layout(v.type, layout))
                owner = v.owner
                if isinstance(owner, ir.OpView) or isinstance(owner, ir.Operation):
                    op = owner.operation
                    if op.name == "arith.constant":
                        _retype_constant(op, v.type)
        for r in self.converted_reduces:
            parent = _blocked(tile.layout_of(r.operands[0].type))
            for res in _tile_results(r):
                group_type = res.type
                res.set_type(tile.with_layout(group_type, Slice(_axis(r), parent)))
                with ir.InsertionPoint.after(r):
                    cv = tile.convert_layout(res, group_type, loc=r.location)
                res.replace_all_uses_except(cv, cv.owner.operation)
        for e in self.expands:
            src = e.operands[0]
            want = Slice(_axis(e), _blocked(tile.layout_of(e.results[0].type)))
            if tile.layout_of(src.type) != want:
                with ir.InsertionPoint(e):
                    cv = tile.convert_layout(src, tile.with_layout(src.type, want), loc=e.location)
                e.operands[0] = cv
        for st in self.converted_stores:
            value = st.operands[1]
            store_layout = tile.layout_of(st.operands[0].type)
            if store_layout is not None and tile.layout_of(value.type) != store_layout:
                with ir.InsertionPoint(st):
                    st.operands[1] = tile.convert_layout(
                        value, tile.with_layout(value.type, store_layout), loc=st.location)


_CHEAP_OPS = frozenset({"tile.range", "tensor.splat", "arith.constant", "arith.addi",
                        "arith.subi", "arith.muli", "arith.extsi", "arith.extui"})
_MAX_REMAT_OPS = 8


def _cheap_chain(v: ir.Value, budget: list[int]) -> bool:
    """True if `v` is computed from scalars by a few cheap pure tile ops."""
    if not _is_tile(v):
        return True
    owner = v.owner
    if not isinstance(owner, (ir.OpView, ir.Operation)):
        return False
    op = owner.operation
    budget[0] -= 1
    if op.name not in _CHEAP_OPS or budget[0] < 0:
        return False
    return all(_cheap_chain(o, budget) for o in op.operands)


def _clone_chain(v: ir.Value, ip: ir.InsertionPoint) -> ir.Value:
    if not _is_tile(v):
        return v
    op = v.owner.operation
    operands = [_clone_chain(o, ip) for o in op.operands]
    new = op.clone(ip=ip)
    for i, o in enumerate(operands):
        new.operands[i] = o
    return new.results[0]


def _rematerialize_index_chains(ops: list[ir.Operation]) -> None:
    """A 1-D index tile expanded along two different axes (`r[:, None]` and
    `r[None, :]`) would need two slice layouts: recompute it for each extra
    axis instead of converting layouts, when it is a short chain of cheap ops."""
    by_source: dict[ir.Value, dict[int, list[ir.Operation]]] = {}
    for op in ops:
        if op.name == "tile.expand_dims":
            by_source.setdefault(op.operands[0], {}).setdefault(_axis(op), []).append(op)
    for src, groups in by_source.items():
        if len(groups) < 2 or not _cheap_chain(src, [_MAX_REMAT_OPS]):
            continue
        for expands in list(groups.values())[1:]:
            ip = ir.InsertionPoint(expands[0])
            clone = _clone_chain(src, ip)
            for e in expands:
                e.operands[0] = clone


def _tile_results(op: ir.Operation) -> list[ir.Value]:
    return [r for r in op.results if _is_tile(r)]


def _blocked(layout: Layout | None) -> Blocked:
    if not isinstance(layout, Blocked):
        raise CompilerBugError(f"expected a blocked layout, got {layout}")
    return layout


def _axis(op: ir.Operation) -> int:
    return int(ir.IntegerAttr(op.attributes["axis"]).value)


def _segment(op: ir.Operation, index: int) -> bool:
    seg = ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"])
    return bool(seg[index])


def _terminator(block: ir.Block) -> ir.Operation:
    ops = list(block.operations)
    return ops[-1].operation


def _retype_constant(op: ir.Operation, t: ir.Type) -> None:
    attr = op.attributes["value"]
    if isinstance(attr, ir.DenseElementsAttr) and attr.is_splat:
        op.attributes["value"] = ir.DenseElementsAttr.get_splat(t, attr.get_splat_value())
    else:
        raise TilecError(f"non-splat tile constants are not supported yet: {attr}")


NAME = "tile-layout"


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    log2(options.num_warps)      # both must be powers of two
    log2(target.warp_size)
    for op in module.body.operations:
        if op.operation.name == "func.func":
            _LayoutFunc(op.operation, target, options.num_warps).run()
