# RUN: %tilec ir %S/../tile-tma-pointers/kernels.py --target sm90 --kernel tutorial --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 ROW_SUM=0 OTHER=0.0 STORE_ROWS=1 --num-warps 8 --num-stages 3 --print-after-all | %FileCheck %s
# RUN: %tilec ir %S/../tile-tma-pointers/kernels.py --target sm100 --kernel tutorial --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 ROW_SUM=0 OTHER=0.0 STORE_ROWS=1 --num-warps 8 --num-stages 3 --print-after-all | %FileCheck %s --check-prefix=TC
# RUN: %tilec ir %S/../tile-tma-pointers/kernels.py --target sm90 --kernel tutorial --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 ROW_SUM=0 OTHER=0.0 STORE_ROWS=1 --num-warps 8 --num-stages 1 --print-after-all | %FileCheck %s --check-prefix=ONE

# Triton's tutorial-03 body with a ragged N (not known to be a multiple of 16)
# and B's rows padded to 16-element multiples: `offs_bn % N` breaks B's
# column contiguity (2 bytes per pointer access), yet both loads are
# tensor-map blocks (tile-tma-pointers tags them) in a loop tile-pipeline
# stages, which copies them with TMA whatever their per-thread access: the
# dot takes wgmma (tcgen05 on sm100), not the mma_sync fallback.
# CHECK: IR Dump After tile-accelerate-dot
# CHECK: tile.mma = "wgmma"
# CHECK-NOT: tile.mma_reason
# CHECK: IR Dump After tile-pipeline
# CHECK: tile.tma_copy
# TC: IR Dump After tile-accelerate-dot
# TC: tile.mma = "tcgen05"
# TC-NOT: tile.mma_reason
# TC: IR Dump After tile-pipeline
# TC: tile.tma_copy

# num_stages = 1: nothing is pipelined, the loads stay 2-byte pointer
# accesses, and the reason is given.
# ONE: IR Dump After tile-accelerate-dot
# ONE: tile.mma = "mma_sync", tile.mma_reason = "no wgmma: the operand loads move 2 bytes per access
