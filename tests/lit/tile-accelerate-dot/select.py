# RUN: %tilec ir %s --target sm90 --signature "*fp16:16,*fp16:16,*fp32:16,i32:16" --constexpr BM=128 BN=128 BK=64 --num-warps 8 --print-after-all | %FileCheck %s --check-prefix=WG
# RUN: %tilec ir %s --target sm80 --signature "*fp16:16,*fp16:16,*fp32:16,i32:16" --constexpr BM=128 BN=128 BK=64 --num-warps 8 --print-after-all | %FileCheck %s --check-prefix=SM80
# RUN: %tilec ir %s --target sm90 --signature "*fp16:16,*fp16:16,*fp32:16,i32:16" --constexpr BM=64 BN=64 BK=32 --num-warps 4 --print-after-all | %FileCheck %s --check-prefix=SMALLK
# RUN: %tilec ir %s --target sm90 --signature "*fp16,*fp16,*fp32:16,i32" --constexpr BM=128 BN=128 BK=64 --num-warps 8 --print-after-all | %FileCheck %s --check-prefix=UNALIGNED
# RUN: %tilec ir %s --target sm90 --signature "*fp32:16,*fp32:16,*fp32:16,i32:16" --constexpr BM=64 BN=64 BK=32 --num-warps 4 --print-after-all | %FileCheck %s --check-prefix=F32
# RUN: %tilec ir %s --target gfx942 --signature "*fp16:16,*fp16:16,*fp32:16,i32:16" --constexpr BM=64 BN=64 BK=32 --num-warps 4 --print-after-all | %FileCheck %s --check-prefix=AMD
# RUN: %tilec ir %s --target gfx1100 --signature "*bf16:16,*bf16:16,*fp32:16,i32:16" --constexpr BM=64 BN=64 BK=32 --num-warps 4 --print-after-all | %FileCheck %s --check-prefix=WMMA
# RUN: %tilec ir %s --target gfx942 --signature "*fp32:16,*fp32:16,*fp32:16,i32:16" --constexpr BM=64 BN=64 BK=32 --num-warps 4 --print-after-all | %FileCheck %s --check-prefix=AMDF32
# RUN: %tilec ir %s --target gfx942 --signature "*fp16:16,*fp16:16,*fp32:16,i32:16" --constexpr BM=16 BN=16 BK=16 --num-warps 4 --print-after-all | %FileCheck %s --check-prefix=AMDSMALL

# tile-accelerate-dot picks the instruction family of each tl.dot from the
# target's features, the dtypes, the shape, num_warps and the operand loads'
# alignment; the families it passes over are named with the reason.
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


# WG: IR Dump After tile-accelerate-dot
# WG: "tile.dot"{{.*}}tile.mma = "wgmma"
# WG-NOT: tile.mma_reason
# WG: IR Dump After tile-layout
# WG: tensor<128x128xf32, #tile.blocked<array<i32: 1, 2>, array<i32: 8, 4>, array<i32: 8, 1>, array<i32: 1, 0>>>

# SM80: IR Dump After tile-accelerate-dot
# SM80: tile.mma = "mma_sync"
# SM80-NOT: tile.mma_reason
# SM80: IR Dump After tile-layout
# SM80: tensor<128x128xf32, #tile.blocked<array<i32: 1, 2>, array<i32: 8, 4>, array<i32: 1, 8>, array<i32: 1, 0>>>

# SMALLK: tile.mma = "mma_sync", tile.mma_reason = "no wgmma: the 128-byte swizzled operands need K and N multiples of 64 (K=32, N=64)"

# UNALIGNED: tile.mma = "mma_sync", tile.mma_reason = "no wgmma: the operand loads move 2 bytes per access

# F32: tile.mma = "fma", tile.mma_reason = "no wgmma: wgmma here takes f16/bf16/fp8 operands with an f32 accumulator, not f32 -> f32; no mma_sync:

# AMD: IR Dump After tile-accelerate-dot
# AMD: tile.mma = "mfma"
# AMD-NOT: tile.mma_reason
# AMD: IR Dump After tile-layout
# AMD: tensor<64x64xf32, #tile.blocked<array<i32: 4, 1>, array<i32: 2, 32>, array<i32: 2, 2>, array<i32: 1, 0>>>

# WMMA: IR Dump After tile-accelerate-dot
# WMMA: tile.mma = "wmma"
# WMMA: IR Dump After tile-layout
# WMMA: tensor<64x64xf32, #tile.blocked<array<i32: 1, 2>, array<i32: 2, 16>, array<i32: 2, 2>, array<i32: 1, 0>>>

# AMDF32: tile.mma = "fma", tile.mma_reason = "no mfma: mfma here takes bf16 -> f32, f16 -> f32, i8 -> i32, not f32 -> f32"

# AMDSMALL: tile.mma = "fma", tile.mma_reason = "no mfma: a 16x16x16 dot does not split into whole 32x32x8, 16x16x16 tiles over num_warps=4 warps"
