// RUN: %tilec-opt %s --pass tile-lower-descriptors --debug-info | %FileCheck %s

// A 2-D descriptor load and store become 64-bit element offsets
// (row index * stride + column index: the last stride is 1), a mask
// 0 <= index < shape per dimension, and a masked tile.load (other 0) /
// tile.store on the splat base; the make_descriptor is erased.

// CHECK-LABEL: func.func @copy(
// CHECK-NOT: tile.make_descriptor
// CHECK: %[[R0:.*]] = "tile.range"() {end = 16 : i32, start = 0 : i32} : () -> tensor<16xi32> loc("k.py":4:5)
// CHECK: %[[R0W:.*]] = arith.extsi %[[R0]] : tensor<16xi32> to tensor<16xi64>
// CHECK: %[[OM64:.*]] = arith.extsi %arg5 : i32 to i64
// CHECK: %[[ROWS:.*]] = arith.addi %[[R0W]], %{{.*}} : tensor<16xi64>
// CHECK: "tile.expand_dims"(%[[ROWS]]) {axis = 1 : i32} : (tensor<16xi64>) -> tensor<16x1xi64>
// CHECK: arith.cmpi sge
// CHECK: arith.cmpi slt
// CHECK: arith.muli {{.*}} : tensor<16x1xi64>
// CHECK: "tile.broadcast"({{.*}}) : (tensor<16x1xi64>) -> tensor<16x8xi64>
// CHECK: "tile.range"() {end = 8 : i32, start = 0 : i32}
// CHECK: "tile.expand_dims"({{.*}}) {axis = 0 : i32} : (tensor<8xi64>) -> tensor<1x8xi64>
// CHECK-NOT: arith.muli
// CHECK: %[[OFF:.*]] = arith.addi {{.*}} : tensor<16x8xi64>
// CHECK: %[[MASK:.*]] = arith.andi {{.*}} : tensor<16x8xi1>
// CHECK: %[[BASE:.*]] = tensor.splat %arg0 : tensor<16x8x!tile.ptr<f16>>
// CHECK: %[[P:.*]] = "tile.addptr"(%[[BASE]], %[[OFF]]) : (tensor<16x8x!tile.ptr<f16>>, tensor<16x8xi64>)
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<16x8xf16>
// CHECK: %[[V:.*]] = "tile.load"(%[[P]], %[[MASK]], %[[ZERO]]) {operandSegmentSizes = array<i32: 1, 1, 1>} {{.*}} loc("k.py":4:5)
// CHECK: tensor.splat %arg1 : tensor<16x8x!tile.ptr<f16>>
// CHECK: "tile.store"(%{{.*}}, %[[V]], %{{.*}}) {operandSegmentSizes = array<i32: 1, 1, 1>} {{.*}} loc("k.py":5:5)
// CHECK-NOT: tile.descriptor
func.func @copy(%x: !tile.ptr<f16>, %y: !tile.ptr<f16>, %m: i64, %n: i64, %s: i64, %om: i32, %on: i32) attributes {tile.kernel} {
  %c1 = arith.constant 1 : i64
  %xd = "tile.make_descriptor"(%x, %m, %n, %s, %c1) {operandSegmentSizes = array<i32: 1, 2, 2>} : (!tile.ptr<f16>, i64, i64, i64, i64) -> !tile.tensordesc<tensor<16x8xf16>>
  %yd = "tile.make_descriptor"(%y, %m, %n, %s, %c1) {operandSegmentSizes = array<i32: 1, 2, 2>} : (!tile.ptr<f16>, i64, i64, i64, i64) -> !tile.tensordesc<tensor<16x8xf16>>
  %v = "tile.descriptor_load"(%xd, %om, %on) : (!tile.tensordesc<tensor<16x8xf16>>, i32, i32) -> tensor<16x8xf16> loc("k.py":4:5)
  "tile.descriptor_store"(%yd, %v, %om, %on) : (!tile.tensordesc<tensor<16x8xf16>>, tensor<16x8xf16>, i32, i32) -> () loc("k.py":5:5)
  return
}



// A 1-D descriptor: one index tile, no stride multiply, masked on [0, shape).
// CHECK-LABEL: func.func @one_d(
// CHECK: "tile.range"() {end = 32 : i32, start = 0 : i32}
// CHECK-NOT: arith.muli
// CHECK-NOT: tile.expand_dims
// CHECK: "tile.load"
func.func @one_d(%x: !tile.ptr<f32>, %n: i64, %o: i32) -> tensor<32xf32> attributes {tile.kernel} {
  %c1 = arith.constant 1 : i64
  %d = "tile.make_descriptor"(%x, %n, %c1) {operandSegmentSizes = array<i32: 1, 1, 1>} : (!tile.ptr<f32>, i64, i64) -> !tile.tensordesc<tensor<32xf32>>
  %v = "tile.descriptor_load"(%d, %o) : (!tile.tensordesc<tensor<32xf32>>, i32) -> tensor<32xf32>
  return %v : tensor<32xf32>
}
