# RUN: %tilec ir %s --target sm90 --signature "*fp16:16,*fp16:16,*fp32:16" --constexpr BM=128 BN=64 BK=64 --num-warps 4 --stage ptx > %t.ptx
# RUN: %FileCheck %s --input-file %t.ptx
# RUN: %FileCheck %s --check-prefix=EXP2 --input-file %t.ptx

# targets/nvidia/wgmma.py: a dot whose accumulator is a +0.0 splat (tl.dot(a, b)
# without acc; attention's q @ k.T) issues its first k-step with scale-d = 0 on
# undefined inputs: no register is written for the accumulator, and nothing
# between the fence and the instructions (a zero written there made ptxas fence
# again and serialize every wgmma of the kernel: C7520, on 4-warp attention).
# Both m64 blocks of the 128-row tile start that way; the later k-steps add.
# And tl.math.exp2 on f32 is ex2.approx.ftz.f32 (Feature.EXP2_FTZ).
import tilec
import tilec.language as tl


@tilec.kernel
def qk(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])
    s = tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], tl.math.exp2(s))

# CHECK: wgmma.fence.sync.aligned;
# CHECK-NEXT: // begin inline asm
# CHECK-NEXT: {
# CHECK-NEXT: .reg .pred p;
# CHECK-NEXT: setp.ne.b32 p, 0, 0;
# CHECK-NEXT: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
# CHECK-NOT: mov.b32
# CHECK: setp.ne.b32 p, 0, 0;
# CHECK-NEXT: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
# CHECK: setp.ne.b32 p, 1, 0;
# CHECK-NEXT: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
# CHECK: wgmma.commit_group.sync.aligned;

# EXP2: ex2.approx.ftz.f32
# EXP2-NOT: ex2.approx.f32
