# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_fwd --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,fp32,i32,i32:16" --constexpr HEAD_DIM=128 BLOCK_M=128 BLOCK_N=64 CAUSAL=False --num-warps 8 --num-stages 4 --stage tiled | %FileCheck %s
# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_fwd --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,fp32,i32,i32:16" --constexpr HEAD_DIM=64 BLOCK_M=128 BLOCK_N=64 CAUSAL=True --num-warps 4 --num-stages 2 --stage ptx | %FileCheck %s --check-prefix=PTX

# tile-pipeline on the attention forward's loop (two wgmma dots): Q, loaded
# before the loop, gets a one-slot ring (rows permuted: it is A) copied once in
# the first group; K and V get num_stages-slot rings; each iteration waits for
# its copies, issues the next iteration's, and runs S = Q @ K.T (K-major B) and
# P @ V synchronously, P (computed in registers, in the accumulator layout)
# read by wgmma from registers.  acc = P @ V only feeds the next iteration: it
# stays in flight across the back edge (its wait is at the next iteration's
# first use of acc, and after the loop), so the copies run S - 2 iterations
# ahead.

# CHECK: "tile.local_alloc"() {row_permutation = "wgmma", swizzle = 128 : i32} : () -> memref<1x128x128xf16, 3>
# CHECK: "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<4x64x128xf16, 3>
# CHECK: "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<4x64x128xf16, 3>
# CHECK: "tile.async_commit"
# CHECK: "tile.async_commit"
# CHECK: scf.for
# CHECK: "tile.async_wait"() {pending = 1 : i32}
# CHECK-NEXT: "tile.barrier"
# CHECK: "tile.async_commit"
# CHECK: "tile.mma"({{.*}}) {kind = "wgmma", tile.b_kmajor}
# CHECK-NEXT: "tile.mma_wait"({{.*}}) {pending = 0 : i32}
# CHECK: "tile.mma_wait"(%arg{{[0-9]+}}) {pending = 0 : i32}
# CHECK: %[[PV:.*]] = "tile.mma"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {kind = "wgmma"} : (tensor<128x64xf16
# CHECK-NOT: "tile.mma_wait"(%[[PV]])
# CHECK: scf.yield {{.*}}%[[PV]]
# CHECK: "tile.mma_wait"(%{{.*}}#{{[0-9]+}}) {pending = 0 : i32}
# CHECK: "tile.async_wait"() {pending = 0 : i32}
# CHECK: "tile.local_dealloc"

# PTX: cp.async.cg.shared.global
# PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {{.*}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1,  1, 0,  0;
# PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {{{.*}}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, p, 1, 1, 1;
