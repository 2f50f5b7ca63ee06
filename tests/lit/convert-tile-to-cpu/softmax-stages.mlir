// RUN: %tilec-opt %s --pass tile-verify,convert-tile-to-cpu | %FileCheck %s

// A row softmax (one row per program, 256-wide tile) is strip-mined in stages:
// one scf.for over 64-lane chunks per stage; reductions accumulate lane-wise in
// a loop-carried vector (from the combine's identity: NaN for maxnumf, -0.0 for
// add) and finish after the loop with vector.reduction; the load of x is
// recomputed in the next stage, exp(x - max) goes through a stack buffer.
// The result is stored with a plain masked store (no non-temporal hint).
// math.exp becomes arith/math.fma ops (passes/cpu/math.py), no libm call.
// CHECK-LABEL: func.func private @softmax_kernel_body(
// CHECK: %[[BUF:.*]] = llvm.alloca %{{.*}} x f32 {alignment = 64 : i64}
// CHECK: arith.constant dense<0x7FC00000> : vector<64xf32>
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (vector<64xf32>)
// CHECK: llvm.intr.masked.load {{.*}} -> vector<64xf32>
// CHECK: arith.maxnumf %[[ACC]], %{{.*}} : vector<64xf32>
// CHECK: scf.yield
// CHECK: vector.reduction <maxnumf>, %{{.*}} : vector<16xf32> into f32
// CHECK: arith.constant dense<-0.000000e+00> : vector<64xf32>
// CHECK: scf.for
// CHECK: llvm.intr.masked.load {{.*}} -> vector<64xf32>
// CHECK-NOT: math.exp
// CHECK: math.fma
// CHECK: arith.shli
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 64 : i64} : vector<64xf32>, !llvm.ptr
// CHECK: arith.addf
// CHECK: scf.yield
// CHECK: vector.reduction <add>, %{{.*}} fastmath<reassoc> : vector<16xf32> into f32
// CHECK: scf.for
// CHECK: llvm.load %{{.*}} {alignment = 64 : i64} : !llvm.ptr -> vector<64xf32>
// CHECK: arith.divf %{{.*}} : vector<64xf32>
// CHECK-NOT: nontemporal
// CHECK: llvm.intr.masked.store
// CHECK-NOT: nontemporal
// CHECK-NOT: math.exp
// CHECK-LABEL: func.func @tilec_softmax_kernel(
func.func private @__tilec_sum_fp32(%arg0: f32, %arg1: f32) -> f32 {
  %0 = arith.addf %arg0, %arg1 : f32
  return %0 : f32
}
func.func private @__tilec_max_fp32(%arg0: f32, %arg1: f32) -> f32 {
  %0 = arith.maxnumf %arg0, %arg1 : f32
  return %0 : f32
}
func.func @softmax_kernel(%arg0: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "y_ptr"}, %arg1: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "x_ptr"}, %arg2: i32 {tile.name = "n_cols"}) attributes {tile.kernel} {
  %cst = arith.constant dense<0xFF800000> : tensor<256xf32>
  %0 = "tile.program_id"() {axis = 0 : i32} : () -> i32
  %1 = "tile.range"() {end = 256 : i32, start = 0 : i32} : () -> tensor<256xi32>
  %splat = tensor.splat %arg2 : tensor<256xi32>
  %2 = arith.cmpi slt, %1, %splat : tensor<256xi32>
  %3 = arith.muli %0, %arg2 : i32
  %4 = "tile.addptr"(%arg1, %3) : (!tile.ptr<f32>, i32) -> !tile.ptr<f32>
  %splat_0 = tensor.splat %4 : tensor<256x!tile.ptr<f32>>
  %5 = "tile.addptr"(%splat_0, %1) : (tensor<256x!tile.ptr<f32>>, tensor<256xi32>) -> tensor<256x!tile.ptr<f32>>
  %6 = "tile.load"(%5, %2, %cst) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<256x!tile.ptr<f32>>, tensor<256xi1>, tensor<256xf32>) -> tensor<256xf32>
  %7 = "tile.reduce"(%6) {axis = 0 : i32, combine = @__tilec_max_fp32, operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>} : (tensor<256xf32>) -> f32
  %splat_1 = tensor.splat %7 : tensor<256xf32>
  %8 = arith.subf %6, %splat_1 : tensor<256xf32>
  %9 = math.exp %8 : tensor<256xf32>
  %10 = "tile.reduce"(%9) {axis = 0 : i32, combine = @__tilec_sum_fp32, operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>} : (tensor<256xf32>) -> f32
  %11 = "tile.addptr"(%arg0, %3) : (!tile.ptr<f32>, i32) -> !tile.ptr<f32>
  %splat_2 = tensor.splat %11 : tensor<256x!tile.ptr<f32>>
  %12 = "tile.addptr"(%splat_2, %1) : (tensor<256x!tile.ptr<f32>>, tensor<256xi32>) -> tensor<256x!tile.ptr<f32>>
  %splat_3 = tensor.splat %10 : tensor<256xf32>
  %13 = arith.divf %9, %splat_3 : tensor<256xf32>
  "tile.store"(%12, %13, %2) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<256x!tile.ptr<f32>>, tensor<256xf32>, tensor<256xi1>) -> ()
  return
}
