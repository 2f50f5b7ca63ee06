// RUN: %tilec-opt %s --pass tile-verify,convert-tile-to-cpu | %FileCheck %s

// An scf.for that carries a tile keeps carrying it, as a flat vector: the
// iter_arg, the block argument, the yield and the loop result all change type
// from tensor<8xf32> to vector<8xf32>; the body is lowered in place.
// CHECK-LABEL: func.func private @loop_body(
// CHECK-SAME: %[[X:[^:]*]]: !llvm.ptr, %[[OUT:[^:]*]]: !llvm.ptr, %[[K:[^:]*]]: i32
// CHECK-NOT: tile.
// CHECK: %[[INIT:.*]] = arith.constant dense<0.000000e+00> : vector<8xf32>
// CHECK: %[[RES:.*]] = scf.for %[[I:.*]] = %{{.*}} to %[[K]] step %{{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (vector<8xf32>) : i32 {
// CHECK: %[[BASE:.*]] = llvm.getelementptr %[[X]][%{{.*}}] : (!llvm.ptr, i32) -> !llvm.ptr, f32
// CHECK: %[[V:.*]] = llvm.load %{{.*}} : !llvm.ptr -> vector<8xf32>
// CHECK: %[[SUM:.*]] = arith.addf %[[ACC]], %[[V]] : vector<8xf32>
// CHECK: scf.yield %[[SUM]] : vector<8xf32>
// CHECK: }
// CHECK: llvm.store %[[RES]], %{{.*}} : vector<8xf32>, !llvm.ptr
func.func @loop(%arg0: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %arg1: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %arg2: i32) attributes {tile.kernel} {
  %c8_i32 = arith.constant 8 : i32
  %c1_i32 = arith.constant 1 : i32
  %c0_i32 = arith.constant 0 : i32
  %cst = arith.constant dense<0.000000e+00> : tensor<8xf32>
  %0 = "tile.range"() {end = 8 : i32, start = 0 : i32} : () -> tensor<8xi32>
  %1 = scf.for %arg3 = %c0_i32 to %arg2 step %c1_i32 iter_args(%arg4 = %cst) -> (tensor<8xf32>)  : i32 {
    %3 = arith.muli %arg3, %c8_i32 : i32
    %4 = "tile.addptr"(%arg0, %3) : (!tile.ptr<f32>, i32) -> !tile.ptr<f32>
    %splat_0 = tensor.splat %4 : tensor<8x!tile.ptr<f32>>
    %5 = "tile.addptr"(%splat_0, %0) : (tensor<8x!tile.ptr<f32>>, tensor<8xi32>) -> tensor<8x!tile.ptr<f32>>
    %6 = "tile.load"(%5) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<8x!tile.ptr<f32>>) -> tensor<8xf32>
    %7 = arith.addf %arg4, %6 : tensor<8xf32>
    scf.yield %7 : tensor<8xf32>
  }
  %splat = tensor.splat %arg1 : tensor<8x!tile.ptr<f32>>
  %2 = "tile.addptr"(%splat, %0) : (tensor<8x!tile.ptr<f32>>, tensor<8xi32>) -> tensor<8x!tile.ptr<f32>>
  "tile.store"(%2, %1) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<8x!tile.ptr<f32>>, tensor<8xf32>) -> ()
  return
}
