"""`tile-pipeline-lds`: AMD's stream pipelining of MFMA / WMMA K loops through LDS rings.

Without it, every iteration of a matmul K loop on AMD loads its operand
tiles from global memory, waits for them, writes them to LDS between two
barriers, reads them back and multiplies (three barriers, the load latency
exposed).  With `num_stages` = S >= 2 (the launch option, or the loop's
`tile.num_stages`), this pass schedules the loop as Triton's AMD stream
pipeliner does: the global loads of iteration i + 1 are issued into registers
at the top of iteration i, before its matrix instructions, and written to the
LDS ring after them; the operands of iteration i are read from the ring.
One stage lives in registers, so the ring has S - 1 slots (Triton's
`num_stages` convention on AMD): with one slot, a barrier separates the
reads of iteration i from the writes of iteration i + 1 and another the
writes from the next reads (two per iteration); with two or more slots,
iteration i writes slot (i + 1) % (S - 1), which nobody reads in iteration i,
so one barrier per iteration suffices.

Input: tiled IR (after `tile-layout`).  A `scf.for` is transformed when
  * its body holds exactly one `tile.dot` and no region, the dot's family is
    `mfma` or `wmma` (`tile-accelerate-dot`) and the target's matrix tiling
    for it exists and is the result's layout (what the lowering accepts);
  * its accumulator is an iteration argument the loop yields the result for;
    a and b are 2-D tiles of the same element type, each computed in the body
    from one `tile.load` by elementwise `arith` ops that nothing else uses
    (none, or e.g. the fp8 decoding `tile-expand-fp8` wrote for gfx942: where
    the dot names the formats in `tile.fp8_decoded`, the rings hold the loaded
    bytes and the product decodes each lane's operand bytes after its LDS
    reads, as Triton does (half the LDS, no decoded tile held across the
    MFMAs); other such ops only where a thread holds at most `CHAIN_ELEMS`
    elements of the two tiles: computing more after the MFMAs spills);
  * the loads' operands are a pure computation of the induction variable,
    values from outside and iteration arguments only it uses and updates
    (passes/pipeline_support.py `load_side`); the step is a positive constant.
Output: two rings `tile.local_alloc` (memref<slots x R x C x T, 3>) with the
slot layout in `tile.lds`: "xor" (rows unpadded, 16-byte chunks of row r at
chunk ^ (r % 8): A when its rows hold >= 8 chunks and a lane's k run is
at most one chunk or whole chunks (read chunk by chunk), conflict-free `ds_read_b128` in 32 KiB for a 128x64 f16 tile;
rows shorter than 128 bytes permute eighths of a row, `xor_chunk_bytes`, where a
lane's k run fits one: the fp8 bytes of K = 64, 8-byte chunks), "plain"
(unpadded: B when the lanes that read one row at once cover >= 128
contiguous bytes), "xor_t" (B stored K-major with a chunk permutation, where
A takes "xor" and the ring has one slot: a lane's k run is one
`ds_read_b128`, as Triton's B operand; its writes are element-wise, one
address each, so it is taken only where `KMAJOR_REGS` allows, and with two slots
every LDS address takes the slot's offset each iteration, which costs more
VGPRs than the rows' regrouping saves), "pad_t" (the same K-major B with each
stored row padded by 16 bytes, where A's rows are too short for "xor": fp8
with K = 64) or "pad" (16 bytes after each row); where S - 1 slots do not
fit the LDS, fewer slots are used (down to one), and where one padded slot
does not fit either, the padded rings are made plain.  Before the
loop: the load side at the lower bound, the loads masked with `lb < ub`,
`tile.local_store` into slot 0, a `tile.barrier`.  The new loop carries the
load side's arguments one iteration ahead and a counter j; its body: the load
side at iv + step, the loads masked with `iv + step < ub` (at the top), the
original ops with the dot replaced by `tile.mma {kind}` on slot j % slots,
then (one slot: a `tile.barrier`) `tile.local_store` of the prefetched tiles
into slot (j + 1) % slots and a `tile.barrier`.  After the loop: both rings
`tile.local_dealloc`ed.  New ops carry the location of the op they come from
(the loop's for the rings and barriers).  Loops that do not qualify are left
as they are (the dot stages its operands itself).

Nearest upstream analogue: Triton's `tritonamdgpu-stream-pipeline`
(third_party/amd/lib/TritonAMDGPUTransforms/StreamPipeline.cpp);
`scf::pipelineForLoop`.
"""
from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, scf

from tilec.dialects import tile, tile_memory
from tilec.options import CompileOptions
from tilec.passes import pipeline_support as ps
from tilec.passes.analysis import axis_info
from tilec.passes.analysis.layouts import Distribution
from tilec.passes.analysis.matrix_tiling import MatrixTiling, choose, operand_name
from tilec.targets import Target

