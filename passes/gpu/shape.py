"""`convert-tile-to-gpu` rules for program ids, index ranges, constants and the
ops that reshape or re-distribute tiles.

Input: the ops at the tiled level.  Output, per thread:
  * `tile.program_id`/`num_programs` -> `gpu.block_id`/`gpu.grid_dim` as i32
    (a target may read the block count elsewhere: targets/amd/rules.py);
  * `tile.range` -> thread-index arithmetic on `gpu.thread_id x`
    (`FuncLowering.coordinates`); `tensor.splat`/`arith.constant` -> vector
    broadcasts/splat constants; `tile.expand_dims` and `tile.broadcast` move
    no data (slice layouts share the expanded tile's fragment);
  * `tile.convert_layout`, `tile.reshape`, `tile.trans` -> a round trip through
    workgroup memory between `gpu.barrier`s (row-major store, load at the new
    layout's positions; `trans` reads with swapped strides); a target may
    write a 2-D conversion's buffer itself (`hook.exchange-store`);
  * `tile.addptr` -> `llvm.getelementptr` on (vectors of) `!llvm.ptr<1>`.

Nearest upstream analogue: the vector-distribution patterns of
`vector.broadcast`/`vector.transpose`; Triton's `ConvertLayoutOpToLLVM`.
"""
from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith, gpu, llvm

from tilec.dialects import tile
from tilec.passes.analysis import axis_info
from tilec.errors import CompilerBugError, TilecError, source_loc
from tilec.passes.gpu.context import (
    DYNAMIC_INDEX, FuncLowering, Rule, i32, int_attr, is_i1, is_tile, linear_index, result,
    shared_element, store_pieces, store_row_major,
)
from tilec.passes.analysis.layouts import Distribution
from tilec.passes.analysis.matrix_tiling import transpose_layout
from tilec.passes.rules import RuleSet
from tilec.targets import Feature

RULES: RuleSet[Rule] = RuleSet("gpu.shape")


_DIMS = (gpu.Dimension.x, gpu.Dimension.y, gpu.Dimension.z)


def _per_cluster(L: FuncLowering, op: ir.Operation, v: ir.Value) -> ir.Value:
    """A block index or count along x as the cluster's (tile-split-ctas: n
    CTAs along x run one program)."""
    if int_attr(op, "axis") or "tile.num_ctas" not in L.func.attributes:
        return v
    ctas = int_attr(L.func, "tile.num_ctas")
    return arith.DivUIOp(v, L.const_i32(ctas)).result


@RULES.rule("tile.program_id")
def _program_id(L: FuncLowering, op: ir.Operation) -> None:
    idx = gpu.BlockIdOp(_DIMS[int_attr(op, "axis")]).result
    L.values[result(op)] = _per_cluster(L, op, arith.IndexCastOp(i32(), idx).result)


@RULES.rule("tile.num_programs")
def _num_programs(L: FuncLowering, op: ir.Operation) -> None:
    idx = gpu.GridDimOp(_DIMS[int_attr(op, "axis")]).result
    L.values[result(op)] = _per_cluster(L, op, arith.IndexCastOp(i32(), idx).result)


@RULES.rule("tile.range")
def _range(L: FuncLowering, op: ir.Operation) -> None:
    L.values[result(op)] = _range_frag(L, L.dist(result(op).type), int_attr(op, "start"))


def _range_frag(L: FuncLowering, d: Distribution, start: int) -> list[ir.Value]:
    dim = 0 if d.sliced_dim is None else [i for i in range(d.rank) if i != d.sliced_dim][0]
    return L.coordinates(d, dim, start)


@RULES.rule("tensor.splat")
def _splat(L: FuncLowering, op: ir.Operation) -> None:
    d = L.dist(result(op).type)
    v = L.splat(L.get(op.operands[0]), d.vec_len)
    L.values[result(op)] = [v] * d.num_chunks


