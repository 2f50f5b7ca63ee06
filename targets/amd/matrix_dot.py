"""AMD matrix cores for the `tile.dot`s passes/gpu/dot.py's staging does not
serve well: the `hook.dot-matrix` target hook (`Feature.MFMA` / `Feature.WMMA`).

Input: a `tile.dot` with `tile.mma = "mfma"/"wmma"` whose result has the layout
of `matrix_tiling.choose(...)` or of `choose_transposed(...)` (tile-layout's
choice for a result reduced along its rows).  Lowered here:
  * the transposed layout: the product runs as C^T = B^T A^T on the matrix
    cores (`mfma.product` with the [N, M] tiling): the instruction's A source
    is b stored K-major (B^T row-major), its B source a stored as it is (read
    K-major: one run per lane); the accumulator's chunks are the same vectors
    as the [N, M] product's, listed in C's chunk order (`_permuted`);
  * a dot directly in a `scf.for` with an operand from outside the loop
    (attention's Q, the backward's K and V) whose operand registers take at
    most `INVARIANT_REGS` VGPRs per lane: that operand is staged and read once
    (`a_fragments` / `b_fragments`), before the lowered loop, only the other is
    staged in each iteration (Triton keeps such an operand in registers).
Every other dot: False, staged by passes/gpu/dot.py and lowered by
`mfma.py`'s `hook.dot-mma`.  Barriers as there: before the stores, between
the stores and the reads, after the reads.

Nearest upstream analogue: Triton's transposed `#ttg.amd_mfma` layouts
(`isTransposed`) and its hoisting of loop-invariant dot operands (LICM of
`ttg.local_load` into the dot-operand layout).
"""
from __future__ import annotations

import math
import weakref
from typing import TYPE_CHECKING, Any

from mlir import ir
from mlir.dialects import arith, gpu, llvm, vector

from tilec.dialects import tile
from tilec.errors import CompilerBugError
from tilec.passes.analysis import axis_info
from tilec.passes.analysis.layouts import Distribution, log2
from tilec.passes.analysis.matrix_tiling import (
    MatrixTiling, a_static, b_static, choose, choose_transposed, operand_name, transpose_layout,
)
from tilec.passes.analysis.register_operands import Plan, chain_tiling
from tilec.passes.rules import RuleSet
from tilec.targets import Feature
from tilec.targets.amd.mfma import _DYNAMIC_INDEX, _PAD_BYTES, _Idx, _load, bt_coords, product

if TYPE_CHECKING:
    from tilec.passes.gpu.context import FuncLowering, Rule

RULES: RuleSet[Rule] = RuleSet("amd.matrix-dot")


