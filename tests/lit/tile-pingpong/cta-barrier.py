# RUN: %tilec ir %s --kernel two_dots --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp32:16,i32:16" --constexpr BM=128 BN=64 D=64 --num-warps 8 --num-stages 3 --stage tiled | %FileCheck %s
# RUN: %tilec ir %s --kernel two_dots --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp32:16,i32:16" --constexpr BM=128 BN=64 D=64 --num-warps 8 --num-stages 3 --stage gpu | %FileCheck %s --check-prefix=GPU

# A two-dot loop asking for warp_specialize whose loads are pointer tiles:
# cp.async rings, refilled after a CTA barrier in every iteration.  tile-pingpong
# brackets its products (the tile level cannot see the barrier's lowering),
# and the GPU lowering takes the turns out again: a warpgroup waiting at the
# CTA barrier while the other waits for its turn would deadlock.
import tilec
import tilec.language as tl


@tilec.kernel
def two_dots(Q, K, V, O, N, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, D)
    q = tl.load(Q + rows[:, None] * D + cols[None, :])
    acc = tl.zeros([BM, D], tl.float32)
    for start in tl.range(0, N, BN, warp_specialize=True):
        keys = start + tl.arange(0, BN)
        k = tl.load(K + keys[:, None] * D + cols[None, :])
        s = tl.dot(q, k.T)
        p = tl.exp(s - tl.max(s, 1)[:, None])
        v = tl.load(V + keys[:, None] * D + cols[None, :])
        acc = tl.dot(p.to(tl.float16), v, acc)
    tl.store(O + rows[:, None] * D + cols[None, :], acc)

# CHECK: "tile.turn_init"()
# CHECK: "tile.turn_wait"()
# CHECK: tile.pingpong
# GPU-NOT: "bar.sync $0
# GPU-NOT: "bar.arrive $0
# GPU: tilec.pingpong_note = "turns taken out: a loop with turns has a CTA-wide barrier"
# GPU-NOT: "bar.sync $0
# GPU-NOT: "bar.arrive $0
