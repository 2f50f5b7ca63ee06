# RUN: %tilec ir %s --target gfx950 --signature "*fp8e4nv:16,*fp8e4nv:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=128 BK=64 --num-warps 8 --num-stages 2 --stage amdgcn | %FileCheck %s --check-prefixes=CHECK,E4M3
# RUN: %tilec ir %s --target gfx950 --signature "*fp8e5:16,*fp8e5:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=128 BK=64 --num-warps 8 --num-stages 2 --stage amdgcn | %FileCheck %s --check-prefixes=CHECK,E5M2
# RUN: %tilec ir %s --target gfx950 --signature "*fp8e4nv:16,*fp8e4nv:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=128 BK=64 --num-warps 8 --num-stages 2 --stage gpu | %FileCheck %s --check-prefix=IR
# RUN: %tilec ir %s --target gfx950 --signature "*fp8e4nv:16,*fp8e4nv:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=128 BK=64 --num-warps 8 --num-stages 2 --stage tiled | %FileCheck %s --check-prefix=RING
# RUN: %tilec ir %s --target gfx950 --signature "*fp8e4nv:16,*fp8e4nv:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=128 BK=32 --num-warps 8 --num-stages 2 --stage amdgcn | %FileCheck %s --check-prefix=K32

# OCP fp8 dots on gfx950 (CDNA4): the f8f6f4 MFMA, K 64 per instruction and
# 32 bytes per lane (two ds_read_b128 per operand), 2 per K step of a
# 128x128x64 block at 8 warps (Triton 3.9 issues the same), the operand format
# in cbsz/blgp (e4m3: 0, printed as nothing; e5m2: 1); the fp8 bytes stay
# bytes in the LDS ring.  With BLOCK_K 32 the K-16 fp8 form remains.
import tilec
import tilec.language as tl


@tilec.kernel
def mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * N
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


# CHECK: ds_read_b128 [[A0:v\[[0-9]+]]:{{[0-9]+}}]
# CHECK: ds_read_b128
# CHECK: ds_read_b128
# CHECK: ds_read_b128
# E4M3: v_mfma_f32_32x32x64_f8f6f4 v[{{[0-9]+}}:{{[0-9]+}}], v[{{[0-9]+}}:{{[0-9]+}}], v[{{[0-9]+}}:{{[0-9]+}}], v[{{[0-9]+}}:{{[0-9]+}}]{{$}}
# E5M2: v_mfma_f32_32x32x64_f8f6f4 {{.*}} cbsz:1 blgp:1{{$}}
# CHECK-NOT: v_mfma_f32_32x32x16
# E4M3: v_mfma_f32_32x32x64_f8f6f4 v[{{[0-9]+}}:{{[0-9]+}}], v[{{[0-9]+}}:{{[0-9]+}}], v[{{[0-9]+}}:{{[0-9]+}}], v[{{[0-9]+}}:{{[0-9]+}}]{{$}}
# E5M2: v_mfma_f32_32x32x64_f8f6f4 {{.*}} cbsz:1 blgp:1{{$}}
# CHECK-NOT: v_mfma
# CHECK: s_cbranch_scc
# CHECK: .private_segment_fixed_size: 0

# RING: memref<1x128x64xi8, 3>
# RING: memref<1x64x128xi8, 3>
# RING-NOT: arith.extf
# The kernel's LDS is the padded rings' (2 x 128 x (64 + 16) bytes): the
# f16 result is stored from the accumulator, its 32 KiB exchange would
# outgrow them (Feature.DIRECT_ACC_STORES).
# IR: !llvm.array<20480 x i8>
# IR: amdgpu.mfma 32x32x64 {{.*}} : vector<32xf8E4M3FN>, vector<32xf8E4M3FN>, vector<16xf32>

# K32: v_mfma_f32_32x32x16_fp8_fp8
# K32-NOT: v_mfma_f32_32x32x64
