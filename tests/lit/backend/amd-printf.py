# RUN: %tilec ir %s --target gfx942 --stage amdgcn | %FileCheck %s
# RUN: %tilec ir %s --target gfx942 --stage llir | %FileCheck %s --check-prefix=LLIR

# tl.device_print on AMD through the OpenCL printf buffer (targets/amd/printf.py):
# MLIR's runtime=OpenCL lowering calls printf, tilec links its own
# __printf_alloc, and LLVM's printf pass turns each call into a slot claimed
# from hidden_printf_buffer (kernarg byte 8 + 72 = 0x50 here: one pointer
# argument, then code object v5's hidden arguments) plus stores of the format
# id and the arguments; the formats go to the amdhsa.printf metadata.
import tilec
import tilec.language as tl


@tilec.kernel
def show(x_ptr: "*fp32"):
    tl.device_print("x", tl.load(x_ptr + tl.arange(0, 64)))


# LLIR: @printfFormat_0 = internal addrspace(4) constant {{.*}} c"pid (%i, %i, %i) idx (%i) x: %f\0A\00"
# LLIR: call i32 (ptr addrspace(4), ...) @printf(ptr addrspace(4) @printfFormat_0, i32 {{.*}}, double
# LLIR: define hidden ptr addrspace(1) @__printf_alloc(i32 %bytes)
# LLIR: getelementptr inbounds i8, ptr addrspace(4) %args, i64 72
# LLIR: cmpxchg ptr addrspace(1) %buf

# CHECK-LABEL: show:
# CHECK: s_load_dwordx2 s[{{[0-9]+}}:{{[0-9]+}}], s[{{[0-9]+}}:{{[0-9]+}}], 0x50
# CHECK: global_atomic_cmpswap
# CHECK-NOT: s_swappc
# CHECK: .amdhsa_kernarg_size 264
# CHECK: .Lfunc_end0:
# CHECK: __printf_alloc:
# CHECK-NOT: hidden_hostcall_buffer
# CHECK: .offset: 80
# CHECK-NEXT: .size: 8
# CHECK-NEXT: .value_kind: hidden_printf_buffer
# CHECK-NOT: hidden_hostcall_buffer
# CHECK: amdhsa.printf:
# CHECK-NEXT: - '1:5:4:4:4:4:4:pid (%i, %i, %i) idx (%i) x\72 %f\n'
