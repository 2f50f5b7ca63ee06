# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_fwd_persistent --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,fp32,i32,i32,i32:16" --constexpr HEAD_DIM=128 BLOCK_M=128 BLOCK_N=128 --num-warps 8 --num-stages 3 --stage tiled | %FileCheck %s
# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_fwd_persistent --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,fp32,i32,i32,i32:16" --constexpr HEAD_DIM=128 BLOCK_M=128 BLOCK_N=128 --num-warps 8 --num-stages 3 --stage ptx | %FileCheck %s --check-prefix=PTX

# A persistent kernel: the key/value loop (warp_specialize) nested in the
# loop over tiles.  tile-pipeline's deferred schedule allocates the rings
# (Q: one slot with full and empty barriers; K, V: two slots each) and their
# barriers once before the tile loop, which carries the K/V load index and
# the Q load index; tile-warp-specialize gives the producer warpgroup a clone
# of the tile loop (the indices only) whose per-tile issues wait for a free
# slot, and whose inner loop issues the refills; the consumers' tile loop
# keeps only waits and arrivals.  Invalidation and release after the tile loop.

# CHECK: func.func @_attn_fwd_persistent({{.*}}tile.producer_warps = 4 : i32
# CHECK: "tile.local_alloc"() {{.*}} -> memref<1x128x128xf16, 3>
# CHECK: "tile.local_alloc"() {{.*}} -> memref<2x128x128xf16, 3>
# CHECK: "tile.local_alloc"() {{.*}} -> memref<2x128x128xf16, 3>
# CHECK: "tile.mbarrier_alloc"() {slots = 1 : i32, tile.arrivals = "warps"}
# CHECK-NOT: scf.for
# CHECK: %[[ROLE:.+]] = "tile.producer_role"() {warps = 4 : i32}
# CHECK-NEXT: scf.if %[[ROLE]] {
# CHECK-NEXT: scf.for {{.*}} iter_args(%[[BASE:.+]] = %{{.+}}, %[[QC:.+]] = %{{.+}}) -> (i32, i32)
# The per-tile issues, each waiting for its free slot where its load exists:
# K and V of key block 0, K of block 1 (their slots were released inside the
# previous tile's loop), then Q (released at the previous tile's end: its
# one-slot empty barrier) and V of block 1, then the peeled iteration's refill
# (K of block 2).
# CHECK: "tile.mbarrier_wait"({{.*}}) {tile.one_thread} : (memref<2xi64, 3>
# CHECK: "tile.tma_copy"({{.*}}) {tma = 1 : i32}
# CHECK-NEXT: } {tile.producer_issue}
# CHECK: "tile.tma_copy"({{.*}}) {tma = 2 : i32}
# CHECK-NEXT: } {tile.producer_issue}
# CHECK: "tile.tma_copy"({{.*}}) {tma = 1 : i32}
# CHECK-NEXT: } {tile.producer_issue}
# CHECK: "tile.mbarrier_wait"({{.*}}) {tile.one_thread} : (memref<1xi64, 3>
# CHECK: "tile.tma_expect"
# CHECK-NEXT: "tile.tma_copy"({{.*}}) {tma = 0 : i32}
# CHECK-NEXT: } {tile.producer_issue}
# CHECK: "tile.tma_copy"({{.*}}) {tma = 2 : i32}
# CHECK-NEXT: } {tile.producer_issue}
# CHECK: "tile.tma_copy"({{.*}}) {tma = 1 : i32}
# CHECK-NEXT: } {tile.producer_issue}
# The inner producer loop, its copies only where the block exists.
# CHECK: scf.for
# CHECK: scf.if
# CHECK-NEXT: "tile.mbarrier_wait"({{.*}}) {tile.one_thread}
# CHECK: } {tile.producer}
# CHECK: scf.yield %{{.+}}, %{{.+}} : i32, i32
# CHECK-NEXT: } {tile.producer}
# CHECK-NEXT: } else {
# CHECK: scf.for {{.*}} -> (i32, i32)
# CHECK-NOT: tile.one_thread
# CHECK-NOT: "tile.tma_copy"
# CHECK: "tile.mbarrier_wait"
# CHECK: "tile.mbarrier_arrive"
# CHECK: scf.for
# CHECK: } {tile.deferred_dot{{.*}}tile.warp_specialized}
# After the last P @ V of a tile: V's last slot and Q are released (where the
# tile's loop ran), and the indices advance.
# CHECK: "tile.mma_wait"
# CHECK-NOT: scf.for
# CHECK: "tile.mbarrier_arrive"
# CHECK-NOT: scf.for
# CHECK: "tile.mbarrier_arrive"
# CHECK: scf.yield %{{.+}}, %{{.+}} : i32, i32
# CHECK-NEXT: } {tile.persistent = 2 : i32}
# CHECK-NEXT: "tile.barrier"
# CHECK-NEXT: "tile.mbarrier_inval"
# CHECK: "tile.local_dealloc"
# CHECK: } {tile.warp_roles}
# CHECK-NEXT: return

# One mbarrier.init block and one CTA barrier before the split; the
# consumers' barriers name their 256 threads.
# PTX: .maxntid 384, 1, 1
# PTX: mbarrier.init
# PTX: fence.mbarrier_init
# PTX-NEXT: bar.sync 0;
# PTX-NOT: mbarrier.init
# PTX: setmaxnreg.dec.sync.aligned.u32 40;
# PTX: cp.async.bulk.tensor.2d
# PTX: setmaxnreg.inc.sync.aligned.u32 232;
# PTX: bar.sync 3, 256;
# PTX-NOT: bar.sync 0;
# PTX-NOT: mbarrier.init
