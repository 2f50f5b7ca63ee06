# RUN: %tilec ir %s --target gfx942 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=128 BK=64 --num-warps 8 --num-stages 2 --stage amdgcn | %FileCheck %s
# RUN: %tilec ir %s --target gfx942 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=128 BK=64 --num-warps 8 --num-stages 2 --stage gpu > %t.gfx942.mlir
# RUN: %FileCheck %s --check-prefix=IR --input-file %t.gfx942.mlir
# RUN: %tilec ir %s --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=128 BK=64 --num-warps 8 --num-stages 2 --stage gpu | %FileCheck %s --check-prefix=NOI32 --implicit-check-not="i32>, !llvm.ptr<3>" --implicit-check-not=": i32, !llvm.ptr<3>"
# RUN: %FileCheck %s --check-prefix=NOI32 --implicit-check-not="i32>, !llvm.ptr<3>" --implicit-check-not=": i32, !llvm.ptr<3>" --input-file %t.gfx942.mlir

# The epilogue of an MFMA matmul on gfx942 (Feature.SWIZZLED_EXCHANGE): the
# accumulator's conversion to the store layout goes through an unpadded
# exchange buffer whose 16-byte chunks are permuted by row % 8 (128 x 128 f16:
# 32 KiB, not 34 KiB padded), placed where the operand rings were (released
# after the loop), and the index conversions before it release their buffers
# too: the kernel's LDS is the ring's 32 KiB, Triton 3.9's figure.  The
# output's row and column offsets (pid * B + arange) are recomputed in the
# store layout rather than exchanged (on every target: no i32 goes through
# workgroup memory, and none stays live across the K loop).
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


# CHECK: v_mfma_f32_32x32x8_f16
# CHECK: s_cbranch_scc
# CHECK: s_barrier
# CHECK: ds_write2st64_b32
# CHECK: s_barrier
# CHECK: ds_read_b128
# CHECK: ds_read_b128 {{.*}} offset:8192
# CHECK: global_store_dwordx4
# CHECK: .amdhsa_group_segment_fixed_size 32768
# CHECK: .group_segment_fixed_size: 32768
# CHECK: .private_segment_fixed_size: 0

# The exchange's positions: r * 128 + (c ^ ((r & 7) << 3)) (8 halves a chunk),
# stored 2 halves and read 8 at a time.
# IR: llvm.mlir.global internal @__tilec_smem_mm() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<32768 x i8>
# IR: amdgpu.mfma
# IR: gpu.barrier
# IR: arith.andi {{.*}}, %c7_i32
# IR: arith.shli {{.*}}, %c3_i32
# IR: arith.xori
# IR: llvm.store {{.*}} : vector<2xf16>, !llvm.ptr<3>
# IR: gpu.barrier
# IR: arith.xori
# IR: llvm.load {{.*}} {alignment = 16 : i64} : !llvm.ptr<3> -> vector<8xf16>

# NOI32: gpu.func @mm
# NOI32: gpu.barrier
