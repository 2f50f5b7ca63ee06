# RUN: %tilec ir %s --kernel two_dots --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp32:16,i32:16" --constexpr BM=128 BN=64 D=64 --num-warps 8 --num-stages 3 --stage tiled | %FileCheck %s
# RUN: %tilec ir %s --kernel two_dots --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp32:16,i32:16" --constexpr BM=128 BN=64 D=64 --num-warps 8 --num-stages 3 --stage ptx | %FileCheck %s --check-prefix=PTX

# tile-pipeline on a two-dot loop whose loads are pointer tiles (no tensor
# map can copy them): cp.async rings.  Each iteration waits for its group of
# copies and holds a CTA barrier before refilling the slot of iteration j - 2
# (acc = P @ V stays in flight across the back edge); no mbarrier.
import tilec
import tilec.language as tl


@tilec.kernel
def two_dots(Q, K, V, O, N, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, D)
    q = tl.load(Q + rows[:, None] * D + cols[None, :])
    acc = tl.zeros([BM, D], tl.float32)
    for start in range(0, N, BN):
        keys = start + tl.arange(0, BN)
        k = tl.load(K + keys[:, None] * D + cols[None, :])
        s = tl.dot(q, k.T)
        v = tl.load(V + keys[:, None] * D + cols[None, :])
        acc = tl.dot(s.to(tl.float16), v, acc)
    tl.store(O + rows[:, None] * D + cols[None, :], acc)

# CHECK-NOT: tile.mbarrier_alloc
# CHECK: "tile.local_alloc"() {row_permutation = "wgmma", swizzle = 128 : i32} : () -> memref<1x128x64xf16, 3>
# CHECK: "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<3x64x64xf16, 3>
# CHECK: "tile.async_copy"
# CHECK: "tile.async_commit"
# CHECK: scf.for
# CHECK: "tile.async_wait"() {pending = 0 : i32}
# CHECK-NEXT: "tile.barrier"
# CHECK: "tile.async_commit"
# CHECK: "tile.mma"({{.*}}) {kind = "wgmma", tile.b_kmajor}
# CHECK-NEXT: "tile.mma_wait"({{.*}}) {pending = 0 : i32}
# CHECK: scf.yield
# CHECK: "tile.async_wait"() {pending = 0 : i32}
# CHECK-NEXT: "tile.barrier"
# CHECK-NEXT: "tile.local_dealloc"

# PTX: cp.async.cg.shared.global
# PTX-NOT: cp.async.bulk.tensor
# PTX: wgmma.mma_async
