# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_fwd --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,fp32,i32,i32,i32:16" --constexpr HEAD_DIM=128 BLOCK_M=128 BLOCK_N=64 CAUSAL=False WARP_SPECIALIZE=True OVERLAP=False --num-warps 8 --num-stages 4 --stage tiled | %FileCheck %s
# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_fwd --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,fp32,i32,i32,i32:16" --constexpr HEAD_DIM=128 BLOCK_M=128 BLOCK_N=64 CAUSAL=False WARP_SPECIALIZE=True OVERLAP=False --num-warps 8 --num-stages 4 --stage ptx | %FileCheck %s --check-prefix=PTX
# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_fwd --target sm80 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,fp32,i32,i32,i32:16" --constexpr HEAD_DIM=64 BLOCK_M=64 BLOCK_N=64 CAUSAL=False WARP_SPECIALIZE=True --num-warps 4 --num-stages 3 --stage tiled | %FileCheck %s --check-prefix=SM80

# tile-warp-specialize on the attention forward (`tl.range(...,
# warp_specialize=True)`, TMA rings on sm90): the ring allocations, the
# scalar arithmetic and the prologue's copies stay where every warp runs
# them; a producer warpgroup (tile.producer_role) runs a loop over the key
# blocks that waits for a free slot and issues the K and V copies of the
# block `ahead` iterations on, only where that block exists; the consumer
# warps run the rest of the kernel, their loop without a producer wait or copy.

# CHECK: func.func @_attn_fwd({{.*}}tile.producer_warps = 4 : i32
# CHECK: "tile.mbarrier_alloc"() {slots = 4 : i32}
# CHECK: "tile.mbarrier_alloc"() {slots = 4 : i32, tile.arrivals = "warps"}
# CHECK: "tile.tma_copy"
# CHECK: %[[ROLE:.+]] = "tile.producer_role"() {warps = 4 : i32}
# CHECK-NEXT: scf.if %[[ROLE]] {
# CHECK-NEXT: scf.for
# CHECK: scf.if
# CHECK-NEXT: "tile.mbarrier_wait"({{.*}}) {tile.one_thread}
# CHECK-NEXT: "tile.tma_expect"
# CHECK-NEXT: "tile.tma_copy"
# CHECK-NEXT: "tile.tma_copy"
# CHECK: } {tile.producer}
# CHECK-NEXT: } else {
# CHECK: scf.for
# CHECK-NOT: tile.one_thread
# CHECK-NOT: "tile.tma_copy"
# CHECK: "tile.mma"
# CHECK: "tile.mbarrier_arrive"
# CHECK: } {tile.warp_specialized}
# The masked tail loop keeps its copies (one producer loop per kernel).
# CHECK: scf.for
# CHECK: "tile.mbarrier_wait"({{.*}}) {tile.one_thread}
# CHECK: tile.warp_specialize_note = "one loop per kernel gets a producer warpgroup
# CHECK: } {tile.warp_roles}
# CHECK-NEXT: return

# 8 consumer warps + the producer warpgroup: 384 threads, a register cap at
# entry (65536 / 384 -> 168) so that ptxas applies setmaxnreg; the producer
# gives registers back, the consumers take them; the consumers' barriers
# name their 256 threads (barrier 3), the ring set-up's barriers before the
# split are every thread's.
# PTX: .maxntid 384, 1, 1
# PTX-NEXT: .maxnreg 168
# PTX: mbarrier.init
# PTX: bar.sync 0;
# PTX: setmaxnreg.dec.sync.aligned.u32 40;
# PTX: mbarrier.try_wait.parity
# PTX: mbarrier.arrive.expect_tx
# PTX: cp.async.bulk.tensor.2d
# PTX: setmaxnreg.inc.sync.aligned.u32 232;
# PTX: wgmma.mma_async
# PTX: bar.sync 3, 256;
# PTX-NOT: bar.sync 0;

# sm80 has no TMA and no setmaxnreg: the loop keeps its schedule.
# SM80-NOT: tile.producer_role
# SM80-NOT: tile.warp_roles
