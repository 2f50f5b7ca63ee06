"""NVIDIA fifth-generation tensor-core rules (`Feature.TCGEN05`, sm_100a):
`tile.dot` and the pipeliner's `tile.mma` on `tcgen05.mma`, the accumulator in
tensor memory (TMEM).

| key | feature | lowering |
|---|---|---|
| `hook.dot-tcgen05` | `TCGEN05` | a register-operand `tile.dot`: a, b stored into swizzled shared memory, acc into TMEM, `tcgen05.mma`, commit, wait, `tcgen05.ld`; the operand buffers are released after it |
| `hook.mma-tcgen05` | `TCGEN05` | `tile.mma {kind = "tcgen05"}` (passes/gpu/dot.py dispatches on kind): one thread issues the k-steps on a ring slot and commits them to an mbarrier |
| `tile.mma_wait` | `TCGEN05` | `{pending = 1}`: wait for the previous iteration's product; `{pending = 0}`: wait for the last one, `tcgen05.ld` the accumulator |
| `func.return` | `TCGEN05` | `tcgen05.dealloc` of the kernel's TMEM (where it has some), then `gpu.return` |

Tensor memory: at the kernel's entry warp 0 runs `tcgen05.alloc` of
`ncols` columns (a power of two >= 32 covering the widest tcgen05 dot's N),
which writes the TMEM address into a 24-byte shared-memory global
(`__tilec_tcgen05_<kernel>`: the address, then two mbarriers), and
`tcgen05.relinquish_alloc_permit`; at the return it runs `tcgen05.dealloc`.
TMEM addresses are lane << 16 | column.  With M = 128 (cta_group::1) row i of
the f32 accumulator D lives in lane i and column j in column j, and warp w can
access only lanes 32 (w % 4) .. + 31: `tcgen05.ld.32x32b.xN` gives thread t of
warp w row 32 (w % 4) + t and N consecutive columns, which is
`layouts.tcgen05_accumulator_layout` (8 warps: warps w and w + 4 take the
column halves).  The loaded values pass *through* an inline-asm
`tcgen05.wait::ld` (tied operands), so nothing reads them before they arrive;
the init accumulator is written with `tcgen05.st` before the first product.

Operands: `layouts.SwizzledTile` (128-byte swizzle, 1024-byte aligned), A
[128, K] K-major with rows in order, B [K, N] N-major or (`b.T`, the ring's
`tile.b_kmajor`) [N, K] K-major, the rings `tile-pipeline` fills with
`cp.async`; f16/bf16 on `.kind::f16`, fp8 (`tile.mma_fp8`: the operands are
raw bytes) on `.kind::f8f6f4`, f32 with `input_precision = "tf32"` on
`.kind::tf32` (register operands only: their tf32 rounding stands between
the loads and the dot, so tile-pipeline leaves the loop alone), 32 bytes of
K per instruction in every case.  The
shared memory and instruction descriptors, the per-k-step starts and the
TMEM columns per thread are computed in tcgen05_descriptors.py (PTX ISA
9.7.16.4.1 Table 40, 9.7.16.4.2 Table 42); each descriptor is built once per
product and moved along K by adding to its address field.

Completion: `tcgen05.mma` and `tcgen05.commit` are issued by thread 0; the
commit makes an mbarrier arrive once every earlier product is done.  In the
pipelined loop (`tile-pipeline`: slot = counter % S, the counter the loop's
last iteration argument), product j commits to barrier j % 2; `mma_wait
{pending = 1}` waits for product j - 1 (barrier (j-1) % 2, phase parity
((j-1) >> 1) & 1; for j = 0 parity 1 of a fresh barrier, which passes), so
the slot it read may be overwritten; after the loop the wait is for product
n - 1 (n the final counter).  The barriers are initialised before each loop
(with the `tcgen05.st` of the init accumulator and a barrier) and invalidated
after its last wait, so every loop starts at phase 0 (a persistent kernel runs
one per tile).  `cp.async` data reaches the MMA's async proxy through the
`fence.proxy.async` after `tile.async_wait` (async_copy.py).

Upstream ops used: `nvvm.tcgen05.{alloc,relinquish_alloc_permit,dealloc,mma,
commit,ld,st,wait,fence}`, `nvvm.mbarrier.{init,try_wait.parity,inval}`; inline
PTX only for the tied `tcgen05.wait::ld`.  No Blackwell GPU exists on this
project's machines: the output is checked by ptxas -arch=sm_100a and by the
emulation in tests/test_tcgen05.py, never executed.

Nearest upstream analogue: Triton's `MMAv5.cpp` / `TensorMemoryToLLVM.cpp`;
CUTLASS's `SM100_MMA_F16BF16_SS` with `UMMA::InstrDescriptor`.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

from mlir import ir
from mlir.dialects import arith, gpu, llvm, nvvm, scf, vector

from tilec.errors import CompilerBugError, TilecError, source_loc
from tilec.passes.analysis.layouts import Distribution, SwizzledTile, tcgen05_accumulator_layout
from tilec.passes.rules import RuleSet
from tilec.targets import Feature
from tilec.targets.nvidia.tcgen05_descriptors import (
    ELEM_BYTES, K_STEP_BYTES, M, columns, instr_descriptor, k_step_offsets, mma_kind,
    smem_descriptor, strides,
)
from tilec.targets.nvidia.wgmma import fence_async_shared, ring_tile, stage_registers

if TYPE_CHECKING:
    from tilec.passes.gpu.context import FuncLowering, Rule

RULES: RuleSet[Rule] = RuleSet("nvidia-tcgen05")
_STATE_BYTES = 24         # TMEM address (4 bytes, padded to 8), two mbarriers
_LD_PIECE = 32            # columns per tcgen05.ld / st
TRY_WAIT_TICKS = 0x989680  # try_wait suspend-time hint (ns)


# -- per-kernel state
@dataclass
class _Tmem:
    state: ir.Value        # !llvm.ptr<3>: the state global
    taddr: ir.Value        # i32: TMEM address of the allocation
    ncols: int
    ready: set[ir.Operation] = field(default_factory=set)   # loops set up


_KERNELS: "weakref.WeakKeyDictionary[FuncLowering, _Tmem]" = weakref.WeakKeyDictionary()
_COLUMNS: "weakref.WeakKeyDictionary[FuncLowering, int]" = weakref.WeakKeyDictionary()


def _i32() -> ir.IntegerType:
    return ir.IntegerType.get_signless(32)


def _c(v: int) -> ir.Value:
    return arith.ConstantOp(_i32(), v).result


def _add(a: ir.Value, b: ir.Value | int) -> ir.Value:
    if isinstance(b, int):
        if b == 0:
            return a
        b = arith.ConstantOp(a.type, b).result
    return arith.AddIOp(a, b).result


def _tmem_ptr(addr: ir.Value) -> ir.Value:
    return llvm.IntToPtrOp(llvm.PointerType.get(6), addr).result


def _then(cond: ir.Value) -> ir.InsertionPoint:
    """An insertion point in a fresh `scf.if cond` (its yield already there)."""
    if_op = scf.IfOp(cond)
    with ir.InsertionPoint(if_op.then_block):
        term = scf.YieldOp([])
    return ir.InsertionPoint(term)


def kernel_columns(L: FuncLowering) -> int:
    """TMEM columns the kernel's tcgen05 dots need (0: it has none)."""
    cached = _COLUMNS.get(L)
    if cached is not None:
        return cached
    widest = [0]

    def visit(op: ir.Operation) -> ir.WalkResult:
        attr = "tile.mma" if op.name == "tile.dot" else "kind" if op.name == "tile.mma" else None
        if attr and attr in op.attributes and ir.StringAttr(op.attributes[attr]).value == "tcgen05":
            widest.append(ir.RankedTensorType(op.results[0].type).shape[1])
        return ir.WalkResult.ADVANCE

    L.func.walk(visit)
    _COLUMNS[L] = cols = columns(max(widest)) if max(widest) else 0
    return cols


