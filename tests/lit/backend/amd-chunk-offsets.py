# RUN: %tilec ir %s --target gfx942 --stage llir | %FileCheck %s --check-prefix=LLIR
# RUN: %tilec ir %s --target gfx942 --stage amdgcn | %FileCheck %s

# A thread's rows of a 64x128 fp16 tile are its base plus 16*i per chunk
# (passes/gpu/context.py coordinates: no-wrap adds); the i64 extension and the
# add of the loop offset keep the chunk constant last (passes/gpu/math.py), so
# LLVM holds one 64-bit row per thread and adds 16/32/48 as immediates instead
# of one hoisted 64-bit VGPR pair per chunk.
import tilec
import tilec.language as tl


@tilec.kernel
def rows(x_ptr: "*fp16", out_ptr: "*fp16", n: "i32", start: "i32"):
    r = tl.arange(0, 64).to(tl.int64) + start.to(tl.int64)
    c = tl.arange(0, 128)
    m = (r[:, None] >= 0) & (r[:, None] < n)
    x = tl.load(x_ptr + r[:, None] * 128 + c[None, :], mask=m, other=0.0)
    tl.store(out_ptr + tl.arange(0, 64)[:, None] * 128 + c[None, :], x)


# LLIR-DAG: add nuw nsw <1 x i32> %{{[0-9]+}}, splat (i32 16)
# LLIR-DAG: add <1 x i64> %{{[0-9]+}}, splat (i64 16)
# CHECK-LABEL: rows:
# CHECK: v_lshl_add_u64 v[{{[0-9]+}}:{{[0-9]+}}], v[[[R:[0-9]+]]:{{[0-9]+}}], 0, 16
# CHECK: v_lshl_add_u64 v[{{[0-9]+}}:{{[0-9]+}}], v[[[R]]:{{[0-9]+}}], 0, 32
