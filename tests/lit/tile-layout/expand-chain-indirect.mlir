// RUN: %tilec-opt %s --pass tile-layout --target sm90 | %FileCheck %s
// RUN: %tilec-opt %s --pass tile-layout --target gfx942 | %FileCheck %s

// An expand_dims result changed by an elementwise op, then expanded again to
// 3-D: no reshape fold applies (tile_layout_chains.py folds only direct
// chains), and the [1, 4] group would need a slice of the 3-D layout while
// its own operand needs a slice of it.  The group gets a blocked layout B of
// its own; the second expand_dims converts its operand to the slice of the
// 3-D layout P it needs.

// CHECK-LABEL: func.func @indirect
// CHECK: "tile.expand_dims"(%{{.*}}) {axis = 0 : i32} : (tensor<4xi32, #tile.slice<0 : i32, #tile.blocked<[[B:.*]]>>>) -> tensor<1x4xi32, #tile.blocked<[[B]]>>
// CHECK: %[[M:.*]] = arith.muli {{.*}} : tensor<1x4xi32, #tile.blocked<[[B]]>>
// CHECK: %[[C:.*]] = "tile.convert_layout"(%[[M]]) : (tensor<1x4xi32, #tile.blocked<[[B]]>>) -> tensor<1x4xi32, #tile.slice<2 : i32, #tile.blocked<[[P:.*]]>>>
// CHECK: "tile.expand_dims"(%[[C]]) {axis = 2 : i32} : {{.*}} -> tensor<1x4x1xi32, #tile.blocked<[[P]]>>
// CHECK: "tile.store"({{.*}}) {{.*}} : (tensor<2x4x8x!tile.ptr<i32>, #tile.blocked<[[P]]>>

module {
  func.func @indirect(%arg0: !tile.ptr<i32> {tile.divisibility = 16 : i32, tile.name = "y"}) attributes {tile.kernel} {
    %0 = "tile.range"() {end = 4 : i32, start = 0 : i32} : () -> tensor<4xi32>
    %1 = "tile.expand_dims"(%0) {axis = 0 : i32} : (tensor<4xi32>) -> tensor<1x4xi32>
    %c3 = arith.constant 3 : i32
    %s3 = tensor.splat %c3 : tensor<1x4xi32>
    %2 = arith.muli %1, %s3 : tensor<1x4xi32>
    %3 = "tile.expand_dims"(%2) {axis = 2 : i32} : (tensor<1x4xi32>) -> tensor<1x4x1xi32>
    %4 = "tile.broadcast"(%3) : (tensor<1x4x1xi32>) -> tensor<2x4x8xi32>
    %5 = "tile.range"() {end = 64 : i32, start = 0 : i32} : () -> tensor<64xi32>
    %6 = "tile.reshape"(%5) : (tensor<64xi32>) -> tensor<2x4x8xi32>
    %splat = tensor.splat %arg0 : tensor<2x4x8x!tile.ptr<i32>>
    %7 = "tile.addptr"(%splat, %6) : (tensor<2x4x8x!tile.ptr<i32>>, tensor<2x4x8xi32>) -> tensor<2x4x8x!tile.ptr<i32>>
    "tile.store"(%7, %4) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x4x8x!tile.ptr<i32>>, tensor<2x4x8xi32>) -> ()
    return
  }
}
