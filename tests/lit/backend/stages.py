# RUN: %tilec ir %s --target sm90 --constexpr BLOCK=256 --print-after-all | %FileCheck %s --check-prefix=NV
# RUN: %tilec ir %s --target gfx942 --constexpr BLOCK=256 --print-after-all | %FileCheck %s --check-prefix=AMD
# RUN: %tilec ir %s --target cpu --constexpr BLOCK=256 --print-after-all | %FileCheck %s --check-prefix=CPU
# RUN: %tilec ir %s --target sm90 --constexpr BLOCK=256 --stage ptx | %FileCheck %s --check-prefix=PTX

# Every back end is an ordered stage list run by one loop: --print-after-all
# names every step, the back end's own lowering and translations included,
# and shows each step's IR or text (a binary as a one-line note).
import tilec
import tilec.language as tl


@tilec.kernel
def scale(x_ptr: "*fp32", n: "i32", BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)


# NV: IR Dump After frontend
# NV: IR Dump After tile-verify
# NV: IR Dump After canonicalize,cse
# NV: IR Dump After tile-dce
# NV: IR Dump After tile-accelerate-dot
# NV: IR Dump After tile-layout
# NV: #tile.blocked
# NV: IR Dump After tile-pipeline
# NV: IR Dump After convert-tile-to-gpu
# NV: gpu.func @scale
# NV: IR Dump After convert-gpu-to-nvvm
# NV: gpu.module @tilec [#nvvm.target<O = 3, chip = "sm_90a">]
# NV: llvm.func @scale({{.*}} attributes {gpu.kernel
# NV: IR Dump After llir
# NV: target triple = "nvptx64-nvidia-cuda"
# NV: IR Dump After ptx
# NV: .target sm_90a
# NV: IR Dump After cubin
# NV-NEXT: // {{(stage 'cubin' is binary|no 'cubin' was made)}}

# AMD: IR Dump After convert-tile-to-gpu
# AMD: IR Dump After convert-gpu-to-rocdl
# AMD: llvm.func @scale({{.*}}rocdl.kernel
# AMD: IR Dump After llir
# AMD: target triple = "amdgcn-amd-amdhsa"
# AMD: "amdhsa_code_object_version", i32 500
# AMD: IR Dump After amdgcn
# AMD: .amdgcn_target "amdgcn-amd-amdhsa--gfx942"
# AMD: IR Dump After hsaco
# AMD-NEXT: // {{(stage 'hsaco' is binary|no 'hsaco' was made)}}

# CPU: IR Dump After tile-dce
# CPU-NOT: IR Dump After tile-layout
# CPU: IR Dump After convert-tile-to-cpu
# CPU: IR Dump After lower-to-llvm
# CPU: llvm.func @tilec_scale(
# CPU: IR Dump After llir
# CPU: define void @tilec_scale(
# CPU: IR Dump After llvm-opt
# CPU: define void @tilec_scale(
# CPU: IR Dump After asm
# CPU: tilec_scale:
# CPU: IR Dump After so
# CPU-NEXT: // stage 'so' is binary

# PTX: .version 8.0
# PTX: .target sm_90a
# PTX: .visible .entry scale(
