# RUN: %tilec ir %s --target gfx942 --signature "*fp16:16,*fp16:16,*fp32:16" --constexpr BM=128 BN=64 D=128 --num-warps 4 --stage tiled | %FileCheck %s
# RUN: %tilec ir %s --target gfx942 --signature "*fp16:16,*fp16:16,*fp32:16" --constexpr BM=128 BN=64 D=128 --num-warps 4 --stage amdgcn | %FileCheck %s --check-prefix=GCN
# RUN: %tilec ir %s --target gfx1100 --signature "*fp16:16,*fp16:16,*fp32:16" --constexpr BM=128 BN=64 D=128 --num-warps 4 --stage tiled | %FileCheck %s --check-prefix=RDNA

# Scores reduced along their rows (attention's q @ k.T, then a row max): on
# AMD the dot takes the transposed product's layout (C^T = B^T A^T on the
# matrix cores, Triton's transposed MFMA layout), so each lane holds 4
# consecutive columns of one row (per_thread [1, 4], lanes [32, 2] along the
# rows first: order [0, 1]) and with 4 warps all of a row lies in one warp;
# the max is a lane-local reduction plus one exchange across the two halves
# of the wave, not a five-step butterfly.
import tilec
import tilec.language as tl


@tilec.kernel
def scores_max(q_ptr, k_ptr, out_ptr, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    k = tl.load(k_ptr + rn[:, None] * D + rd[None, :])
    qk = tl.dot(q, k.T)
    tl.store(out_ptr + rm, tl.max(qk * 0.5, 1))


# CHECK: "tile.dot"{{.*}}tile.mma = "mfma"{{.*}} -> tensor<128x64xf32, #tile.blocked<array<i32: 1, 4>, array<i32: 32, 2>, array<i32: 4, 1>, array<i32: 0, 1>>>
# CHECK: "tile.reduce"{{.*}}axis = 1
# GCN: v_mfma_f32_32x32x8_f16
# GCN-NOT: ds_swizzle_b32
# GCN: .private_segment_fixed_size: 0
# RDNA: "tile.dot"{{.*}}tile.mma = "wmma"{{.*}}array<i32: 0, 1>>>
