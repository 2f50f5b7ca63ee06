"""`tile-tma-pointers`: pointer-tile loads and stores that a tensor map can copy.

Triton's tutorial matmul reads A and B through pointer tiles,
`a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]`, advanced by
`BLOCK_K * stride_ak` each iteration and masked on K; on sm90 each of those
tiles can be one TMA copy instead of a `cp.async` per 16 bytes per thread
(fewer instructions and registers, measured +1-3% on the H200).  This pass
proves, for a 2-D `tile.load` / `tile.store`, that the access IS the block
access of a tensor map (rank 2, or 3 to 5 with batch dimensions), and tags it as `tile-tma-descriptors` tags a
descriptor access: `tile.tma = id` on the access, `tile.tma_coords` before
it, the recipe in the kernel's `tile.tensormaps`.  The pipeliner then copies
it with TMA; an access it does not pipeline stays the pointer access it is.

The proof, in index polynomials (passes/analysis/index_poly.py; the splits in
passes/analysis/map_blocks.py):
  * the pointer is `base + (row0 + i) * S + (col0 + j)` for lanes (i, j):
    `base` a 16-byte-aligned pointer argument, S a product of integer
    arguments (the row stride, a multiple of 16 bytes), the column stride 1,
    row0 / col0 scalars free of S (loop-carried pointers advance by
    `(iv - lb) / step * d`); or, for a load, `base + (row0 + i) + (col0 + j)
    * S`: the tile is the transpose of a map's block (B given K-major, a
    [K, N] view of an [N, K] weight), and the load becomes the masked load of
    that block as tile-lower-descriptors writes it, tagged, and `tile.trans`
    of it (the pipeliner's K-major B ring);
  * where that 2-D proof fails (a batched matmul's `pid_b * stride_ab` lands
    in col0, and no column bound is a host expression), the access (or its
    transpose) may be the block of a map [batch..., rows, columns] of rank 3
    to 5: `base + sum_k b_k * S_k + (row0 + i) * S + (col0 + j)`
    (`map_blocks.split_batch`; an attention kernel's `off_z * stride_z +
    off_h * stride_h` is two batches) with each S_k, like S, a product of
    integer arguments, a multiple of 16 bytes, exactly the arguments of
    every term of col0 that has them (col0 is then free of arguments, row0
    of every S_k, and no two of S and the S_k divide one another), b_k not
    a constant; its block is [1, .., R, C], its strides [S_1, .., S, 1], its
    coordinates (b_1, .., row0, col0).  A transposed one loads its 2-D block
    from `base + sum_k b_k * S_k` where the pipeliner does not copy it.  A
    batch index the mask bounds with a lane-free conjunct `b_k < X` (X a
    host expression: `pid_b < B` splat into the mask) has extent X, as a row
    mask bounds rows (not on a transposed access: its 2-D fallback load would
    not mask the batch); an unmasked one `BATCH_EXTENT` (2^31), so every
    batch coordinate from 0 to the largest i32 is inside, as the unmasked
    pointer access assumes (below 0: the semantic choice below);
  * per dimension, the access is bounded either by its mask, which must be
    exactly the conjunction of `idx_d < bound_d` (`bound_d` a host
    expression: kernel integer arguments and constants), or, for a load, by a
    remainder `idx_d = (d0 + lane) % m` (the tutorial's `% M`): lanes with
    d0 + lane >= m read a wrapped row where the tensor map reads zeros, so
    they must be dead: the loaded tile reaches only `tile.dot` (A's rows /
    B's columns), the accumulator's loop, elementwise ops and stores whose
    mask has the conjunct `d0 + lane < m` (`_dead_beyond`); the load's mask
    may also have `r < m` (or `<= m - 1`, `m > r`, ...) where r IS a
    remainder by the same m (the op, moved or sign-extended: not a value the
    polynomials only equate with it): it holds wherever the map is not empty
    (`_below_modulus`), so it bounds nothing;
  * a masked load's `other` is absent or +0 (the map's fill);
  * the block has rows a multiple of 8 and whole 128-byte atoms per row;
  * the access has no attribute but its operand segments (one that changes
    its meaning, a volatile flag say, would keep it a pointer access).
    Triton's hints (`tl.multiple_of`, `tl.max_contiguous`) annotate the index
    ops (axis_info reads them), not the access; the cache and eviction
    keywords of `tl.load` / `tl.store` leave nothing in the IR.  An index
    clamped with `tl.where(offs < M, offs, 0)` (Triton's persistent
    tutorial) is not read as a block: such loads stay pointer loads.
One semantic choice: a block whose origin is below zero (a batch coordinate
included) reads zeros there and stores nothing there, as a tensor
descriptor's block does.  The masks
bound the tensor from above only, so such a program reads and writes outside
the tensor it describes (the tutorial's programs beyond the tile grid do),
or, where a `% m` wraps an index at or below -m, a row that `remsi` brings
back inside it; on the CPU and AMD it keeps pointer semantics.  Not in debug mode (its
bounds checks are on the pointers).

Input: tile-level IR after `tile-lower-descriptors` (the ids continue
`tile-tma-descriptors`' maps), before `tile-layout`.  Output: the same ops, tagged (a transposed
load replaced as above); the coordinates are new i32 arithmetic before each
access, with its location.  Nearest
upstream analogue: none in MLIR or Triton (TileLang infers TMA from its
`T.copy` of a buffer region, which is a block by construction).
"""
from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from mlir import ir
from mlir.dialects import arith

