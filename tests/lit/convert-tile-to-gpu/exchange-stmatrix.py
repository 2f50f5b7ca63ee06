# RUN: %tilec ir %s --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=128 BK=64 --num-warps 8 --num-stages 3 --stage ptx | %FileCheck %s
# RUN: %tilec ir %s --target sm90 --signature "*fp16:16,*fp16:16,*fp32:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=128 BK=64 --num-warps 8 --num-stages 3 --stage ptx | %FileCheck %s --check-prefix=F32
# RUN: %tilec ir %s --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=32 BN=128 BK=32 --num-warps 4 --num-stages 2 --stage ptx | %FileCheck %s --check-prefix=MMA
# RUN: %tilec ir %s --target sm80 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=128 BK=64 --num-warps 8 --num-stages 3 --stage ptx | %FileCheck %s --check-prefix=SM80

# The pointer-store epilogue of a wgmma matmul (Feature.STMATRIX,
# targets/nvidia/exchange_stores.py): the f16 accumulator's conversion to the
# store layout writes its exchange buffer (rows of 128 + 8 halves: 272 bytes)
# by stmatrix.x4, four 8 x 8 matrices of a 32-column group each, one base
# address per thread and constant offsets (64 bytes per group, 64 rows =
# 17408 bytes per repetition), no 32-bit st.shared; the readers load 16 bytes
# at a time and store 16 bytes to global memory.  A 32-row tile is an
# mma.sync product on sm90 (warps side by side along the columns, 32 columns
# apart): its matrices go out the same way, 8 rows (8 x 272 bytes) per
# repetition.  f32 results (stmatrix is b16) and sm80 (no stmatrix) keep the
# thread's own stores.
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
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


# One barrier between the loop's last product and the buffer's first write
# (the pipeline's and the conversion's met).
# CHECK: wgmma.wait_group.sync.aligned 0;
# CHECK: bar.sync 0;
# CHECK-NOT: bar.sync
# CHECK-NOT: st.shared
# CHECK: stmatrix.sync.aligned.m8n8.x4.shared.b16 [%rd[[B:[0-9]+]]], {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}};
# CHECK-NEXT: stmatrix.sync.aligned.m8n8.x4.shared.b16 [%rd[[B]]+64],
# CHECK-NEXT: stmatrix.sync.aligned.m8n8.x4.shared.b16 [%rd[[B]]+128],
# CHECK-NEXT: stmatrix.sync.aligned.m8n8.x4.shared.b16 [%rd[[B]]+192],
# CHECK-NEXT: stmatrix.sync.aligned.m8n8.x4.shared.b16 [%rd[[B]]+17408],
# CHECK-NEXT: stmatrix.sync.aligned.m8n8.x4.shared.b16 [%rd[[B]]+17472],
# CHECK-NEXT: stmatrix.sync.aligned.m8n8.x4.shared.b16 [%rd[[B]]+17536],
# CHECK-NEXT: stmatrix.sync.aligned.m8n8.x4.shared.b16 [%rd[[B]]+17600],
# CHECK-NEXT: bar.sync 0;
# CHECK-NOT: st.shared
# CHECK: ld.shared.v4.b32 {{.*}}, [%rd[[R:[0-9]+]]];
# CHECK-NEXT: ld.shared.v4.b32 {{.*}}, [%rd[[R]]+4352];
# CHECK-COUNT-6: ld.shared.v4.b32
# No barrier after the reads: nothing writes shared memory after them.
# CHECK-NOT: bar.sync
# CHECK: st.global.v4.b32
# CHECK-NOT: stmatrix

# MMA: mma.sync.aligned.m16n8k16
# MMA: bar.sync 0;
# MMA-NOT: st.shared
# MMA: stmatrix.sync.aligned.m8n8.x4.shared.b16 [%rd[[B:[0-9]+]]],
# MMA-NEXT: stmatrix.sync.aligned.m8n8.x4.shared.b16 [%rd[[B]]+2176],
# MMA-NEXT: stmatrix.sync.aligned.m8n8.x4.shared.b16 [%rd[[B]]+4352],
# MMA-NEXT: stmatrix.sync.aligned.m8n8.x4.shared.b16 [%rd[[B]]+6528],
# MMA-NEXT: bar.sync 0;
# MMA: ld.shared.v4.b32

# F32-NOT: stmatrix
# F32: wgmma.wait_group.sync.aligned 0;
# F32-COUNT-32: st.shared.v2.b32
# F32: ld.shared.v4.b32
# F32-NOT: stmatrix

# SM80-NOT: stmatrix
# SM80: mma.sync.aligned.m16n8k16
# SM80-COUNT-32: st.shared.b32
# SM80: ld.shared.v4.b32
# SM80-NOT: stmatrix
