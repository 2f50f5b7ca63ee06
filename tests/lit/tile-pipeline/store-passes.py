# RUN: %tilec ir %S/../../../examples/matmul_persistent.py --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=256 BLOCK_K=64 GROUP_M=8 NUM_SMS=132 --num-warps 8 --num-stages 4 --stage tile-opt > %t.1.mlir
# RUN: %tilec-opt %t.1.mlir --pass tile-flatten-loops,tile-tma-descriptors,tile-lower-descriptors,tile-accelerate-dot,tile-layout,tile-pipeline --target sm90 --num-warps 8 --num-stages 4 | %FileCheck %s
# RUN: %tilec ir %S/../../../examples/matmul_persistent.py --target sm90 --signature "*fp8e4nv:16,*fp8e4nv:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=256 BLOCK_K=128 GROUP_M=8 NUM_SMS=132 --num-warps 8 --num-stages 5 --stage ptx > %t.2.ptx
# RUN: %FileCheck %s --check-prefix=PTX < %t.2.ptx

# The persistent example at 128x256 with 4 ring slots (fp16 128x256x64: 48 KiB
# a slot, 192 KiB of rings): the whole f16 tile's store buffer (64 KiB) would
# not fit beside them (the loop was pipelined with 3 slots), so the store gets
# a 16 KiB buffer, one 64-column atom, and writes the tile in four column
# passes; the loop keeps 4 slots and says why.
# CHECK: "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<4x128x64xf16, 3>
# CHECK-NEXT: "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<4x256x64xf16, 3>
# CHECK-NEXT: %[[BUF:.*]] = "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<1x128x64xf16, 3>
# CHECK: scf.if %{{.*}} -> (tensor<128x256xf32
# CHECK: "tile.tma_store"(%[[BUF]], {{.*}}) {row_permutation = "wgmma", tma = 2 : i32} : (memref<1x128x64xf16, 3>, tensor<128x256xf16
# CHECK-NOT: "tile.row_exchange"
# CHECK: } {tile.flattened, tile.store_note = "the TMA store writes its 128x256 tile in 4 column passes through a 16384-byte buffer, so that num_stages=4 fits"}
# CHECK: "tile.tma_store_wait"()

# fp8 at num_stages=5: 4 slots (the deepest with the store) and the same
# passes.  In the PTX each pass waits until the previous copy has read the
# buffer, writes its atom with four stmatrix.x4 at the buffer's start (the
# 4 x 48 KiB rings end at 196608), fences, and copies one [128, 64] box.
# PTX: cp.async.bulk.wait_group.read 0;
# PTX: stmatrix.sync.aligned.m8n8.x4.shared.b16 [%rd{{[0-9]+}}+196608]
# PTX: fence.proxy.async.shared::cta;
# PTX: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group
# PTX-NEXT: cp.async.bulk.commit_group;
# PTX-NEXT: cp.async.bulk.wait_group.read 0;
# PTX: stmatrix.sync.aligned.m8n8.x4.shared.b16
# PTX: fence.proxy.async.shared::cta;
# PTX: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group
# PTX-NEXT: cp.async.bulk.commit_group;
# PTX-NEXT: cp.async.bulk.wait_group.read 0;
# PTX: stmatrix.sync.aligned.m8n8.x4.shared.b16
# PTX: fence.proxy.async.shared::cta;
# PTX: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group
# PTX-NEXT: cp.async.bulk.commit_group;
# PTX-NEXT: cp.async.bulk.wait_group.read 0;
# PTX: stmatrix.sync.aligned.m8n8.x4.shared.b16
# PTX: fence.proxy.async.shared::cta;
# PTX: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group
# PTX-NEXT: cp.async.bulk.commit_group;
# PTX-NOT: cp.async.bulk.tensor.2d.global.shared::cta