@RULES.rule("arith.constant")
def _constant(L: FuncLowering, op: ir.Operation) -> None:
    t = result(op).type
    attr = op.attributes["value"]
    if not is_tile(t):
        L.values[result(op)] = arith.ConstantOp(t, attr).result
        return
    if not (isinstance(attr, ir.DenseElementsAttr) and attr.is_splat):
        raise TilecError("non-splat tile constants are not supported on GPUs yet",
                         source_loc(op.location))
    d = L.dist(t)
    (vt,) = set(L.frag_types(t))
    c = arith.ConstantOp(vt, ir.DenseElementsAttr.get_splat(vt, attr.get_splat_value())).result
    L.values[result(op)] = [c] * d.num_chunks


@RULES.rule("tile.expand_dims")
def _expand_dims(L: FuncLowering, op: ir.Operation) -> None:
    # A slice layout's fragment is the fragment of the expanded tile.
    L.values[result(op)] = L.frag(op.operands[0])


@RULES.rule("tile.broadcast")
def _broadcast(L: FuncLowering, op: ir.Operation) -> None:
    src, res = op.operands[0], result(op)
    ds, dd = L.dist(src.type), L.dist(res.type)
    if ds.blocked != dd.blocked:
        raise CompilerBugError("tile.broadcast between different layouts")
    frag = L.frag(src)
    stretched = [s == 1 and r != 1 for s, r in zip(ds.shape, dd.shape)]
    out, cache = [], {}
    for key in dd.chunk_keys:
        skey = tuple(0 if stretched[i] else k for i, k in enumerate(key))
        v = frag[ds.chunk_index(skey)]
        if ds.vec_len != dd.vec_len:
            if skey not in cache:
                cache[skey] = L.splat(L.extract(v, 0), dd.vec_len)
            v = cache[skey]
        out.append(v)
    L.values[res] = out


@RULES.rule("tile.convert_layout")
def _convert_layout(L: FuncLowering, op: ir.Operation) -> None:
    """Through workgroup memory: every thread stores its elements at their
    row-major position, then loads the elements the new layout gives it."""
    src, res = op.operands[0], result(op)
    if L.dist(src.type) == L.dist(res.type):
        L.values[res] = L.frag(src)
        return
    again = _rematerialized(L, src, L.dist(res.type), 0)
    if again is not None:
        L.values[res] = again
        return
    _through_memory(L, src, res, None)


# Integer ops a converted index tile is recomputed through (at most _REMAT_DEPTH deep).
_REMAT_ARITH = ("arith.addi", "arith.subi", "arith.muli", "arith.andi", "arith.ori",
                "arith.xori", "arith.shli", "arith.shrui", "arith.shrsi")
_REMAT_DEPTH = 6


def _rematerialized(L: FuncLowering, v: ir.Value, dd: Distribution,
                    depth: int) -> list[ir.Value] | None:
    """The fragment of integer tile `v` at distribution `dd`, recomputed where
    `v` is built from `tile.range`, `tensor.splat` and splat constants by
    elementwise integer ops (an index tile such as `pid * B + arange(0, B)`):
    no exchange through workgroup memory, and nothing of `v`'s own layout
    stays live until the conversion (a matmul epilogue's output offsets would
    otherwise be kept in registers across the K loop).  Else None.  Nearest
    upstream analogue: the rematerialization of Triton's
    RemoveLayoutConversions."""
    owner = v.owner
    if depth > _REMAT_DEPTH or not isinstance(owner, ir.OpView) or not is_tile(v.type) \
            or not isinstance(v.type.element_type, ir.IntegerType) or is_i1(v.type.element_type):
        return None
    op = owner.operation
    if op.name == "tile.range":
        return _range_frag(L, dd, int_attr(op, "start"))
    if op.name == "tensor.splat":
        return [L.splat(L.get(op.operands[0]), dd.vec_len)] * dd.num_chunks
    vt = ir.VectorType.get([dd.vec_len], v.type.element_type)
    if op.name == "arith.constant":
        attr = op.attributes["value"]
        if not (isinstance(attr, ir.DenseElementsAttr) and attr.is_splat):
            return None
        c = arith.ConstantOp(vt, ir.DenseElementsAttr.get_splat(vt, attr.get_splat_value()))
        return [c.result] * dd.num_chunks
    if op.name not in _REMAT_ARITH:
        return None
    parts = [_rematerialized(L, o, dd, depth + 1) for o in op.operands]
    if any(p is None for p in parts):
        return None
    attrs = {n: op.attributes[n] for n in op.attributes}
    return [ir.Operation.create(op.name, results=[vt], operands=list(xs), attributes=attrs).result
            for xs in zip(*[p for p in parts if p is not None])]


