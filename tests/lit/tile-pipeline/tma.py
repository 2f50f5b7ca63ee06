# RUN: %tilec ir %S/../../../examples/matmul_persistent.py --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 GROUP_M=8 NUM_SMS=132 --num-warps 8 --num-stages 3 --stage tile-opt > %t.mlir
# RUN: %tilec-opt %t.mlir --pass tile-tma-descriptors,tile-lower-descriptors,tile-accelerate-dot,tile-layout,tile-pipeline --target sm90 --num-warps 8 --num-stages 3 | %FileCheck %s
# RUN: %tilec ir %S/../../../examples/matmul_persistent.py --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 GROUP_M=8 NUM_SMS=132 --num-warps 8 --num-stages 3 --stage ptx | %FileCheck %s --check-prefix=PTX
# RUN: %tilec ir %S/../../../examples/matmul_persistent.py --target sm80 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 GROUP_M=8 NUM_SMS=132 --num-warps 8 --num-stages 3 --stage tiled | %FileCheck %s --check-prefix=SM80

# On sm90 the persistent example's descriptor loads (128-byte rows, a base that
# is a kernel argument) are TMA copies: the rings get one transaction barrier
# per slot; the prologue and each iteration expect the slot's bytes (two
# 128x64 fp16 tiles: 32768) and copy both tiles with their coordinates; an
# iteration waits on its slot's barrier (no cp.async wait, no barrier first),
# and one barrier after the product's wait lets thread 0 overwrite the slot
# the previous product read.  After the loop the barriers are invalidated.
# The accumulator starts at zero and only chains the products, so A's ring keeps
# its rows in order (one 128-row TMA box) and the accumulator's rows are put in
# place once after the loop (tile.row_exchange), after the epilogue's cast to
# f16 (half the bytes): a 128x128 accumulator of 8 warps (64 elements per
# thread) keeps the pointer store, whose tagged hint (tma = 2) is left for the
# GPU lowering to drop (wider accumulators are stored by TMA:
# tests/test_tma_store.py).  B's copies take an L2 evict-first policy
# (tile.l2_evict_first: pipeline_tma.b_evict_first), A's do not.  (The nest, without tile-flatten-loops, which
# NVIDIA's stage list runs: tile-pipeline/flattened.py.)

# CHECK: "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<3x128x64xf16, 3>
# CHECK: "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<3x128x64xf16, 3>
# CHECK: %[[BARS:.*]] = "tile.mbarrier_alloc"() {slots = 3 : i32}
# CHECK-NOT: "tile.load"
# CHECK: "tile.tma_expect"(%[[BARS]], %{{.*}}, %{{.*}}) {bytes = 32768 : i32}
# CHECK-NEXT: "tile.tma_copy"({{.*}}) {tma = 0 : i32}
# CHECK-NEXT: "tile.tma_copy"({{.*}}) {tile.l2_evict_first, tma = 1 : i32}
# CHECK: "tile.tma_expect"
# CHECK: scf.for
# CHECK-NOT: "tile.async_wait"
# CHECK: "tile.mbarrier_wait"(%[[BARS]], %{{.*}}, %{{.*}})
# CHECK-NOT: "tile.barrier"
# CHECK: "tile.mma"({{.*}}) {kind = "wgmma", tile.b_kmajor}
# CHECK-NEXT: "tile.mma_wait"({{.*}}) {pending = 1 : i32}
# CHECK-NEXT: "tile.barrier"
# CHECK: "tile.tma_expect"
# CHECK-NEXT: "tile.tma_copy"({{.*}}) {tma = 0 : i32}
# CHECK-NEXT: "tile.tma_copy"({{.*}}) {tile.l2_evict_first, tma = 1 : i32}
# CHECK: scf.yield
# CHECK: "tile.mma_wait"({{.*}}) {pending = 0 : i32}
# CHECK-NEXT: "tile.barrier"
# CHECK-NEXT: "tile.mbarrier_inval"(%[[BARS]])
# CHECK: "tile.local_dealloc"
# CHECK-NEXT: "tile.local_dealloc"
# CHECK-NEXT: arith.truncf
# CHECK-NEXT: "tile.row_exchange"({{.*}}) {permutation = "wgmma"} : (tensor<128x128xf16
# CHECK-NOT: "tile.tma_coords"({{.*}}) {tma = {{[01]}} : i32}

# PTX: .param .align 64 .b8 matmul_persistent_param_6[128],
# PTX-NEXT: .param .align 64 .b8 matmul_persistent_param_7[128]
# PTX: cvta.param.u64
# PTX: mbarrier.init.shared.b64 [%r{{[0-9]+}}], 1;
# PTX: fence.mbarrier_init.release.cluster;
# PTX: mbarrier.arrive.expect_tx.shared.b64 _, [%r{{[0-9]+}}], 32768;
# PTX: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%rd{{[0-9]+}}], [%rd{{[0-9]+}}, {%r{{[0-9]+}}, %r{{[0-9]+}}}], [{{.*}}];
# The wait retries without a suspend-time hint (no NANOSLEEP in the retry path).
# PTX: mbarrier.try_wait.parity.shared::cta.b64 P1, [%r{{[0-9]+}}], %r{{[0-9]+}};
# PTX: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
# PTX: mbarrier.inval.shared.b64
# PTX-NOT: cp.async.cg

# sm80 has no TMA: the loads stay pointer loads, with no hints left.
# SM80-NOT: tile.tma
# SM80: "tile.load"
