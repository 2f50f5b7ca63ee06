# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_bwd_dq --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,*fp32:16,fp32,i32,i32:16" --constexpr HEAD_DIM=128 BLOCK_M=128 BLOCK_N=64 CAUSAL=False --num-warps 8 --num-stages 2 --stage ptx | %FileCheck %s

# The attention backward's dQ kernel on sm90 (examples/attention.py).
# * A TMA refill (the expect and the K and V copies, two boxes each) is one
#   `elect.sync` and one branch (targets/nvidia/tma.py `_issuer`,
#   `_issue_block`): no second elect before the four copies.
# * The Q and dO descriptors, which the loop does not change, are re-read
#   where each product is issued (targets/nvidia/wgmma.py `_here`: an inline
#   `mov.b64`), not kept from before the loop.
# * The key mask `offs_n < N_CTX` (N_CTX % 16 == 0) is compared once per run
#   of 16 equal columns (passes/gpu/math.py): 4 compares for a thread's 16
#   columns, not 16.

# Before the loop: the rows' lse / delta masks compare with N_CTX's register.
# CHECK: setp.lt.s32 %p{{[0-9]+}}, %r{{[0-9]+}}, [[N:%r[0-9]+]];
# The loop: the two products' descriptor re-reads, then the key mask.
# CHECK: mov.b64 %rd{{[0-9]+}}, %rd{{[0-9]+}};
# CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
# CHECK: mov.b64 %rd{{[0-9]+}}, %rd{{[0-9]+}};
# CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
# CHECK-COUNT-4: setp.lt.s32 %p{{[0-9]+}}, %r{{[0-9]+}}, [[N]];
# CHECK-NOT: setp.lt.s32 %p{{[0-9]+}}, %r{{[0-9]+}}, [[N]];
# CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
# The refill in the loop: one elect, the expect, four copies under one branch.
# CHECK: elect.sync
# CHECK-NEXT: and.pred
# CHECK-NOT: elect.sync
# CHECK: mbarrier.arrive.expect_tx.shared.b64 _, [%r{{[0-9]+}}], 32768;
# CHECK-NOT: elect.sync
# CHECK-COUNT-4: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
# CHECK-NOT: elect.sync
# CHECK: bra.uni
