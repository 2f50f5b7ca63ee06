# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_bwd_dkdv --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,*fp32:16,fp32,i32,i32:16" --constexpr HEAD_DIM=64 BLOCK_M=64 BLOCK_N=128 CAUSAL=False --num-warps 8 --num-stages 3 --stage tiled | %FileCheck %s

# The dK/dV loop of the attention backward (four wgmma dots, TMA rings for Q
# and dO).  dP^T = V @ dO^T does not depend on S^T = K @ Q^T: it starts right
# after it, and S^T's wait leaves it in flight (pending = 1) while the softmax
# of S^T runs.  dV += P^T @ dO and dK += dS^T @ Q only feed the next
# iteration: they stay in flight across the back edge (no wait after them in
# the body; their waits are at their accumulator's first use), and dP^T's wait
# leaves dV in flight (pending = 1).
# CHECK: scf.for
# CHECK: %[[ST:.*]] = "tile.mma"({{.*}}) {kind = "wgmma", tile.b_kmajor}
# CHECK-NEXT: %[[DP:.*]] = "tile.mma"({{.*}}) {kind = "wgmma", tile.b_kmajor}
# CHECK-NEXT: "tile.mma_wait"(%[[ST]]) {pending = 1 : i32}
# CHECK: "tile.mma_wait"(%arg{{[0-9]+}}) {pending = 0 : i32}
# CHECK-NEXT: %[[DV:.*]] = "tile.mma"
# CHECK-NOT: "tile.mma_wait"(%[[DV]])
# CHECK: "tile.mma_wait"(%[[DP]]) {pending = 1 : i32}
# CHECK: "tile.mma_wait"(%arg{{[0-9]+}}) {pending = 0 : i32}
# CHECK: "tile.mbarrier_arrive"
# CHECK: %[[DK:.*]] = "tile.mma"
# CHECK-NOT: "tile.mma_wait"(%[[DK]])
# CHECK: scf.yield %[[DV]], %[[DK]]
