# RUN: %tilec ir %s --target sm90 --signature "*fp32:16,*fp32:16,i32:16" --constexpr B=64 SYNC=0 --num-warps 4 --stage gpu | %FileCheck %s
# RUN: %tilec ir %s --target gfx942 --signature "*fp32:16,*fp32:16,i32:16" --constexpr B=64 SYNC=0 --num-warps 4 --stage gpu | %FileCheck %s
# RUN: %tilec ir %s --target sm90 --signature "*fp32:16,*fp32:16,i32:16" --constexpr B=64 SYNC=1 --num-warps 4 --stage gpu | %FileCheck %s --check-prefix=SYNCED

# The barrier clean-up after lowering (passes/gpu/barriers.py): the transpose's
# exchange through workgroup memory keeps its barrier before the writes and
# the one between writes and reads; the one after the reads goes, since the
# kernel then only stores to global memory.  A barrier the program asks for
# (`tl.debug_barrier`, marked `tilec.ordered`) stays where it is, and the
# exchange's own barrier right before it merges into it.
import tilec
import tilec.language as tl


@tilec.kernel
def transpose(x_ptr, y_ptr, n, B: tl.constexpr, SYNC: tl.constexpr):
    r = tl.arange(0, B)
    x = tl.load(x_ptr + r[:, None] * n + r[None, :])
    y = tl.trans(x)
    if SYNC:
        tl.debug_barrier()
    tl.store(y_ptr + r[:, None] * n + r[None, :], y)


# CHECK: gpu.barrier
# CHECK: llvm.store {{.*}} !llvm.ptr<3>
# CHECK: gpu.barrier
# CHECK-NOT: gpu.barrier
# CHECK: llvm.load {{.*}} !llvm.ptr<3>
# CHECK-NOT: gpu.barrier
# CHECK: llvm.store {{.*}} !llvm.ptr<1>
# CHECK-NOT: gpu.barrier
# CHECK: gpu.return

# SYNCED: llvm.store {{.*}} !llvm.ptr<3>
# SYNCED: gpu.barrier
# SYNCED: llvm.load {{.*}} !llvm.ptr<3>
# SYNCED-NOT: gpu.barrier{{$}}
# SYNCED: gpu.barrier {tilec.ordered}
# SYNCED-NOT: gpu.barrier
# SYNCED: llvm.store {{.*}} !llvm.ptr<1>
# SYNCED: gpu.return
