// RUN: %tilec-opt %s --pass tile-dce | %FileCheck %s

// Unused pure tile ops are erased to a fixed point (the load, then the addptr
// feeding it, then the range and splat...), also inside regions; stores and
// everything they use stay.

// CHECK-LABEL: func.func @dead_chain(
// CHECK-SAME: %[[X:[^:]*]]: !tile.ptr<f32>, %[[OUT:[^:]*]]: !tile.ptr<f32>
// CHECK-NOT: tile.program_id
// CHECK: %[[R:.*]] = "tile.range"() {end = 8 : i32, start = 0 : i32}
// CHECK-NOT: "tile.range"
// CHECK: %[[PX:.*]] = tensor.splat %[[X]]
// CHECK: %[[P:.*]] = "tile.addptr"(%[[PX]], %[[R]])
// CHECK-NEXT: %[[V:.*]] = "tile.load"(%[[P]])
// CHECK-NOT: "tile.load"
// CHECK: %[[PO:.*]] = tensor.splat %[[OUT]]
// CHECK: %[[Q:.*]] = "tile.addptr"(%[[PO]], %[[R]])
// CHECK-NEXT: "tile.store"(%[[Q]], %[[V]])
// CHECK-NEXT: return
func.func @dead_chain(%x: !tile.ptr<f32>, %out: !tile.ptr<f32>) attributes {tile.kernel} {
  %pid = "tile.program_id"() {axis = 0 : i32} : () -> i32
  %r = "tile.range"() {start = 0 : i32, end = 8 : i32} : () -> tensor<8xi32>
  %dead_r = "tile.range"() {start = 0 : i32, end = 8 : i32} : () -> tensor<8xi32>
  %e = "tile.expand_dims"(%dead_r) {axis = 0 : i32} : (tensor<8xi32>) -> tensor<1x8xi32>
  %b = "tile.broadcast"(%e) : (tensor<1x8xi32>) -> tensor<2x8xi32>
  %px = tensor.splat %x : tensor<8x!tile.ptr<f32>>
  %p = "tile.addptr"(%px, %r) : (tensor<8x!tile.ptr<f32>>, tensor<8xi32>) -> tensor<8x!tile.ptr<f32>>
  %v = "tile.load"(%p) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<8x!tile.ptr<f32>>) -> tensor<8xf32>
  %dead_p = "tile.addptr"(%px, %dead_r) : (tensor<8x!tile.ptr<f32>>, tensor<8xi32>) -> tensor<8x!tile.ptr<f32>>
  %dead_v = "tile.load"(%dead_p) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<8x!tile.ptr<f32>>) -> tensor<8xf32>
  %po = tensor.splat %out : tensor<8x!tile.ptr<f32>>
  %q = "tile.addptr"(%po, %r) : (tensor<8x!tile.ptr<f32>>, tensor<8xi32>) -> tensor<8x!tile.ptr<f32>>
  "tile.store"(%q, %v) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<8x!tile.ptr<f32>>, tensor<8xf32>) -> ()
  return
}

// Inside a loop body: the unused scalar load goes; the addptr that the store
// uses and the store stay.
// CHECK-LABEL: func.func @dead_in_loop(
// CHECK: scf.for
// CHECK-NEXT: %[[P:.*]] = "tile.addptr"
// CHECK-NEXT: "tile.store"(%[[P]], %{{.*}})
// CHECK-NEXT: {{^ *}}}
// CHECK-NEXT: return
func.func @dead_in_loop(%x: !tile.ptr<f32>, %n: i32) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %f = arith.constant 1.0 : f32
  scf.for %i = %c0 to %n step %c1 : i32 {
    %p = "tile.addptr"(%x, %i) : (!tile.ptr<f32>, i32) -> !tile.ptr<f32>
    %unused = "tile.load"(%p) {operandSegmentSizes = array<i32: 1, 0, 0>} : (!tile.ptr<f32>) -> f32
    "tile.store"(%p, %f) {operandSegmentSizes = array<i32: 1, 1, 0>} : (!tile.ptr<f32>, f32) -> ()
  }
  return
}

// A store is kept even when nothing uses its (absent) results.
// CHECK-LABEL: func.func @only_store(
// CHECK: "tile.store"
func.func @only_store(%x: !tile.ptr<f32>, %v: f32) attributes {tile.kernel} {
  "tile.store"(%x, %v) {operandSegmentSizes = array<i32: 1, 1, 0>} : (!tile.ptr<f32>, f32) -> ()
  return
}
