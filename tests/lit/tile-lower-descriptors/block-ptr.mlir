// RUN: %tilec-opt %s --pass tile-lower-descriptors --debug-info | %FileCheck %s

// A block-pointer access (tl.make_block_ptr): the last stride is a runtime
// value, so the column index is multiplied too; boundary = [0] masks rows
// only (one cmpi pair), padding "nan" fills with NaN; boundary = [] is an
// unmasked load.

// CHECK-LABEL: func.func @rows_only(
// CHECK: arith.cmpi sge
// CHECK: arith.cmpi slt
// CHECK: arith.muli {{.*}} : tensor<16x1xi64>
// CHECK: "tile.expand_dims"({{.*}}) {axis = 0 : i32} : (tensor<8xi64>) -> tensor<1x8xi64>
// CHECK-NOT: arith.cmpi
// CHECK: arith.muli {{.*}} : tensor<1x8xi64>
// CHECK: %[[NAN:.*]] = arith.constant dense<0x7FC00000> : tensor<16x8xf32>
// CHECK: "tile.load"(%{{.*}}, %{{.*}}, %[[NAN]])
// CHECK: "tile.load"(%{{.*}}) {operandSegmentSizes = array<i32: 1, 0, 0>}
func.func @rows_only(%x: !tile.ptr<f32>, %m: i64, %n: i64, %s0: i64, %s1: i64, %o: i32) -> (tensor<16x8xf32>, tensor<16x8xf32>) attributes {tile.kernel} {
  %d = "tile.make_descriptor"(%x, %m, %n, %s0, %s1) {operandSegmentSizes = array<i32: 1, 2, 2>} : (!tile.ptr<f32>, i64, i64, i64, i64) -> !tile.tensordesc<tensor<16x8xf32>>
  %v = "tile.descriptor_load"(%d, %o, %o) {boundary = array<i32: 0>, padding = "nan"} : (!tile.tensordesc<tensor<16x8xf32>>, i32, i32) -> tensor<16x8xf32> loc("k.py":4:5)
  %w = "tile.descriptor_load"(%d, %o, %o) {boundary = array<i32>} : (!tile.tensordesc<tensor<16x8xf32>>, i32, i32) -> tensor<16x8xf32> loc("k.py":5:5)
  return %v, %w : tensor<16x8xf32>, tensor<16x8xf32>
}
