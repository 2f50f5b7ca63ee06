// RUN: %tilec-opt %s --pass tile-verify,convert-tile-to-cpu | %FileCheck %s

// Tiles are flat row-major vectors on the CPU: expand_dims is free and
// tile.broadcast is a vector.shuffle whose mask repeats the source elements.
// CHECK-LABEL: func.func private @bcast_body(
// CHECK-SAME: %[[ROW:[^:]*]]: vector<4xf32>, %[[COL:[^:]*]]: vector<2xf32>, %[[ONE:[^:]*]]: vector<1xf32>
// CHECK-NOT: tile.
// A row [1 x 4] stretched over 2 rows: the 4 elements twice.
// CHECK: %[[B0:.*]] = vector.shuffle %[[ROW]], %[[ROW]] [0, 1, 2, 3, 0, 1, 2, 3] : vector<4xf32>, vector<4xf32>
// A column [2 x 1] stretched over 4 columns: each element four times.
// CHECK: %[[B1:.*]] = vector.shuffle %[[COL]], %[[COL]] [0, 0, 0, 0, 1, 1, 1, 1] : vector<2xf32>, vector<2xf32>
// CHECK: arith.addf %[[B0]], %[[B1]] : vector<8xf32>
// A single element is a splat, not a shuffle.
// CHECK: %[[E:.*]] = vector.extract %[[ONE]][0] : f32 from vector<1xf32>
// CHECK: %[[S:.*]] = vector.broadcast %[[E]] : f32 to vector<8xf32>
// CHECK: arith.addf %{{.*}}, %[[S]] : vector<8xf32>
// CHECK-NOT: tile.broadcast
func.func @bcast(%row: tensor<4xf32>, %col: tensor<2xf32>, %one: tensor<1xf32>) attributes {tile.kernel} {
  %r = "tile.expand_dims"(%row) {axis = 0 : i32} : (tensor<4xf32>) -> tensor<1x4xf32>
  %rb = "tile.broadcast"(%r) : (tensor<1x4xf32>) -> tensor<2x4xf32>
  %c = "tile.expand_dims"(%col) {axis = 1 : i32} : (tensor<2xf32>) -> tensor<2x1xf32>
  %cb = "tile.broadcast"(%c) : (tensor<2x1xf32>) -> tensor<2x4xf32>
  %s = arith.addf %rb, %cb : tensor<2x4xf32>
  %o = "tile.expand_dims"(%one) {axis = 0 : i32} : (tensor<1xf32>) -> tensor<1x1xf32>
  %ob = "tile.broadcast"(%o) : (tensor<1x1xf32>) -> tensor<2x4xf32>
  %t = arith.addf %s, %ob : tensor<2x4xf32>
  return
}
