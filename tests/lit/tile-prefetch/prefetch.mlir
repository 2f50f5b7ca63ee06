// RUN: %tilec-opt %s --split-input-file --pass tile-prefetch | %FileCheck %s

// A load computed from the induction variable: the first tile is loaded before
// the loop (guarded by lb < ub), each iteration loads the next one (guarded by
// iv + step < ub) and carries it; the body uses the carried tile.

// CHECK-LABEL: func.func @rowsum
// CHECK: %[[LIVE0:.*]] = arith.cmpi slt, %c0_i32, %arg2 : i32
// CHECK: %[[M0:.*]] = tensor.splat %[[LIVE0]] : tensor<16xi1>
// CHECK: %[[G0:.*]] = arith.andi %{{.*}}, %[[M0]] : tensor<16xi1>
// CHECK: %[[FIRST:.*]] = "tile.load"(%{{.*}}, %[[G0]], %{{.*}}) {operandSegmentSizes = array<i32: 1, 1, 1>}
// CHECK: scf.for %[[IV:.*]] = %c0_i32 to %arg2 step %c2_i32 iter_args(%[[ACC:.*]] = %{{.*}}, %[[CUR:.*]] = %[[FIRST]])
// CHECK: %[[NEXT:.*]] = arith.addi %[[IV]], %c2_i32 : i32
// CHECK: arith.muli %[[NEXT]]
// CHECK: %[[LIVE:.*]] = arith.cmpi slt, %[[NEXT]], %arg2 : i32
// CHECK: %[[PF:.*]] = "tile.load"
// CHECK: %[[SUM:.*]] = arith.addf %[[ACC]], %[[CUR]] : tensor<16xf32>
// CHECK: scf.yield %[[SUM]], %[[PF]]

module {
  func.func @rowsum(%arg0: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "x_ptr"}, %arg1: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "out_ptr"}, %arg2: i32 {tile.name = "n"}) attributes {tile.kernel} {
    %0 = "tile.range"() {end = 16 : i32, start = 0 : i32} : () -> tensor<16xi32>
    %cst = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %c0_i32 = arith.constant 0 : i32
    %c2_i32 = arith.constant 2 : i32
    %1 = scf.for %arg3 = %c0_i32 to %arg2 step %c2_i32 iter_args(%arg4 = %cst) -> (tensor<16xf32>)  : i32 {
      %c16_i32 = arith.constant 16 : i32
      %3 = arith.muli %arg3, %c16_i32 : i32
      %4 = "tile.addptr"(%arg0, %3) : (!tile.ptr<f32>, i32) -> !tile.ptr<f32>
      %splat_0 = tensor.splat %4 : tensor<16x!tile.ptr<f32>>
      %5 = "tile.addptr"(%splat_0, %0) : (tensor<16x!tile.ptr<f32>>, tensor<16xi32>) -> tensor<16x!tile.ptr<f32>>
      %splat_1 = tensor.splat %arg2 : tensor<16xi32>
      %6 = arith.cmpi slt, %0, %splat_1 : tensor<16xi32>
      %7 = "tile.load"(%5, %6) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<16x!tile.ptr<f32>>, tensor<16xi1>) -> tensor<16xf32>
      %8 = arith.addf %arg4, %7 : tensor<16xf32>
      scf.yield %8 : tensor<16xf32>
    }
    %splat = tensor.splat %arg1 : tensor<16x!tile.ptr<f32>>
    %2 = "tile.addptr"(%splat, %0) : (tensor<16x!tile.ptr<f32>>, tensor<16xi32>) -> tensor<16x!tile.ptr<f32>>
    "tile.store"(%2, %1) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<16x!tile.ptr<f32>>, tensor<16xf32>) -> ()
    return
  }
}

// -----

// A loop that stores is left alone (a load moved ahead could read what the
// store writes).

// CHECK-LABEL: func.func @inplace
// CHECK: scf.for
// CHECK-NOT: iter_args
// CHECK: "tile.load"
// CHECK: "tile.store"

module {
  func.func @inplace(%arg0: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "x_ptr"}, %arg1: i32 {tile.name = "n"}) attributes {tile.kernel} {
    %0 = "tile.range"() {end = 16 : i32, start = 0 : i32} : () -> tensor<16xi32>
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    scf.for %arg2 = %c0_i32 to %arg1 step %c1_i32  : i32 {
      %c16_i32 = arith.constant 16 : i32
      %1 = arith.muli %arg2, %c16_i32 : i32
      %2 = "tile.addptr"(%arg0, %1) : (!tile.ptr<f32>, i32) -> !tile.ptr<f32>
      %splat = tensor.splat %2 : tensor<16x!tile.ptr<f32>>
      %3 = "tile.addptr"(%splat, %0) : (tensor<16x!tile.ptr<f32>>, tensor<16xi32>) -> tensor<16x!tile.ptr<f32>>
      %4 = "tile.load"(%3) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<16x!tile.ptr<f32>>) -> tensor<16xf32>
      %c16_i32_0 = arith.constant 16 : i32
      %5 = arith.muli %arg2, %c16_i32_0 : i32
      %6 = "tile.addptr"(%arg0, %5) : (!tile.ptr<f32>, i32) -> !tile.ptr<f32>
      %splat_1 = tensor.splat %6 : tensor<16x!tile.ptr<f32>>
      %7 = "tile.addptr"(%splat_1, %0) : (tensor<16x!tile.ptr<f32>>, tensor<16xi32>) -> tensor<16x!tile.ptr<f32>>
      %cst = arith.constant 1.000000e+00 : f32
      %splat_2 = tensor.splat %cst : tensor<16xf32>
      %8 = arith.addf %4, %splat_2 : tensor<16xf32>
      "tile.store"(%7, %8) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<16x!tile.ptr<f32>>, tensor<16xf32>) -> ()
    }
    return
  }
}