from tilec.dialects import tile, tile_memory
from tilec.dialects import tile_descriptors as desc
from tilec.options import CompileOptions
from tilec.passes import pipeline_support as ps
from tilec.passes import tile_lower_descriptors, tile_tma_descriptors
from tilec.passes.analysis import axis_info
from tilec.passes.analysis.index_poly import Evaluator, Poly, expand_lanes
from tilec.passes.analysis.map_blocks import (BATCH_EXTENT, build, divides, host, int_arg,
                                              pointer_base, split_batch, split_rows,
                                              stride_aligned)
from tilec.targets import Feature, Target

NAME = "tile-tma-pointers"
# arith.cmpi predicate -> (sign, minus): `lhs P rhs` == `sign * (lhs - rhs) - minus < 0`
# on integers (slt, sle, sgt, sge; the unsigned ones are not taken).
_CMP = {2: (1, 0), 3: (1, 1), 4: (-1, 0), 5: (-1, 1)}


@dataclass
class _Access:
    """A tensor-map access: `coords` in the map's dimension order (batches,
    outer, inner), `bounds` of the tile's two (outer, inner), `stride` the
    row stride and `batch_strides` the batches'; `transposed`: the tile is the
    transpose of the map's block (a load whose rows are contiguous, e.g. B
    given K-major)."""

    op: ir.Operation
    coords: list[Poly]
    bounds: list[Poly]
    stride: Poly
    recipe: dict[str, Any]
    transposed: bool = False
    batch_strides: list[Poly] = field(default_factory=list)


def _mask_other(op: ir.Operation) -> tuple[ir.Value | None, ir.Value | None]:
    """(mask, other) of a `tile.load`, (mask, None) of a `tile.store`."""
    if op.name == "tile.load":
        return ps.load_parts(op)[1:]
    seg = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    return (op.operands[2] if seg[2] else None), None


def _is_plus_zero(v: ir.Value) -> bool:
    owner = v.owner
    if isinstance(owner, ir.Block) or owner.operation.name != "arith.constant":
        return False
    attr = owner.operation.attributes["value"]
    if not (isinstance(attr, ir.DenseElementsAttr) and attr.is_splat):
        return False
    s = attr.get_splat_value()
    if isinstance(s, ir.FloatAttr):
        return s.value == 0.0 and math.copysign(1.0, s.value) > 0
    return isinstance(s, ir.IntegerAttr) and int(s.value) == 0


def conjuncts(mask: ir.Value, ev: Evaluator,
              moduli: frozenset[Poly] = frozenset()) -> list[Poly] | None:
    """The mask as polynomials D with mask == AND(D < 0), or None; a conjunct
    `x % m < m` with m in `moduli` (the divisors of the access's own wraps) is
    left out (`_below_modulus`)."""
    owner = mask.owner
    if isinstance(owner, ir.Block):
        return None
    op = owner.operation
    if op.name == "arith.andi":
        x, y = (conjuncts(w, ev, moduli) for w in op.operands)
        return None if x is None or y is None else x + y
    if op.name in ("tile.broadcast", "tensor.splat"):   # (a splat: a lane-free conjunct)
        return conjuncts(op.operands[0], ev, moduli)
    if op.name == "tile.expand_dims":
        inner = conjuncts(op.operands[0], ev, moduli)
        f = expand_lanes(op)
        return None if inner is None else [p.renumber_lanes(f) for p in inner]
    if op.name == "arith.cmpi":
        pred = int(ir.IntegerAttr(op.attributes["predicate"]).value)
        if pred not in _CMP:
            return None
        sign, minus = _CMP[pred]
        if _below_modulus(op, sign, minus, ev) in moduli:
            return []   # no bound: see _below_modulus
        lhs, rhs = ev.poly(op.operands[0]), ev.poly(op.operands[1])
        if lhs is None or rhs is None:
            return None
        return [(lhs - rhs).scale(sign) - Poly.const(minus)]
    return None


