"""NVIDIA asynchronous global -> shared copies (`Feature.CP_ASYNC`, sm80 and later):
the pipeliner's `tile.async_copy` / `tile.async_commit` / `tile.async_wait`.

| key | feature | lowering |
|---|---|---|
| `tile.async_copy` | `CP_ASYNC` | per access of the pointer tile: `cp.async.{cg,ca}.shared.global [dst], [src], w, src_size` |
| `tile.async_commit` | `CP_ASYNC` | `cp.async.commit_group` |
| `tile.async_wait` | `CP_ASYNC` | `cp.async.wait_group N`, then `fence.proxy.async.shared::cta` in kernels with tcgen05 dots |

Each thread copies its own elements of the tile: for every access of its
fragment (w elements along the tile's contiguous dimension, as wide as the
axis analysis allows: 4, 8 or 16 bytes; `cg` for 16 bytes, `ca` below) the
destination is the element's byte offset in the ring slot's layout
(`layouts.SwizzledTile`, the same function the wgmma descriptors assume, or
`layouts.PaddedTile`, the padded rows `ldmatrix` reads; `ring_tile`) and
the source size is 0 where the mask is off, so the copy writes zeros and reads
nothing (Triton's `other = 0`).  Two things are computed once and reused:
the source size of every access in one run of equal mask bits
(`Distribution.run_key` on the mask's constancy: a K mask on B, constant over
16 rows where K is 16-divisible, gives one predicate per 16 rows, not one per
row), and the destination of every access a constant number of bytes from an
earlier one (`SwizzledTile.delta` / `PaddedTile.delta`: rows 8 apart in the
128-byte swizzle), which becomes the copy's immediate offset.

No proxy fence follows a wait whose ring feeds `wgmma`: the wait and the
CTA barrier after it order the copies before the product, as in NVIDIA's
own cp.async + GMMA mainloops (CUTLASS `MainloopSm90CpAsyncGmma*`: a
`cp.async.wait_group` or the cp.async mbarrier arrive, then the GMMA) and
Triton's (whose fence pass fences register -> shared writes only).  The
fence (`fence.proxy.async.shared::cta`, which ptxas emits as `MEMBAR.ALL.CTA`
plus `FENCE.VIEW.ASYNC.S`) cost up to 8% of a kernel's cycles: H200, tutorial-03 fp16 4096^3 at ncu's locked clock, 128x128x128
on 8 warps with 3 slots (one CTA per SM) took 405,569 cycles with it and
371,926 without; 128x256x64 300,040 and 298,330; 128x128x64 (two CTAs per
SM) 315,582 and 314,699 (benchmarks/results/README.md, session 21).  Shared
memory written by `st.shared` / `stmatrix` before a product (wgmma.py's
staged operands, the TMA store's buffer) keeps its fence.  Kernels with
tcgen05 dots keep the fence after the wait: no sm_100 GPU is at hand to
measure them.  `ldmatrix` reads through the generic proxy, which
`cp.async.wait_group` covers.  The
upstream ops are `nvvm.cp.async.shared.global`, `nvvm.cp.async.commit.group`
and `nvvm.cp.async.wait.group`.

Nearest upstream analogue: `nvgpu.device_async_copy` (NVGPUToNVVM); Triton's
`AsyncCopyGlobalToLocal` lowering.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from mlir import ir
from mlir.dialects import arith, nvvm

from tilec.passes.rules import RuleSet
from tilec.targets import Feature
from tilec.targets.nvidia import tcgen05
from tilec.targets.nvidia.wgmma import (
    byte_address, const_byte_address, fence_async_shared, ring_tile, swizzled_offset,
)

if TYPE_CHECKING:
    from tilec.passes.gpu.context import FuncLowering, Rule

RULES: RuleSet[Rule] = RuleSet("nvidia-async-copy")


@RULES.rule("tile.async_copy", feature=Feature.CP_ASYNC)
def _async_copy(L: FuncLowering, op: ir.Operation) -> None:
    ring_v, slot_v, ptr = list(op.operands)[:3]
    mask = op.operands[3] if len(op.operands) > 3 else None
    t, _slots = ring_tile(L, ring_v)
    ring = L.get(ring_v)
    d = L.dist(ptr.type)
    eb = t.elem_bytes
    w, _align = L.access(ptr, mask, d, eb)
    slot_base = arith.MulIOp(L.get(slot_v), L.const_i32(t.nbytes)).result
    rows = L.coordinates(d, 0, 0)
    cols = L.coordinates(d, 1, 0)
    masks = L.frag(mask) if mask is not None else None
    i32 = ir.IntegerType.get_signless(32)
    sizes: dict[tuple[int, ...], ir.Value] = {}   # one source size per run of equal mask bits
    firsts: list[tuple[int, int, ir.Value]] = []   # (row, col) offsets computed in full
    for c, (pv, rv, cv) in enumerate(zip(L.frag(ptr), rows, cols)):
        for i in range(0, d.vec_len, w):
            key = d.chunk_keys[c]
            srow, scol = d.static_offset(0, key[0]), d.static_offset(1, key[1] + i)
            dst = None
            for row0, col0, addr0 in firsts:
                delta = t.delta(srow - row0, scol - col0)
                if delta is not None:   # same swizzle phase: a constant apart
                    dst = const_byte_address(addr0, delta)
                    break
            if dst is None:
                off = arith.AddIOp(slot_base, swizzled_offset(L, t, L.extract(rv, i),
                                                              L.extract(cv, i))).result
                dst = byte_address(ring, off)
                firsts.append((srow, scol, dst))
            src = L.extract(pv, i)
            nbytes = w * eb
            size: ir.Value | None = None
            if mask is not None and masks is not None:
                local = tuple(k + (i if dim == d.fast else 0) for dim, k in enumerate(key))
                run = d.run_key(L.axis.get(mask).constancy, local)
                if run not in sizes:
                    on = L.extract(masks[c], i)
                    sizes[run] = arith.SelectOp(on, L.const_i32(nbytes), L.const_i32(0)).result
                size = sizes[run]
            modifier = ir.Attribute.parse(
                f"#nvvm<load_cache_modifier {'cg' if nbytes == 16 else 'ca'}>")
            nvvm.CpAsyncOp(dst, src, ir.IntegerAttr.get(i32, nbytes),
                           modifier, cpSize=size)


@RULES.rule("tile.async_commit", feature=Feature.CP_ASYNC)
def _commit(L: FuncLowering, op: ir.Operation) -> None:
    nvvm.CpAsyncCommitGroupOp()


@RULES.rule("tile.async_wait", feature=Feature.CP_ASYNC)
def _wait(L: FuncLowering, op: ir.Operation) -> None:
    pending = int(ir.IntegerAttr(op.attributes["pending"]).value)
    nvvm.CpAsyncWaitGroupOp(ir.IntegerAttr.get(ir.IntegerType.get_signless(32), pending))
    if L.target.has(Feature.TCGEN05) and tcgen05.kernel_columns(L):
        fence_async_shared()


@RULES.rule("tile.local_alloc", feature=Feature.CP_ASYNC)
def _local_alloc(L: FuncLowering, op: ir.Operation) -> None:
    """A ring is a 1024-byte-aligned slice of the kernel's workgroup memory:
    its slots' layout (`ring_tile`: padded rows take more than the elements)."""
    t, slots = ring_tile(L, op.results[0])
    L.values[op.results[0]] = L.shared_buffer(ir.IntegerType.get_signless(8), slots * t.nbytes,
                                              align=1024)



@RULES.rule("tile.local_dealloc", feature=Feature.CP_ASYNC)
def _local_dealloc(L: FuncLowering, op: ir.Operation) -> None:
    L.release_shared(L.get(op.operands[0]))