NAME = "tile-pipeline-lds"
_KINDS = ("mfma", "wmma")
PAD_BYTES = 16          # after each row of a "pad" slot
CHUNK_BYTES = 16        # the unit an "xor" slot permutes
XOR_PHASES = 8          # rows r and r + 8 share a permutation
# K-major B slots ("xor_t", "pad_t") write element by element, one address
# register each: taken where the accumulator and those addresses fit half the
# 256-VGPR file (gfx942 128x128x64 at 8 warps: 32 + 2 * 16; gfx1100's WMMA at
# 8 warps: 64 + 2 * 32; gfx942 256x256x64: 128 + 2 * 32 spilled).
KMAJOR_REGS = 128
# The most operand elements per thread (A's and B's together) decoded after the
# MFMAs: gfx942's fp8 128x128x64 at 8 warps (32) gains, 256x256x64 (64) spilled.
CHAIN_ELEMS = 32


@dataclass
class _Plan:
    dot: ir.Operation
    loads: tuple[ir.Operation, ir.Operation]
    acc_index: int
    side: list[ir.Operation]
    carried: list[int]
    tiling: MatrixTiling
    # Per operand: the elementwise arith ops from its load to the dot, in body order.
    chains: tuple[list[ir.Operation], list[ir.Operation]] = ([], [])
    # The fp8 formats the chains decode (tile-expand-fp8's `tile.fp8_decoded`):
    # the rings then hold the loaded bytes, decoded after the LDS reads.
    decode: ir.Attribute | None = None


def _chain(body: ir.Block, v: ir.Value) -> tuple[ir.Operation, list[ir.Operation]] | None:
    """(the tile.load, the ops computing `v` from it), where `v` is a 2-D
    tile computed in `body` from exactly one load by `arith` ops whose other
    operands are constants or values from outside (fp8 decoded to f16 by
    tile-expand-fp8), whose results nothing else uses (constants aside: they
    are cloned with the chain)."""
    chain: list[ir.Operation] = []
    load: ir.Operation | None = None
    stack = [v]
    while stack:
        x = stack.pop()
        owner = x.owner
        if not isinstance(owner, ir.OpView) or owner.operation.block != body:
            continue            # a block argument is refused by the use check below
        op = owner.operation
        if op in chain or (load is not None and op == load):
            continue
        if op.name == "tile.load":
            if load is not None:
                return None
            load = op
            continue
        if not op.name.startswith("arith.") or op.regions:
            return None
        chain.append(op)
        stack.extend(op.operands)
    if load is None or len(load.results[0].type.shape) != 2:
        return None
    inside = set(chain) | {load}
    for op in inside:
        for r in op.results:
            if op.name != "arith.constant" and any(use.owner not in chain and r != v
                                                   for use in r.uses):
                return None
        for o in op.operands:
            if isinstance(o.owner, ir.Block) and o.owner == body and op != load:
                return None     # an iteration argument: not a function of the load
    order = ps.ops(body)
    return load, sorted(chain, key=order.index)


def _plan(for_op: ir.Operation, target: Target, num_warps: int) -> _Plan | None:
    body = for_op.regions[0].blocks[0]
    ops = ps.ops(body)
    dots = [op for op in ops if op.name == "tile.dot"]
    if len(dots) != 1 or any(op.regions for op in ops):
        return None
    dot = dots[0]
    kind = ps.kind(dot)
    if kind not in _KINDS or (ps.const_int(list(for_op.operands)[2]) or 0) <= 0:
        return None
    args = list(body.arguments)
    acc = dot.operands[2]
    if acc not in args[1:] or ops[-1].operands[args.index(acc) - 1] != dot.results[0]:
        return None
    loads, chains = [], []
    for v in list(dot.operands)[:2]:
        found_chain = _chain(body, v) if len(list(v.uses)) == 1 else None
        if found_chain is None:
            return None
        loads.append(found_chain[0])
        chains.append(found_chain[1])
    a_t, b_t, res_t = dot.operands[0].type, dot.operands[1].type, dot.results[0].type
    if a_t.element_type != b_t.element_type:
        return None
    (m, k), n = tuple(a_t.shape), tuple(b_t.shape)[1]
    tiling = choose(target, kind, m, n, k, operand_name(dot, a_t.element_type),
                    str(res_t.element_type), num_warps)
    layout = tile.layout_of(res_t)
    if tiling is None or layout is None:
        return None
    d = Distribution.of(layout, tuple(res_t.shape))
    if d.sliced_dim is not None or d.blocked != tiling.layout():
        return None
    threads = tiling.warp_size * tiling.wm * tiling.wn
    decode = dot.attributes["tile.fp8_decoded"] \
        if "tile.fp8_decoded" in dot.attributes and chains[0] and chains[1] else None
    if decode is None and (chains[0] or chains[1]) and (m * k + k * n) > CHAIN_ELEMS * threads:
        return None
    acc_index = args.index(acc) - 1
    found = ps.load_side(body, loads, forbidden=acc_index)
    if found is None:
        return None
    side, carried = found
    return _Plan(dot, (loads[0], loads[1]), acc_index, side, carried, tiling,
                 (chains[0], chains[1]), decode)


