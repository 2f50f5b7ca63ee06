"""CPU lowering of `tile.scan`.

Blocked: each register-sized chunk (`target.vector_bytes`) is scanned
Hillis-Steele style (log2 steps of a `vector.shuffle` rotation, combine,
`arith.select` keeping lanes with nothing before them in scan order); then each
chunk combines the broadcast last row of the previous chunk (the next one for
`reverse`) and the chunks are concatenated.  Rows wider than a register:
Hillis-Steele over the whole tile (the shifts are whole registers).  No scalar
chains; one vector combine per chunk on the carry path.  Scans preserve the
order of the combines and only need associativity.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from tilec.dialects import tile
from tilec.passes.cpu.combine import Combiner
from tilec.passes.cpu.context import (CpuRules, Lowering, bool_vector, concat, elem_bits, gather,
                                      int_attr, slice_)
from tilec.passes.cpu.reduce import axis_split

RULES = CpuRules("cpu.scan")


def _hillis_steele(comb: Combiner, vals: list[ir.Value], a_n: int, k_n: int,
                   b_n: int, reverse: bool) -> list[ir.Value]:
    """Inclusive scan of (a_n, k_n, b_n) row-major vectors along k in log2(k_n) steps."""
    coords = [(a, k, b) for a in range(a_n) for k in range(k_n) for b in range(b_n)]
    total = len(coords)
    d = 1
    while d < k_n:
        # Lane (a, k, b) combines with the partial result d steps earlier in scan order.
        step = -d if not reverse else d
        valid = [0 <= k + step < k_n for _, k, _ in coords]
        # A rotation of the flat vector by d * b_n lanes (LLVM lowers it to
        # register moves and lane-align instructions); the lanes that wrap or
        # cross into another slab are discarded by the select below.
        src = [(f + step * b_n) % total for f in range(total)]
        shifted = [gather(v, src) for v in vals]
        combined = comb(shifted, vals)
        keep = bool_vector(valid)
        vals = [arith.SelectOp(keep, c, v).result for c, v in zip(combined, vals)]
        d *= 2
    return vals


def _scan_lanes(lw: Lowering, elem: ir.Type) -> int:
    """Lanes of one SIMD register (the chunk of the blocked scan); i1 lanes are
    bytes in memory, so at most one lane per byte."""
    return max(2, min(lw.vector_bytes, lw.vector_bytes * 8 // elem_bits(elem)))


@RULES.rule("tile.scan")
def scan(lw: Lowering, op: ir.Operation) -> None:
    reverse = "reverse" in op.attributes
    a_n, k_n, b_n = axis_split(tile.shape_of(op.operands[0].type), int_attr(op, "axis"))
    comb = Combiner(op)
    vals = [lw.mapped(v) for v in op.operands]
    lanes = min(_scan_lanes(lw, ir.VectorType(v.type).element_type) for v in vals)
    slab = k_n * b_n
    if slab <= lanes or lanes % b_n or slab % lanes:
        # Small tiles, or rows wider than a register (shifts by whole rows are
        # register renames): one log-step scan over the whole vector.
        out = _hillis_steele(comb, vals, a_n, k_n, b_n, reverse)
    else:
        out = _blocked_scan(comb, vals, a_n, k_n, b_n, lanes, reverse)
    lw.bind_all(list(op.results), out)


def _blocked_scan(comb: Combiner, vals: list[ir.Value], a_n: int, k_n: int,
                  b_n: int, lanes: int, reverse: bool) -> list[ir.Value]:
    """Scan each register-sized chunk (lanes // b_n rows) with log steps, then
    carry the last row of each chunk into the next one, in scan order.  Large
    log-step shuffles over whole tiles compile superlinearly in LLVM (a 4096-lane
    i32 scan took 16 s); this form keeps every shuffle inside one register."""
    slab = k_n * b_n
    rows = lanes // b_n
    chunks_per_slab = slab // lanes
    # chunks[i][j]: operand i, chunk j (over all slabs, in memory order)
    chunks = [[slice_(v, j * lanes, lanes) for j in range(a_n * chunks_per_slab)] for v in vals]
    scanned = [_hillis_steele(comb, [c[j] for c in chunks], 1, rows, b_n, reverse)
               for j in range(a_n * chunks_per_slab)]
    # The row of a chunk that ends it in scan order, broadcast over the next chunk.
    last_row = 0 if reverse else rows - 1
    carry_idx = [last_row * b_n + b for _ in range(rows) for b in range(b_n)]
    for a in range(a_n):
        order = list(range(chunks_per_slab))
        if reverse:
            order.reverse()
        for prev, cur in zip(order, order[1:]):
            jp, jc = a * chunks_per_slab + prev, a * chunks_per_slab + cur
            carry = [gather(v, carry_idx) for v in scanned[jp]]
            scanned[jc] = comb(carry, scanned[jc])
    return [concat([s[k] for s in scanned]) for k in range(len(vals))]
