// RUN: %tilec-opt %s --pass tile-verify,canonicalize,tile-dce,convert-tile-to-cpu | %FileCheck %s

// Contiguous masked accesses become one masked vector load/store per tile;
// program ids become arguments of the body, and a grid function loops over them.
// CHECK-LABEL: func.func private @saxpy_body(
// CHECK-SAME: %[[X:.*]]: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: f32, %[[N:.*]]: i32, %[[PID:.*]]: i32
// CHECK-NOT: tile.
// CHECK: llvm.intr.masked.load %{{.*}} {alignment = 16 : i32} : (!llvm.ptr, vector<16xi1>, vector<16xf32>) -> vector<16xf32>
// CHECK: llvm.intr.masked.store %{{.*}} {alignment = 16 : i32} : vector<16xf32>, vector<16xi1> into !llvm.ptr
// CHECK-LABEL: func.func @tilec_saxpy(
// CHECK: scf.for
// CHECK: func.call @saxpy_body
func.func @saxpy(%arg0: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %arg1: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %arg2: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %arg3: f32, %arg4: i32) attributes {tile.kernel} {
  %cst = arith.constant dense<0.000000e+00> : tensor<16xf32>
  %c16_i32 = arith.constant 16 : i32
  %0 = "tile.program_id"() {axis = 0 : i32} : () -> i32
  %1 = arith.muli %0, %c16_i32 : i32
  %2 = "tile.range"() {end = 16 : i32, start = 0 : i32} : () -> tensor<16xi32>
  %splat = tensor.splat %1 : tensor<16xi32>
  %3 = arith.addi %splat, %2 : tensor<16xi32>
  %splat_0 = tensor.splat %arg4 : tensor<16xi32>
  %4 = arith.cmpi slt, %3, %splat_0 : tensor<16xi32>
  %splat_1 = tensor.splat %arg0 : tensor<16x!tile.ptr<f32>>
  %5 = "tile.addptr"(%splat_1, %3) : (tensor<16x!tile.ptr<f32>>, tensor<16xi32>) -> tensor<16x!tile.ptr<f32>>
  %6 = "tile.load"(%5, %4, %cst) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<16x!tile.ptr<f32>>, tensor<16xi1>, tensor<16xf32>) -> tensor<16xf32>
  %splat_2 = tensor.splat %arg1 : tensor<16x!tile.ptr<f32>>
  %7 = "tile.addptr"(%splat_2, %3) : (tensor<16x!tile.ptr<f32>>, tensor<16xi32>) -> tensor<16x!tile.ptr<f32>>
  %8 = "tile.load"(%7, %4, %cst) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<16x!tile.ptr<f32>>, tensor<16xi1>, tensor<16xf32>) -> tensor<16xf32>
  %splat_3 = tensor.splat %arg2 : tensor<16x!tile.ptr<f32>>
  %9 = "tile.addptr"(%splat_3, %3) : (tensor<16x!tile.ptr<f32>>, tensor<16xi32>) -> tensor<16x!tile.ptr<f32>>
  %splat_4 = tensor.splat %arg3 : tensor<16xf32>
  %10 = arith.mulf %splat_4, %6 : tensor<16xf32>
  %11 = arith.addf %10, %8 : tensor<16xf32>
  "tile.store"(%9, %11, %4) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<16x!tile.ptr<f32>>, tensor<16xf32>, tensor<16xi1>) -> ()
  return
}
