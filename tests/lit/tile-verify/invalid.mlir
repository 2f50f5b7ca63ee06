// RUN: not %tilec-opt %s --split-input-file --pass tile-verify 2>&1 | %FileCheck %s

// Each case breaks one typing rule; the error names the op and its location.

// CHECK: k.py:3:5: error: 'tile.range' op result must be tensor<16xi32>, got tensor<8xi32>
func.func @range_type() attributes {tile.kernel} {
  %r = "tile.range"() {start = 0 : i32, end = 16 : i32} : () -> tensor<8xi32> loc("k.py":3:5)
  return
}

// -----

// CHECK: k.py:4:7: error: 'tile.broadcast' op cannot broadcast tensor<4x2xf32> to tensor<4x8xf32>
func.func @broadcast_shapes(%a: tensor<4x2xf32>) attributes {tile.kernel} {
  %b = "tile.broadcast"(%a) : (tensor<4x2xf32>) -> tensor<4x8xf32> loc("k.py":4:7)
  return
}

// -----

// CHECK: k.py:5:9: error: 'tile.expand_dims' op result shape must be [1, 16]
func.func @expand_dims_result(%a: tensor<16xi32>) attributes {tile.kernel} {
  %b = "tile.expand_dims"(%a) {axis = 0 : i32} : (tensor<16xi32>) -> tensor<16x1xi32> loc("k.py":5:9)
  return
}

// -----

// CHECK: k.py:6:11: error: 'tile.addptr' op offset must be an integer or a tile of integers, got tensor<16xf32>
func.func @addptr_float_offset(%p: tensor<16x!tile.ptr<f32>>, %o: tensor<16xf32>) attributes {tile.kernel} {
  %q = "tile.addptr"(%p, %o) : (tensor<16x!tile.ptr<f32>>, tensor<16xf32>) -> tensor<16x!tile.ptr<f32>> loc("k.py":6:11)
  return
}

// -----

// CHECK: k.py:7:13: error: 'tile.load' op result type tensor<16xf16> does not match the pointer type tensor<16x!tile.ptr<f32>>
func.func @load_result(%p: tensor<16x!tile.ptr<f32>>) attributes {tile.kernel} {
  %v = "tile.load"(%p) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<16x!tile.ptr<f32>>) -> tensor<16xf16> loc("k.py":7:13)
  return
}

// -----

// CHECK: k.py:8:2: error: 'tile.load' op mask must be i1 with shape [16], got tensor<8xi1>
func.func @load_mask_shape(%p: tensor<16x!tile.ptr<f32>>, %m: tensor<8xi1>) attributes {tile.kernel} {
  %v = "tile.load"(%p, %m) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<16x!tile.ptr<f32>>, tensor<8xi1>) -> tensor<16xf32> loc("k.py":8:2)
  return
}

// -----

// CHECK: k.py:9:5: error: 'tile.store' op mask must be i1 with shape [16], got tensor<16xi32>
func.func @store_mask_type(%p: tensor<16x!tile.ptr<f32>>, %v: tensor<16xf32>, %m: tensor<16xi32>) attributes {tile.kernel} {
  "tile.store"(%p, %v, %m) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<16x!tile.ptr<f32>>, tensor<16xf32>, tensor<16xi32>) -> () loc("k.py":9:5)
  return
}

// -----

// CHECK: k.py:10:5: error: 'tile.store' op value type tensor<16xf64> does not match the pointer type tensor<16x!tile.ptr<f32>>
func.func @store_value(%p: tensor<16x!tile.ptr<f32>>, %v: tensor<16xf64>) attributes {tile.kernel} {
  "tile.store"(%p, %v) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<16x!tile.ptr<f32>>, tensor<16xf64>) -> () loc("k.py":10:5)
  return
}

// -----

// CHECK: k.py:11:10: error: 'tile.program_id' op axis must be 0, 1 or 2, got 3
func.func @program_id_axis() attributes {tile.kernel} {
  %p = "tile.program_id"() {axis = 3 : i32} : () -> i32 loc("k.py":11:10)
  return
}

// -----

// CHECK: k.py:12:10: error: 'tile.num_programs' op axis must be 0, 1 or 2, got -1
func.func @num_programs_axis() attributes {tile.kernel} {
  %p = "tile.num_programs"() {axis = -1 : i32} : () -> i32 loc("k.py":12:10)
  return
}

// -----

// CHECK: k.py:13:3: error: 'tile.expand_dims' op axis 2 out of range for rank 1
func.func @expand_dims_axis(%a: tensor<16xi32>) attributes {tile.kernel} {
  %b = "tile.expand_dims"(%a) {axis = 2 : i32} : (tensor<16xi32>) -> tensor<16x1xi32> loc("k.py":13:3)
  return
}

// -----

