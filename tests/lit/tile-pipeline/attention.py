# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_fwd --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,fp32,i32,i32,i32:16" --constexpr HEAD_DIM=128 BLOCK_M=128 BLOCK_N=64 CAUSAL=False WARP_SPECIALIZE=False --num-warps 8 --num-stages 4 --stage tiled | %FileCheck %s
# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_fwd --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,fp32,i32,i32,i32:16" --constexpr HEAD_DIM=64 BLOCK_M=128 BLOCK_N=64 CAUSAL=True --num-warps 4 --num-stages 2 --stage ptx | %FileCheck %s --check-prefix=PTX

# tile-pipeline on the attention forward's loop (two wgmma dots), whose Q, K
# and V descriptors the host encodes (tile-tma-descriptors): TMA rings.  Q,
# loaded before the loop, gets a one-slot ring (rows permuted: it is A) filled
# once on its own barrier, waited for before the loop (copied only where the
# loop runs, lb < ub: a remainder loop often runs no iteration, and the wait's
# parity is then flipped to the barrier's initial, complete phase); K and V get
# num_stages-slot rings with a "full" barrier per slot (their copies landed)
# and an "empty" one (every warp is done reading: arrival count = warps).
# Each iteration waits for its slot (every thread), then one thread waits for
# the slot it refills to be empty and issues the copies; no CTA barrier.  S =
# Q @ K.T (K-major B) is waited for at once; P (in registers, in the
# accumulator layout) is wgmma's A from registers; acc = P @ V only feeds the
# next iteration: it stays in flight across the back edge (its wait is at the
# next iteration's first use of acc, and after the loop), so the copies run
# S - 2 iterations ahead, and the slot of iteration j - 1 is released (each
# warp arrives) right after that wait in iteration j.

# The first loop issues S one iteration early (attention-early.py); the
# remainder loop, which runs at most once (lb = N / 64 * 64, ub = N), keeps
# this schedule.
# CHECK: scf.for
# CHECK: "tile.local_dealloc"
# CHECK: %[[RQ:.*]] = "tile.local_alloc"() {row_permutation = "wgmma", swizzle = 128 : i32} : () -> memref<1x128x128xf16, 3>
# CHECK: %[[RK:.*]] = "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<4x64x128xf16, 3>
# CHECK: %[[RV:.*]] = "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<4x64x128xf16, 3>
# CHECK: %[[FULL:.*]] = "tile.mbarrier_alloc"() {slots = 4 : i32} : () -> memref<4xi64, 3>
# CHECK: %[[EMPTY:.*]] = "tile.mbarrier_alloc"() {slots = 4 : i32, tile.arrivals = "warps"}
# CHECK: %[[ONCE:.*]] = "tile.mbarrier_alloc"() {slots = 1 : i32}
# CHECK-NEXT: %[[RUNS:.*]] = arith.cmpi slt, %[[LB:.*]], %[[UB:.*]] : i32
# CHECK: "tile.tma_expect"(%[[ONCE]], %{{.*}}, %[[RUNS]]) {bytes = 32768 : i32}
# CHECK: "tile.tma_copy"(%[[RQ]], {{.*}}, %[[ONCE]],
# CHECK: "tile.tma_expect"(%[[FULL]], {{.*}}) {bytes = 32768 : i32}
# CHECK: "tile.tma_copy"(%[[RK]], {{.*}}, %[[FULL]],
# CHECK: "tile.tma_copy"(%[[RV]], {{.*}}, %[[FULL]],
# CHECK: "tile.tma_expect"(%[[FULL]],
# CHECK-NOT: "tile.tma_expect"(%[[FULL]],
# CHECK: %[[DEAD:.*]] = arith.xori %[[RUNS]], %true{{.*}} : i1
# CHECK: %[[IDLE:.*]] = arith.extui %[[DEAD]] : i1 to i32
# CHECK: %[[PAR:.*]] = arith.xori %{{.*}}, %[[IDLE]] : i32
# CHECK: "tile.mbarrier_wait"(%[[ONCE]], %{{.*}}, %[[PAR]])
# CHECK-NEXT: scf.for %{{.*}} = %[[LB]] to %[[UB]]
# CHECK-NOT: "tile.barrier"
# CHECK: "tile.mbarrier_wait"(%[[FULL]],
# CHECK-NOT: "tile.barrier"
# CHECK: "tile.mbarrier_wait"(%[[EMPTY]], {{.*}}) {tile.one_thread}
# CHECK-NOT: "tile.barrier"
# CHECK: "tile.tma_expect"(%[[FULL]],
# CHECK: "tile.mma"(%[[RQ]], {{.*}}) {kind = "wgmma", tile.b_kmajor}
# CHECK-NEXT: "tile.mma_wait"({{.*}}) {pending = 0 : i32}
# CHECK-NOT: "tile.barrier"
# CHECK: "tile.mma_wait"(%arg{{[0-9]+}}) {pending = 0 : i32}
# CHECK: "tile.mbarrier_arrive"(%[[EMPTY]],
# CHECK: %[[PV:.*]] = "tile.mma"(%{{.*}}, %{{.*}}, %[[RV]], %{{.*}}, %{{.*}}) {kind = "wgmma"} : (tensor<128x64xf16
# CHECK-NOT: "tile.mma_wait"(%[[PV]])
# CHECK: scf.yield {{.*}}%[[PV]]
# CHECK: "tile.mma_wait"(%{{.*}}#{{[0-9]+}}) {pending = 0 : i32}
# CHECK-NEXT: "tile.barrier"
# CHECK-NEXT: "tile.mbarrier_inval"(%[[ONCE]])
# CHECK-NEXT: "tile.mbarrier_inval"(%[[EMPTY]])
# CHECK-NEXT: "tile.mbarrier_inval"(%[[FULL]])
# CHECK: "tile.local_dealloc"

# In the loop the issuing warp (its `elect.sync` lane copies every box) waits
# for the slot it refills as a whole: a lane need not reconverge after a
# branch, so an elected lane that did not wait could copy into a slot still
# being read.
# PTX: mbarrier.init.shared.b64 [%r{{[0-9]+}}], 4;
# PTX: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
# PTX: setp.gt.u32 [[NOTW0:%p[0-9]+]], %r{{[0-9]+}}, 31;
# PTX: mbarrier.try_wait.parity
# PTX: @[[NOTW0]] bra
# PTX: elect.sync
# PTX: mbarrier.try_wait.parity
# PTX-NOT: cp.async.cg.shared.global
# PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {{.*}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1,  1, 0,  0;
# PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {{{.*}}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, p, 1, 1, 1;
# PTX: mbarrier.arrive.shared.b64
