# RUN: %tilec ir %s --target gfx942 --signature "*fp32:16,*fp32:16,i32:16" --constexpr BLOCK=1024 --num-warps 4 --stage amdgcn | %FileCheck %s
# RUN: %tilec ir %s --target sm90 --signature "*fp32:16,*fp32:16,i32:16" --constexpr BLOCK=1024 --num-warps 4 --stage ptx | %FileCheck %s --check-prefix=NV

# Two cross-warp reductions in a row (a softmax: max, then sum): the second
# reuses the first's workgroup-memory scratch (16 bytes for 4 warps, not 32:
# Triton 3.9's figure) after a barrier that follows the first's reads, where
# the target has Feature.SCRATCH_REUSE (AMD); NVIDIA keeps both (32 bytes, no
# extra barrier).
import tilec
import tilec.language as tl


@tilec.kernel
def softmax_row(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n + cols, mask=cols < n, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    e = tl.exp(z)
    tl.store(y_ptr + row * n + cols, e / tl.sum(e, axis=0), mask=cols < n)


# CHECK: ds_write_b32 [[W1:v[0-9]+]], {{v[0-9]+}}{{$}}
# CHECK: s_barrier
# CHECK: ds_read_b128
# CHECK: s_barrier
# CHECK: ds_write_b32 {{v[0-9]+}}, {{v[0-9]+}}{{$}}
# CHECK: s_barrier
# CHECK: ds_read_b128
# CHECK: .group_segment_fixed_size: 16

# NV: .shared .align 16 .b8 __tilec_smem_softmax_row[32];
# NV: st.shared.b32
# NV: bar.sync
# NV: ld.shared
# NV-NOT: bar.sync
# NV: st.shared.b32 {{.*}}+16]
# NV: bar.sync
# NV: ld.shared
