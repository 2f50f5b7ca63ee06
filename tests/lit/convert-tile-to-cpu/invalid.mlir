// RUN: not %tilec-opt %s --split-input-file --pass tile-verify,convert-tile-to-cpu 2>&1 | %FileCheck %s

// Invalid tile IR never reaches the CPU lowering: tile-verify stops each
// chunk at the user's line, and the valid chunk between them still lowers.

// CHECK-DAG: k.py:3:5: error: 'tile.range' op result must be tensor<16xi32>, got tensor<8xi32>
func.func @bad_range() attributes {tile.kernel} {
  %r = "tile.range"() {start = 0 : i32, end = 16 : i32} : () -> tensor<8xi32> loc("k.py":3:5)
  return
}

// -----

// CHECK-DAG: func.func @tilec_ok(
func.func @ok(%x: !tile.ptr<f32>) attributes {tile.kernel} {
  %r = "tile.range"() {start = 0 : i32, end = 16 : i32} : () -> tensor<16xi32> loc("k.py":7:5)
  return
}

// -----

// CHECK-DAG: k.py:11:7: error: 'tile.broadcast' op cannot broadcast tensor<4x2xf32> to tensor<4x8xf32>
func.func @broadcast_shapes(%a: tensor<4x2xf32>) attributes {tile.kernel} {
  %b = "tile.broadcast"(%a) : (tensor<4x2xf32>) -> tensor<4x8xf32> loc("k.py":11:7)
  return
}
