"""IRDL text of the `tile` dialect's memory-hierarchy ops (spliced into the
dialect by dialects/tile.py; their typed builders are in dialects/tile_memory.py).

`tile.local_alloc` -> `memref<S x R x C x T, 3>`: a ring of S shared-memory slots
  of an [R, C] tile; attributes `swizzle` (bytes: 128; 0 = row-major rows padded
  by 16 bytes, the mma.sync rings) and `row_permutation`
  ("wgmma": A's 8-row blocks permuted for the wgmma accumulator layout, "none").
`tile.local_dealloc(ring)`: the ring is dead from here on (its memory may be
  reused by later shared-memory users, e.g. the epilogue's layout conversion).
`tile.async_copy(ring, slot, ptrs, mask?)`: start copying the tile `ptrs` points
  at into slot `slot` (masked-off elements become zeros).
`tile.local_store(ring, slot, value)`: every thread writes its elements of the
  register tile `value` into slot `slot` (a synchronous store; the caller
  places the barriers; AMD's LDS rings, passes/tile_pipeline_lds.py).
`tile.async_commit`: close the group of copies this thread started.
`tile.async_wait {pending}`: wait until at most `pending` groups are in flight.
`tile.mma(a_ring, a_slot, b_ring, b_slot, acc) {kind}` -> acc type: start
  acc + A @ B on the matrix units, operands read from the slots.
`tile.mma_wait(acc) {pending}` -> acc type: wait until at most `pending` groups
  of `tile.mma` are in flight; its result is `acc` once complete.

Tensor-memory-accelerator (TMA) copies of descriptor loads (NVIDIA sm90+):
`tile.tma_coords(c0, .., cr-1) {tma}`: the block coordinates (i32, the
  map's outermost first: [batch,] row, column) of the
  `tile.load` tagged `tile.tma` with the same id, which a tensor map (the
  kernel's `tile.tensormaps` entry `tma`) can copy; no effect of its own (the
  pipeliner reads it; the GPU lowering drops it).
`tile.mbarrier_alloc {slots}` -> `memref<S x i64, 3>`: S transaction barriers in
  shared memory, initialized (arrival count 1) before any thread uses them;
  with `tile.arrivals = "warps"` the arrival count is the number of warps (the
  "slot is free" barriers that `tile.mbarrier_arrive` completes).
  With `tile.arrivals = "ctas"` it is the cluster's CTAs (`tile.cluster_arrive`).
`tile.mbarrier_arrive(bars, slot, live)`: where `live`, one lane of every warp
  arrives on barrier `slot` (every thread of the warp is past its reads).
`tile.mbarrier_inval(bars)`: the barriers are dead (every copy has completed).
`tile.tma_expect(bars, slot, live) {bytes}`: where `live`, one thread arrives on
  barrier `slot` expecting `bytes` of copies.
`tile.tma_copy(ring, slot, bars, live, c0, ..) {tma}`: where `live`, one thread
  starts the copy of the block at coordinates c into ring slot `slot` (in the
  ring's layout), completing on barrier `slot`; elements outside the tensor
  are zeros; with `tile.l2_evict_first` under an L2 evict-first policy.
  With `tile.multicast = n` (a cluster of n CTAs, `tile.cta_rank` r) the
  thread copies rows [r R / n, (r + 1) R / n) of the block's R rows into that
  part of the slot in every CTA of the cluster, completing on each CTA's
  barrier `slot` (which then expects the whole block's bytes).
`tile.cta_rank` -> i32: the CTA's place in its cluster (0 .. n - 1) where the
  kernel's function has `tile.num_ctas = n` (passes/tile_split_ctas.py).
`tile.cluster_barrier`: every thread of every CTA of the cluster arrives, then
  waits for all of them (shared-memory writes and barrier initializations
  before it are visible cluster-wide after it).
`tile.cluster_release(bars, slot, phase, arrive, live)`: where `live`, the
  thread that issues the TMA copies arrives (where `arrive`) on barrier `slot`
  of every CTA of the cluster (its own and the others', counted by
  `tile.arrivals = "ctas"`), then waits until its own barrier `slot` has
  completed phase `phase`: every CTA has released the slot.
`tile.mbarrier_wait(bars, slot, phase)`: every thread waits until barrier
  `slot` has completed phase `phase` (0/1, i32); with `tile.one_thread` only
  the threads that issue the TMA copies wait (a producer waiting for a slot).
`tile.row_exchange(acc) {permutation = "wgmma"}` -> acc type: the accumulator
  of a wgmma loop whose A ring kept A's rows in order (one TMA box) holds, where
  its layout says row l, row `row_position(l)` of the product; the result has
  the rows where the layout says (an exchange through workgroup memory).
`tile.tma_store(buf, value, [b,] c0, c1) {tma, row_permutation}`: every thread
  writes its elements of the register tile `value` into the one-slot 128-byte
  swizzled buffer `buf` (`tile.local_alloc`, [R, C] of value's element type,
  or [R, C / p] for a power of two p: the tile is then written and copied in
  p passes of whole 128-byte column atoms, each after the previous one's copy
  has read the buffer;
  with `row_permutation = "wgmma"` the element the layout places at row l goes
  to row `row_position(l)`, the accumulator of a loop whose A ring kept its
  rows in order), then one thread copies the buffer to the block at
  coordinates c of tensor map `tma` (`tile.tensormaps`; rank 3-5: batches first) with TMA stores;
  elements outside the tensor are not written.  The copy runs asynchronously:
  the next `tile.tma_store` into `buf` first waits until this one has read it.
`tile.tma_store_wait`: the thread that issues TMA stores waits until every
  one of them has read its buffer (before the buffer is released and before
  the kernel returns).
`tile.turn_init`, `tile.turn_wait`, `tile.turn_pass` (tile-pingpong, NVIDIA
  sm90 with two warpgroups): the tensor-core products of a loop are issued by
  the warpgroups in turns.  `turn_wait`: the warpgroup waits until the other
  has passed it the turn; `turn_pass`: it passes the turn to the other (it has
  issued its products); `turn_init` (once, at the kernel's start): warpgroup 0
  has the first turn.  They order issue only; no data passes.
"""

