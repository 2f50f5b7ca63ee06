"""Per-function state of `convert-tile-to-gpu` and the helpers every rule uses.

`FuncLowering` walks one kernel, maps each tile-level value to its per-thread
form (a scalar, or the list of 1-D vector chunks of the calling thread's
fragment, `layouts.Distribution`), and dispatches each op to the rule the pass's
`RuleTable` gives for (op, target).  An op without a rule of its own takes its
dialect's rule (`arith.*`, `math.*`); no rule at all is a `CompilerBugError`
naming the op, the target and the user's line.  Rules and target hooks
receive the `FuncLowering` as `L` and build at the current insertion point and
location (the matched op's).  A target hook (`L.hook("hook.masked-load")`) is
looked up like an op rule; target rule files use only `L` and its methods, so
they import nothing from this package at run time (no import cycle between the
pass and the target rule files).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence, Union

import numpy as np
from mlir import ir
from mlir.dialects import arith, gpu, llvm, vector

from tilec.dialects import tile
from tilec.errors import CompilerBugError, TilecError, source_loc
from tilec.passes.analysis import axis_info
from tilec.passes.analysis.layouts import Distribution, log2
from tilec.passes.gpu.barriers import drop_repeated, drop_trailing
from tilec.passes.rules import RuleTable
from tilec.targets import Feature, Target

Lowered = Union[ir.Value, list[ir.Value]]
Rule = Callable[..., Any]
DYNAMIC_INDEX = -2147483648   # kDynamicIndex of llvm.getelementptr
GLOBAL_ADDRSPACE = 1
SHARED_ADDRSPACE = 3


def _no_wrap(signed_only: bool) -> ir.Attribute:
    return ir.Attribute.parse(f"#arith.overflow<{'nsw' if signed_only else 'nsw, nuw'}>")


def i32() -> ir.IntegerType:
    return ir.IntegerType.get_signless(32)


def is_tile(t: ir.Type) -> bool:
    return isinstance(t, ir.RankedTensorType)


def int_attr(op: ir.Operation, name: str) -> int:
    return int(ir.IntegerAttr(op.attributes[name]).value)


def is_i1(t: ir.Type) -> bool:
    return isinstance(t, ir.IntegerType) and t.width == 1


def result(op: ir.Operation) -> ir.Value:
    return op.results[0]


def segments(op: ir.Operation) -> list[int]:
    """`operandSegmentSizes` of an op with optional operands."""
    return list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))


def _tma_ids(func: ir.Operation) -> list[int]:
    """The tensor maps (`tma` ids) the kernel's `tile.tma_copy`s and
    `tile.tma_store`s use, sorted."""
    found: set[int] = set()

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in ("tile.tma_copy", "tile.tma_store"):
            found.add(int(ir.IntegerAttr(op.attributes["tma"]).value))
        return ir.WalkResult.ADVANCE

    func.walk(visit)
    return sorted(found)


class FuncLowering:
    """The lowering of one kernel (see the module docstring)."""

    def __init__(self, func: ir.Operation, gmod: ir.Block, target: Target, num_warps: int,
                 rules: RuleTable[Rule]) -> None:
        self.rules = rules
        self._hooks: dict[str, Rule] = {}
        self.func = func
        self.gmod = gmod
        self.target = target
        self.num_warps = num_warps
        self.values: dict[ir.Value, Lowered] = {}
        self.axis = axis_info.analyze(func)
        self.tid: ir.Value | None = None
        self.thread_offset = 0   # subtracted from a fresh %tid.x (a producer's warps)
        self._entry: ir.Block | None = None
        self._warp_first: ir.Value | None = None
        self.shared_bytes = 0
        self.shared_align = 16
        self.shared_peak = 0
        self.shared_regions: dict[ir.Value, tuple[int, int]] = {}
        # Bytes below this were released while threads may still read them (`release_shared(
        # synced=False)`): an allocation reaching below it starts with a barrier.
        self.shared_unsynced = 0
        self.shared_reused = False      # such a barrier was emitted
        # Results of asynchronous matrix products (`tile.mma`): the scalars
        # their wait must pass through before anything reads them.
        self.pending: dict[ir.Value, list[ir.Value]] = {}
        # Tensor maps of the kernel's `tile.tma_copy`/`tma_store`s (`tile.tensormaps` id -> the
        # generic pointer to its 128-byte grid-constant parameter, after the kernel's own), boxes.
        self.tensormaps: dict[int, ir.Value] = {}
        self.tensormap_boxes: dict[int, list[int]] = {}
        # targets/nvidia/tma.py `_issuer`: (block, live predicate) -> the elected lane's predicate
        self.issuers: dict[tuple[ir.Block, ir.Value], ir.Value] = {}

    # -- types
    def scalar_type(self, t: ir.Type) -> ir.Type:
        if tile.is_ptr(t):
            return llvm.PointerType.get(GLOBAL_ADDRSPACE)
        return t

    def dist(self, t: ir.Type) -> Distribution:
        layout = tile.layout_of(t)
        if layout is None:
            raise CompilerBugError(f"convert-tile-to-gpu needs laid-out tiles, got {t}")
        return Distribution.of(layout, tuple(t.shape))

    def frag_types(self, t: ir.Type) -> list[ir.Type]:
        if not is_tile(t):
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
            self.values[v] = news[i:i + n] if is_tile(v.type) else news[i]
            i += n

    # -- driver
    def run(self) -> None:
        f = self.func
        name = ir.StringAttr(f.attributes["sym_name"]).value
        entry = f.regions[0].blocks[0]
        arg_types = [self.scalar_type(a.type) for a in entry.arguments]
        maps = _tma_ids(f)
        own = len(arg_types)
        arg_types += [llvm.PointerType.get()] * len(maps)
        for a in entry.arguments:
            if is_tile(a.type):
                raise TilecError(f"kernel '{name}': tile arguments are not supported",
                                 source_loc(f.location))
        with ir.InsertionPoint(self.gmod):
            gf = gpu.GPUFuncOp(ir.FunctionType.get(arg_types, []), sym_name=name, kernel=True,
                               known_block_size=[self.num_warps * self.target.warp_size, 1, 1],
                               loc=f.location)
        self.gfunc = gf
        if "tile.num_ctas" in f.attributes:   # tile-split-ctas: a cluster per program
            ctas = int_attr(f, "tile.num_ctas")
            gf.attributes["nvvm.cluster_dim"] = ir.DenseI32ArrayAttr.get([ctas, 1, 1])
        block = gf.body.blocks.append(*arg_types, arg_locs=[a.location for a in entry.arguments]
                                      + [f.location] * len(maps))
        for old, new in zip(entry.arguments, block.arguments):
            self.values[old] = new
        self.tensormaps = dict(zip(maps, list(block.arguments)[own:]))
        with ir.InsertionPoint(block), f.location:
            tid = gpu.ThreadIdOp(gpu.Dimension.x).result
            self.tid = arith.IndexCastOp(i32(), tid).result
        self._entry = block
        self.lower_block(entry, block)
        drop_repeated(gf.operation)
        drop_trailing(gf.operation)
        self.finish_shared()
        if maps:
            self._record_tensormaps(maps)

    def _record_tensormaps(self, maps: list[int]) -> None:
        """The recipes of the kernel's tensor-map parameters, in parameter
        order, with their boxes, as the gpu.func attribute `tilec.tensormaps`
        (the back end marks those parameters grid constants; the runtime
        encodes them at launch)."""
        import json
        known = json.loads(ir.StringAttr(self.func.attributes["tile.tensormaps"]).value)
        out = [{**known[str(i)], "box": self.tensormap_boxes[i]} for i in maps]
        self.gfunc.attributes["tilec.tensormaps"] = ir.StringAttr.get(
            json.dumps(out, sort_keys=True))

    def lower_block(self, old: ir.Block, new: ir.Block) -> None:
        with ir.InsertionPoint(new):
            for op in old.operations:
                self.lower_op(op.operation)

    def lower_op(self, op: ir.Operation) -> None:
        key = op.name
        if key not in self.rules.by_key:
            key = op.name.split(".")[0] + ".*"
            if key not in self.rules.by_key:
                key = op.name
        rule = self.rules.get(key, self.target, str(source_loc(op.location) or ""))
        with op.location:
            rule(self, op)

    def hook(self, key: str) -> Rule:
        """The target hook `key` (`hook.masked-load`, ...): the target's variant
        where it has the feature, else the generic one."""
        fn = self._hooks.get(key)
        if fn is None:
            fn = self._hooks[key] = self.rules.get(key, self.target)
        return fn

    # -- small builders (insert at the current point, with the current location)
    def warp_first_thread(self) -> ir.Value:
        """The thread index of lane 0 of the calling warp, read through
        `gpu.shuffle idx` once at the kernel's entry: the device compiler then
        knows the value (and what is computed from it alone) is the same in
        every lane (ptxas keeps it in uniform registers)."""
        if self._warp_first is None:
            assert self._entry is not None
            with ir.InsertionPoint.at_block_begin(self._entry), self.func.location:
                tid = arith.IndexCastOp(i32(), gpu.ThreadIdOp(gpu.Dimension.x).result).result
                self._warp_first = gpu.ShuffleOp(
                    tid, self.const_i32(0), self.const_i32(self.target.warp_size),
                    gpu.ShuffleMode.IDX).results[0]
        return self._warp_first

    def const_i32(self, v: int) -> ir.Value:
        return arith.ConstantOp(i32(), v).result

    def const_vec(self, t: ir.VectorType, values: Sequence[int | float]) -> ir.Value:
        et = t.element_type
        if len(set(values)) == 1:
            attr = ir.DenseElementsAttr.get_splat(t, self._scalar_attr(et, values[0]))
        elif et == i32():
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
        vt = ir.VectorType.get([d.vec_len], i32())
        dyn: ir.Value | None = None
        last = self.target.has(Feature.CHUNK_CONSTANTS_LAST)
        if isinstance(base, ir.Value):
            if offset and not last:
                base = arith.AddIOp(base, self.const_i32(offset)).result
            dyn = self.splat(base, d.vec_len)
            if not last:
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
                # base + chunk constant; with `last` as an add that cannot wrap
                # (coordinates are small), whose constant LLVM can then carry
                # through extensions and address arithmetic into immediates.
                flags = {"overflowFlags": _no_wrap(min(offs) < 0)} if last else {}
                cache[offs] = c if dyn is None else arith.AddIOp(dyn, c, **flags).result
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
        if mask is not None and is_tile(mask.type):
            w = min(w, self.axis.get(mask).constancy[f])
        align = w * eb if w > 1 else math.gcd(info.divisibility[f], eb)
        return w, align

    def shared_buffer(self, elem: ir.Type, count: int, align: int = 16) -> ir.Value:
        """A pointer to a fresh workgroup-memory array of `count` elements: an
        `align`-byte-aligned (16 by default; 1024 for swizzled MMA operands)
        slice of the kernel's one workgroup-memory region, whose global
        `finish_shared` creates once the total size is known."""
        fname = ir.StringAttr(self.func.attributes["sym_name"]).value
        self.shared_align = max(self.shared_align, align)
        offset = (self.shared_bytes + align - 1) // align * align
        start = self.shared_bytes
        self.shared_bytes = offset + count * max(1, axis_info.type_bytes(elem) if not isinstance(
            elem, llvm.PointerType) else 8)
        self.shared_peak = max(self.shared_peak, self.shared_bytes)
        if self.shared_bytes > self.target.shared_bytes:
            raise TilecError(f"kernel '{fname}' needs {self.shared_bytes} bytes of workgroup "
                             f"memory; {self.target.name} has {self.target.shared_bytes}",
                             source_loc(ir.Location.current))
        ptr = llvm.PointerType.get(SHARED_ADDRSPACE)
        base = llvm.AddressOfOp(ptr, f"__tilec_smem_{fname}").result
        if offset == 0:
            out = base
        else:
            out = llvm.GEPOp(ptr, base, [], [offset], ir.IntegerType.get_signless(8),
                             llvm.GEPNoWrapFlags.inbounds).result
        self.shared_regions[out] = (start, self.shared_bytes)
        if offset < self.shared_unsynced:
            gpu.BarrierOp()         # the bytes' last readers are done before new writes
            self.shared_unsynced = 0
            self.shared_reused = True
        return out

    def release_shared(self, buf: ir.Value, synced: bool = True) -> None:
        """`buf` (from `shared_buffer`) is dead: if it is the latest allocation,
        later ones may reuse its bytes (a stack; the peak sizes the region).
        `synced` False: no barrier follows its last reads yet; an allocation
        that reuses the bytes begins with one."""
        start, end = self.shared_regions.pop(buf)
        if not synced:
            self.shared_unsynced = max(self.shared_unsynced, end)
        if end == self.shared_bytes:
            self.shared_bytes = start

    def finish_shared(self) -> None:
        """Create the workgroup-memory region: a static array, or where the target
        caps static shared memory (`dynamic_shared`: 48 KiB on NVIDIA) and the
        kernel needs more, an extern array sized at launch (the size is recorded
        as the gpu.func attribute `tilec.dynamic_shared`)."""
        if self.shared_peak == 0:
            return
        fname = ir.StringAttr(self.func.attributes["sym_name"]).value
        dynamic = self.target.has(Feature.DYNAMIC_SHARED) and self.shared_peak > (self.target.static_shared_bytes or self.target.shared_bytes)
        count = 0 if dynamic else self.shared_peak
        # The llvm dialect's Python bindings have no ArrayType builder.
        arr = ir.Type.parse(f"!llvm.array<{count} x i8>")
        linkage = "external" if dynamic else "internal"
        with ir.InsertionPoint(self.gfunc), self.func.location:
            llvm.GlobalOp(arr, f"__tilec_smem_{fname}",
                          ir.Attribute.parse(f"#llvm.linkage<{linkage}>"),
                          addr_space=SHARED_ADDRSPACE, alignment=self.shared_align)
        if dynamic:
            self.gfunc.attributes["tilec.dynamic_shared"] = ir.IntegerAttr.get(
                i32(), self.shared_peak)


def linear_index(L: FuncLowering, d: Distribution,
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
        acc = [L.zero(ir.VectorType.get([d.vec_len], i32()))] * d.num_chunks
    return acc


def shared_element(L: FuncLowering, buf: ir.Value, index: ir.Value, mem_t: ir.Type) -> ir.Value:
    """The address of element `index` (i32) of a workgroup-memory array."""
    return llvm.GEPOp(buf.type, buf, [index], [DYNAMIC_INDEX], mem_t,
                      llvm.GEPNoWrapFlags.none).result


def store_pieces(L: FuncLowering, src: ir.Value, indices: list[ir.Value], buf: ir.Value,
                 mem_t: ir.Type, piece: int) -> None:
    """Every thread stores its chunks of tile `src` into the workgroup-memory
    array `buf`, `piece` elements at a time (a vector store where piece > 1),
    element i of a chunk at `indices[chunk][i]` (i1 widened to `mem_t`)."""
    ds = L.dist(src.type)
    elem = L.scalar_type(src.type.element_type)
    eb = axis_info.type_bytes(mem_t) if not isinstance(mem_t, llvm.PointerType) else 8
    for chunk, idx in zip(L.frag(src), indices):
        for i in range(0, ds.vec_len, piece):
            v = L.slice(chunk, i, piece) if piece > 1 else L.extract(chunk, i)
            if mem_t != elem:
                v = arith.ExtUIOp(mem_t, v).result
            llvm.StoreOp(v, shared_element(L, buf, L.extract(idx, i), mem_t),
                         alignment=piece * eb if piece > 1 else None)


def store_row_major(L: FuncLowering, src: ir.Value, buf: ir.Value, mem_t: ir.Type,
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
    store_pieces(L, src, linear_index(L, ds, strides), buf, mem_t, piece)
