# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_fwd --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,fp32,i32,i32,i32:16" --constexpr HEAD_DIM=128 BLOCK_M=128 BLOCK_N=128 CAUSAL=False OVERLAP=False --num-warps 8 --num-stages 3 --stage tiled | %FileCheck %s
# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_fwd --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,fp32,i32,i32,i32:16" --constexpr HEAD_DIM=128 BLOCK_M=128 BLOCK_N=128 CAUSAL=False WARP_SPECIALIZE=True OVERLAP=False --num-warps 8 --num-stages 3 --stage tiled | %FileCheck %s --check-prefix=WS
# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_fwd --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,fp32,i32,i32,i32:16" --constexpr HEAD_DIM=128 BLOCK_M=128 BLOCK_N=128 CAUSAL=False WARP_SPECIALIZE=True --num-warps 8 --num-stages 3 --stage tiled | %FileCheck %s --check-prefix=WS
# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_fwd --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,fp32,i32,i32,i32:16" --constexpr HEAD_DIM=128 BLOCK_M=128 BLOCK_N=128 CAUSAL=False WARP_SPECIALIZE=True --num-warps 8 --num-stages 3 --stage tiled | %FileCheck %s --check-prefix=DEF

# passes/tile_pipeline_defer.py on the attention forward's first loop
# (`overlap_dots=False`, or unset with warp_specialize=True: the default
# there; 128 x 128 tiles, 8 warps, 2 slots): acc += P @ V of
# key block j - 1 is issued in iteration j right after S_j = Q @ K_j.T, the
# wait for S_j leaves it in flight (pending = 1) through the softmax, and it
# is waited for before the rescale (pending = 0); then each warp releases V's
# slot of j - 1.  K and V have rings and barriers of their own.  The loop
# carries P (fp16) and the accumulator input; the prologue is iteration 0
# without P @ V, the epilogue P @ V of the last block.

# CHECK: %[[RQ:.*]] = "tile.local_alloc"() {row_permutation = "wgmma", swizzle = 128 : i32} : () -> memref<1x128x128xf16, 3>
# CHECK: %[[RK:.*]] = "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<2x128x128xf16, 3>
# CHECK: %[[RV:.*]] = "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<2x128x128xf16, 3>
# CHECK: %[[FK:.*]] = "tile.mbarrier_alloc"() {slots = 2 : i32}
# CHECK: %[[EK:.*]] = "tile.mbarrier_alloc"() {slots = 2 : i32, tile.arrivals = "warps"}
# CHECK: %[[FV:.*]] = "tile.mbarrier_alloc"() {slots = 2 : i32}
# CHECK: %[[EV:.*]] = "tile.mbarrier_alloc"() {slots = 2 : i32, tile.arrivals = "warps"}
# Prologue: iteration 0's S, waited for at once, and no P @ V.
# CHECK: "tile.mbarrier_wait"(%[[FK]],
# CHECK: %[[S0:.*]] = "tile.mma"(%[[RQ]], {{.*}}, %[[RK]], {{.*}}) {kind = "wgmma", tile.b_kmajor}
# CHECK-NEXT: "tile.mma_wait"(%[[S0]]) {pending = 0 : i32}
# CHECK-NOT: "tile.mma"
# CHECK: %[[P0:.*]] = arith.truncf
# CHECK: "tile.mbarrier_arrive"(%[[EK]],
# CHECK: "tile.mbarrier_wait"(%[[EK]], {{.*}}) {tile.one_thread}
# CHECK: "tile.tma_copy"(%[[RK]],
# CHECK: scf.for %{{.*}} iter_args({{.*}}, %[[P:.*]] = %[[P0]], %[[C:.*]] = %{{.*}}, %[[J:.*]] = %c1_i32{{.*}})
# CHECK: "tile.mbarrier_wait"(%[[FK]],
# CHECK: %[[S:.*]] = "tile.mma"(%[[RQ]], {{.*}}, %[[RK]], {{.*}}) {kind = "wgmma", tile.b_kmajor}
# CHECK: "tile.mbarrier_wait"(%[[FV]],
# CHECK: %[[PV:.*]] = "tile.mma"(%[[P]], {{.*}}, %[[RV]], %{{.*}}, %[[C]]) {kind = "wgmma"}
# CHECK-NEXT: "tile.mma_wait"(%[[S]]) {pending = 1 : i32}
# CHECK: "tile.mbarrier_arrive"(%[[EK]],
# CHECK: "tile.mbarrier_wait"(%[[EK]], {{.*}}) {tile.one_thread}
# CHECK: "tile.tma_copy"(%[[RK]],
# CHECK: math.exp2
# CHECK: %[[ACC:.*]] = "tile.mma_wait"(%[[PV]]) {pending = 0 : i32}
# CHECK: "tile.mbarrier_arrive"(%[[EV]],
# CHECK: "tile.mbarrier_wait"(%[[EV]], {{.*}}) {tile.one_thread}
# CHECK: "tile.tma_copy"(%[[RV]],
# CHECK: arith.mulf %[[ACC]],
# CHECK: scf.yield
# CHECK-NEXT: } {tile.deferred_dot
# After the loop: P @ V of the last key block, waited for.
# CHECK: "tile.mbarrier_wait"(%[[FV]],
# CHECK: %[[LAST:.*]] = "tile.mma"(%{{.*}}, {{.*}}, %[[RV]], {{.*}}) {kind = "wgmma"}
# CHECK-NEXT: "tile.mma_wait"(%[[LAST]]) {pending = 0 : i32}

# With a producer warpgroup: its loop starts at the loop's second key block
# and refills K (load j + 2) and V (load j + 1) on their own empty barriers;
# the consumers only arrive on them, V's after the wait for P @ V.
# WS: %[[EK:.*]] = "tile.mbarrier_alloc"() {slots = 2 : i32, tile.arrivals = "warps"}
# WS: %[[EV:.*]] = "tile.mbarrier_alloc"() {slots = 2 : i32, tile.arrivals = "warps"}
# WS: "tile.producer_role"
# WS: scf.for {{.*}} iter_args(%{{.*}} = %c1_i32{{.*}})
# WS: "tile.mbarrier_wait"(%[[EK]], {{.*}}) {tile.one_thread}
# WS: "tile.mbarrier_wait"(%[[EV]], {{.*}}) {tile.one_thread}
# WS: } {tile.producer}
# WS: scf.for
# WS-NOT: tile.one_thread
# WS: %[[PV:.*]] = "tile.mma"({{.*}}) {kind = "wgmma"}
# WS-NEXT: "tile.mma_wait"({{.*}}) {pending = 1 : i32}
# WS: "tile.mbarrier_arrive"(%[[EK]],
# WS: "tile.mma_wait"(%[[PV]]) {pending = 0 : i32}
# WS-NOT: "tile.
# WS: "tile.mbarrier_arrive"(%[[EV]],
# WS: } {tile.deferred_dot, {{.*}}tile.warp_specialized}

# The default (no overlap_dots) on the loop hinted warp_specialize takes this
# order, not early S (the consumers' loop keeps the marker).
# DEF: tile.deferred_dot