def _tmem(L: FuncLowering) -> _Tmem:
    """The kernel's TMEM allocation, emitted at its entry the first time a rule asks."""
    st = _KERNELS.get(L)
    if st is not None:
        return st
    assert L.tid is not None
    fname = ir.StringAttr(L.func.attributes["sym_name"]).value
    name = f"__tilec_tcgen05_{fname}"
    with ir.InsertionPoint(L.gfunc):
        llvm.GlobalOp(ir.Type.parse(f"!llvm.array<{_STATE_BYTES} x i8>"), name,
                      ir.Attribute.parse("#llvm.linkage<internal>"), addr_space=3, alignment=16)
    owner = L.tid.owner
    assert isinstance(owner, ir.OpView)
    ops = list(owner.operation.block.operations)
    at = next(i for i, o in enumerate(ops) if o.operation == owner.operation)
    ncols = kernel_columns(L)
    ip = ir.InsertionPoint(ops[at + 1].operation) if at + 1 < len(ops) else \
        ir.InsertionPoint.current
    with ip:
        state = llvm.AddressOfOp(llvm.PointerType.get(3), name).result
        with _then(arith.CmpIOp(arith.CmpIPredicate.ult, L.tid, _c(32)).result):
            nvvm.Tcgen05AllocOp(state, _c(ncols))
            nvvm.Tcgen05RelinquishAllocPermitOp()
            nvvm.Tcgen05FenceOp(nvvm.Tcgen05FenceKind.BEFORE_THREAD_SYNC)
        gpu.BarrierOp()
        nvvm.Tcgen05FenceOp(nvvm.Tcgen05FenceKind.AFTER_THREAD_SYNC)
        taddr = llvm.LoadOp(_i32(), state).result
    st = _KERNELS[L] = _Tmem(state, taddr, ncols)
    return st


