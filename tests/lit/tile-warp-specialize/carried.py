# RUN: %tilec ir %s --kernel carried --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp32:16,i32:16" --constexpr BM=128 BN=64 D=64 --num-warps 8 --num-stages 3 --stage tiled | %FileCheck %s
# RUN: %tilec ir %s --kernel carried --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp32:16,i32:16" --constexpr BM=128 BN=64 D=64 --num-warps 8 --num-stages 3 --stage ptx | %FileCheck %s --check-prefix=PTX

# A two-dot TMA loop asking for warp_specialize whose key offset is carried
# by the loop (`off += BN`, not computed from its index): the producer
# warpgroup's loop carries the recurrence itself (its own iteration argument,
# from the same initial value, advanced by the same arithmetic) beside the
# slot counter; the consumers' loop keeps its own; no warpgroup turns.
import tilec
import tilec.language as tl


@tilec.kernel
def carried(Q, K, V, O, N, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    q_d = tl.make_tensor_descriptor(Q, shape=[N, D], strides=[D, 1], block_shape=[BM, D])
    k_d = tl.make_tensor_descriptor(K, shape=[N, D], strides=[D, 1], block_shape=[BN, D])
    v_d = tl.make_tensor_descriptor(V, shape=[N, D], strides=[D, 1], block_shape=[BN, D])
    row0 = tl.program_id(0) * BM
    q = q_d.load([row0, 0])
    acc = tl.zeros([BM, D], tl.float32)
    off = 0
    for _ in tl.range(0, N // BN, warp_specialize=True):
        s = tl.dot(q, k_d.load([off, 0]).T)
        p = tl.exp(s - tl.max(s, 1)[:, None])
        acc = tl.dot(p.to(tl.float16), v_d.load([off, 0]), acc)
        off += BN
    rows = row0 + tl.arange(0, BM)
    tl.store(O + rows[:, None] * D + tl.arange(0, D)[None, :], acc)

# CHECK-NOT: "tile.turn_
# CHECK: %[[ROLE:.+]] = "tile.producer_role"() {warps = 4 : i32}
# CHECK-NEXT: scf.if %[[ROLE]] {
# CHECK-NEXT: scf.for %{{.+}} = {{.*}} iter_args(%[[OFF:[^ ]+]] = %{{[^ ]+}}, %[[CNT:[^ ]+]] = %{{[^ ]+}}) -> (i32, i32)
# CHECK: %[[NEXT:.+]] = arith.addi %[[OFF]], %c64_i32
# CHECK: "tile.mbarrier_wait"({{.*}}) {tile.one_thread}
# CHECK-NEXT: "tile.tma_expect"
# CHECK-NEXT: "tile.tma_copy"({{.*}}, %[[OFF]], %c0_i32) {tma = 1 : i32}
# CHECK-NEXT: "tile.tma_copy"({{.*}}, %[[OFF]], %c0_i32) {tma = 2 : i32}
# CHECK: scf.yield %[[NEXT]], %{{.+}} : i32, i32
# CHECK-NEXT: } {tile.producer}
# CHECK-NEXT: } else {
# CHECK: scf.for
# CHECK-NOT: "tile.tma_copy"
# CHECK: } {tile.warp_specialized}
# CHECK-NOT: tile.pingpong
# PTX: setmaxnreg.dec.sync.aligned.u32 40;
# PTX: setmaxnreg.inc.sync.aligned.u32 232;
# PTX-NOT: bar.arrive
