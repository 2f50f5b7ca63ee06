# RUN: %tilec ir %S/../../../examples/matmul_persistent.py --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 GROUP_M=8 NUM_SMS=132 --num-warps 8 --num-stages 4 --stage tile-opt > %t.1.mlir
# RUN: %tilec-opt %t.1.mlir --pass tile-flatten-loops,tile-tma-descriptors,tile-lower-descriptors,tile-accelerate-dot,tile-layout,tile-pipeline --target sm90 --num-warps 8 --num-stages 4 | %FileCheck %s
# RUN: %tilec ir %S/../../../examples/matmul_persistent.py --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=256 BLOCK_K=64 GROUP_M=8 NUM_SMS=132 --num-warps 8 --num-stages 3 --stage tile-opt > %t.2.mlir
# RUN: %tilec-opt %t.2.mlir --pass tile-flatten-loops,tile-tma-descriptors,tile-lower-descriptors,tile-accelerate-dot,tile-layout,tile-pipeline --target sm90 --num-warps 8 --num-stages 3 | %FileCheck %s --check-prefix=WIDE
# RUN: %tilec ir %S/../../../examples/matmul_persistent.py --target sm100 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 GROUP_M=8 NUM_SMS=132 --num-warps 8 --num-stages 3 --stage tile-opt > %t.3.mlir
# RUN: %tilec-opt %t.3.mlir --pass tile-flatten-loops,tile-tma-descriptors,tile-lower-descriptors,tile-accelerate-dot,tile-layout,tile-pipeline --target sm100 --num-warps 8 --num-stages 3 | %FileCheck %s --check-prefix=TC

# (The passes run here by name; NVIDIA's stage list runs them in this order.)
# The persistent example's flattened loop (tile-flatten-loops) pipelined with
# TMA rings: the rings and one set of transaction barriers are allocated once,
# before the fused loop (no per-tile init/inval); the prologue issues the
# first S-1 blocks of the fused index, the body waits on slot j % S, issues
# block j + S - 1 (the next tile's first blocks during a tile's last ones)
# and runs the epilogue in the scf.if at a tile's last k, which starts with
# the product's wait {pending = 0} (and, A's ring keeping rows in order, the
# row exchange) before the store.  The loop's exit still waits for the
# products (all complete by then): without it ptxas sees a product in flight
# on the exit path and waits for it in every iteration (C7517, checked on the
# PTX below).  The body's tile coordinates are carried, recomputed under an
# scf.if once per tile (no division in the body).

# CHECK: "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<4x128x64xf16, 3>
# CHECK: "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<4x128x64xf16, 3>
# CHECK: %[[BARS:.*]] = "tile.mbarrier_alloc"() {slots = 4 : i32}
# CHECK-COUNT-3: "tile.tma_expect"
# CHECK: scf.for
# CHECK-NOT: arith.divsi
# CHECK-NOT: "tile.mbarrier_alloc"
# CHECK: "tile.mbarrier_wait"(%[[BARS]]
# CHECK: %[[MMA:.*]] = "tile.mma"({{.*}}) {kind = "wgmma", tile.b_kmajor}
# CHECK-NEXT: %[[DONE:.*]] = "tile.mma_wait"(%[[MMA]]) {pending = 1 : i32}
# CHECK: "tile.tma_expect"(%[[BARS]]
# CHECK-NEXT: "tile.tma_copy"
# CHECK-NEXT: "tile.tma_copy"
# CHECK: scf.if %{{.*}} -> (tensor<128x128xf32
# CHECK-NEXT: %[[FIN:.*]] = "tile.mma_wait"(%[[DONE]]) {pending = 0 : i32}
# CHECK: %[[F16:.*]] = arith.truncf %[[FIN]]
# CHECK-NEXT: "tile.row_exchange"(%[[F16]]) {permutation = "wgmma"}
# CHECK: "tile.store"
# CHECK: } else {
# CHECK-NEXT: scf.yield %[[DONE]]
# CHECK: } {tile.flattened}
# CHECK-NEXT: "tile.mma_wait"(%{{.*}}) {pending = 0 : i32}
# CHECK-NEXT: "tile.barrier"
# CHECK-NEXT: "tile.mbarrier_inval"(%[[BARS]])
# CHECK: "tile.local_dealloc"
# CHECK-NEXT: "tile.local_dealloc"

# 128x256: the store's buffer of the f16 tile (64 KiB) fits next to the rings
# (144 KiB), and the layout conversion of the pointer store it replaces is
# gone, so A's ring keeps its rows in order and the store places them.
# WIDE: "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<3x128x64xf16, 3>
# WIDE: "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<1x128x256xf16, 3>
# WIDE: scf.if %{{.*}} -> (tensor<128x256xf32
# WIDE-NEXT: "tile.mma_wait"({{.*}}) {pending = 0 : i32}
# WIDE: "tile.tma_store"({{.*}}) {row_permutation = "wgmma", tma = 2 : i32} : (memref<1x128x256xf16, 3>, tensor<128x256xf16
# WIDE-NOT: "tile.row_exchange"
# WIDE: } {tile.flattened}

# tcgen05: the same loop; the branch's wait reads the accumulator out of TMEM
# (targets/nvidia/tcgen05.py puts the next tile's init back).
# TC: "tile.mbarrier_alloc"() {slots = 3 : i32}
# TC: "tile.mma"({{.*}}) {kind = "tcgen05", tile.b_kmajor}
# TC: scf.if %{{.*}} -> (tensor<128x128xf32
# TC-NEXT: "tile.mma_wait"({{.*}}) {pending = 0 : i32}
# TC: } {tile.flattened}