def _barrier(st: _Tmem, index: ir.Value | int) -> ir.Value:
    """mbarrier `index` (0 or 1) of the state global."""
    ptr = st.state.type
    if isinstance(index, int):
        return llvm.GEPOp(ptr, st.state, [], [8 + 8 * index], ir.IntegerType.get_signless(8),
                          llvm.GEPNoWrapFlags.inbounds).result
    off = _add(arith.ShLIOp(index, _c(3)).result, 8)
    return llvm.GEPOp(ptr, st.state, [off], [-2147483648], ir.IntegerType.get_signless(8),
                      llvm.GEPNoWrapFlags.none).result


def _is_thread0(L: FuncLowering) -> ir.Value:
    assert L.tid is not None
    return arith.CmpIOp(arith.CmpIPredicate.eq, L.tid, _c(0)).result


def _init_barriers(L: FuncLowering, st: _Tmem, count: int) -> None:
    t0 = _is_thread0(L)
    for i in range(count):
        nvvm.MBarrierInitOp(_barrier(st, i), _c(1), predicate=t0)
    nvvm.FenceMbarrierInitOp()


def _inval_barriers(L: FuncLowering, st: _Tmem, count: int) -> None:
    with _then(_is_thread0(L)):
        for i in range(count):
            nvvm.MBarrierInvalOp(_barrier(st, i))


def _wait(st: _Tmem, index: ir.Value | int, parity: ir.Value | int) -> None:
    nvvm.MBarrierTryWaitParityOp(_barrier(st, index),
                                 parity if isinstance(parity, ir.Value) else _c(parity),
                                 _c(TRY_WAIT_TICKS))


def _wait_for_product(st: _Tmem, j: ir.Value) -> None:
    """Wait until product j (committed to barrier j % 2) is done; j = -1 passes."""
    _wait(st, arith.AndIOp(j, _c(1)).result,
          arith.AndIOp(arith.ShRSIOp(j, _c(1)).result, _c(1)).result)


# -- accumulator <-> TMEM
def _check_layout(L: FuncLowering, d: Distribution, m: int, n: int) -> None:
    want = tcgen05_accumulator_layout(m, n, 16, L.target.warp_size, L.num_warps)
    if want is None or d.blocked != want or d.sliced_dim is not None:
        raise CompilerBugError(f"tcgen05 accumulator [{m}, {n}] in layout {d.blocked}, "
                               f"expected {want}")


