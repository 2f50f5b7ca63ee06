# RUN: %tilec ir %s --target cpu --constexpr BLOCK=8 --print-after-all | %FileCheck %s
# RUN: %tilec ir %s --target cpu --constexpr BLOCK=8 --stage tile-opt | %FileCheck %s --check-prefix=OPT
# RUN: %tilec ir %s --target cpu --constexpr BLOCK=8 --stage llir | %FileCheck %s --check-prefix=LLIR

# `tilec ir --print-after-all` prints the IR after the frontend and after every
# pass, each under an MLIR-style header naming the pass; `--stage S` prints one
# stage (MLIR for the IR stages, LLVM IR for llir).
import tilec
import tilec.language as tl


@tilec.kernel
def neg(x_ptr: "*fp32", n: "i32", BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    unused = tl.load(x_ptr + offs + 1, mask=offs < n)
    tl.store(x_ptr + offs, -tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


# CHECK: // -----// IR Dump After frontend //----- //
# CHECK-NEXT: module {
# CHECK: "tile.load"
# CHECK: "tile.load"
# CHECK: // -----// IR Dump After tile-verify //----- //
# CHECK: // -----// IR Dump After canonicalize,cse //----- //
# CHECK: // -----// IR Dump After tile-combine-dot //----- //
# CHECK: // -----// IR Dump After tile-dce //----- //
# CHECK-NOT: IR Dump
# CHECK: "tile.load"
# CHECK-NOT: "tile.load"
# CHECK: // -----// IR Dump After tile-flatten-loops //----- //
# CHECK: // -----// IR Dump After tile-tma-descriptors //----- //
# CHECK: // -----// IR Dump After tile-lower-descriptors //----- //
# CHECK: // -----// IR Dump After tile-dot-precision //----- //
# CHECK: // -----// IR Dump After tile-expand-fp8 //----- //
# CHECK: // -----// IR Dump After convert-tile-to-cpu //----- //
# CHECK-NOT: tile.
# CHECK: llvm.intr.masked.load
# CHECK: // -----// IR Dump After lower-to-llvm //----- //
# CHECK: llvm.func @tilec_neg(

# OPT: func.func @neg(
# OPT-COUNT-1: "tile.load"
# OPT-NOT: "tile.load"
# OPT: "tile.store"

# LLIR: define {{.*}}@neg_body(
# LLIR: call <8 x float> @llvm.masked.load.v8f32.p0(
# LLIR: define void @tilec_neg(