// The rule is checked inside regions too.
// CHECK: k.py:14:9: error: 'tile.load' op 'other' must have the result type
func.func @in_loop(%p: tensor<16x!tile.ptr<f32>>, %m: tensor<16xi1>, %o: tensor<16xf16>, %n: i32) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  scf.for %i = %c0 to %n step %c1 : i32 {
    %v = "tile.load"(%p, %m, %o) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<16x!tile.ptr<f32>>, tensor<16xi1>, tensor<16xf16>) -> tensor<16xf32> loc("k.py":14:9)
  }
  return
}

// -----

// CHECK: k.py:15:3: error: 'tile.dot' op tile.dot needs a [M, K], b [K, N] and acc [M, N] (= the result), got tensor<16x8xf32>, tensor<16x16xf32>, tensor<16x16xf32> -> tensor<16x16xf32>
func.func @dot_inner(%a: tensor<16x8xf32>, %b: tensor<16x16xf32>, %c: tensor<16x16xf32>) attributes {tile.kernel} {
  %d = "tile.dot"(%a, %b, %c) : (tensor<16x8xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("k.py":15:3)
  return
}

// -----

// CHECK: k.py:16:3: error: 'tile.dot' op tile.dot of f32 cannot accumulate in i32
func.func @dot_acc_type(%a: tensor<16x16xf32>, %c: tensor<16x16xi32>) attributes {tile.kernel} {
  %d = "tile.dot"(%a, %a, %c) : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xi32>) -> tensor<16x16xi32> loc("k.py":16:3)
  return
}

// -----

// CHECK: k.py:20:3: error: 'tile.dot' op input_precision "tf32" needs f32 operands
func.func @tf32_on_f16(%a: tensor<16x16xf16>, %c: tensor<16x16xf32>) attributes {tile.kernel} {
  %d = "tile.dot"(%a, %a, %c) {input_precision = "tf32"} : (tensor<16x16xf16>, tensor<16x16xf16>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("k.py":20:3)
  return
}

// -----

// CHECK: k.py:21:3: error: 'tile.dot' op input_precision "fast" needs f32 operands and one of ieee, tf32, tf32x3
func.func @unknown_precision(%a: tensor<16x16xf32>, %c: tensor<16x16xf32>) attributes {tile.kernel} {
  %d = "tile.dot"(%a, %a, %c) {input_precision = "fast"} : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("k.py":21:3)
  return
}

// -----

// CHECK: k.py:22:3: error: 'tile.make_descriptor' op base must be !tile.ptr<f16>, got !tile.ptr<f32>
func.func @desc_base(%x: !tile.ptr<f32>, %n: i64) attributes {tile.kernel} {
  %d = "tile.make_descriptor"(%x, %n, %n) {operandSegmentSizes = array<i32: 1, 1, 1>} : (!tile.ptr<f32>, i64, i64) -> !tile.tensordesc<tensor<16xf16>> loc("k.py":22:3)
  return
}

// -----

// CHECK: k.py:23:3: error: 'tile.make_descriptor' op needs 2 i64 shape values and 2 i64 strides
func.func @desc_rank(%x: !tile.ptr<f32>, %n: i64) attributes {tile.kernel} {
  %d = "tile.make_descriptor"(%x, %n, %n) {operandSegmentSizes = array<i32: 1, 1, 1>} : (!tile.ptr<f32>, i64, i64) -> !tile.tensordesc<tensor<16x16xf32>> loc("k.py":23:3)
  return
}

// -----

// CHECK: k.py:24:3: error: 'tile.descriptor_load' op needs 2 i32 offsets, got 1
func.func @desc_offsets(%x: !tile.ptr<f32>, %n: i64, %o: i32) attributes {tile.kernel} {
  %d = "tile.make_descriptor"(%x, %n, %n, %n, %n) {operandSegmentSizes = array<i32: 1, 2, 2>} : (!tile.ptr<f32>, i64, i64, i64, i64) -> !tile.tensordesc<tensor<16x16xf32>>
  %v = "tile.descriptor_load"(%d, %o) : (!tile.tensordesc<tensor<16x16xf32>>, i32) -> tensor<16x16xf32> loc("k.py":24:3)
  return
}

// -----

// CHECK: k.py:25:3: error: 'tile.descriptor_store' op the block is tensor<16x16xf32>, got tensor<16x8xf32>
func.func @desc_store_shape(%x: !tile.ptr<f32>, %n: i64, %o: i32, %v: tensor<16x8xf32>) attributes {tile.kernel} {
  %d = "tile.make_descriptor"(%x, %n, %n, %n, %n) {operandSegmentSizes = array<i32: 1, 2, 2>} : (!tile.ptr<f32>, i64, i64, i64, i64) -> !tile.tensordesc<tensor<16x16xf32>>
  "tile.descriptor_store"(%d, %v, %o, %o) : (!tile.tensordesc<tensor<16x16xf32>>, tensor<16x8xf32>, i32, i32) -> () loc("k.py":25:3)
  return
}
