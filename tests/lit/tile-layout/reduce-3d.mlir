// RUN: %tilec-opt %s --pass tile-layout --target sm90 | %FileCheck %s
// RUN: %tilec-opt %s --pass tile-layout --target gfx942 | %FileCheck %s

// tl.sum of a [2, 4, 8] tile along axis 0, stored through [4, 8] pointers made
// by expand_dims of 1-D ranges.  The reduce leaves its result in a slice of its
// operand's layout; the pointers' 1-D ranges need slices of the [4, 8] group's
// layout, and a slice of a slice does not exist: the group gets a blocked
// layout and the reduce result is converted to it.

// CHECK-LABEL: func.func @r3
// CHECK: %[[R:.*]] = "tile.reduce"{{.*}} -> tensor<4x8xf32, #tile.slice<0 : i32, #tile.blocked<
// CHECK-NEXT: %[[C:.*]] = "tile.convert_layout"(%[[R]]) : (tensor<4x8xf32, #tile.slice<{{.*}}>>) -> tensor<4x8xf32, #tile.blocked<[[B:.*]]>>
// CHECK: "tile.expand_dims"({{.*}}) {axis = 1 : i32} : (tensor<4xi32, #tile.slice<1 : i32, #tile.blocked<[[B]]>>>)
// CHECK: "tile.store"({{.*}}, %[[C]])

module {
  func.func private @__tilec_sum_fp32(%arg0: f32, %arg1: f32) -> f32 {
    %0 = arith.addf %arg0, %arg1 : f32
    return %0 : f32
  }
  func.func @r3(%arg0: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "x_ptr"}, %arg1: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "y_ptr"}) attributes {tile.kernel} {
    %0 = "tile.range"() {end = 64 : i32, start = 0 : i32} : () -> tensor<64xi32>
    %splat = tensor.splat %arg0 : tensor<64x!tile.ptr<f32>>
    %1 = "tile.addptr"(%splat, %0) : (tensor<64x!tile.ptr<f32>>, tensor<64xi32>) -> tensor<64x!tile.ptr<f32>>
    %2 = "tile.load"(%1) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<64x!tile.ptr<f32>>) -> tensor<64xf32>
    %3 = "tile.reshape"(%2) : (tensor<64xf32>) -> tensor<2x4x8xf32>
    %4 = "tile.reduce"(%3) {axis = 0 : i32, combine = @__tilec_sum_fp32, operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>} : (tensor<2x4x8xf32>) -> tensor<4x8xf32>
    %5 = "tile.range"() {end = 4 : i32, start = 0 : i32} : () -> tensor<4xi32>
    %6 = "tile.expand_dims"(%5) {axis = 1 : i32} : (tensor<4xi32>) -> tensor<4x1xi32>
    %c8_i32 = arith.constant 8 : i32
    %splat_0 = tensor.splat %c8_i32 : tensor<4x1xi32>
    %7 = arith.muli %6, %splat_0 : tensor<4x1xi32>
    %splat_1 = tensor.splat %arg1 : tensor<4x1x!tile.ptr<f32>>
    %8 = "tile.addptr"(%splat_1, %7) : (tensor<4x1x!tile.ptr<f32>>, tensor<4x1xi32>) -> tensor<4x1x!tile.ptr<f32>>
    %9 = "tile.range"() {end = 8 : i32, start = 0 : i32} : () -> tensor<8xi32>
    %10 = "tile.expand_dims"(%9) {axis = 0 : i32} : (tensor<8xi32>) -> tensor<1x8xi32>
    %11 = "tile.broadcast"(%8) : (tensor<4x1x!tile.ptr<f32>>) -> tensor<4x8x!tile.ptr<f32>>
    %12 = "tile.broadcast"(%10) : (tensor<1x8xi32>) -> tensor<4x8xi32>
    %13 = "tile.addptr"(%11, %12) : (tensor<4x8x!tile.ptr<f32>>, tensor<4x8xi32>) -> tensor<4x8x!tile.ptr<f32>>
    "tile.store"(%13, %4) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<4x8x!tile.ptr<f32>>, tensor<4x8xf32>) -> ()
    return
  }
}
