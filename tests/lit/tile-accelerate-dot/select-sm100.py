# RUN: %tilec ir %s --target sm100 --signature "*fp16:16,*fp16:16,*fp32:16,i32:16" --constexpr BM=128 BN=128 BK=64 --num-warps 4 --print-after-all | %FileCheck %s --check-prefix=TC4
# RUN: %tilec ir %s --target sm100 --signature "*bf16:16,*bf16:16,*fp32:16,i32:16" --constexpr BM=128 BN=256 BK=64 --num-warps 8 --print-after-all | %FileCheck %s --check-prefix=TC8
# RUN: %tilec ir %s --target sm100 --signature "*fp16:16,*fp16:16,*fp32:16,i32:16" --constexpr BM=64 BN=64 BK=64 --num-warps 4 --print-after-all | %FileCheck %s --check-prefix=SMALLM
# RUN: %tilec ir %s --target sm100 --signature "*fp16:16,*fp16:16,*fp32:16,i32:16" --constexpr BM=128 BN=128 BK=32 --num-warps 4 --print-after-all | %FileCheck %s --check-prefix=SMALLK
# RUN: %tilec ir %s --target sm100 --signature "*fp16:16,*fp16:16,*fp32:16,i32:16" --constexpr BM=128 BN=256 BK=64 --num-warps 4 --print-after-all | %FileCheck %s --check-prefix=SPILL
# RUN: %tilec ir %s --target sm100 --signature "*fp32:16,*fp32:16,*fp32:16,i32:16" --constexpr BM=128 BN=128 BK=64 --num-warps 4 --print-after-all | %FileCheck %s --check-prefix=F32
# RUN: %tilec ir %s --target sm90 --signature "*fp16:16,*fp16:16,*fp32:16,i32:16" --constexpr BM=128 BN=128 BK=64 --num-warps 4 --print-after-all | %FileCheck %s --check-prefix=SM90

# tile-accelerate-dot on sm100 (Feature.TCGEN05) takes tcgen05 first: M = 128
# rows, 4 or 8 warps, 128-byte swizzled operands; the accumulator layout is
# what tcgen05.ld.32x32b gives each thread (one TMEM lane = one row per thread;
# with 8 warps, warps w and w + 4 take the two column halves).  Other shapes
# fall back to mma.sync with the reason; sm90 never sees tcgen05.
import tilec
import tilec.language as tl


@tilec.kernel
def mm(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)


# TC4: IR Dump After tile-accelerate-dot
# TC4: "tile.dot"{{.*}}tile.mma = "tcgen05"
# TC4-NOT: tile.mma_reason
# TC4: IR Dump After tile-layout
# TC4: tensor<128x128xf32, #tile.blocked<array<i32: 1, 8>, array<i32: 32, 1>, array<i32: 4, 1>, array<i32: 1, 0>>>

# TC8: "tile.dot"{{.*}}tile.mma = "tcgen05"
# TC8-NOT: tile.mma_reason
# TC8: IR Dump After tile-layout
# TC8: tensor<128x256xf32, #tile.blocked<array<i32: 1, 128>, array<i32: 32, 1>, array<i32: 4, 2>, array<i32: 0, 1>>>

# SMALLM: tile.mma = "mma_sync", tile.mma_reason = "no tcgen05: tcgen05 here computes M = 128 rows per program with 4 or 8 warps (one TMEM lane per row), not M=64 with num_warps=4"

# SMALLK: tile.mma = "mma_sync", tile.mma_reason = "no tcgen05: the 128-byte swizzled operands need K a multiple of 64 and N a multiple of 64 up to 256 (K=32, N=128)"

# SPILL: tile.mma = "mma_sync", tile.mma_reason = "no tcgen05: 256 accumulator registers per thread in the epilogue would spill (at most 128): use 8 warps"

# F32: tile.mma = "fma", tile.mma_reason = "no tcgen05: tcgen05 here takes f16/bf16/fp8 operands (f32 with input_precision='tf32') with an f32 accumulator, not f32 -> f32; no mma_sync:

# SM90: tile.mma = "wgmma"
# SM90-NOT: tcgen05
