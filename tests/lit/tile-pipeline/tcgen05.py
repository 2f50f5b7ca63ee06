# RUN: %tilec ir %s --target sm100 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=256 BK=64 --num-warps 8 --num-stages 3 --stage tiled | %FileCheck %s
# RUN: %tilec ir %s --target sm100 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=256 BK=64 --num-warps 8 --num-stages 3 --stage ptx | %FileCheck %s --check-prefix=PTX
# RUN: %tilec ir %s --target sm100 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=128 BK=64 --num-warps 4 --num-stages 1 --stage ptx | %FileCheck %s --check-prefix=ONE

# tile-pipeline on sm100: the tcgen05 dot reads 128-byte swizzled rings whose
# A rows are not permuted (TMEM lane = row), through an asynchronous tile.mma
# and its tile.mma_wait, with no barrier after the wait (every thread waits on
# the product's mbarrier).  In the PTX code: TMEM allocated once at the entry, the
# barriers and the init accumulator set up before the loop, thread 0 issuing
# the k-steps and the commit, the wait for the previous product before the
# copies into its slot, the accumulator read with tcgen05.ld after the loop,
# TMEM freed at the end.  (Assembled by ptxas for sm_100a in
# tests/test_tcgen05.py; no Blackwell GPU runs it.)
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


# CHECK: "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<3x128x64xf16, 3>
# CHECK: "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<3x64x256xf16, 3>
# CHECK: scf.for
# CHECK-NEXT: "tile.async_wait"() {pending = 1 : i32}
# CHECK-NEXT: "tile.barrier"
# CHECK: "tile.mma"({{.*}}) {kind = "tcgen05"}
# CHECK-NEXT: "tile.mma_wait"({{.*}}) {pending = 1 : i32}
# CHECK-NOT: "tile.barrier"
# CHECK: "tile.async_copy"
# CHECK: scf.yield
# CHECK: "tile.mma_wait"({{.*}}) {pending = 0 : i32}

# PTX: .target sm_100a
# PTX: .shared .align 16 .b8 __tilec_tcgen05_mm[24];
# PTX: tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [__tilec_tcgen05_mm], [[COLS:%r[0-9]+]];
# PTX-NEXT: tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;
# PTX: ld.shared.b32 [[TMEM:%r[0-9]+]], [__tilec_tcgen05_mm];
# PTX: mbarrier.init.shared.b64
# PTX: mbarrier.init.shared.b64
# PTX: fence.mbarrier_init.release.cluster;
# PTX: tcgen05.st.sync.aligned.32x32b.x32.b32
# PTX: tcgen05.wait::st.sync.aligned;
# PTX: tcgen05.fence::before_thread_sync;
# PTX-NEXT: bar.sync 0;
# PTX: tcgen05.fence::after_thread_sync;
# PTX-COUNT-4: tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [[[TMEM]]]
# PTX: tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64
# PTX: mbarrier.try_wait.parity.shared.b64
# PTX: cp.async.cg.shared.global
# PTX: cp.async.wait_group 1;
# PTX: fence.proxy.async.shared::cta;
# PTX: mbarrier.try_wait.parity.shared.b64
# PTX: tcgen05.fence::after_thread_sync;
# PTX-COUNT-4: tcgen05.ld.sync.aligned.32x32b.x32.b32
# PTX: tcgen05.wait::ld.sync.aligned;
# PTX: mbarrier.inval.shared.b64
# PTX: mbarrier.inval.shared.b64
# PTX: tcgen05.dealloc.cta_group::1.sync.aligned.b32 [[TMEM]], {{%r[0-9]+}};
# PTX: ret;

# ONE-NOT: cp.async
# ONE: tcgen05.alloc
# ONE: tcgen05.st.sync.aligned.32x32b.x32.b32
# ONE-COUNT-4: tcgen05.mma.cta_group::1.kind::f16
# ONE: tcgen05.commit
# ONE: mbarrier.try_wait.parity.shared.b64
# ONE: tcgen05.ld.sync.aligned.32x32b.x32.b32
# ONE: tcgen05.dealloc
