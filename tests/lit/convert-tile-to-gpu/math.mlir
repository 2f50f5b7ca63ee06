// RUN: %tilec-opt %s --pass tile-layout,convert-tile-to-gpu --target sm90 | %FileCheck %s --check-prefix=NV
// RUN: %tilec-opt %s --pass tile-layout,convert-tile-to-gpu --target gfx942 | %FileCheck %s --check-prefix=AMD
// RUN: %tilec-opt %s --pass "tile-layout,convert-tile-to-gpu,gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm)" --target sm90 | %FileCheck %s --check-prefix=LIBDEVICE

// Math as each target's features say (passes/gpu/math.py, targets/nvidia/rules.py, targets/amd/rules.py):
//   fast_exp2:   exp(x) -> exp2(x * log2(e)), one hardware 2^x (both targets);
//   device_libm: NVIDIA keeps math.* for libdevice (__nv_*f after
//                convert-gpu-to-nvvm); AMD has none, so exp2/log2/sin become
//                LLVM intrinsics (log(x) = log2(x) * ln 2);
//   exp2_instr:  AMD's f32 exp2 is llvm.amdgcn.exp2 per element (v_exp_f32);
//   exp2_ftz:    NVIDIA's f32 exp2 is llvm.nvvm.ex2.approx.ftz.f per element
//                (tl.exp, through fast_exp2, stays libdevice's exp2f);
//   fast_fdiv:   f32 division is llvm.nvvm.div.full on NVIDIA, arith.divf on AMD;
//   fp_contract: float add/mul carry fastmath<contract> (FMA may form).

// NV-LABEL: gpu.func @mathk(
// NV: %[[E:.*]] = arith.mulf %{{.*}}, %{{.*}} : vector<1xf32>
// NV-NEXT: math.exp2 %[[E]] : vector<1xf32>
// NV-NEXT: %[[Y:.*]] = vector.extract %{{.*}}[0] : f32 from vector<1xf32>
// NV-NEXT: %[[Y2:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"(%[[Y]]) : (f32) -> f32
// NV-NEXT: vector.from_elements %[[Y2]] : vector<1xf32>
// NV-NEXT: arith.addf %{{.*}}, %{{.*}} fastmath<contract> : vector<1xf32>
// NV-NEXT: math.log %{{.*}} : vector<1xf32>
// NV: math.sqrt %{{.*}} : vector<1xf32>
// NV: llvm.call_intrinsic "llvm.nvvm.div.full"(%{{.*}}, %{{.*}}) : (f32, f32) -> f32
// NV-NOT: arith.divf
// NV: arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : vector<1xf32>
// NV: math.sin %{{.*}} : vector<1xf32>
// NV: gpu.return

// AMD-LABEL: gpu.func @mathk(
// AMD: %[[E:.*]] = arith.mulf %{{.*}}, %{{.*}} : vector<1xf32>
// AMD-NEXT: llvm.call_intrinsic "llvm.exp2"(%[[E]]) : (vector<1xf32>) -> vector<1xf32>
// AMD-NEXT: %[[X:.*]] = vector.extract %{{.*}}[0] : f32 from vector<1xf32>
// AMD-NEXT: %[[X2:.*]] = llvm.call_intrinsic "llvm.amdgcn.exp2"(%[[X]]) : (f32) -> f32
// AMD-NEXT: vector.from_elements %[[X2]] : vector<1xf32>
// AMD-NEXT: arith.addf %{{.*}}, %{{.*}} fastmath<contract> : vector<1xf32>
// AMD-NEXT: %[[L:.*]] = llvm.call_intrinsic "llvm.log2"(%{{.*}}) : (vector<1xf32>) -> vector<1xf32>
// AMD: arith.mulf %[[L]], %{{.*}} : vector<1xf32>
// AMD: math.sqrt %{{.*}} : vector<1xf32>
// AMD: arith.divf %{{.*}}, %{{.*}} : vector<1xf32>
// AMD-NOT: nvvm
// AMD: arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : vector<1xf32>
// AMD: llvm.call_intrinsic "llvm.sin"(%{{.*}}) : (vector<1xf32>) -> vector<1xf32>
// AMD-NOT: math.
// AMD: gpu.return

// LIBDEVICE-DAG: llvm.func @__nv_exp2f(f32) -> f32
// LIBDEVICE-DAG: llvm.func @__nv_logf(f32) -> f32
// LIBDEVICE-DAG: llvm.func @__nv_sqrtf(f32) -> f32
// LIBDEVICE-DAG: llvm.func @__nv_sinf(f32) -> f32
// LIBDEVICE: llvm.call @__nv_exp2f(
// LIBDEVICE: llvm.fadd %{{.*}}, %{{.*}} {fastmathFlags = #llvm.fastmath<contract>} : vector<1xf32>
// LIBDEVICE: llvm.call @__nv_logf(

module {
  func.func @mathk(%arg0: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %arg1: !tile.ptr<f32> {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
    %cst = arith.constant dense<1.000000e+00> : tensor<128xf32>
    %0 = "tile.range"() {end = 128 : i32, start = 0 : i32} : () -> tensor<128xi32>
    %splat = tensor.splat %arg0 : tensor<128x!tile.ptr<f32>>
    %1 = "tile.addptr"(%splat, %0) : (tensor<128x!tile.ptr<f32>>, tensor<128xi32>) -> tensor<128x!tile.ptr<f32>>
    %2 = "tile.load"(%1) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<128x!tile.ptr<f32>>) -> tensor<128xf32>
    %splat_0 = tensor.splat %arg1 : tensor<128x!tile.ptr<f32>>
    %3 = "tile.addptr"(%splat_0, %0) : (tensor<128x!tile.ptr<f32>>, tensor<128xi32>) -> tensor<128x!tile.ptr<f32>>
    %4 = "tile.load"(%3) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<128x!tile.ptr<f32>>) -> tensor<128xf32>
    %5 = math.exp %2 : tensor<128xf32>
    %6 = math.exp2 %4 : tensor<128xf32>
    %7 = arith.addf %5, %6 : tensor<128xf32>
    %8 = math.log %2 : tensor<128xf32>
    %9 = arith.addf %7, %8 : tensor<128xf32>
    %10 = math.sqrt %4 : tensor<128xf32>
    %11 = arith.addf %9, %10 : tensor<128xf32>
    %12 = arith.divf %2, %4 : tensor<128xf32>
    %13 = arith.addf %11, %12 : tensor<128xf32>
    %14 = arith.mulf %2, %4 : tensor<128xf32>
    %15 = arith.addf %13, %14 : tensor<128xf32>
    %16 = arith.addf %15, %cst : tensor<128xf32>
    %17 = math.sin %2 : tensor<128xf32>
    %18 = arith.addf %16, %17 : tensor<128xf32>
    %19 = "tile.addptr"(%splat_0, %0) : (tensor<128x!tile.ptr<f32>>, tensor<128xi32>) -> tensor<128x!tile.ptr<f32>>
    "tile.store"(%19, %18) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<128x!tile.ptr<f32>>, tensor<128xf32>) -> ()
    return
  }
}
