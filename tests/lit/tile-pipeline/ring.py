# RUN: %tilec ir %s --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=256 BK=64 --num-warps 8 --num-stages 4 --stage tiled | %FileCheck %s
# RUN: %tilec ir %s --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=128 BK=64 --num-warps 4 --num-stages 3 --stage tiled | %FileCheck %s --check-prefix=WG1
# RUN: %tilec ir %s --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=256 BK=64 --num-warps 8 --num-stages 1 --stage tiled | %FileCheck %s --check-prefix=ONE
# RUN: %tilec ir %s --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=256 BK=64 --num-warps 8 --num-stages 6 --stage tiled | %FileCheck %s --check-prefix=CLAMP
# RUN: %tilec ir %s --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=256 BK=64 --num-warps 8 --num-stages 3 --stage ptx | %FileCheck %s --check-prefix=PTX
# RUN: %tilec ir %s --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=256 BK=64 --num-warps 8 --num-stages 3 --stage tiled | %FileCheck %s --check-prefix=S3
# RUN: %tilec ir %s --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=256 BK=64 --num-warps 8 --num-stages 4 --stage ptx | %FileCheck %s --check-prefix=LAGPTX
# RUN: %tilec ir %s --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BM=128 BN=128 BK=64 --num-warps 8 --num-stages 4 --stage tiled | %FileCheck %s --check-prefix=SMALL

# tile-pipeline on a tutorial-03 style K loop (loop-carried pointer tiles, a
# mask on K): rings of num_stages slots, a prologue of num_stages - 1 copies,
# the dot as an asynchronous tile.mma with one group in flight, the copies of
# iteration j + S - 1 issued after it, drained after the loop.  With two
# warpgroups and S >= 4 slots the refill lags one iteration (prologue of
# S - 2, copies of iteration j + S - 2 into the slot of j - 2) and the barrier
# between the product's wait and the copies goes (tile_pipeline.LAG_MIN_STAGES).
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


# CHECK: "tile.local_alloc"() {row_permutation = "wgmma", swizzle = 128 : i32} : () -> memref<4x128x64xf16, 3>
# CHECK: "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<4x64x256xf16, 3>
# CHECK-COUNT-2: "tile.async_commit"
# CHECK-NOT: "tile.async_commit"
# CHECK: scf.for
# CHECK-NEXT: "tile.async_wait"() {pending = 1 : i32}
# CHECK-NEXT: "tile.barrier"
# CHECK: "tile.mma"({{.*}}) {kind = "wgmma"}
# CHECK-NEXT: "tile.mma_wait"({{.*}}) {pending = 1 : i32}
# CHECK-NOT: "tile.barrier"
# CHECK: "tile.async_copy"
# CHECK: "tile.async_copy"
# CHECK: "tile.async_commit"
# CHECK: scf.yield
# CHECK: "tile.mma_wait"({{.*}}) {pending = 0 : i32}
# CHECK-NEXT: "tile.async_wait"() {pending = 0 : i32}
# CHECK-NEXT: "tile.barrier"
# CHECK-NEXT: "tile.local_dealloc"
# CHECK-NEXT: "tile.local_dealloc"
# The C store's mask is exactly its tensor's bounds, so tile-tma-pointers made
# it a tensor-map block: stored through one shared buffer by TMA.
# CHECK: "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<1x128x256xf16, 3>
# CHECK-NEXT: "tile.tma_store"

# Three slots, two warpgroups: S - 1 = 2 iterations in flight and a barrier
# after the product's wait (every warpgroup done with slot j - 1).
# S3: memref<3x128x64xf16, 3>
# S3-COUNT-2: "tile.async_commit"
# S3: scf.for
# S3-NEXT: "tile.async_wait"() {pending = 1 : i32}
# S3-NEXT: "tile.barrier"
# S3: "tile.mma_wait"({{.*}}) {pending = 1 : i32}
# S3-NEXT: "tile.barrier"
# S3: "tile.async_copy"

# 128x128x64 per iteration is under LAG_MIN_MACS: not lagged at four slots.
# SMALL: scf.for
# SMALL-NEXT: "tile.async_wait"() {pending = 2 : i32}
# SMALL: "tile.mma_wait"({{.*}}) {pending = 1 : i32}
# SMALL-NEXT: "tile.barrier"

# Four slots, lagged: one bar.sync per iteration in the loop's PTX.
# LAGPTX: cp.async.wait_group 1;
# LAGPTX-NEXT: bar.sync 0;
# LAGPTX-NOT: {{bar.sync|fence.proxy}}
# LAGPTX: wgmma.wait_group.sync.aligned 1;
# LAGPTX-NOT: bar.sync
# LAGPTX: cp.async.commit_group;
# LAGPTX-NOT: bar.sync
# LAGPTX: bra $L__BB0_2;
# LAGPTX-NOT: fence.proxy.async
# LAGPTX: cp.async.wait_group 0;

# One warpgroup: no barrier between the product and the next copies.
# WG1: "tile.mma_wait"({{.*}}) {pending = 1 : i32}
# WG1-NOT: "tile.barrier"
# WG1: "tile.async_copy"

# ONE-NOT: tile.local_alloc
# ONE: "tile.dot"

# Six 48 KiB stages do not fit the H100/H200's 227 KiB: four do.
# CLAMP: memref<4x128x64xf16, 3>
# CLAMP: tile.num_stages_note = "num_stages=6 needs 294912 bytes of shared memory; pipelined with 4"

# PTX: cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, {{%r[0-9]+}};
# PTX: cp.async.commit_group;
# No proxy fence after the copies' wait (async_copy.py says why).
# PTX: cp.async.wait_group 1;
# PTX-NOT: fence.proxy.async
# PTX: wgmma.fence.sync.aligned;
# PTX: wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16
# PTX: wgmma.commit_group.sync.aligned;
# PTX: wgmma.wait_group.sync.aligned 1;
# PTX: wgmma.wait_group.sync.aligned 0;
# PTX-NOT: fence.proxy.async
# PTX: cp.async.wait_group 0;
# The C store is a TMA store (tile-tma-pointers): the accumulator's writes to
# shared memory are fenced for the async proxy that reads them.
# PTX: fence.proxy.async.shared::cta;
# PTX: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group
