"""`convert-tile-to-gpu`: distribute laid-out tile kernels over the threads of a block.

Input: the output of `tile-layout`: `func.func` kernels whose tensors all carry
`#tile.blocked`/`#tile.slice` encodings, with `tile.convert_layout` where
encodings change.
Output: every kernel becomes `gpu.func @name(...) kernel` with
`known_block_size = [num_warps * warp_size, 1, 1]` inside `gpu.module @tilec`
(the enclosing module gets `gpu.container_module`); the `func.func` is erased.
  * `!tile.ptr<T>` arguments become `!llvm.ptr<1>`; scalars keep their types;
    `tile.*` argument and function attributes are dropped.
  * Each tile value becomes the calling thread's fragment: one or more 1-D
    `vector<k x T>` values (`layouts.Distribution` says which elements);
    tiles of pointers become `vector<k x !llvm.ptr<1>>`.
  * `tile.program_id`/`num_programs` -> `gpu.block_id`/`gpu.grid_dim`;
    `tile.range` -> thread index arithmetic from `gpu.thread_id x`;
    splat/broadcast/expand_dims -> vector broadcasts or nothing;
    `arith`/`math` ops are copied chunk by chunk with vector types;
    `tile.addptr` -> `llvm.getelementptr` on pointer vectors;
    `tile.load`/`tile.store` -> `llvm.load`/`llvm.store` of `vector<w x T>` with
    the width and alignment axis info proves (w * sizeof(T) <=
    `target.vector_bytes`; a mask must be constant over the access, which axis
    info also proves, else w = 1); masked accesses as the target's features
    say (predicated PTX `ld/st.global`, or guarded): see lower_memory_gpu.py;
    `tile.convert_layout` -> a round trip through workgroup memory
    (`llvm.mlir.global` in address space 3) between two `gpu.barrier`s;
    `tile.dot` -> see lower_dot_gpu.py;
    `scf.for`/`scf.if`/`scf.yield` carry flattened fragments.
  * Only upstream dialects remain, and every op carries the location of the
    tile op it came from (the thread-id prologue carries the kernel's).

Nearest upstream analogue: `convert-vector-to-gpu`/`vector-distribution`
(warp distribution of vector ops); Triton's TritonGPU -> LLVM conversion.
"""
from __future__ import annotations

import math

from typing import Callable, Sequence, Union

import numpy as np
from mlir import ir
from mlir.dialects import arith, gpu, llvm, scf, vector

from tilec.dialects import tile
from tilec.errors import CompilerBugError, TilecError, source_loc
from tilec.passes.analysis import axis_info
from tilec.passes.analysis.layouts import Distribution, log2
from tilec.options import CompileOptions
from tilec.targets import Feature, Target

Lowered = Union[ir.Value, list[ir.Value]]
_DYNAMIC_INDEX = -2147483648   # kDynamicIndex of llvm.getelementptr
_GLOBAL_ADDRSPACE = 1
_SHARED_ADDRSPACE = 3


def _i32() -> ir.IntegerType:
    return ir.IntegerType.get_signless(32)


def _is_tile(t: ir.Type) -> bool:
    return isinstance(t, ir.RankedTensorType)


def _int_attr(op: ir.Operation, name: str) -> int:
    return int(ir.IntegerAttr(op.attributes[name]).value)


def _is_i1(t: ir.Type) -> bool:
    return isinstance(t, ir.IntegerType) and t.width == 1


# ---------------------------------------------------------------- rule registry

Rule = Callable[["_FuncLowering", ir.Operation], None]
_RULES: dict[str, Rule] = {}


def lowering(*names: str) -> Callable[[Rule], Rule]:
    """Register the per-thread lowering of the tile-level ops `names`."""
    def register(fn: Rule) -> Rule:
        for n in names:
            _RULES[n] = fn
        return fn
    return register