@RULES.rule("hook.exchange-store")
def _exchange_store(L: FuncLowering, src: ir.Value, buf: ir.Value, pitch: int,
                    swizzled: bool) -> bool:
    """Generic: nothing; `_through_memory` stores the elements itself."""
    return False


@RULES.rule("tile.reshape")
def _reshape(L: FuncLowering, op: ir.Operation) -> None:
    """Row-major order is kept: the same exchange as a layout conversion."""
    _through_memory(L, op.operands[0], result(op), None)


@RULES.rule("tile.trans")
def _trans(L: FuncLowering, op: ir.Operation) -> None:
    """Result element (i, j) is source element (j, i): read with swapped strides,
    or where the result's layout is the source's transposed (a transposed AMD
    product's B operand, passes/tile_layout_dots.py) the same registers, the
    chunks' keys swapped."""
    src = op.operands[0]
    rows, cols = tuple(src.type.shape)
    ds, dd = L.dist(src.type), L.dist(result(op).type)
    if ds.sliced_dim is None and dd.sliced_dim is None and ds.rank == 2 and \
            dd.blocked == transpose_layout(ds.blocked):
        frag = L.frag(src)
        L.values[result(op)] = [frag[ds.chunk_index((j, i))] for i, j in dd.chunk_keys]
        return
    _through_memory(L, src, result(op), [1, cols])