def xor_chunk_bytes(k_bytes: int) -> int:
    """The bytes of the chunks an "xor" / "xor_t" slot permutes, its stored rows
    `k_bytes` long: 16, or an eighth of a shorter row (fp8 bytes with K = 64:
    8-byte chunks, a lane's 8-byte operand run)."""
    return min(CHUNK_BYTES, k_bytes // XOR_PHASES)


def slot_layouts(tiling: MatrixTiling, m: int, n: int, k: int, eb: int,
                 slots: int = 1) -> tuple[str, str]:
    """The preferred slot layouts of A [m, k] and B [k, n] (see the docstring)."""
    run = tiling.instr.operand_elems * tiling.kpack * eb     # bytes of a lane's k run
    # A run of several chunks is read chunk by chunk (RDNA3's WMMA: 32 bytes);
    # chunks shorter than 16 bytes only where the run fits one.
    chunk = xor_chunk_bytes(k * eb)
    xor = chunk == CHUNK_BYTES and (run <= chunk or run % chunk == 0) or \
        4 <= chunk < CHUNK_BYTES and run <= chunk
    a = "xor" if xor else "pad"
    threads = tiling.warp_size * tiling.wm * tiling.wn
    kmajor = slots == 1 and m * n + 2 * k * n <= KMAJOR_REGS * threads
    b = ("xor_t" if xor else "pad_t") if kmajor else \
        "plain" if tiling.instr.n * tiling.nv * eb >= 128 else "pad"
    return a, b


def slot_bytes(layout: str, rows: int, cols: int, eb: int) -> int:
    if layout.endswith("_t"):       # stored K-major: a stored row per column
        rows, cols = cols, rows
    return rows * (cols * eb + (PAD_BYTES if layout.startswith("pad") else 0))


def _sizes(plan: _Plan, stages: int, shared_bytes: int) -> tuple[str, str, int] | None:
    """(A's layout, B's layout, slots) that fit `shared_bytes`, or None."""
    a_t, b_t = (v.type for v in list(plan.dot.operands)[:2])
    (m, k), n = tuple(a_t.shape), tuple(b_t.shape)[1]
    eb = 1 if plan.decode is not None else axis_info.type_bytes(a_t.element_type)
    for unpad in (False, True):
        for slots in range(max(1, stages - 1), 0, -1):
            la, lb = slot_layouts(plan.tiling, m, n, k, eb, slots)
            if unpad:
                la = "plain" if la == "pad" else la
                lb = "plain" if lb in ("pad", "pad_t") else lb
            if slots * (slot_bytes(la, m, k, eb) + slot_bytes(lb, k, n, eb)) <= shared_bytes:
                return la, lb, slots
    return None


def _load(plan: _Plan, load: ir.Operation, iv: ir.Value, ub: ir.Value,
          mapping: dict[ir.Value, ir.Value]) -> ir.Value:
    """A clone of `load` (operands through `mapping`) masked with `iv < ub`."""
    ptr, mask, other = (mapping.get(v, v) if v is not None else None
                        for v in ps.load_parts(load))
    assert ptr is not None
    with load.location:
        live = arith.CmpIOp(arith.CmpIPredicate.slt, iv, ub).result
        operands = [ptr, ps.live_mask(mask, ptr, live)] + ([other] if other is not None else [])
        seg = ir.DenseI32ArrayAttr.get([1, 1, int(other is not None)])
        # The result keeps the original's layout (the builder's type has none).
        return ir.Operation.create("tile.load", [load.results[0].type], operands,
                                   {"operandSegmentSizes": seg}).result


def _prefetch(plan: _Plan, iv: ir.Value, ub: ir.Value, mapping: dict[ir.Value, ir.Value]
              ) -> tuple[list[ir.Value], dict[ir.Value, ir.Value]]:
    ps.clone_side(plan.side, mapping)
    return [_load(plan, ld, iv, ub, mapping) for ld in plan.loads], mapping


def _operands(plan: _Plan, tiles: list[ir.Value]) -> list[ir.Value]:
    """The dot's operands computed from the loaded `tiles` (the chains cloned
    at the current insertion point)."""
    out = []
    for ld, chain, v, t in zip(plan.loads, plan.chains, list(plan.dot.operands)[:2], tiles):
        m = ps.clone_side(chain, {ld.results[0]: t})
        out.append(m.get(v, v))
    return out


def _stored(plan: _Plan, tiles: list[ir.Value]) -> list[ir.Value]:
    """What the rings receive: the loaded bytes (`plan.decode`) or the operands."""
    return tiles if plan.decode is not None else _operands(plan, tiles)


def _pipeline(for_op: ir.Operation, stages: int, target: Target, num_warps: int) -> bool:
    plan = _plan(for_op, target, num_warps)
    if plan is None:
        return False
    sizes = _sizes(plan, stages, target.shared_bytes)
    if sizes is None:
        return False
    layout_a, layout_b, slots = sizes
    body = for_op.regions[0].blocks[0]
    args = list(body.arguments)
    ub, step = list(for_op.operands)[1:3]
    loc = for_op.location
    a_t, b_t = (v.type for v in list(plan.dot.operands)[:2])
    if plan.decode is not None:       # the rings hold the loaded bytes
        a_t, b_t = (ld.results[0].type for ld in plan.loads)
    rings = []
    with loc, ir.InsertionPoint(for_op):
        for t, lay in ((a_t, layout_a), (b_t, layout_b)):
            r = tile_memory.local_alloc(slots, t.shape, t.element_type, swizzle=0,
                                        row_permutation="none", loc=loc)
            r.owner.attributes["tile.lds"] = ir.StringAttr.get(lay)
            rings.append(r)

        def issue(slot: ir.Value, iv: ir.Value, m: dict[ir.Value, ir.Value]
                  ) -> dict[ir.Value, ir.Value]:
            tiles, m = _prefetch(plan, iv, ub, m)
            for ring, v, ld in zip(rings, _stored(plan, tiles), plan.loads):
                tile_memory.local_store(ring, slot, v, loc=ld.location)
            return m
        new_for = ps.prologue_loop(for_op, plan.carried, 1, issue)
        tile.barrier(loc=loc, ip=ir.InsertionPoint(new_for.operation))
    new_body = new_for.body
    new_args = list(new_body.arguments)
    counter = new_args[-1]
    for old, new in zip(args, new_args[:-1]):
        old.replace_all_uses_with(new)
    with loc, ir.InsertionPoint(new_body):
        iv_next = arith.AddIOp(new_args[0], step).result
        nxt, m = _prefetch(plan, iv_next, ub, {new_args[0]: iv_next, **{
            new_args[i + 1]: new_args[i + 1] for i in plan.carried}})
        sentinel = scf.YieldOp([])
    for op in ps.ops(body):
        op.move_before(sentinel.operation)
    sentinel.operation.erase()
    dot = plan.dot
    kind = ps.kind(dot)
    with dot.location, ir.InsertionPoint(dot):
        s = ps.i32(slots)
        read = arith.RemUIOp(counter, s).result if slots > 1 else ps.i32(0)
        product = tile_memory.mma(rings[0], read, rings[1], read, dot.operands[2], kind,
                                  loc=dot.location)
        if "tile.mma_fp8" in dot.attributes:      # fp8 bytes in the rings
            product.owner.attributes["tile.mma_fp8"] = dot.attributes["tile.mma_fp8"]
        if plan.decode is not None:               # fp8 bytes decoded to f16 after the reads
            product.owner.attributes["tile.fp8_decoded"] = plan.decode
        if slots == 1:
            tile.barrier(loc=loc)      # every warp's reads of the slot are done
        write = arith.RemUIOp(arith.AddIOp(counter, ps.i32(1)).result, s).result \
            if slots > 1 else read
        for ring, v, ld in zip(rings, _stored(plan, nxt), plan.loads):
            tile_memory.local_store(ring, write, v, loc=ld.location)
        tile.barrier(loc=loc)
    dot.results[0].replace_all_uses_with(product)
    dot.erase()
    for chain in plan.chains:
        for op in reversed(chain):
            if op.name != "arith.constant":
                op.erase()
    for ld in plan.loads:
        ld.erase()
    old_yield = ps.ops(new_body)[-1]
    outs = list(old_yield.operands)
    with loc, ir.InsertionPoint(old_yield):
        scf.YieldOp([m.get(v, v) if i in plan.carried else v for i, v in enumerate(outs)] +
                    [arith.AddIOp(counter, ps.i32(1)).result])
    old_yield.erase()
    ps.dce(new_body)
    for old, new in zip(for_op.results, list(new_for.results)[:-1]):
        old.replace_all_uses_with(new)
    with loc, ir.InsertionPoint(ps.next_op(new_for.operation)):
        tile_memory.local_dealloc(rings[1], loc=loc)
        tile_memory.local_dealloc(rings[0], loc=loc)
    for_op.erase()
    return True


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    with module.context:
        for _func, op, stages in ps.staged_loops(module, options.num_stages):
            _pipeline(op, stages, target, options.num_warps)