class ConvertTileToGPU:
    """See the module docstring."""

    name = "convert-tile-to-gpu"

    def run(self, module: ir.Module, target: Target, num_warps: int) -> None:
        funcs = [op.operation for op in module.body.operations if op.operation.name == "func.func"]
        # Private functions are combine functions of reduce/scan ops: their
        # bodies are cloned where used, and they are erased once all kernels are.
        private = [f for f in funcs if "sym_visibility" in f.attributes
                   and ir.StringAttr(f.attributes["sym_visibility"]).value == "private"]
        funcs = [f for f in funcs if f not in private]
        if not funcs:
            return
        with module.context, ir.Location.unknown():
            module.operation.attributes["gpu.container_module"] = ir.UnitAttr.get()
            gmod = self._gpu_module(module)
            for f in funcs:
                _FuncLowering(f, gmod, target, num_warps).run()
                f.erase()
            for f in private:
                f.erase()

    @staticmethod
    def _gpu_module(module: ir.Module) -> ir.Block:
        for op in module.body.operations:
            if op.operation.name == "gpu.module":
                return op.operation.regions[0].blocks[0]
        with ir.InsertionPoint(module.body):
            gm = gpu.GPUModuleOp("tilec")
        return gm.bodyRegion.blocks.append()


class _FuncLowering:
    def __init__(self, func: ir.Operation, gmod: ir.Block, target: Target, num_warps: int) -> None:
        self.func = func
        self.gmod = gmod
        self.target = target
        self.num_warps = num_warps
        self.values: dict[ir.Value, Lowered] = {}
        self.axis = axis_info.analyze(func)
        self.tid: ir.Value | None = None
        self.shared_count = 0
        self.shared_bytes = 0

    # -- types
    def scalar_type(self, t: ir.Type) -> ir.Type:
        if tile.is_ptr(t):
            return llvm.PointerType.get(_GLOBAL_ADDRSPACE)
        return t

    def dist(self, t: ir.Type) -> Distribution:
        layout = tile.layout_of(t)
        if layout is None:
            raise CompilerBugError(f"convert-tile-to-gpu needs laid-out tiles, got {t}")
        return Distribution.of(layout, tuple(t.shape))

    def frag_types(self, t: ir.Type) -> list[ir.Type]:
        if not _is_tile(t):
            return [self.scalar_type(t)]
        d = self.dist(t)
        return [ir.VectorType.get([d.vec_len], self.scalar_type(t.element_type))] * d.num_chunks

    # -- values
    def get(self, v: ir.Value) -> ir.Value:
        r = self.values[v]
        if isinstance(r, list):
            raise CompilerBugError(f"expected a scalar for {v.get_name()}")
        return r

    def frag(self, v: ir.Value) -> list[ir.Value]:
        r = self.values[v]
        if not isinstance(r, list):
            raise CompilerBugError(f"expected a tile for {v.get_name()}")
        return r

    def flat(self, vs: Sequence[ir.Value]) -> list[ir.Value]:
        out: list[ir.Value] = []
        for v in vs:
            r = self.values[v]
            out.extend(r if isinstance(r, list) else [r])
        return out

    def bind_flat(self, olds: Sequence[ir.Value], news: Sequence[ir.Value]) -> None:
        news = list(news)
        i = 0
        for v in olds:
            n = len(self.frag_types(v.type))
            self.values[v] = news[i:i + n] if _is_tile(v.type) else news[i]
            i += n

    # -- driver
    def run(self) -> None:
        f = self.func
        name = ir.StringAttr(f.attributes["sym_name"]).value
        entry = f.regions[0].blocks[0]
        arg_types = [self.scalar_type(a.type) for a in entry.arguments]
        for a in entry.arguments:
            if _is_tile(a.type):
                raise TilecError(f"kernel '{name}': tile arguments are not supported",
                                 source_loc(f.location))
        with ir.InsertionPoint(self.gmod):
            gf = gpu.GPUFuncOp(ir.FunctionType.get(arg_types, []), sym_name=name, kernel=True,
                               known_block_size=[self.num_warps * self.target.warp_size, 1, 1],
                               loc=f.location)
        self.gfunc = gf
        block = gf.body.blocks.append(*arg_types, arg_locs=[a.location for a in entry.arguments])
        for old, new in zip(entry.arguments, block.arguments):
            self.values[old] = new
        with ir.InsertionPoint(block), f.location:
            tid = gpu.ThreadIdOp(gpu.Dimension.x).result
            self.tid = arith.IndexCastOp(_i32(), tid).result
        self.lower_block(entry, block)
        self.finish_shared()

    def lower_block(self, old: ir.Block, new: ir.Block) -> None:
        with ir.InsertionPoint(new):
            for op in old.operations:
                self.lower_op(op.operation)

    def lower_op(self, op: ir.Operation) -> None:
        rule = _RULES.get(op.name)
        with op.location:
            if rule is not None:
                rule(self, op)
            elif op.name.split(".")[0] in ("arith", "math"):
                _elementwise(self, op)
            else:
                raise TilecError(f"no GPU lowering for '{op.name}' (target {self.target.name})",
                                 source_loc(op.location))

    # -- small builders (insert at the current point, with the current location)
    def const_i32(self, v: int) -> ir.Value:
        return arith.ConstantOp(_i32(), v).result

    def const_vec(self, t: ir.VectorType, values: Sequence[int | float]) -> ir.Value:
        et = t.element_type
        if len(set(values)) == 1:
            attr = ir.DenseElementsAttr.get_splat(t, self._scalar_attr(et, values[0]))
        elif et == _i32():
            attr = ir.DenseElementsAttr.get(np.asarray(values, dtype=np.int32), type=t)
        else:
            raise CompilerBugError(f"non-splat constant of {t}")
        return arith.ConstantOp(t, attr).result

    @staticmethod
    def _scalar_attr(t: ir.Type, v: int | float) -> ir.Attribute:
        if isinstance(t, ir.FloatType):
            return ir.FloatAttr.get(t, float(v))
        return ir.IntegerAttr.get(t, int(v))

    def zero(self, t: ir.Type) -> ir.Value:
        if isinstance(t, ir.VectorType):
            return self.const_vec(t, [0] * t.shape[0])
        return arith.ConstantOp(t, self._scalar_attr(t, 0)).result

    def splat(self, scalar: ir.Value, n: int) -> ir.Value:
        return vector.BroadcastOp(ir.VectorType.get([n], scalar.type), scalar).result

    def extract(self, v: ir.Value, i: int) -> ir.Value:
        return vector.ExtractOp(v, [], [i]).result

    def slice(self, v: ir.Value, start: int, width: int) -> ir.Value:
        """Elements [start, start+width) of a 1-D vector (a scalar for width 1)."""
        n = ir.VectorType(v.type).shape[0]
        if width == n:
            return v
        if width == 1:
            return self.extract(v, start)
        return vector.ShuffleOp(v, v, list(range(start, start + width))).result

    def concat(self, pieces: list[ir.Value]) -> ir.Value:
        if len(pieces) == 1:
            return pieces[0]
        if not isinstance(pieces[0].type, ir.VectorType):
            return vector.FromElementsOp(ir.VectorType.get([len(pieces)], pieces[0].type),
                                         pieces).result
        while len(pieces) > 1:
            merged = []
            for a, b in zip(pieces[::2], pieces[1::2]):
                n = ir.VectorType(a.type).shape[0]
                merged.append(vector.ShuffleOp(a, b, list(range(2 * n))).result)
            pieces = merged
        return pieces[0]

    # -- thread coordinates
    def thread_base(self, d: Distribution, dim: int) -> ir.Value | int:
        """Coordinate along `dim` of the calling thread's first element."""
        assert self.tid is not None
        lshift, lanes, wshift, warps = d.lane_split()[dim]
        ws = self.target.warp_size
        parts: list[tuple[ir.Value, int]] = []   # (index, shift of its bits)
        if lanes > 1:
            # lshift + log2(lanes) <= log2(warp_size): the bits lie inside the lane id.
            lane = self.tid
            if lshift:
                lane = arith.ShRUIOp(lane, self.const_i32(lshift)).result
            lane = arith.AndIOp(lane, self.const_i32(lanes - 1)).result
            parts.append((lane, 0))
        if warps > 1:
            warp = arith.ShRUIOp(self.tid, self.const_i32(log2(ws) + wshift)).result
            warp = arith.AndIOp(warp, self.const_i32(warps - 1)).result
            parts.append((warp, log2(lanes)))
        if not parts:
            return 0
        pt_shift = log2(d.blocked.per_thread[dim])
        acc: ir.Value | None = None
        for v, shift in parts:
            if shift + pt_shift:
                v = arith.ShLIOp(v, self.const_i32(shift + pt_shift)).result
            acc = v if acc is None else arith.OrIOp(acc, v).result
        assert acc is not None
        if d.needs_wrap(dim):
            acc = arith.AndIOp(acc, self.const_i32(d.shape[dim] - 1)).result
        return acc

    def coordinates(self, d: Distribution, dim: int, offset: int) -> list[ir.Value]:
        """Per chunk: the vector of `offset + coordinate along dim` of its elements."""
        base = self.thread_base(d, dim)
        vt = ir.VectorType.get([d.vec_len], _i32())
        dyn: ir.Value | None = None
        if isinstance(base, ir.Value):
            if offset:
                base = arith.AddIOp(base, self.const_i32(offset)).result
            dyn = self.splat(base, d.vec_len)
            offset = 0
        else:
            offset += base
        out = []
        cache: dict[tuple[int, ...], ir.Value] = {}
        for key in d.chunk_keys:
            offs = tuple(offset + d.static_offset(dim, key[dim] + (i if dim == d.fast else 0))
                         for i in range(d.vec_len))
            if offs not in cache:
                c = self.const_vec(vt, offs)
                cache[offs] = c if dyn is None else arith.AddIOp(dyn, c).result
            out.append(cache[offs])
        return out

    # -- memory access width
    def access(self, ptr: ir.Value, mask: ir.Value | None, d: Distribution,
               eb: int) -> tuple[int, int]:
        """(elements per access, alignment in bytes) for a load/store of `ptr`."""
        info = self.axis.get(ptr)
        f = d.fast
        if d.sliced_dim is not None:
            if f == d.sliced_dim:
                return 1, math.gcd(info.divisibility[0], eb)
            f = f if f < d.sliced_dim else f - 1
        w = min(d.vec_len, max(1, self.target.vector_bytes // eb), info.contiguity[f],
                max(1, info.divisibility[f] // eb))
        if mask is not None and _is_tile(mask.type):
            w = min(w, self.axis.get(mask).constancy[f])
        align = w * eb if w > 1 else math.gcd(info.divisibility[f], eb)
        return w, align

    def shared_buffer(self, elem: ir.Type, count: int) -> ir.Value:
        """A pointer to a fresh workgroup-memory array of `count` elements: a
        16-byte-aligned slice of the kernel's one workgroup-memory region, whose
        global `finish_shared` creates once the total size is known."""
        fname = ir.StringAttr(self.func.attributes["sym_name"]).value
        offset = (self.shared_bytes + 15) // 16 * 16
        self.shared_bytes = offset + count * max(1, axis_info.type_bytes(elem) if not isinstance(
            elem, llvm.PointerType) else 8)
        if self.shared_bytes > self.target.shared_bytes:
            raise TilecError(f"kernel '{fname}' needs {self.shared_bytes} bytes of workgroup "
                             f"memory; {self.target.name} has {self.target.shared_bytes}",
                             source_loc(ir.Location.current))
        ptr = llvm.PointerType.get(_SHARED_ADDRSPACE)
        base = llvm.AddressOfOp(ptr, f"__tilec_smem_{fname}").result
        if offset == 0:
            return base
        return llvm.GEPOp(ptr, base, [], [offset], ir.IntegerType.get_signless(8),
                          llvm.GEPNoWrapFlags.inbounds).result

    def finish_shared(self) -> None:
        """Create the workgroup-memory region: a static array, or where the target
        caps static shared memory (`dynamic_shared`: 48 KiB on NVIDIA) and the
        kernel needs more, an extern array sized at launch (the size is recorded
        as the gpu.func attribute `tilec.dynamic_shared`)."""
        if self.shared_bytes == 0:
            return
        fname = ir.StringAttr(self.func.attributes["sym_name"]).value
        dynamic = self.target.has(Feature.DYNAMIC_SHARED) and self.shared_bytes > (self.target.static_shared_bytes or self.target.shared_bytes)
        count = 0 if dynamic else self.shared_bytes
        # The llvm dialect's Python bindings have no ArrayType builder.
        arr = ir.Type.parse(f"!llvm.array<{count} x i8>")
        linkage = "external" if dynamic else "internal"
        with ir.InsertionPoint(self.gfunc), self.func.location:
            llvm.GlobalOp(arr, f"__tilec_smem_{fname}",
                          ir.Attribute.parse(f"#llvm.linkage<{linkage}>"),
                          addr_space=_SHARED_ADDRSPACE, alignment=16)
        if dynamic:
            self.gfunc.attributes["tilec.dynamic_shared"] = ir.IntegerAttr.get(
                _i32(), self.shared_bytes)


# ---------------------------------------------------------------- rules

def _result(op: ir.Operation) -> ir.Value:
    return op.results[0]


@lowering("tile.program_id", "tile.num_programs")
def _program_id(L: _FuncLowering, op: ir.Operation) -> None:
    axis = _int_attr(op, "axis")
    if op.name == "tile.num_programs" and L.target.has(Feature.IMPLICIT_BLOCK_COUNT):
        L.values[_result(op)] = _amd_block_count(axis)
        return
    dim = (gpu.Dimension.x, gpu.Dimension.y, gpu.Dimension.z)[axis]
    idx = (gpu.BlockIdOp(dim) if op.name == "tile.program_id" else gpu.GridDimOp(dim)).result
    L.values[_result(op)] = arith.IndexCastOp(_i32(), idx).result


def _amd_block_count(axis: int) -> ir.Value:
    """The grid's size in workgroups along `axis` on AMD, without the device
    library: `gpu.grid_dim` lowers to a call of `__ockl_get_num_groups`, which
    tilec does not link.  Code object v5 passes it as the hidden kernel
    arguments `hidden_block_count_{x,y,z}` (u32 at byte 0, 4, 8 of the
    implicit arguments), which is what ockl itself reads."""
    const_ptr = llvm.PointerType.get(4)
    base = llvm.CallIntrinsicOp(const_ptr, ir.StringAttr.get("llvm.amdgcn.implicitarg.ptr"),
                                [], [], []).results[0]
    p = llvm.GEPOp(const_ptr, base, [], [4 * axis], ir.IntegerType.get_signless(8),
                   llvm.GEPNoWrapFlags.inbounds).result
    return llvm.LoadOp(_i32(), p, alignment=4, invariant=True).result


@lowering("tile.range")
def _range(L: _FuncLowering, op: ir.Operation) -> None:
    d = L.dist(_result(op).type)
    dim = 0 if d.sliced_dim is None else [i for i in range(d.rank) if i != d.sliced_dim][0]
    L.values[_result(op)] = L.coordinates(d, dim, _int_attr(op, "start"))


@lowering("tensor.splat")
def _splat(L: _FuncLowering, op: ir.Operation) -> None:
    d = L.dist(_result(op).type)
    v = L.splat(L.get(op.operands[0]), d.vec_len)
    L.values[_result(op)] = [v] * d.num_chunks


@lowering("arith.constant")
def _constant(L: _FuncLowering, op: ir.Operation) -> None:
    t = _result(op).type
    attr = op.attributes["value"]
    if not _is_tile(t):
        L.values[_result(op)] = arith.ConstantOp(t, attr).result
        return
    if not (isinstance(attr, ir.DenseElementsAttr) and attr.is_splat):
        raise TilecError("non-splat tile constants are not supported on GPUs yet",
                         source_loc(op.location))
    d = L.dist(t)
    (vt,) = set(L.frag_types(t))
    c = arith.ConstantOp(vt, ir.DenseElementsAttr.get_splat(vt, attr.get_splat_value())).result
    L.values[_result(op)] = [c] * d.num_chunks


@lowering("tile.expand_dims")
def _expand_dims(L: _FuncLowering, op: ir.Operation) -> None:
    # A slice layout's fragment is the fragment of the expanded tile.
    L.values[_result(op)] = L.frag(op.operands[0])


@lowering("tile.broadcast")
def _broadcast(L: _FuncLowering, op: ir.Operation) -> None:
    src, res = op.operands[0], _result(op)
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


@lowering("tile.convert_layout")
def _convert_layout(L: _FuncLowering, op: ir.Operation) -> None:
    """Through workgroup memory: every thread stores its elements at their
    row-major position, then loads the elements the new layout gives it."""
    src, res = op.operands[0], _result(op)
    if L.dist(src.type) == L.dist(res.type):
        L.values[res] = L.frag(src)
        return
    _through_memory(L, src, res, None)


@lowering("tile.reshape")
def _reshape(L: _FuncLowering, op: ir.Operation) -> None:
    """Row-major order is kept: the same exchange as a layout conversion."""
    _through_memory(L, op.operands[0], _result(op), None)


@lowering("tile.trans")
def _trans(L: _FuncLowering, op: ir.Operation) -> None:
    """Result element (i, j) is source element (j, i): read with swapped strides."""
    src = op.operands[0]
    rows, cols = tuple(src.type.shape)
    _through_memory(L, src, _result(op), [1, cols])


def linear_index(L: _FuncLowering, d: Distribution,
                 strides: list[int] | None = None) -> list[ir.Value]:
    """Per chunk of the calling thread's fragment: the vector of its elements'
    linear positions `sum(coord[dim] * strides[dim])` (default: row-major)."""
    strides = strides or [math.prod(d.shape[i + 1:]) for i in range(d.rank)]
    acc: list[ir.Value] | None = None
    for dim in range(d.rank):
        if d.shape[dim] == 1:
            continue
        coords = L.coordinates(d, dim, 0)
        if strides[dim] != 1:
            s = L.splat(L.const_i32(strides[dim]), d.vec_len)
            coords = [arith.MulIOp(c, s).result for c in coords]
        acc = coords if acc is None else [arith.AddIOp(a, c).result for a, c in zip(acc, coords)]
    if acc is None:
        acc = [L.zero(ir.VectorType.get([d.vec_len], _i32()))] * d.num_chunks
    return acc


def shared_element(L: _FuncLowering, buf: ir.Value, index: ir.Value, mem_t: ir.Type) -> ir.Value:
    """The address of element `index` (i32) of a workgroup-memory array."""
    return llvm.GEPOp(buf.type, buf, [index], [_DYNAMIC_INDEX], mem_t,
                      llvm.GEPNoWrapFlags.none).result


def store_row_major(L: _FuncLowering, src: ir.Value, buf: ir.Value, mem_t: ir.Type,
                    strides: list[int] | None = None) -> None:
    """Every thread stores its elements of tile `src` at their row-major
    positions (or at `strides`) in the workgroup-memory array `buf` (i1 widened
    to `mem_t`)."""
    ds = L.dist(src.type)
    elem = L.scalar_type(src.type.element_type)
    full = strides or [math.prod(ds.shape[i + 1:]) for i in range(ds.rank)]
    eb = axis_info.type_bytes(mem_t) if not isinstance(mem_t, llvm.PointerType) else 8
    # Whole vectors (up to 16 bytes) where a chunk's elements are adjacent in
    # `buf` and every chunk starts at a multiple of the piece (so it is aligned).
    piece = min(ds.vec_len, max(1, 16 // eb)) if mem_t == elem and full[ds.fast] == 1 and \
        all(full[d] % ds.vec_len == 0 for d in range(ds.rank) if d != ds.fast and
            ds.shape[d] > 1) else 1
    for chunk, idx in zip(L.frag(src), linear_index(L, ds, strides)):
        for i in range(0, ds.vec_len, piece):
            v = L.slice(chunk, i, piece) if piece > 1 else L.extract(chunk, i)
            if mem_t != elem:
                v = arith.ExtUIOp(mem_t, v).result
            llvm.StoreOp(v, shared_element(L, buf, L.extract(idx, i), mem_t),
                         alignment=piece * eb if piece > 1 else None)


def _through_memory(L: _FuncLowering, src: ir.Value, res: ir.Value,
                    read_strides: list[int] | None) -> None:
    """Store `src` at its row-major positions in workgroup memory; read `res`'s
    elements at `read_strides` (default: `res`'s own row-major strides)."""
    ds, dd = L.dist(src.type), L.dist(res.type)
    elem = L.scalar_type(src.type.element_type)
    mem_t = ir.IntegerType.get_signless(8) if _is_i1(elem) else elem
    buf = L.shared_buffer(mem_t, math.prod(ds.shape))
    gpu.BarrierOp()
    store_row_major(L, src, buf, mem_t)
    gpu.BarrierOp()
    out = []
    for idx in linear_index(L, dd, read_strides):
        elems = []
        for i in range(dd.vec_len):
            v = llvm.LoadOp(mem_t, shared_element(L, buf, L.extract(idx, i), mem_t)).result
            if mem_t != elem:
                v = arith.TruncIOp(elem, v).result
            elems.append(v)
        out.append(L.concat(elems) if len(elems) > 1 else L.splat(elems[0], 1))
    gpu.BarrierOp()
    L.values[res] = out


@lowering("tile.addptr")
def _addptr(L: _FuncLowering, op: ir.Operation) -> None:
    ptr, off = op.operands
    elem = tile.pointee(ptr.type.element_type if _is_tile(ptr.type) else ptr.type)
    mem_t = ir.IntegerType.get_signless(8) if _is_i1(elem) else elem
    if not _is_tile(ptr.type):
        L.values[_result(op)] = llvm.GEPOp(L.scalar_type(ptr.type), L.get(ptr), [L.get(off)],
                                           [_DYNAMIC_INDEX], mem_t, llvm.GEPNoWrapFlags.none).result
        return
    d = L.dist(ptr.type)
    offs = L.frag(off) if _is_tile(off.type) else [L.splat(L.get(off), d.vec_len)] * d.num_chunks
    (pt,) = set(L.frag_types(ptr.type))
    L.values[_result(op)] = [
        llvm.GEPOp(pt, p, [o], [_DYNAMIC_INDEX], mem_t, llvm.GEPNoWrapFlags.none).result
        for p, o in zip(L.frag(ptr), offs)]


def _elementwise(L: _FuncLowering, op: ir.Operation) -> None:
    """Any arith/math op: copied per chunk (tiles) or once (scalars)."""
    attrs = {n: op.attributes[n] for n in op.attributes}
    if not any(_is_tile(r.type) for r in op.results):
        results = lower_math_gpu.emit(L.target, op.name,
                                      [L.scalar_type(r.type) for r in op.results],
                                      [L.get(o) for o in op.operands], attrs)
        for old, r in zip(op.results, results):
            L.values[old] = r
        return
    d = L.dist(op.results[0].type)
    frags = [L.frag(o) if _is_tile(o.type) else [L.get(o)] * d.num_chunks for o in op.operands]
    rtypes = [L.frag_types(r.type)[0] for r in op.results]
    outs: list[list[ir.Value]] = [[] for _ in op.results]
    for ci in range(d.num_chunks):
        results = lower_math_gpu.emit(L.target, op.name, rtypes, [f[ci] for f in frags], attrs)
        for k, r in enumerate(results):
            outs[k].append(r)
    for old, vals in zip(op.results, outs):
        L.values[old] = vals


@lowering("scf.for")
def _for(L: _FuncLowering, op: ir.Operation) -> None:
    lb, ub, step = (L.get(v) for v in list(op.operands)[:3])
    inits = L.flat(list(op.operands)[3:])
    new = scf.ForOp(lb, ub, step, inits)
    old_body = op.regions[0].blocks[0]
    L.values[old_body.arguments[0]] = new.induction_variable
    L.bind_flat(list(old_body.arguments)[1:], list(new.inner_iter_args))
    L.lower_block(old_body, new.body)
    L.bind_flat(list(op.results), list(new.results))


@lowering("scf.if")
def _if(L: _FuncLowering, op: ir.Operation) -> None:
    types: list[ir.Type] = []
    for r in op.results:
        types.extend(L.frag_types(r.type))
    has_else = len(op.regions[1].blocks) > 0
    new = scf.IfOp(L.get(op.operands[0]), types, has_else=has_else)
    L.lower_block(op.regions[0].blocks[0], new.then_block)
    if has_else:
        L.lower_block(op.regions[1].blocks[0], new.else_block)
    L.bind_flat(list(op.results), list(new.results))


@lowering("scf.while")
def _while(L: _FuncLowering, op: ir.Operation) -> None:
    inits = L.flat(list(op.operands))
    types: list[ir.Type] = []
    for r in op.results:
        types.extend(L.frag_types(r.type))
    new = scf.WhileOp(types, inits)
    for old_region, region, arg_types in ((op.regions[0], new.before, [v.type for v in inits]),
                                          (op.regions[1], new.after, types)):
        old_block = old_region.blocks[0]
        block = region.blocks.append(*arg_types)
        L.bind_flat(list(old_block.arguments), list(block.arguments))
        L.lower_block(old_block, block)
    L.bind_flat(list(op.results), list(new.results))


@lowering("scf.condition")
def _condition(L: _FuncLowering, op: ir.Operation) -> None:
    scf.ConditionOp(L.get(op.operands[0]), L.flat(list(op.operands)[1:]))


@lowering("scf.yield")
def _yield(L: _FuncLowering, op: ir.Operation) -> None:
    scf.YieldOp(L.flat(list(op.operands)))


@lowering("func.return")
def _return(L: _FuncLowering, op: ir.Operation) -> None:
    if len(op.operands):
        raise TilecError("kernels cannot return values", source_loc(op.location))
    gpu.ReturnOp([])


NAME = "convert-tile-to-gpu"

def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    ConvertTileToGPU().run(module, target, options.num_warps)


# Rule families kept in their own files register themselves on import.
from tilec.passes import lower_atomic_gpu, lower_reduce_gpu  # noqa: E402,F401
from tilec.passes import lower_memory_gpu  # noqa: E402,F401
from tilec.passes import lower_math_gpu  # noqa: E402
from tilec.passes import lower_dot_gpu  # noqa: E402,F401
