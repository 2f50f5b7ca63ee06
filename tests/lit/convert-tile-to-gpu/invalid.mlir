// RUN: not %tilec-opt %s --split-input-file --pass convert-tile-to-gpu --target sm90 2>&1 | %FileCheck %s
// RUN: not %tilec-opt %s --split-input-file --pass tile-verify,tile-layout,convert-tile-to-gpu --target gfx942 2>&1 | %FileCheck %s --check-prefix=PIPE

// convert-tile-to-gpu accepts only laid-out tiles (the output of tile-layout):
// each chunk without encodings is refused, naming the tile type.  Through the
// whole pipeline the first chunk lowers and the second stops at tile-verify
// at the user's line (errors go to stderr before the modules, hence DAG).

// CHECK: error: internal compiler error (this is a tilec bug): convert-tile-to-gpu needs laid-out tiles, got tensor<16xi32>
// PIPE-DAG: gpu.func @no_layout
func.func @no_layout(%x: !tile.ptr<f32>) attributes {tile.kernel} {
  %r = "tile.range"() {start = 0 : i32, end = 16 : i32} : () -> tensor<16xi32> loc("k.py":3:5)
  return
}

// -----

// CHECK: error: internal compiler error (this is a tilec bug): convert-tile-to-gpu needs laid-out tiles, got tensor<8xi32>
// PIPE-DAG: k.py:4:5: error: 'tile.range' op result must be tensor<16xi32>, got tensor<8xi32>
func.func @bad_range(%x: !tile.ptr<f32>) attributes {tile.kernel} {
  %r = "tile.range"() {start = 0 : i32, end = 16 : i32} : () -> tensor<8xi32> loc("k.py":4:5)
  return
}
