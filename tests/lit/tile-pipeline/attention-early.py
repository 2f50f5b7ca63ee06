# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_fwd --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,fp32,i32,i32,i32:16" --constexpr HEAD_DIM=128 BLOCK_M=128 BLOCK_N=128 CAUSAL=False --num-warps 8 --num-stages 3 --stage tiled | %FileCheck %s
# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_fwd --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,fp32,i32,i32,i32:16" --constexpr HEAD_DIM=128 BLOCK_M=128 BLOCK_N=128 CAUSAL=False --num-warps 8 --num-stages 3 --stage ptx | %FileCheck %s --check-prefix=PTX

# passes/tile_pipeline_early.py on the attention forward's first loop (the
# 128 x 128 tiles of 8 warps; num_stages 3 does not fit: 2 slots): S = Q @ K.T
# of iteration j + 1 is issued at the top of iteration j, runs during the
# softmax of iteration j (on the S carried in, complete), and is waited for at
# the end, with P @ V in flight.  K and V get rings and barriers of their own:
# K's slot is released (each warp arrives, one thread refills it) once S is
# done, V's once P @ V is.  Prologue: the copies of iterations 0 and 1, S of
# iteration 0 waited for at once and its slot refilled.

# CHECK: %[[RQ:.*]] = "tile.local_alloc"() {row_permutation = "wgmma", swizzle = 128 : i32} : () -> memref<1x128x128xf16, 3>
# CHECK: %[[RK:.*]] = "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<2x128x128xf16, 3>
# CHECK: %[[RV:.*]] = "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<2x128x128xf16, 3>
# CHECK: %[[FK:.*]] = "tile.mbarrier_alloc"() {slots = 2 : i32}
# CHECK: %[[EK:.*]] = "tile.mbarrier_alloc"() {slots = 2 : i32, tile.arrivals = "warps"}
# CHECK: %[[FV:.*]] = "tile.mbarrier_alloc"() {slots = 2 : i32}
# CHECK: %[[EV:.*]] = "tile.mbarrier_alloc"() {slots = 2 : i32, tile.arrivals = "warps"}
# CHECK: %[[ONCE:.*]] = "tile.mbarrier_alloc"() {slots = 1 : i32}
# CHECK-COUNT-2: "tile.tma_copy"(%[[RK]], {{.*}}, %[[FK]],
# CHECK: "tile.mbarrier_wait"(%[[ONCE]],
# CHECK: "tile.mbarrier_wait"(%[[FK]],
# CHECK-NOT: "tile.
# CHECK: %[[S0:.*]] = "tile.mma"(%[[RQ]], %{{.*}}, %[[RK]], %{{.*}}, %[[ZERO:cst[_0-9]*]]) {kind = "wgmma", tile.b_kmajor}
# CHECK-NEXT: %[[S0W:.*]] = "tile.mma_wait"(%[[S0]]) {pending = 0 : i32}
# CHECK: "tile.mbarrier_arrive"(%[[EK]],
# CHECK: "tile.mbarrier_wait"(%[[EK]], {{.*}}) {tile.one_thread}
# CHECK: "tile.tma_copy"(%[[RK]], {{.*}}, %[[FK]],
# CHECK: scf.for %{{.*}} iter_args({{.*}}, %[[S:.*]] = %[[S0W]], %{{.*}} = %c0_i32{{.*}})
# CHECK: "tile.mbarrier_wait"(%[[FK]],
# CHECK-NOT: "tile.
# CHECK: %[[SN:.*]] = "tile.mma"(%[[RQ]], %{{.*}}, %[[RK]], %{{.*}}, %[[ZERO]]) {kind = "wgmma", tile.b_kmajor}
# CHECK-NOT: "tile.mma_wait"
# CHECK: "tile.reduce"(%[[S]])
# CHECK-NOT: "tile.mma_wait"
# CHECK: math.exp2
# CHECK-NOT: "tile.mma_wait"
# CHECK: "tile.mbarrier_wait"(%[[FV]],
# CHECK-NOT: "tile.
# CHECK: %[[PV:.*]] = "tile.mma"(%{{.*}}, %{{.*}}, %[[RV]], %{{.*}}, %{{.*}}) {kind = "wgmma"} : (tensor<128x128xf16
# CHECK-NEXT: %[[SW:.*]] = "tile.mma_wait"(%[[SN]]) {pending = 1 : i32}
# CHECK: "tile.mbarrier_arrive"(%[[EK]],
# CHECK: "tile.mbarrier_wait"(%[[EK]], {{.*}}) {tile.one_thread}
# CHECK: "tile.tma_copy"(%[[RK]], {{.*}}, %[[FK]],
# CHECK: %[[PVW:.*]] = "tile.mma_wait"(%[[PV]]) {pending = 0 : i32}
# CHECK: "tile.mbarrier_arrive"(%[[EV]],
# CHECK: "tile.mbarrier_wait"(%[[EV]], {{.*}}) {tile.one_thread}
# CHECK: "tile.tma_copy"(%[[RV]], {{.*}}, %[[FV]],
# CHECK: scf.yield %{{.*}}, %[[PVW]], %{{.*}}, %[[SW]], %{{.*}} :
# CHECK: "tile.barrier"
# CHECK-NEXT: "tile.mbarrier_inval"(%[[ONCE]])
# CHECK-NEXT: "tile.mbarrier_inval"(%[[EV]])
# CHECK-NEXT: "tile.mbarrier_inval"(%[[FV]])
# CHECK-NEXT: "tile.mbarrier_inval"(%[[EK]])
# CHECK-NEXT: "tile.mbarrier_inval"(%[[FK]])

# In the PTX the prologue's S waited for at once; in the loop S of j + 1 (A from
# shared memory) is committed, then the softmax's exp2 with no wgmma wait
# before P @ V (A from registers), whose commit is followed by the wait that
# keeps it in flight (S done), the K refill, then the wait for P @ V.
# PTX: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {{.*}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1,  1, 0,  0;
# PTX: wgmma.commit_group.sync.aligned;
# PTX-NOT: ex2.approx
# PTX: wgmma.wait_group.sync.aligned 0;
# PTX: wgmma.fence.sync.aligned;
# PTX-COUNT-8: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {{.*}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1,  1, 0,  0;
# PTX: wgmma.commit_group.sync.aligned;
# PTX-NOT: wgmma.wait_group
# PTX: ex2.approx.ftz.f32
# PTX-NOT: wgmma.wait_group
# PTX: wgmma.fence.sync.aligned;
# PTX-COUNT-8: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {{{.*}}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, p, 1, 1, 1;
# PTX: wgmma.commit_group.sync.aligned;
# PTX-NEXT: // begin inline asm
# PTX-NEXT: wgmma.wait_group.sync.aligned 1;
# PTX: mbarrier.arrive.shared.b64
# PTX: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
# PTX: wgmma.wait_group.sync.aligned 0;
# PTX: mbarrier.arrive.shared.b64
# PTX: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
