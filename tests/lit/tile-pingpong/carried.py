# RUN: %tilec ir %s --kernel carried --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp32:16,i32:16" --constexpr BM=128 BN=64 D=64 --num-warps 8 --num-stages 3 --stage tiled | %FileCheck %s
# RUN: %tilec ir %s --kernel carried --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp32:16,i32:16" --constexpr BM=128 BN=64 D=64 --num-warps 8 --num-stages 3 --stage ptx | %FileCheck %s --check-prefix=PTX

# A two-dot TMA loop asking for warp_specialize whose key offset is carried
# by the loop (not computed from its index): tile-warp-specialize cannot give
# its copies to a producer warpgroup (the producer would have to run the
# consumers' recurrence) and says why; tile-pingpong then brackets each
# product with warpgroup turns, lowered to named barriers 1 and 2.
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

# CHECK-NOT: tile.producer_role
# CHECK: "tile.turn_init"()
# CHECK: scf.for
# CHECK: "tile.turn_wait"()
# CHECK-NEXT: "tile.mma"
# CHECK-NEXT: "tile.turn_pass"()
# CHECK: tile.pingpong
# CHECK-SAME: tile.warp_specialize_note = "the copies depend on a value carried by the loop"
# PTX-NOT: setmaxnreg
# PTX: bar.sync %r{{[0-9]+}}, 256;
# PTX: wgmma.mma_async
# PTX: bar.arrive %r{{[0-9]+}}, 256;
