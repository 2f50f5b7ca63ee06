# RUN: %tilec ir %S/../../../examples/matmul_persistent.py --kernel matmul_persistent --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=256 BLOCK_K=64 GROUP_M=8 NUM_SMS=132 WARP_SPECIALIZE=True --num-warps 8 --num-stages 3 --stage tiled | %FileCheck %s
# RUN: %tilec ir %S/../../../examples/matmul_persistent.py --kernel matmul_persistent --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=256 BLOCK_K=64 GROUP_M=8 NUM_SMS=132 WARP_SPECIALIZE=True --num-warps 8 --num-stages 3 --stage ptx | %FileCheck %s --check-prefix=PTX
# RUN: %tilec ir %S/../../../examples/matmul_persistent.py --kernel matmul_persistent --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=256 BLOCK_K=64 GROUP_M=8 NUM_SMS=132 --num-warps 8 --num-stages 3 --stage tiled | %FileCheck %s --check-prefix=PLAIN

# tile-warp-specialize on the persistent TMA matmul (examples/matmul_persistent.py,
# `tl.range(..., flatten=True, warp_specialize=True)`): tile-pipeline gives
# the flattened loop per-warp "empty" barriers; inside tile-flatten-loops'
# K guard, after the rings and the prologue's copies, the producer warpgroup
# runs a loop that carries the copies' recurrences as its own iteration
# arguments: the next tile's coordinates (the `scf.if` that recomputes them
# at a tile's end), the tile counter, the K index, and the slot counter.  It
# waits for a free slot and issues both copies only where the block exists.
# The consumers' loop keeps its own recurrences, arrives on the empty
# barriers, and keeps the epilogue (the TMA store).  The guard's zero-K
# branch runs on the consumers only (a split with an empty producer branch).

# CHECK: func.func @matmul_persistent({{.*}}tile.producer_warps = 4 : i32
# CHECK: scf.if %[[K:.+]] {
# CHECK: %[[FULL:.+]] = "tile.mbarrier_alloc"() {slots = 3 : i32}
# CHECK: %[[EMPTY:.+]] = "tile.mbarrier_alloc"() {slots = 3 : i32, tile.arrivals = "warps"}
# CHECK: "tile.tma_copy"
# CHECK: %[[ROLE:.+]] = "tile.producer_role"() {warps = 4 : i32}
# CHECK-NEXT: scf.if %[[ROLE]] {
# CHECK-NEXT: scf.for %[[IV:[^ ]+]] = {{.*}} iter_args(%[[AM:[^ ]+]] = %[[A0:[^ #]+]]#0, %[[BN:[^ ]+]] = %[[A0]]#1, %[[TILE:[^ ]+]] = %{{.+}}, %[[KI:[^ ]+]] = %{{.+}}, %[[CNT:[^ ]+]] = %{{.+}}) -> (i32, i32, i32, i32, i32)
# CHECK-NOT: tile.mma
# CHECK: %[[OFFK:.+]] = arith.muli %{{.+}}, %c64_i32
# CHECK: %[[END:.+]] = arith.cmpi eq
# CHECK: %[[NEXT:.+]]:2 = scf.if %[[END]] -> (i32, i32) {
# CHECK: arith.divsi
# CHECK: } else {
# CHECK-NEXT: scf.yield %[[AM]], %[[BN]] : i32, i32
# CHECK: %[[LIVE:.+]] = arith.cmpi slt
# CHECK: scf.if %[[LIVE]] {
# CHECK-NEXT: "tile.mbarrier_wait"(%[[EMPTY]], {{.*}}) {tile.one_thread}
# CHECK-NEXT: "tile.tma_expect"(%[[FULL]]
# CHECK-NEXT: "tile.tma_copy"({{.*}}, %[[FULL]], %[[LIVE]], %[[AM]], %[[OFFK]]) {tma = 0 : i32}
# CHECK-NEXT: "tile.tma_copy"({{.*}}, %[[FULL]], %[[LIVE]], %[[BN]], %[[OFFK]]) {tma = 1 : i32}
# CHECK: scf.yield %[[NEXT]]#0, %[[NEXT]]#1, %{{.+}}, %{{.+}}, %{{.+}} : i32, i32, i32, i32, i32
# CHECK-NEXT: } {tile.producer}
# CHECK-NEXT: } else {
# CHECK: scf.for
# CHECK-NOT: tile.one_thread
# CHECK-NOT: "tile.tma_copy"
# CHECK: "tile.mbarrier_wait"(%[[FULL]]
# CHECK: "tile.mma"
# CHECK: "tile.mbarrier_arrive"(%[[EMPTY]]
# CHECK: "tile.tma_store"
# CHECK: } {tile.flattened, tile.warp_specialized}
# CHECK: "tile.mbarrier_inval"(%[[EMPTY]])
# CHECK-NEXT: "tile.mbarrier_inval"(%[[FULL]])
# CHECK: } {tile.warp_roles}
# CHECK-NEXT: } else {
# CHECK-NEXT: %[[ROLE2:.+]] = "tile.producer_role"() {warps = 4 : i32}
# CHECK-NEXT: scf.if %[[ROLE2]] {
# CHECK-NEXT: } else {
# CHECK-NEXT: scf.for
# CHECK: "tile.store"
# CHECK: tile.warp_specialize_note = "one loop per kernel
# CHECK-NEXT: } {tile.warp_roles}

# 384 threads, the register cap at entry, one register move per role (the
# zero-K split moves none), the consumers' barriers named (barrier 3, 256).
# PTX: .maxntid 384, 1, 1
# PTX-NEXT: .maxnreg 168
# PTX: mbarrier.init
# PTX: setmaxnreg.dec.sync.aligned.u32 40;
# PTX: mbarrier.try_wait.parity
# PTX: cp.async.bulk.tensor.2d
# PTX: setmaxnreg.inc.sync.aligned.u32 232;
# PTX: wgmma.mma_async
# PTX: mbarrier.arrive.shared
# PTX: bar.sync 3, 256;
# PTX-NOT: setmaxnreg

# Without the hint: no empty barriers, no split (a CTA barrier frees the slots).
# PLAIN-NOT: tile.arrivals
# PLAIN-NOT: tile.producer_role
# PLAIN: "tile.mma"
# PLAIN: "tile.barrier"
# PLAIN: "tile.tma_copy"