def a_fragments(L: FuncLowering, tiling: MatrixTiling, buf: ir.Value, elem: ir.Type,
                m_dim: int, k_dim: int, lda: int) -> dict[tuple[int, int], ir.Value]:
    """Every operand read of A [m_dim, k_dim] (rows `lda` apart in `buf`) that
    `product` makes, per (M-tile, k-group): `kpack * kpl` elements per lane."""
    ins = tiling.instr
    width = ins.operand_elems * tiling.kpack
    eb = axis_info.type_bytes(elem)
    assert L.tid is not None
    ws = L.target.warp_size
    lane = _Idx(L, arith.AndIOp(L.tid, L.const_i32(ws - 1)).result)
    warp = _Idx(L, arith.ShRUIOp(L.tid, L.const_i32(log2(ws))).result)
    base = tiling.a_offset(lane, warp, 0, 0, lda)
    base_v = base.v if isinstance(base, _Idx) else L.const_i32(base)
    mt = m_dim // (ins.m * tiling.wm)
    return {(t, pair): _load(L, buf, base_v, a_static(tiling, t, pair, lda), elem, width,
                             eb * math.gcd(width, lda))
            for pair in range(k_dim // (ins.k * tiling.kpack)) for t in range(mt)}


def b_fragments(L: FuncLowering, tiling: MatrixTiling, buf: ir.Value, elem: ir.Type,
                k_dim: int, n_dim: int, ldb: int, kmajor: bool = False
                ) -> dict[tuple[int, int, int, int], ir.Value]:
    """Every B operand vector of B [k_dim, n_dim] that `product` builds, per
    (N-group, tile, k-group, step): B's rows `ldb` apart in `buf` (`kpl` reads
    of `nv` contiguous elements, regrouped), or with `kmajor` its columns
    (`product`'s b_kmajor "pad": one read of the k-group's run)."""
    ins = tiling.instr
    kpl, eb = ins.operand_elems, axis_info.type_bytes(elem)
    width, step_k = kpl * tiling.kpack, ins.k * tiling.kpack
    assert L.tid is not None
    ws = L.target.warp_size
    lane = _Idx(L, arith.AndIOp(L.tid, L.const_i32(ws - 1)).result)
    warp = _Idx(L, arith.ShRUIOp(L.tid, L.const_i32(log2(ws))).result)
    base = tiling.b_offset(lane, warp, 0, 0, 0, 0, ldb)
    base_v = base.v if isinstance(base, _Idx) else L.const_i32(base)
    opvec = ir.VectorType.get([kpl], elem)
    groups = n_dim // (ins.n * tiling.nv * tiling.wn)
    out = {}
    if kmajor:
        for g in range(groups):
            for u in range(tiling.nv):
                col, k0 = bt_coords(tiling, lane, warp, g, u)
                b0 = col * ldb + k0
                assert isinstance(b0, _Idx)
                for pair in range(k_dim // step_k):
                    r = _load(L, buf, b0.v, pair * step_k, elem, width, eb * math.gcd(width, ldb))
                    for s in range(tiling.kpack):
                        out[(g, u, pair, s)] = L.slice(r, s * kpl, kpl) if tiling.kpack > 1 else r
        return out
    for pair in range(k_dim // step_k):
        for s in range(tiling.kpack):
            for g in range(groups):
                rows = [_load(L, buf, base_v, b_static(tiling, g, pair, s, e, ldb), elem,
                              tiling.nv, eb * math.gcd(tiling.nv, ldb)) for e in range(kpl)]
                for u in range(tiling.nv):
                    out[(g, u, pair, s)] = vector.FromElementsOp(
                        opvec, [L.extract(r, u) for r in rows]).result
    return out


# An operand from outside the dot's loop whose reads take at most this many
# VGPRs per lane is read once, before the loop (attention's Q at d = 128: 32).
INVARIANT_REGS = 32
# Per function lowering: (operand, is x, tiling, transposed) -> (the block
# before whose loop its registers were read, A's reads, B's operands).
_HOISTED: "weakref.WeakKeyDictionary[Any, dict[Any, tuple[Any, Any, Any]]]" = \
    weakref.WeakKeyDictionary()


def _inside(v: ir.Value, loop: ir.Operation) -> bool:
    """`v` is defined in `loop`'s body (at any depth)."""
    owner = v.owner
    op: Any = owner.owner if isinstance(owner, ir.Block) else owner.operation
    while op is not None:
        if op.operation == loop:
            return True
        op = op.operation.parent
    return False


def _matrix_tiling(L: FuncLowering, op: ir.Operation
                   ) -> tuple[MatrixTiling, bool, Plan | None] | None:
    """(the tiling, transposed, the plan taking A from registers) whose layout
    the dot's result has: `choose`'s, or a transposed one (the tiling of
    C^T = B^T A^T): `chain_tiling`'s where A's layout gives its operand
    registers (tile-layout's choice for attention's P @ V), else
    `choose_transposed`'s (its choice for a result reduced along its rows);
    else None."""
    kind = ir.StringAttr(op.attributes["tile.mma"]).value
    a, b, res = op.operands[0].type, op.operands[1].type, op.results[0].type
    (m, k), n = tuple(a.shape), tuple(b.shape)[1]
    names = (operand_name(op, a.element_type), str(res.element_type))
    d, d_a = L.dist(res), L.dist(a)
    if d.sliced_dim is not None:
        return None
    t = choose(L.target, kind, m, n, k, *names, L.num_warps)
    if t is not None and d.blocked == t.layout():
        return t, False, None
    chain = chain_tiling(L.target, kind, m, n, k, *names, L.num_warps, d_a.blocked) \
        if d_a.sliced_dim is None and "tile.mma_fp8" not in op.attributes else None
    if chain is not None and d.blocked == transpose_layout(chain[0].layout()):
        return chain[0], True, chain[1]
    t = choose_transposed(L.target, kind, m, n, k, *names, L.num_warps)
    if t is not None and d.blocked == transpose_layout(t.layout()):
        if "tile.mma_fp8" in op.attributes:
            raise CompilerBugError("a transposed matrix product of fp8 bytes")
        return t, True, None
    return None


def _from_registers(L: FuncLowering, plan: Plan, frag: list[ir.Value], elem: ir.Type
                    ) -> dict[tuple[int, int, int, int], ir.Value]:
    """The B operand vectors of `plan` built from the fragment `frag` of A:
    elements of the lane's own chunks, or of lane ^ xor's (`gpu.shuffle xor`
    of 32-bit words: 16-bit elements two to a word, in the order needed)."""
    from tilec.passes.gpu.reduce import shuffle
    assert L.tid is not None
    eb = axis_info.type_bytes(elem)
    per = max(1, 4 // eb)
    bits = ir.IntegerType.get_signless(8 * eb)
    i32 = ir.IntegerType.get_signless(32)
    lane = arith.AndIOp(L.tid, L.const_i32(L.target.warp_size - 1)).result
    remote: dict[int, list[tuple[int, int]]] = {}
    for srcs in plan.values():
        for src in srcs:
            if src.xor and (src.chunk, src.elem) not in remote.setdefault(src.xor, []):
                remote[src.xor].append((src.chunk, src.elem))
    got: dict[tuple[int, int, int], ir.Value] = {}
    for x, items in remote.items():
        for i in range(0, len(items), per):
            group = items[i:i + per]
            word = None
            for j, (c, e) in enumerate(group):
                v = L.extract(frag[c], e) if isinstance(frag[c].type, ir.VectorType) else frag[c]
                w = arith.ExtUIOp(i32, arith.BitcastOp(bits, v).result).result if eb < 4 \
                    else arith.BitcastOp(i32, v).result
                if j:
                    w = arith.ShLIOp(w, L.const_i32(8 * eb * j)).result
                word = w if word is None else arith.OrIOp(word, w).result
            assert word is not None
            word = shuffle(L, word, x, gpu.ShuffleMode.XOR)
            for j, (c, e) in enumerate(group):
                w = arith.ShRUIOp(word, L.const_i32(8 * eb * j)).result if j else word
                got[(x, c, e)] = arith.BitcastOp(elem, arith.TruncIOp(bits, w).result).result \
                    if eb < 4 else arith.BitcastOp(elem, w).result
    conds: dict[tuple[int, int], ir.Value] = {}
    out = {}
    for key, srcs in plan.items():
        vals = []
        for src in srcs:
            own = L.extract(frag[src.chunk], src.elem) \
                if isinstance(frag[src.chunk].type, ir.VectorType) else frag[src.chunk]
            v = got[(src.xor, src.chunk, src.elem)] if src.xor else own
            if src.xor and src.bit >= 0:
                if (src.bit, src.when) not in conds:
                    b = arith.AndIOp(arith.ShRUIOp(lane, L.const_i32(src.bit)).result,
                                     L.const_i32(1)).result
                    conds[(src.bit, src.when)] = arith.CmpIOp(
                        arith.CmpIPredicate.eq, b, L.const_i32(src.when)).result
                v = arith.SelectOp(conds[(src.bit, src.when)], v, own).result
            vals.append(v)
        out[key] = vector.FromElementsOp(ir.VectorType.get([len(vals)], elem), vals).result
    return out


def _permuted(frag: list[ir.Value], src: Distribution, dst: Distribution) -> list[ir.Value]:
    """A fragment of `src` (a 2-D tile) listed in the chunk order of `dst`, its
    transpose (the same vectors; key (i, j) of `src` is (j, i) of `dst`)."""
    out: list[ir.Value | None] = [None] * dst.num_chunks
    for (i, j), v in zip(src.chunk_keys, frag):
        out[dst.chunk_index((j, i))] = v
    assert all(v is not None for v in out)
    return [v for v in out if v is not None]


def store_kmajor(L: FuncLowering, src: ir.Value, buf: ir.Value, elem: ir.Type,
                 ld: int) -> None:
    """Every thread stores its elements (k, n) of the 2-D tile `src` at
    k + n * ld in `buf` (K-major), runs of consecutive k (its layout's rows
    per thread: passes/tile_layout_dots.kmajor_rows) as one vector store
    each, at one base address plus constant offsets."""
    ds = L.dist(src.type)
    eb = axis_info.type_bytes(elem)
    run = ds.ept[0]
    while run > 1 and (16 // eb < run or (ld * eb) % (run * eb)):
        run //= 2
    total: Any = 0
    for dim, f in ((0, 1), (1, ld)):
        b = L.thread_base(ds, dim)
        total = total + (b if isinstance(b, int) else _Idx(L, b)) * f
    base_v = total.v if isinstance(total, _Idx) else L.const_i32(total)
    frag, f, ef = L.frag(src), ds.fast, ds.ept[ds.fast]

    def element(local: list[int]) -> ir.Value:
        key = list(local)
        key[f] -= key[f] % ef
        chunk = frag[ds.chunk_index(tuple(key))]
        return L.extract(chunk, local[f] % ef) if isinstance(chunk.type, ir.VectorType) \
            else chunk
    for l0 in range(0, ds.local[0], run):
        for l1 in range(ds.local[1]):
            vals = [element([l0 + t, l1]) for t in range(run)]
            off = ds.static_offset(0, l0) + ds.static_offset(1, l1) * ld
            idx = arith.AddIOp(base_v, L.const_i32(off)).result if off else base_v
            ptr = llvm.GEPOp(buf.type, buf, [idx], [_DYNAMIC_INDEX], elem,
                             llvm.GEPNoWrapFlags.none).result
            v = vector.FromElementsOp(ir.VectorType.get([run], elem), vals).result \
                if run > 1 else vals[0]
            llvm.StoreOp(v, ptr, alignment=run * eb)


def _dot_matrix(L: FuncLowering, op: ir.Operation) -> bool:
    """The dots the staging of passes/gpu/dot.py does not serve: a result in the
    transposed layout (the instruction's A is B^T, its B A^T: both are stored
    transposed, K-major), and a dot directly in a loop with an operand from
    outside it (attention's Q, the backward's K and V), which is staged and
    read into its operand registers once, before the (lowered) loop, where that
    takes at most `INVARIANT_REGS` VGPRs per lane (Triton keeps it in
    registers in its dot-operand layout).  False: the dot is lowered as any other."""
    from tilec.passes.gpu.context import store_row_major
    found = _matrix_tiling(L, op)
    if found is None:
        return False
    tiling, transposed, plan = found
    a, b, acc = op.operands
    res = op.results[0]
    elem = L.scalar_type(a.type.element_type)
    eb = axis_info.type_bytes(elem)
    (m, k), n = tuple(a.type.shape), tuple(b.type.shape)[1]
    pad = _PAD_BYTES // eb
    # The instruction's A source x [rows, k] (stored row-major) and B source y
    # [k, cols]: a and b, or transposed b^T (b stored K-major) and a^T (a
    # stored as it is: y K-major, each lane's k run one read).
    rows, cols = (n, m) if transposed else (m, n)
    x, y = (b, a) if transposed else (a, b)
    sx = [1, k + pad] if transposed else [k + pad, 1]
    sy = [k + pad, 1] if transposed else [cols + pad, 1]
    ldy = k + pad if transposed else cols + pad
    loop = op.parent
    new_loop = ir.InsertionPoint.current.block.owner
    in_loop = loop is not None and loop.name == "scf.for" and new_loop is not None and \
        new_loop.name == "scf.for"
    ws = tiling.warp_size
    hoist_x = in_loop and not _inside(x, loop.operation) and \
        rows // tiling.wm * k * eb <= INVARIANT_REGS * 4 * ws
    hoist_y = plan is None and in_loop and not hoist_x and not _inside(y, loop.operation) and \
        cols // tiling.wn * k * eb <= INVARIANT_REGS * 4 * ws
    y_bytes = 0 if plan is not None else cols * ldy
    if not (transposed or hoist_x or hoist_y) or \
            L.shared_bytes + (rows * (k + pad) + y_bytes) * eb > L.target.shared_bytes:
        return False
    a_given = None
    b_given = _from_registers(L, plan, L.frag(a), elem) if plan is not None else None
    # Read once, before the loop; a later loop of the same block (attention's
    # masked blocks after the full ones) reuses the registers read for an
    # earlier one (the operand's loaded registers then die before the first).
    key = (x if hoist_x else y, hoist_x, tiling, transposed)
    seen = _HOISTED.setdefault(L, {})
    block = new_loop.operation.block if hoist_x or hoist_y else None
    if (hoist_x or hoist_y) and key in seen and seen[key][0] == block:
        a_given, b_given = seen[key][1], seen[key][2]
    elif hoist_x or hoist_y:
        # Unpadded: its bank conflicts cost once; a padded Q of attention
        # would set the kernel's LDS bytes.
        with ir.InsertionPoint(new_loop):
            if hoist_x:
                buf = L.shared_buffer(elem, rows * k)
                gpu.BarrierOp()
                if transposed:
                    store_kmajor(L, x, buf, elem, k)
                else:
                    store_row_major(L, x, buf, elem, [k, 1])
                gpu.BarrierOp()
                a_given = a_fragments(L, tiling, buf, elem, rows, k, k)
                gpu.BarrierOp()      # the reads are done before the bytes are reused
                L.release_shared(buf)
            if hoist_y:
                ld0 = k if transposed else cols
                buf = L.shared_buffer(elem, cols * k)
                gpu.BarrierOp()
                store_row_major(L, y, buf, elem, [ld0, 1])
                gpu.BarrierOp()
                b_given = b_fragments(L, tiling, buf, elem, k, cols, ld0, kmajor=transposed)
                gpu.BarrierOp()
                L.release_shared(buf)
        seen[key] = (block, a_given, b_given)
    buf_x = None if hoist_x else L.shared_buffer(elem, rows * (k + pad))
    buf_y = None if hoist_y or plan is not None else \
        L.shared_buffer(elem, cols * ldy if transposed else k * ldy)
    gpu.BarrierOp()
    if buf_x is not None and transposed:
        store_kmajor(L, x, buf_x, elem, k + pad)
    elif buf_x is not None:
        store_row_major(L, x, buf_x, elem, sx)
    if buf_y is not None:
        store_row_major(L, y, buf_y, elem, sy)
    gpu.BarrierOp()
    some = buf_x if buf_x is not None else buf_y
    assert some is not None
    staged = ((rows, k, cols), elem, buf_x if buf_x is not None else some,
              buf_y if buf_y is not None else some)
    d = L.dist(res.type)
    frag, res_t = L.frag(acc), res.type
    if transposed:
        res_t = tile.with_layout(tile.tensor_type([n, m], res.type.element_type),
                                 tiling.layout())
        frag = _permuted(frag, d, L.dist(res_t))
    out = product(L, tiling, staged, (k + pad, ldy), False, frag, res_t,
                  b_kmajor="pad" if transposed else None, a_given=a_given, b_given=b_given)
    L.values[res] = _permuted(out, L.dist(res_t), d) if transposed else out
    gpu.BarrierOp()
    for buf in (buf_y, buf_x):
        if buf is not None:
            L.release_shared(buf)
    return True


for _f in (Feature.MFMA, Feature.WMMA):
    RULES.rule("hook.dot-matrix", feature=_f)(_dot_matrix)
