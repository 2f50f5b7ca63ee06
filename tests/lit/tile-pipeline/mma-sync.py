# RUN: %tilec ir %s --target sm80 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=128 BK=32 --num-warps 4 --num-stages 3 --stage tiled | %FileCheck %s
# RUN: %tilec ir %s --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=256 BK=32 --num-warps 8 --num-stages 4 --stage tiled | %FileCheck %s --check-prefix=SM90
# RUN: %tilec ir %s --target sm80 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=128 BK=32 --num-warps 4 --num-stages 1 --stage tiled | %FileCheck %s --check-prefix=ONE
# RUN: %tilec ir %s --target sm80 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=64 BN=64 BK=32 --num-warps 4 --num-stages 3 --stage ptx | %FileCheck %s --check-prefix=PTX --implicit-check-not=fence.proxy

# tile-pipeline on an mma.sync dot (sm80; sm90 where the tile does not fit
# wgmma, here BK=32): rings of row-major slots padded by 16 bytes per row
# (swizzle = 0), a prologue of num_stages - 1 copies, the product as a
# synchronous tile.mma (no mma_wait, no barrier after it: the barrier at the
# top of the next iteration orders its ldmatrix reads before the copies that
# overwrite its slot), drained after the loop.
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


# CHECK: "tile.local_alloc"() {row_permutation = "none", swizzle = 0 : i32} : () -> memref<3x128x32xf16, 3>
# CHECK: "tile.local_alloc"() {row_permutation = "none", swizzle = 0 : i32} : () -> memref<3x32x128xf16, 3>
# CHECK-COUNT-2: "tile.async_commit"
# CHECK: scf.for
# CHECK-NEXT: "tile.async_wait"() {pending = 1 : i32}
# CHECK-NEXT: "tile.barrier"
# CHECK-NOT: "tile.barrier"
# CHECK: "tile.mma"({{.*}}) {kind = "mma_sync"} : (memref<3x128x32xf16, 3>, i32, memref<3x32x128xf16, 3>, i32, tensor<128x128xf32, #tile.blocked<array<i32: 1, 2>, array<i32: 8, 4>, array<i32: 1, 4>, array<i32: 1, 0>>>)
# CHECK-NOT: "tile.mma_wait"
# CHECK-NOT: "tile.barrier"
# CHECK: "tile.async_copy"
# CHECK: "tile.async_copy"
# CHECK: "tile.async_commit"
# CHECK: scf.yield
# CHECK-NOT: "tile.mma_wait"
# CHECK: "tile.async_wait"() {pending = 0 : i32}
# CHECK-NEXT: "tile.barrier"
# CHECK-NEXT: "tile.local_dealloc"
# CHECK-NEXT: "tile.local_dealloc"
# CHECK: "tile.store"

# sm90 has wgmma, but BK=32 is not a whole 128-byte swizzle atom: mma.sync, pipelined.
# SM90: "tile.local_alloc"() {row_permutation = "none", swizzle = 0 : i32} : () -> memref<4x128x32xf16, 3>
# SM90: "tile.local_alloc"() {row_permutation = "none", swizzle = 0 : i32} : () -> memref<4x32x256xf16, 3>
# SM90: "tile.async_wait"() {pending = 2 : i32}
# SM90: "tile.mma"({{.*}}) {kind = "mma_sync"}

# ONE-NOT: tile.local_alloc
# ONE: "tile.dot"({{.*}}) {tile.mma = "mma_sync"}

# PTX: cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, {{%r[0-9]+}};
# PTX: cp.async.commit_group;
# PTX: cp.async.commit_group;
# PTX: [[LOOP:\$L__BB0_[0-9]+]]:
# PTX: cp.async.wait_group 1;
# PTX-NEXT: bar.sync 0;
# PTX: ldmatrix.sync.aligned.m8n8.x4.shared.b16
# PTX: ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16
# PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
# PTX: cp.async.cg.shared.global
# PTX: cp.async.commit_group;
# PTX: bra {{.*}}[[LOOP]];
# PTX: cp.async.wait_group 0;
# PTX: st.global