IRDL_MEMORY_OPS = """\
  irdl.operation @local_alloc {
    %s = irdl.any
    %p = irdl.any
    %r = irdl.any
    irdl.attributes {"swizzle" = %s, "row_permutation" = %p}
    irdl.results(result: %r)
  }
  irdl.operation @local_dealloc {
    %b = irdl.any
    irdl.operands(ring: %b)
  }
  irdl.operation @async_copy {
    %b = irdl.any
    %i = irdl.any
    %p = irdl.any
    %m = irdl.any
    irdl.operands(ring: %b, slot: %i, ptr: %p, mask: optional %m)
  }
  irdl.operation @local_store {
    %b = irdl.any
    %i = irdl.any
    %v = irdl.any
    irdl.operands(ring: %b, slot: %i, value: %v)
  }
  irdl.operation @async_commit {
  }
  irdl.operation @async_wait {
    %n = irdl.any
    irdl.attributes {"pending" = %n}
  }
  irdl.operation @mma {
    %ba = irdl.any
    %sa = irdl.any
    %bb = irdl.any
    %sb = irdl.any
    %c = irdl.any
    %k = irdl.any
    irdl.attributes {"kind" = %k}
    irdl.operands(a: %ba, a_slot: %sa, b: %bb, b_slot: %sb, acc: %c)
    irdl.results(result: %c)
  }
  irdl.operation @tma_coords {
    %c = irdl.any
    %t = irdl.any
    irdl.attributes {"tma" = %t}
    irdl.operands(coords: variadic %c)
  }
  irdl.operation @mbarrier_alloc {
    %s = irdl.any
    %r = irdl.any
    irdl.attributes {"slots" = %s}
    irdl.results(result: %r)
  }
  irdl.operation @mbarrier_inval {
    %b = irdl.any
    irdl.operands(bars: %b)
  }
  irdl.operation @tma_expect {
    %b = irdl.any
    %i = irdl.any
    %l = irdl.any
    %n = irdl.any
    irdl.attributes {"bytes" = %n}
    irdl.operands(bars: %b, slot: %i, live: %l)
  }
  irdl.operation @tma_copy {
    %r = irdl.any
    %i = irdl.any
    %b = irdl.any
    %l = irdl.any
    %c = irdl.any
    %t = irdl.any
    irdl.attributes {"tma" = %t}
    irdl.operands(ring: %r, slot: %i, bars: %b, live: %l, coords: variadic %c)
  }
  irdl.operation @mbarrier_arrive {
    %b = irdl.any
    %i = irdl.any
    %l = irdl.any
    irdl.operands(bars: %b, slot: %i, live: %l)
  }
  irdl.operation @cta_rank {
    %i32 = irdl.is i32
    irdl.results(result: %i32)
  }
  irdl.operation @cluster_barrier {
  }
  irdl.operation @cluster_release {
    %b = irdl.any
    %i = irdl.any
    %p = irdl.any
    %a = irdl.any
    %l = irdl.any
    irdl.operands(bars: %b, slot: %i, phase: %p, arrive: %a, live: %l)
  }
  irdl.operation @mbarrier_wait {
    %b = irdl.any
    %i = irdl.any
    %p = irdl.any
    irdl.operands(bars: %b, slot: %i, phase: %p)
  }
  irdl.operation @row_exchange {
    %c = irdl.any
    %p = irdl.any
    irdl.attributes {"permutation" = %p}
    irdl.operands(acc: %c)
    irdl.results(result: %c)
  }
  irdl.operation @tma_store {
    %b = irdl.any
    %v = irdl.any
    %c = irdl.any
    %t = irdl.any
    %p = irdl.any
    irdl.attributes {"tma" = %t, "row_permutation" = %p}
    irdl.operands(buf: %b, value: %v, coords: variadic %c)
  }
  irdl.operation @tma_store_wait {
  }
  irdl.operation @turn_init {
  }
  irdl.operation @turn_wait {
  }
  irdl.operation @turn_pass {
  }
  irdl.operation @producer_role {
    %w = irdl.any
    %r = irdl.any
    irdl.attributes {"warps" = %w}
    irdl.results(result: %r)
  }
  irdl.operation @mma_wait {
    %c = irdl.any
    %n = irdl.any
    irdl.attributes {"pending" = %n}
    irdl.operands(acc: %c)
    irdl.results(result: %c)
  }
"""