def _remainder(v: ir.Value) -> ir.Operation | None:
    """The `arith.remsi` whose lanes `v` holds, moved (expand_dims, broadcast,
    splat) or sign-extended, but not otherwise changed; else None."""
    while not isinstance(v.owner, ir.Block):
        op = v.owner.operation
        if op.name == "arith.remsi":
            return op
        if op.name not in ("tile.expand_dims", "tile.broadcast", "tensor.splat",
                           "arith.extsi", "arith.index_cast"):
            return None
        v = op.operands[0]
    return None


def _below_modulus(cmp: ir.Operation, sign: int, minus: int, ev: Evaluator) -> Poly | None:
    """m when the comparison `sign * (lhs - rhs) - minus < 0` is `x % m < m`
    exactly: its smaller side is the remainder itself (not a polynomial equal
    to it), its larger side plus `minus` the divisor's lane-free polynomial m.
    For m > 0 that holds on every lane, whatever the sign of x (`remsi` is
    below |m| in magnitude).  For m < 0 it fails where x >= 0, hence only a
    divisor of the access's own wraps may drop it: then each lane is one the
    wrap proves dead (index >= m) or lies below the tensor (index < m < 0:
    the negative-origin choice), whatever its mask; `% 0` is undefined."""
    small, big = (cmp.operands[0], cmp.operands[1]) if sign == 1 else \
        (cmp.operands[1], cmp.operands[0])
    rem = _remainder(small)
    if rem is None:
        return None
    m, b = ev.poly(rem.operands[1]), ev.poly(big)
    ok = m is not None and b is not None and not m.lanes() and b + Poly.const(minus) == m
    return m if ok else None


def _dead_beyond(v: ir.Value, x: Poly, m: Poly, ev: Evaluator, seen: set[ir.Value]) -> bool:
    """Whether the lanes of `v` where x >= m (polynomials of `ev`) never reach
    memory or another lane."""
    if v in seen:
        return True
    seen.add(v)
    lane = next(iter(x.lanes()))
    for use in v.uses:
        user, n = use.owner, use.operand_number
        name = user.name
        if name == "tile.dot":
            if not (n == 2 or (n == 0 and lane == 0) or (n == 1 and lane == 1)):
                return False
            if not _dead_beyond(user.results[0], x, m, ev, seen):
                return False
        elif name == "scf.yield" and user.parent.name == "scf.for":
            loop = user.parent
            for w in (loop.results[n], loop.regions[0].blocks[0].arguments[n + 1]):
                if not _dead_beyond(w, x, m, ev, seen):
                    return False
        elif name == "tile.trans":
            f = {0: 1, 1: 0}
            if not _dead_beyond(user.results[0], x.renumber_lanes(f), m, ev, seen):
                return False
        elif name == "tile.store":
            mask, _ = _mask_other(user)
            parts = conjuncts(mask, ev) if n == 1 and mask is not None else None
            if parts is None or x - m not in parts:
                return False
        elif (name.startswith(("arith.", "math.")) and user.results
              and all(r.type == v.type or (isinstance(r.type, ir.RankedTensorType)
                                           and r.type.shape == v.type.shape)
                      for r in user.results)):
            if not all(_dead_beyond(r, x, m, ev, seen) for r in user.results):
                return False
        else:
            return False
    return True


