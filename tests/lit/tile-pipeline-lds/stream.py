# RUN: %tilec ir %s --target gfx942 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=128 BK=64 --num-warps 8 --num-stages 3 --stage tiled | %FileCheck %s
# RUN: %tilec ir %s --target gfx942 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=128 BK=64 --num-warps 8 --num-stages 2 --stage tiled | %FileCheck %s --check-prefix=ONE
# RUN: %tilec ir %s --target gfx942 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=128 BK=64 --num-warps 8 --num-stages 1 --stage tiled | %FileCheck %s --check-prefix=OFF --implicit-check-not=tile.local_alloc
# RUN: %tilec ir %s --target gfx1100 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=64 BN=64 BK=32 --num-warps 4 --num-stages 3 --stage tiled | %FileCheck %s --check-prefix=WMMA
# RUN: %tilec ir %s --target gfx942 --signature "*fp8e4nv:16,*fp8e4nv:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=128 BK=64 --num-warps 8 --num-stages 2 --stage tiled | %FileCheck %s --check-prefix=FP8
# RUN: %tilec ir %s --target gfx942 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=128 BK=64 --num-warps 8 --num-stages 3 --stage amdgcn | %FileCheck %s --check-prefix=ASM

# tile-pipeline-lds on an MFMA K loop (gfx942): A's ring in the "xor" layout
# (unpadded, 16-byte chunks permuted by row % 8), B plain with two slots and
# K-major ("xor_t") with one;
# num_stages - 1
# slots; the loads of the next iteration at the top of the body, the product
# as tile.mma {kind = "mfma"} on slot j % slots, then the prefetched tiles
# stored into the next slot and one barrier (two with a single slot).
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


# CHECK: "tile.local_alloc"() {row_permutation = "none", swizzle = 0 : i32, tile.lds = "xor"} : () -> memref<2x128x64xf16, 3>
# CHECK: "tile.local_alloc"() {row_permutation = "none", swizzle = 0 : i32, tile.lds = "plain"} : () -> memref<2x64x128xf16, 3>
# CHECK: "tile.load"
# CHECK: "tile.load"
# CHECK: "tile.local_store"
# CHECK: "tile.local_store"
# CHECK: "tile.barrier"
# CHECK: scf.for
# CHECK: "tile.load"
# CHECK: "tile.load"
# CHECK-NOT: "tile.barrier"
# CHECK: "tile.mma"({{.*}}) {kind = "mfma"} : (memref<2x128x64xf16, 3>, i32, memref<2x64x128xf16, 3>, i32,
# CHECK-NOT: "tile.barrier"
# CHECK: "tile.local_store"
# CHECK: "tile.local_store"
# CHECK-NEXT: "tile.barrier"
# CHECK: scf.yield
# CHECK: "tile.local_dealloc"
# CHECK: "tile.local_dealloc"

# ONE: memref<1x128x64xf16, 3>
# ONE: tile.lds = "xor_t"} : () -> memref<1x64x128xf16, 3>
# ONE: scf.for
# ONE: "tile.mma"({{.*}}) {kind = "mfma"}
# ONE-NEXT: "tile.barrier"
# ONE: "tile.local_store"
# ONE: "tile.local_store"
# ONE-NEXT: "tile.barrier"

# OFF: scf.for
# OFF: "tile.dot"

# gfx942 decodes OCP fp8 to f16 (tile-expand-fp8): the rings hold the loaded
# bytes (A "xor" with 8-byte chunks, B K-major), the product decodes them
# after its LDS reads (tile.fp8_decoded), nothing is decoded in the loop body.
# FP8: tile.lds = "xor"} : () -> memref<1x128x64xi8, 3>
# FP8: tile.lds = "xor_t"} : () -> memref<1x64x128xi8, 3>
# FP8: scf.for
# FP8: "tile.load"{{.*}} -> tensor<128x64xi8
# FP8-NOT: arith.extui
# FP8: "tile.mma"({{.*}}) {kind = "mfma", tile.fp8_decoded = ["f8E4M3FN", "f8E4M3FN"]} : (memref<1x128x64xi8, 3>, i32, memref<1x64x128xi8, 3>
# FP8-NEXT: "tile.barrier"
# FP8-NOT: arith.extui
# FP8: "tile.local_store"
# FP8-NOT: arith.extui
# FP8: "tile.local_store"
# FP8-NEXT: "tile.barrier"
# FP8: scf.yield

# WMMA: tile.lds = "pad"} : () -> memref<2x64x32xf16, 3>
# WMMA: "tile.mma"({{.*}}) {kind = "wmma"}

# The loop: next tiles' global loads, then ds_read_b128 and the MFMAs, the
# ds_writes of the next slot and one s_barrier before the backward branch.
# ASM: s_barrier
# ASM-NOT: s_barrier
# ASM: ds_read_b128
# ASM: v_mfma_f32_32x32x8_f16
# ASM: ds_write_b128
# ASM: s_barrier
# ASM-NOT: s_barrier
# ASM: s_cbranch_scc0
# ASM-NEXT: [[HEAD:.LBB0_[0-9]+]]:
# ASM-NOT: s_barrier
# ASM: global_load_dwordx4
# ASM-NOT: s_barrier
# ASM: s_branch