def _through_memory(L: FuncLowering, src: ir.Value, res: ir.Value,
                    read_strides: list[int] | None) -> None:
    """Store `src` at its row-major positions in workgroup memory; read `res`'s
    elements at `read_strides` (default: `res`'s own row-major strides).

    A 2-D conversion of rows of 64 bytes or more pads each row by 16 bytes (so
    the rows a warp writes start in different banks) and reads whole vectors
    of up to 16 bytes where the new layout's elements are adjacent; where the
    target has `Feature.SWIZZLED_EXCHANGE` and rows hold 8 chunks of 16 bytes
    or more, chunk c of row r is stored at chunk c ^ (r % 8) instead (the same
    bank spread, no padding).  Such a 2-D buffer is written by the target
    hook `hook.exchange-store` where it takes the source's layout (NVIDIA:
    `stmatrix`, targets/nvidia/exchange_stores.py), else by the thread's own
    stores.  The buffer is released after the last barrier (a later
    allocation may reuse it)."""
    ds, dd = L.dist(src.type), L.dist(res.type)
    elem = L.scalar_type(src.type.element_type)
    mem_t = ir.IntegerType.get_signless(8) if is_i1(elem) else elem
    eb = axis_info.type_bytes(mem_t)
    shape = list(ds.shape)
    padded = read_strides is None and len(shape) == 2 and shape[1] * eb >= 64 and \
        tuple(dd.shape) == tuple(ds.shape) and \
        ds.sliced_dim is None and dd.sliced_dim is None and 16 % eb == 0
    swizzled = padded and L.target.has(Feature.SWIZZLED_EXCHANGE) and \
        shape[1] * eb >= _PHASES * _CHUNK
    pad = _CHUNK // eb if padded and not swizzled else 0
    strides = [shape[1] + pad, 1] if padded else None
    rows = shape[0] if len(shape) == 2 else 1
    buf = L.shared_buffer(mem_t, math.prod(shape) + pad * rows)
    gpu.BarrierOp()
    if padded and mem_t == elem and \
            L.hook("hook.exchange-store")(L, src, buf, shape[1] + pad, swizzled):
        pass
    elif swizzled:
        _store_swizzled(L, src, buf, mem_t, shape[1])
    else:
        store_row_major(L, src, buf, mem_t, strides)
    gpu.BarrierOp()
    piece = 1
    if padded and dd.fast == 1 and mem_t == elem:
        piece = min(dd.vec_len, 16 // eb)
    out = []
    indices = _swizzled_index(L, dd, shape[1], eb) if swizzled else \
        linear_index(L, dd, read_strides or strides)
    for idx in indices:
        elems: list[ir.Value] = []
        for i in range(0, dd.vec_len, piece):
            addr = shared_element(L, buf, L.extract(idx, i), mem_t)
            if piece > 1:
                vt = ir.VectorType.get([piece], mem_t)
                v = llvm.LoadOp(vt, addr, alignment=piece * eb).result
                elems.extend(L.extract(v, j) for j in range(piece))
                continue
            v = llvm.LoadOp(mem_t, addr).result
            if mem_t != elem:
                v = arith.TruncIOp(elem, v).result
            elems.append(v)
        out.append(L.concat(elems) if len(elems) > 1 else L.splat(elems[0], 1))
    gpu.BarrierOp()
    L.release_shared(buf)   # every thread has read it: later conversions reuse the bytes
    L.values[res] = out


_CHUNK = 16     # bytes a swizzled exchange permutes
_PHASES = 8     # rows r and r + 8 share a permutation


def swizzled_position(L: FuncLowering, r: ir.Value, c: ir.Value, cols: int, eb: int,
                      lanes: int = 0) -> ir.Value:
    """Where element (r, c) lies in a swizzled [R, cols] exchange buffer of
    `eb`-byte elements: r * cols + (c ^ ((r % 8) * 16 / eb)); r, c are i32
    (`lanes` 0) or vectors of `lanes` i32."""
    def k(v: int) -> ir.Value:
        return L.splat(L.const_i32(v), lanes) if lanes else L.const_i32(v)
    phase = arith.ShLIOp(arith.AndIOp(r, k(_PHASES - 1)).result,
                         k(int(math.log2(_CHUNK // eb)))).result
    return arith.AddIOp(arith.MulIOp(r, k(cols)).result, arith.XOrIOp(c, phase).result).result


def _swizzled_index(L: FuncLowering, d: Distribution, cols: int, eb: int) -> list[ir.Value]:
    """Per chunk of a 2-D fragment: its elements' positions in a swizzled
    exchange buffer (`swizzled_position`)."""
    return [swizzled_position(L, r, c, cols, eb, d.vec_len)
            for r, c in zip(L.coordinates(d, 0, 0), L.coordinates(d, 1, 0))]


def _store_swizzled(L: FuncLowering, src: ir.Value, buf: ir.Value, mem_t: ir.Type,
                    cols: int) -> None:
    """`store_row_major` into a swizzled exchange buffer: pieces of at most 16
    bytes along the row, each inside one chunk (chunks start at multiples of
    the piece), so a piece stays contiguous under the permutation."""
    ds = L.dist(src.type)
    elem = L.scalar_type(src.type.element_type)
    eb = axis_info.type_bytes(mem_t)
    piece = min(ds.vec_len, _CHUNK // eb) if ds.fast == 1 and mem_t == elem else 1
    store_pieces(L, src, _swizzled_index(L, ds, cols, eb), buf, mem_t, piece)


@RULES.rule("tile.addptr")
def _addptr(L: FuncLowering, op: ir.Operation) -> None:
    ptr, off = op.operands
    elem = tile.pointee(ptr.type.element_type if is_tile(ptr.type) else ptr.type)
    mem_t = ir.IntegerType.get_signless(8) if is_i1(elem) else elem
    if not is_tile(ptr.type):
        L.values[result(op)] = llvm.GEPOp(L.scalar_type(ptr.type), L.get(ptr), [L.get(off)],
                                           [DYNAMIC_INDEX], mem_t, llvm.GEPNoWrapFlags.none).result
        return
    d = L.dist(ptr.type)
    offs = L.frag(off) if is_tile(off.type) else [L.splat(L.get(off), d.vec_len)] * d.num_chunks
    (pt,) = set(L.frag_types(ptr.type))
    L.values[result(op)] = [
        llvm.GEPOp(pt, p, [o], [DYNAMIC_INDEX], mem_t, llvm.GEPNoWrapFlags.none).result
        for p, o in zip(L.frag(ptr), offs)]