class _Prover:
    def __init__(self, func: ir.Operation) -> None:
        self.func = func
        self.block = func.regions[0].blocks[0]
        self.ev = Evaluator()

    @functools.cached_property
    def info(self) -> axis_info.AxisInfoMap:
        """The axis analysis (alignment of bases and strides), run only for a
        kernel with an access of a map's shape."""
        return axis_info.analyze(self.func)

    def access(self, op: ir.Operation) -> _Access | None:
        ptr = op.operands[0]
        t = ptr.type
        if not (isinstance(t, ir.RankedTensorType) and len(t.shape) == 2):
            return None
        elem = tile.pointee(t.element_type)
        eb = axis_info.type_bytes(elem)
        e = self.ev.expr(ptr)
        if e is None:
            return None
        p, wraps = e
        base = self._base(p)
        if base is None:
            return None
        q = p - self.ev.atom_of(base)
        s0, s1 = q.lane_coefficient(0), q.lane_coefficient(1)
        if s0 is None or s1 is None or s0.lanes() or s1.lanes():
            return None
        one = Poly.const(1)
        if s1 == one:
            inner, stride = 1, s0
        elif s0 == one and op.name == "tile.load":
            inner, stride = 0, s1   # the tile is the transpose of the map's block
        else:
            return None
        outer = 1 - inner
        block = [t.shape[outer], t.shape[inner]]
        if eb not in (1, 2, 4) or block[0] % 8 or (block[1] * eb) % 128 or max(block) > 256:
            return None
        r = q.without_lanes()
        if r + stride * Poly.atom(("lane", outer)) + Poly.atom(("lane", inner)) != q:
            return None
        split = split_rows(r, stride)
        if split is None or any(c.denominator != 1 for p_ in split for _, c in p_.terms):
            return None
        made = self._map(op, base, eb, block, inner, stride, split, wraps)
        if made is not None:
            return made
        batched = split_batch(split[1], stride, self._is_arg)   # a batched access: rank 3-5
        if batched is None or any(c.denominator != 1 for b, _ in batched[0] for _, c in b.terms) \
                or any(divides(s.terms[0][0], m) for _, s in batched[0] for m, _ in split[0].terms):
            return None
        return self._map(op, base, eb, block, inner, stride, (split[0], batched[1]), wraps,
                         batched[0])

    def _map(self, op: ir.Operation, base: ir.Value, eb: int, block: list[int], inner: int,
             stride: Poly, split: tuple[Poly, Poly], wraps: frozenset[tuple[Poly, Poly]],
             batches: Sequence[tuple[Poly, Poly]] = ()) -> _Access | None:
        """The access through the map whose rows are `split[0] + lane` (row
        stride `stride`) and columns `split[1] + lane`, behind batch
        coordinates b of strides s, `batches` = [(b, s), ...] (rank 3-5), or None."""
        outer = 1 - inner
        coords = [split[0], split[1]] if inner == 1 else [split[1], split[0]]   # per tile dim
        got = self._bounds(op, coords, wraps)
        strides = [*(s for _, s in batches), stride]
        if got is None or not all(self._stride_ok(s, eb) for s in strides):
            return None
        bounds, free = got
        lead = self._batch_extents(free, [b for b, _ in batches], inner == 0)
        order = (outer, inner)
        hosts = [host(x, self.ev, self.block) for x in (bounds[outer], bounds[inner], *strides)]
        if lead is None or any(h is None for h in hosts):
            return None
        recipe = {"base": list(self.block.arguments).index(base), "elem_bytes": eb,
                  "shape": [*lead, *hosts[:2]], "strides": [*hosts[2:], ["const", 1]],
                  "block": [*(1 for _ in batches), *block], "inferred": True}
        if op.name == "tile.store":
            recipe["store"] = True
        return _Access(op, [*(b for b, _ in batches), *(coords[d] for d in order)],
                       [bounds[d] for d in order], stride, recipe, transposed=inner == 0,
                       batch_strides=[s for _, s in batches])

    def _batch_extents(self, free: list[Poly], coords: list[Poly],
                       transposed: bool) -> list[Any] | None:
        """Each batch dimension's extent: X for a lane-free mask conjunct
        `b_k < X` (b_k the batch coordinate, X a host expression: `pid_b < B`
        bounds the batch as a mask bounds rows), at most one per batch, else
        `BATCH_EXTENT`; None where a conjunct bounds no batch (or two), or a
        transposed access has one (the 2-D block load it falls back to
        would not mask the batch)."""
        out: list[Any] = [None] * len(coords)
        if free and transposed:
            return None
        for dpoly in free:
            hits = [(k, h) for k, b in enumerate(coords)
                    if (h := host(b - dpoly, self.ev, self.block)) is not None]
            if len(hits) != 1 or out[hits[0][0]] is not None:
                return None
            out[hits[0][0]] = hits[0][1]
        return [["const", BATCH_EXTENT] if e is None else e for e in out]

    def _is_arg(self, a: tuple[str, int]) -> bool:
        """Whether atom `a` is an integer argument of the kernel."""
        return int_arg(a, self.ev, self.block) is not None

    def _base(self, p: Poly) -> ir.Value | None:
        v = pointer_base(p, self.ev, self.block)
        return v if v is not None and self.info.get(v).divisibility[0] >= 16 else None

    def _stride_ok(self, s0: Poly, eb: int) -> bool:
        return stride_aligned(s0, self.ev, lambda v: self.info.get(v).divisibility[0], eb)

    def _bounds(self, op: ir.Operation, coords: list[Poly], wraps: frozenset[tuple[Poly, Poly]]
                ) -> tuple[list[Poly], list[Poly]] | None:
        """The bound of each tile dimension (lane-free polynomials) and the
        mask's lane-free conjuncts D (D < 0: `_batch_extents`), or None."""
        idx = [coords[d] + Poly.atom(("lane", d)) for d in (0, 1)]
        bound: list[Poly | None] = [None, None]
        free: list[Poly] = []
        mask, other = _mask_other(op)
        if mask is not None:
            parts = conjuncts(mask, self.ev, frozenset(m for _, m in wraps))
            if parts is None or (op.name == "tile.load" and other is not None
                                 and not _is_plus_zero(other)):
                return None
            for dpoly in parts:
                lanes = dpoly.lanes()
                if not lanes:
                    free.append(dpoly)
                    continue
                if len(lanes) != 1:
                    return None
                d = lanes.pop()
                if dpoly.lane_coefficient(d) != Poly.const(1) or bound[d] is not None:
                    return None
                bound[d] = idx[d] - dpoly
        for x, m in wraps:
            dim = next((d for d in (0, 1) if x == idx[d]), None)
            if dim is None or bound[dim] is not None or op.name != "tile.load":
                return None
            if not _dead_beyond(op.results[0], x, m, self.ev, set()):
                return None
            bound[dim] = m
        if any(b is None or b.lanes() for b in bound):
            return None
        return [b for b in bound if b is not None], free

    def materialize(self, a: _Access, tma: int) -> None:
        """Tag the access (its coordinates before it).  A transposed load is
        replaced by the masked load of the map's block, as tile-lower-descriptors
        writes it (zeros outside the bounds: dead lanes only, where the source
        wrapped; a batched map's 2-D block at the batches' offset), and
        `tile.trans` of it."""
        op, loc = a.op, a.op.location
        i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
        with ir.InsertionPoint(op), loc:
            coords = [self._build(c, i32) for c in a.coords]
            tile_memory.tma_coords(coords, tma, loc=loc, ip=ir.InsertionPoint(op))
            if not a.transposed:
                op.attributes["tile.tma"] = ir.IntegerAttr.get(i32, tma)
                return
            base = list(self.block.arguments)[a.recipe["base"]]
            nb = len(a.batch_strides)
            if nb:   # the batches' offset moves the base (one batch's 2-D block)
                base = tile.addptr(base, self._build(sum(
                    (b * s for b, s in zip(a.coords, a.batch_strides)), Poly()), i64), loc=loc)
            shape = [self._build(b, i64) for b in a.bounds]
            strides = [self._build(a.stride, i64), arith.constant(i64, 1)]
            block = tile.tensor_type(a.recipe["block"][nb:],
                                     tile.element_type(op.results[0].type))
            made = desc.make_descriptor(base, shape, strides, block, loc=loc)
            loaded = desc.descriptor_load(made, coords[nb:], loc=loc)
            new = tile_lower_descriptors.lower_load(loaded.owner.operation)
            new.attributes["tile.tma"] = ir.IntegerAttr.get(i32, tma)
            made.owner.operation.erase()
            op.results[0].replace_all_uses_with(tile.trans(new.results[0], loc=loc))
        op.erase()

    def _build(self, p: Poly, ty: ir.Type) -> ir.Value:
        return build(p, self.ev, ty)


def _accesses(func: ir.Operation) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in ("tile.load", "tile.store") and "tile.tma" not in op.attributes \
                and set(op.attributes.keys()) <= {"operandSegmentSizes"}:
            found.append(op)
        return ir.WalkResult.ADVANCE

    func.walk(visit)
    return found


def _run_func(func: ir.Operation) -> None:
    ops = _accesses(func)
    if not ops:
        return
    prover = _Prover(func)
    found = [a for a in (prover.access(op) for op in ops) if a is not None]
    if not found:
        return
    maps = {str(k): v for k, v in tile_tma_descriptors.recipes(func).items()}
    for a in found:
        tma = len(maps)
        prover.materialize(a, tma)
        maps[str(tma)] = a.recipe
    func.attributes[tile_tma_descriptors.ATTR] = ir.StringAttr.get(json.dumps(maps,
                                                                            sort_keys=True))


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    if not target.has(Feature.TMA) or options.debug:
        return
    with module.context:
        for op in module.body.operations:
            if op.operation.name == "func.func":
                _run_func(op.operation)
