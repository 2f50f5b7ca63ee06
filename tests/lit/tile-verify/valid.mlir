// RUN: %tilec-opt %s --pass tile-verify | %FileCheck %s
// RUN: %tilec-opt %s --pass tile-verify --debug-info | %FileCheck %s --check-prefix=LOC

// Valid tile IR passes through tile-verify unchanged: 1-D and 2-D tiles,
// broadcast, expand_dims, masked load/store with and without `other`, scalars.
// CHECK-LABEL: func.func @valid(
// CHECK: "tile.program_id"() {axis = 0 : i32} : () -> i32
// CHECK: "tile.num_programs"() {axis = 2 : i32} : () -> i32
// CHECK: "tile.range"() {end = 16 : i32, start = 0 : i32} : () -> tensor<16xi32>
// CHECK: "tile.expand_dims"(%{{.*}}) {axis = 0 : i32} : (tensor<16xi32>) -> tensor<1x16xi32>
// CHECK: "tile.broadcast"(%{{.*}}) : (tensor<1x16xi32>) -> tensor<4x16xi32>
// CHECK: "tile.addptr"(%{{.*}}, %{{.*}}) : (tensor<4x16x!tile.ptr<f32>>, tensor<4x16xi32>) -> tensor<4x16x!tile.ptr<f32>>
// CHECK: "tile.load"(%{{.*}}, %{{.*}}, %{{.*}}) {operandSegmentSizes = array<i32: 1, 1, 1>}
// CHECK: "tile.store"(%{{.*}}, %{{.*}}, %{{.*}}) {operandSegmentSizes = array<i32: 1, 1, 1>}
// CHECK: "tile.load"(%{{.*}}) {operandSegmentSizes = array<i32: 1, 0, 0>} : (!tile.ptr<f32>) -> f32
// CHECK: "tile.store"(%{{.*}}, %{{.*}}) {operandSegmentSizes = array<i32: 1, 1, 0>} : (!tile.ptr<f32>, f32) -> ()
// CHECK: return

// Locations survive the pass; --debug-info prints them inline.
// LOC: "tile.range"() {{.*}} loc("k.py":4:9)
// LOC: "tile.store"({{.*}} loc("k.py":11:5)
func.func @valid(%x: !tile.ptr<f32>, %out: !tile.ptr<f32>, %n: i32) attributes {tile.kernel} {
  %pid = "tile.program_id"() {axis = 0 : i32} : () -> i32 loc("k.py":3:11)
  %np = "tile.num_programs"() {axis = 2 : i32} : () -> i32 loc("k.py":3:30)
  %r = "tile.range"() {start = 0 : i32, end = 16 : i32} : () -> tensor<16xi32> loc("k.py":4:9)
  %e = "tile.expand_dims"(%r) {axis = 0 : i32} : (tensor<16xi32>) -> tensor<1x16xi32> loc("k.py":5:9)
  %b = "tile.broadcast"(%e) : (tensor<1x16xi32>) -> tensor<4x16xi32> loc("k.py":5:9)
  %nn = tensor.splat %n : tensor<4x16xi32> loc("k.py":6:9)
  %m = arith.cmpi slt, %b, %nn : tensor<4x16xi32> loc("k.py":6:9)
  %px = tensor.splat %x : tensor<4x16x!tile.ptr<f32>> loc("k.py":7:9)
  %p = "tile.addptr"(%px, %b) : (tensor<4x16x!tile.ptr<f32>>, tensor<4x16xi32>) -> tensor<4x16x!tile.ptr<f32>> loc("k.py":7:9)
  %zero = arith.constant dense<0.0> : tensor<4x16xf32> loc("k.py":8:9)
  %v = "tile.load"(%p, %m, %zero) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<4x16x!tile.ptr<f32>>, tensor<4x16xi1>, tensor<4x16xf32>) -> tensor<4x16xf32> loc("k.py":8:9)
  %po = tensor.splat %out : tensor<4x16x!tile.ptr<f32>> loc("k.py":9:9)
  %q = "tile.addptr"(%po, %b) : (tensor<4x16x!tile.ptr<f32>>, tensor<4x16xi32>) -> tensor<4x16x!tile.ptr<f32>> loc("k.py":9:9)
  "tile.store"(%q, %v, %m) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<4x16x!tile.ptr<f32>>, tensor<4x16xf32>, tensor<4x16xi1>) -> () loc("k.py":11:5)
  %sp = "tile.addptr"(%x, %pid) : (!tile.ptr<f32>, i32) -> !tile.ptr<f32> loc("k.py":12:9)
  %s = "tile.load"(%sp) {operandSegmentSizes = array<i32: 1, 0, 0>} : (!tile.ptr<f32>) -> f32 loc("k.py":12:9)
  "tile.store"(%x, %s) {operandSegmentSizes = array<i32: 1, 1, 0>} : (!tile.ptr<f32>, f32) -> () loc("k.py":13:5)
  return loc("k.py":14:5)
}
