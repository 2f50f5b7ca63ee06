// RUN: %tilec-opt %s --pass tile-layout --target sm90 | %FileCheck %s
// RUN: %tilec-opt %s --pass tile-layout --target gfx942 | %FileCheck %s

// Chains of unit-dim insertions and reshapes that end at rank >= 3 become one
// tile.reshape of the chain's first operand (both keep row-major order): the
// frontend's x[:, None, None, None] ([8] -> [8, 1] expand, then two reshapes)
// is one exchange, [128] -> [16, 8] -> [8, 2, 8] -> [8, 2, 2, 4] one reshape,
// and a chain back to its first operand's shape is that operand.  Intermediate
// ops with no other use are erased (the [8, 1] expand is also stored: it
// stays); a rank-2 result is left alone.

// CHECK-LABEL: func.func @chains
// CHECK: %[[R:.*]] = "tile.range"() {end = 8 : i32
// CHECK-NEXT: %[[E:.*]] = "tile.expand_dims"(%[[R]]) {axis = 1 : i32}
// CHECK-NEXT: "tile.reshape"(%[[R]]) : (tensor<8xi32, {{.*}}>) -> tensor<8x1x1x1xi32,
// CHECK-NEXT: "tile.broadcast"
// CHECK-NEXT: %[[L:.*]] = "tile.range"() {end = 128 : i32
// CHECK-NEXT: %[[S:.*]] = "tile.reshape"(%[[L]]) : (tensor<128xi32, {{.*}}>) -> tensor<8x2x2x4xi32,
// CHECK-NEXT: %[[A:.*]] = arith.addi %[[S]], %[[S]]
// CHECK-NOT: tile.reshape
// CHECK: arith.addi %{{.*}}, %[[A]]
// CHECK-NOT: tile.reshape
// CHECK: "tile.store"(%{{.*}}, %[[E]])
// CHECK-NOT: tile.reshape
// CHECK: return

module {
  func.func @chains(%arg0: !tile.ptr<i32> {tile.divisibility = 16 : i32, tile.name = "y"}, %arg1: !tile.ptr<i32> {tile.divisibility = 16 : i32, tile.name = "z"}) attributes {tile.kernel} {
    %0 = "tile.range"() {end = 8 : i32, start = 0 : i32} : () -> tensor<8xi32>
    %1 = "tile.expand_dims"(%0) {axis = 1 : i32} : (tensor<8xi32>) -> tensor<8x1xi32>
    %2 = "tile.reshape"(%1) : (tensor<8x1xi32>) -> tensor<8x1x1xi32>
    %3 = "tile.reshape"(%2) : (tensor<8x1x1xi32>) -> tensor<8x1x1x1xi32>
    %4 = "tile.broadcast"(%3) : (tensor<8x1x1x1xi32>) -> tensor<8x2x2x4xi32>
    %5 = "tile.range"() {end = 128 : i32, start = 0 : i32} : () -> tensor<128xi32>
    %6 = "tile.reshape"(%5) : (tensor<128xi32>) -> tensor<16x8xi32>
    %7 = "tile.reshape"(%6) : (tensor<16x8xi32>) -> tensor<8x2x8xi32>
    %8 = "tile.reshape"(%7) : (tensor<8x2x8xi32>) -> tensor<8x2x2x4xi32>
    %9 = arith.addi %8, %8 : tensor<8x2x2x4xi32>
    %10 = "tile.reshape"(%9) : (tensor<8x2x2x4xi32>) -> tensor<128xi32>
    %11 = "tile.reshape"(%10) : (tensor<128xi32>) -> tensor<8x2x2x4xi32>
    %12 = arith.addi %4, %11 : tensor<8x2x2x4xi32>
    %splat = tensor.splat %arg0 : tensor<8x2x2x4x!tile.ptr<i32>>
    %13 = "tile.addptr"(%splat, %12) : (tensor<8x2x2x4x!tile.ptr<i32>>, tensor<8x2x2x4xi32>) -> tensor<8x2x2x4x!tile.ptr<i32>>
    "tile.store"(%13, %12) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<8x2x2x4x!tile.ptr<i32>>, tensor<8x2x2x4xi32>) -> ()
    %splat_z = tensor.splat %arg1 : tensor<8x1x!tile.ptr<i32>>
    "tile.store"(%splat_z, %1) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<8x1x!tile.ptr<i32>>, tensor<8x1xi32>) -> ()
    return
  }
}