def _thread_columns(L: FuncLowering, st: _Tmem, n: int) -> tuple[ir.Value, int]:
    """The calling thread's TMEM address (its lane, its first column) and how
    many consecutive columns it holds (`thread_tmem_start`; the lane id is
    the hardware's part of the address, so only the warp's base is added)."""
    assert L.tid is not None
    lane = arith.ShLIOp(arith.AndIOp(L.tid, _c(0x60)).result, _c(16)).result
    addr = arith.AddIOp(st.taddr, lane).result
    if L.num_warps == 4:
        return addr, n
    half = arith.MulIOp(arith.ShRUIOp(L.tid, _c(7)).result, _c(n // 2)).result
    return arith.AddIOp(addr, half).result, n // 2


def _tied(text: str, values: list[ir.Value]) -> list[ir.Value]:
    """`text` as inline PTX with `values` (i32) passed through it."""
    n = len(values)
    st = llvm.StructType.get_literal([_i32()] * n)
    cons = ",".join(["=r"] * n + [str(j) for j in range(n)])
    out = llvm.InlineAsmOp(st, values, text, cons, has_side_effects=True).result
    return [llvm.ExtractValueOp(_i32(), out, [j]).result for j in range(n)]


def _converge() -> None:
    """`bar.warp.sync -1`: the warp's threads leave their mbarrier wait loops
    one by one; the `.sync.aligned` TMEM accesses need the whole warp."""
    nvvm.SyncWarpOp(_c(-1))


def load_accumulator(L: FuncLowering, st: _Tmem, d: Distribution, n: int) -> list[ir.Value]:
    """`tcgen05.ld.32x32b` of the thread's columns, `tcgen05.wait::ld`, and the
    fragment chunks of layout `d` (chunk order = column order)."""
    _check_layout(L, d, M, n)
    base, cols = _thread_columns(L, st, n)
    shape = ir.Attribute.parse("#nvvm.tcgen05_ldst_shape<shape_32x32b>")
    _converge()
    raw: list[ir.Value] = []
    for c0 in range(0, cols, _LD_PIECE):
        w = min(_LD_PIECE, cols - c0)
        v = nvvm.Tcgen05LdOp(ir.VectorType.get([w], _i32()), shape,
                             _tmem_ptr(_add(base, c0))).result
        raw.extend(L.extract(v, i) for i in range(w))
    raw = _tied("tcgen05.wait::ld.sync.aligned;", raw)
    f32 = ir.F32Type.get()
    vals = [arith.BitcastOp(f32, v).result for v in raw]
    return [L.concat(vals[i:i + d.vec_len]) if d.vec_len > 1 else L.splat(vals[i], 1)
            for i in range(0, cols, d.vec_len)]


def store_accumulator(L: FuncLowering, st: _Tmem, d: Distribution, n: int,
                      chunks: Sequence[ir.Value]) -> None:
    """`tcgen05.st.32x32b` of the fragment `chunks` (layout `d`) into TMEM and
    `tcgen05.wait::st`."""
    _check_layout(L, d, M, n)
    base, cols = _thread_columns(L, st, n)
    flat = [L.extract(c, i) for c in chunks for i in range(d.vec_len)]
    bits = [arith.BitcastOp(_i32(), v).result for v in flat]
    shape = ir.Attribute.parse("#nvvm.tcgen05_ldst_shape<shape_32x32b>")
    _converge()
    for c0 in range(0, cols, _LD_PIECE):
        w = min(_LD_PIECE, cols - c0)
        piece = vector.FromElementsOp(ir.VectorType.get([w], _i32()), bits[c0:c0 + w]).result
        nvvm.Tcgen05StOp(shape, _tmem_ptr(_add(base, c0)), piece)
    nvvm.Tcgen05WaitOp(nvvm.Tcgen05WaitKind.STORE)


# -- the product
def _descriptor(L: FuncLowering, buf: ir.Value, off: ir.Value | int, lbo: int,
                sbo: int) -> ir.Value:
    i64 = ir.IntegerType.get_signless(64)
    addr = _add(llvm.PtrToIntOp(_i32(), buf).result, off)
    enc = arith.ShRUIOp(arith.AndIOp(addr, _c(0x3FFFF)).result, _c(4)).result
    return arith.OrIOp(arith.ExtUIOp(i64, enc).result,
                       arith.ConstantOp(i64, smem_descriptor(0, lbo, sbo)).result).result


def operand_type(op: ir.Operation, elem: ir.Type) -> str:
    """`e4m3`/`e5m2` for an fp8 product (`tile.mma_fp8`: its operands are raw
    bytes), `tf32` for f32 operands (`input_precision = "tf32"`: tile-dot-precision
    rounded them, so the tensor core's truncation to tf32 is exact), else
    `bf16`/`f16`."""
    if "tile.mma_fp8" in op.attributes:
        return ir.StringAttr(op.attributes["tile.mma_fp8"]).value
    if isinstance(elem, ir.F32Type):
        return "tf32"
    return "bf16" if isinstance(elem, ir.BF16Type) else "f16"


def issue(L: FuncLowering, st: _Tmem, atype: str, a: tuple[ir.Value, ir.Value | int],
          b: tuple[ir.Value, ir.Value | int], ta: SwizzledTile, tb: SwizzledTile, n: int,
          b_kmajor: bool, bar: ir.Value | int) -> None:
    """Thread 0: every k-step's `tcgen05.mma` of A at `a` (buffer, byte offset)
    and B at `b` into the kernel's TMEM, then `tcgen05.commit` to mbarrier `bar`."""
    kind = ir.Attribute.parse(f"#nvvm.tcgen05_mma_kind<{mma_kind(atype)}>")
    group = ir.Attribute.parse("#nvvm.cta_group<cta_1>")
    with _then(_is_thread0(L)):
        nvvm.Tcgen05FenceOp(nvvm.Tcgen05FenceKind.AFTER_THREAD_SYNC)
        da = _descriptor(L, a[0], a[1], *strides(ta, True))
        db = _descriptor(L, b[0], b[1], *strides(tb, b_kmajor))
        idesc = _c(instr_descriptor(atype, M, n, False, not b_kmajor))
        on = arith.ConstantOp(ir.IntegerType.get_signless(1), 1).result
        d_tmem = _tmem_ptr(st.taddr)
        for k0 in range(0, ta.cols, K_STEP_BYTES // ta.elem_bytes):
            oa, ob = k_step_offsets(ta, tb, k0, b_kmajor)
            nvvm.Tcgen05MMAOp(kind, group, d_tmem, _add(da, oa >> 4), _add(db, ob >> 4),
                              idesc, on)
        nvvm.Tcgen05CommitOp(_barrier(st, bar))


def _name(op: ir.Operation | ir.OpView) -> str:
    return op.operation.name if isinstance(op, ir.OpView) else op.name


def _ring_counter(L: FuncLowering, mma: ir.Operation) -> ir.Value:
    """The pipelined loop's slot counter j (`tile.mma`'s slot is `arith.remui j, S`)."""
    owner = mma.operands[1].owner
    if not (isinstance(owner, ir.OpView) and owner.operation.name == "arith.remui"):
        raise CompilerBugError("tcgen05 tile.mma: its slot is not `counter % stages`")
    return L.get(owner.operation.operands[0])


def _setup_loop(L: FuncLowering, st: _Tmem, op: ir.Operation, d: Distribution, n: int) -> None:
    """Before the lowered loop holding `op`: fresh barriers, the init
    accumulator (the loop's init of `op`'s acc) in TMEM, a barrier."""
    parent = op.parent
    loop = parent.operation if isinstance(parent, ir.OpView) else parent
    if loop in st.ready:
        return
    st.ready.add(loop)
    acc = op.operands[4]
    if loop.name != "scf.for" or not isinstance(acc, ir.BlockArgument):
        raise CompilerBugError("tcgen05 tile.mma: the accumulator is not a loop argument")
    init = loop.operands[3 + ir.BlockArgument(acc).arg_number - 1]
    new_loop = ir.InsertionPoint.current.block.owner
    with ir.InsertionPoint(new_loop):
        _init_barriers(L, st, 2)
        store_accumulator(L, st, d, n, L.frag(init))
        nvvm.Tcgen05FenceOp(nvvm.Tcgen05FenceKind.BEFORE_THREAD_SYNC)
        gpu.BarrierOp()


def _finish(L: FuncLowering, st: _Tmem, d: Distribution, n: int, count: int) -> list[ir.Value]:
    """After the last product's wait: the accumulator in registers, TMEM free
    for the next user, the barriers invalidated."""
    nvvm.Tcgen05FenceOp(nvvm.Tcgen05FenceKind.AFTER_THREAD_SYNC)
    chunks = load_accumulator(L, st, d, n)
    nvvm.Tcgen05FenceOp(nvvm.Tcgen05FenceKind.BEFORE_THREAD_SYNC)
    gpu.BarrierOp()
    _inval_barriers(L, st, count)
    return chunks


@RULES.rule("hook.mma-tcgen05", feature=Feature.TCGEN05)
def _mma(L: FuncLowering, op: ir.Operation) -> None:
    ring_a, slot_a, ring_b, slot_b, acc = op.operands
    res = op.results[0]
    ta, _ = ring_tile(L, ring_a)
    tb, _ = ring_tile(L, ring_b)
    if not (isinstance(ta, SwizzledTile) and isinstance(tb, SwizzledTile)) or ta.permute_rows:
        raise CompilerBugError(f"tcgen05 tile.mma on rings {ring_a.type}, {ring_b.type}: "
                               "not unpermuted 128-byte swizzled slots")
    kmajor = "tile.b_kmajor" in op.attributes
    n = tb.rows if kmajor else tb.cols
    d = L.dist(res.type)
    st = _tmem(L)
    _setup_loop(L, st, op, d, n)
    j = _ring_counter(L, op)
    a_off = arith.MulIOp(L.get(slot_a), _c(ta.nbytes)).result
    b_off = arith.MulIOp(L.get(slot_b), _c(tb.nbytes)).result
    atype = operand_type(op, ir.MemRefType(ring_a.type).element_type)
    issue(L, st, atype, (L.get(ring_a), a_off), (L.get(ring_b), b_off), ta, tb, n, kmajor,
          arith.AndIOp(j, _c(1)).result)
    # The accumulator lives in TMEM: the registers carried through the loop
    # are the init values until `mma_wait {pending = 0}` reads it out.
    L.values[res] = L.frag(acc)


@RULES.rule("tile.mma_wait", feature=Feature.TCGEN05)
def _mma_wait(L: FuncLowering, op: ir.Operation) -> None:
    src = op.operands[0]
    res = op.results[0]
    pending = int(ir.IntegerAttr(op.attributes["pending"]).value)
    d = L.dist(res.type)
    n = ir.RankedTensorType(res.type).shape[1]
    st = _tmem(L)
    owner = src.owner
    assert isinstance(owner, ir.OpView)
    if pending == 1 and owner.operation.name == "tile.mma":
        j = _ring_counter(L, owner.operation)
        if all(_name(u.owner) == "scf.yield" or _is_tile_end(u.owner) for u in res.uses):
            _wait_for_product(st, _add(j, -1))
            L.values[res] = L.frag(src)
            return
        # The product is read inside the loop: wait for it and load it (the
        # accumulator stays in TMEM for the next product).
        _wait_for_product(st, j)
        nvvm.Tcgen05FenceOp(nvvm.Tcgen05FenceKind.AFTER_THREAD_SYNC)
        L.values[res] = load_accumulator(L, st, d, n)
        # ordered before the next product by the barrier at the loop's top
        nvvm.Tcgen05FenceOp(nvvm.Tcgen05FenceKind.BEFORE_THREAD_SYNC)
        return
    if pending == 0 and owner.operation.name == "tile.mma_wait":
        L.values[res] = _tile_end(L, st, op, d, n)
        return
    if pending != 0 or owner.operation.name != "scf.for":
        raise CompilerBugError(f"tcgen05 tile.mma_wait {{pending = {pending}}} on a value of "
                               f"{owner.operation.name}: not the pipeliner's structure")
    loop = owner.operation
    count = L.get(loop.results[len(loop.results) - 1])   # the loop's slot counter
    _wait_for_product(st, _add(count, -1))
    L.values[res] = _finish(L, st, d, n, 2)


def _is_tile_end(user: ir.Operation | ir.OpView) -> bool:
    op = user.operation if isinstance(user, ir.OpView) else user
    return op.name == "tile.mma_wait" and int(ir.IntegerAttr(op.attributes["pending"]).value) == 0


def _tile_end(L: FuncLowering, st: _Tmem, op: ir.Operation, d: Distribution,
              n: int) -> list[ir.Value]:
    """`mma_wait {pending = 0}` at the head of a flattened loop's epilogue
    branch (tile-pipeline): wait for this iteration's product, read the
    accumulator out, and put the value the branch yields for it (the next
    tile's init, defined before the loop) into TMEM for the next product."""
    wait1 = op.operands[0].owner.operation
    mma = wait1.operands[0].owner.operation
    _wait_for_product(st, _ring_counter(L, mma))
    nvvm.Tcgen05FenceOp(nvvm.Tcgen05FenceKind.AFTER_THREAD_SYNC)
    chunks = load_accumulator(L, st, d, n)
    parent = op.parent
    tail = parent.operation if isinstance(parent, ir.OpView) else parent
    blocks = [list(tail.regions[i].blocks)[0] for i in (0, 1)]
    then_y, else_y = (list(b.operations)[len(b.operations) - 1] for b in blocks)
    r = list(else_y.operands).index(wait1.results[0])
    store_accumulator(L, st, d, n, L.frag(then_y.operands[r]))
    nvvm.Tcgen05FenceOp(nvvm.Tcgen05FenceKind.BEFORE_THREAD_SYNC)
    gpu.BarrierOp()
    return chunks


@RULES.rule("hook.dot-tcgen05", feature=Feature.TCGEN05)
def _dot(L: FuncLowering, op: ir.Operation) -> bool:
    a, b, acc = op.operands
    res = op.results[0]
    (m, k), n = tuple(a.type.shape), tuple(b.type.shape)[1]
    atype = operand_type(op, L.scalar_type(a.type.element_type))
    eb = ELEM_BYTES[atype]
    ta, tb = SwizzledTile(m, k, eb), SwizzledTile(k, n, eb)
    i8 = ir.IntegerType.get_signless(8)
    buf_a = L.shared_buffer(i8, ta.nbytes, align=1024)
    buf_b = L.shared_buffer(i8, tb.nbytes, align=1024)
    d = L.dist(res.type)
    st = _tmem(L)
    gpu.BarrierOp()
    stage_registers(L, a, buf_a, ta)
    stage_registers(L, b, buf_b, tb)
    fence_async_shared()
    _init_barriers(L, st, 1)
    store_accumulator(L, st, d, n, L.frag(acc))
    nvvm.Tcgen05FenceOp(nvvm.Tcgen05FenceKind.BEFORE_THREAD_SYNC)
    gpu.BarrierOp()
    issue(L, st, atype, (buf_a, 0), (buf_b, 0), ta, tb, n, False, 0)
    _wait(st, 0, 0)
    L.values[res] = _finish(L, st, d, n, 1)
    L.release_shared(buf_b)     # read (`_finish` ends with a barrier): later staging reuses them
    L.release_shared(buf_a)
    return True


@RULES.rule("func.return", feature=Feature.TCGEN05)
def _return(L: FuncLowering, op: ir.Operation) -> None:
    if len(op.operands):
        raise TilecError("kernels cannot return values", source_loc(op.location))
    st = _KERNELS.get(L)
    if st is not None:
        assert L.tid is not None
        nvvm.Tcgen05FenceOp(nvvm.Tcgen05FenceKind.BEFORE_THREAD_SYNC)
        gpu.BarrierOp()
        with _then(arith.CmpIOp(arith.CmpIPredicate.ult, L.tid, _c(32)).result):
            nvvm.Tcgen05DeallocOp(_tmem_ptr(st.taddr), _c(st.ncols))
    gpu.ReturnOp([])
