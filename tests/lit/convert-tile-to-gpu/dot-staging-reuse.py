# RUN: %tilec ir %s --target sm80 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16" --constexpr N=64 --num-warps 4 --stage ptx | %FileCheck %s
# RUN: %tilec ir %s --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16" --constexpr N=64 --num-warps 4 --stage ptx | %FileCheck %s --check-prefix=WG

# Two register-operand dots in a row: the second's operand staging reuses the
# first's workgroup memory (released after the first's last barrier), and the
# result's exchange before the store reuses it too: the kernel needs one dot's
# buffers.  mma.sync (sm80): A and B 64x64 f16, rows padded by 8 elements,
# 2 x 64 x 72 x 2 = 18432 bytes (before: 46080, both dots' and the exchange's).
# wgmma (sm90): the first dot's two 8 KiB swizzled tiles (the second takes A
# from registers): 16384 (before: 33792).
import tilec
import tilec.language as tl


@tilec.kernel
def two_dots(a_ptr, b_ptr, c_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
    s = tl.dot(tl.load(a_ptr + offs), tl.load(b_ptr + offs))
    t = tl.dot(s.to(tl.float16), tl.load(c_ptr + offs))
    tl.store(o_ptr + offs, t.to(tl.float16))


# CHECK: .shared .align 16 .b8 __tilec_smem_two_dots[18432];
# CHECK-COUNT-2: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32

# WG: .shared .align 1024 .b8 __tilec_smem_two_dots[16384];
# WG: wgmma.mma_async
# WG: wgmma.mma_async
