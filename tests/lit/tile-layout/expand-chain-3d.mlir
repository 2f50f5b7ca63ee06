// RUN: %tilec-opt %s --pass tile-layout --target sm90 --num-warps 1 | %FileCheck %s --check-prefixes=CHECK,NV
// RUN: %tilec-opt %s --pass tile-layout --target gfx942 | %FileCheck %s

// The index tiles of a 3-D tl.make_block_ptr, as tile-lower-descriptors builds
// them: per dimension a 1-D range expanded twice ([2] -> [2, 1] -> [2, 1, 1]).
// The first operand would need a slice of a slice; tile-layout folds each
// chain into one tile.reshape of the 1-D tile (tile_layout_chains.py), which
// gets a 1-D blocked layout of its own, while the reshape result joins the
// pointers' group.  The fold runs after the axis analysis, so the pointers
// keep their contiguity: one warp reads 2 floats per thread (NV).

// CHECK-LABEL: func.func @bp3
// CHECK-NOT: tile.expand_dims
// CHECK: "tile.reshape"(%{{.*}}) : (tensor<2xi64, #tile.blocked<{{.*}}>>) -> tensor<2x1x1xi64, #tile.blocked<[[P:.*]]>>
// CHECK: "tile.reshape"(%{{.*}}) : (tensor<4xi64, #tile.blocked<{{.*}}>>) -> tensor<1x4x1xi64, #tile.blocked<[[P]]>>
// CHECK: "tile.reshape"(%{{.*}}) : (tensor<8xi64, #tile.blocked<{{.*}}>>) -> tensor<1x1x8xi64, #tile.blocked<[[P]]>>
// NV: "tile.addptr"{{.*}} -> tensor<2x4x8x!tile.ptr<f32>, #tile.blocked<array<i32: 1, 1, 2>, array<i32: 2, 4, 4>, array<i32: 1, 1, 1>, array<i32: 2, 1, 0>>>
// CHECK: "tile.load"({{.*}}) -> tensor<2x4x8xf32, #tile.blocked<[[P]]>>
// CHECK-NOT: tile.convert_layout
// CHECK-NOT: tile.expand_dims

module {
  func.func @bp3(%arg0: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "In"}, %arg1: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "Out"}) attributes {tile.kernel} {
    %cst = arith.constant dense<1.000000e+00> : tensor<2x4x8xf32>
    %c0_i32 = arith.constant 0 : i32
    %c2_i64 = arith.constant 2 : i64
    %c4_i64 = arith.constant 4 : i64
    %c8_i64 = arith.constant 8 : i64
    %c32_i64 = arith.constant 32 : i64
    %c1_i64 = arith.constant 1 : i64
    %0 = "tile.range"() {end = 2 : i32, start = 0 : i32} : () -> tensor<2xi32>
    %1 = arith.extsi %0 : tensor<2xi32> to tensor<2xi64>
    %2 = arith.extsi %c0_i32 : i32 to i64
    %splat = tensor.splat %2 : tensor<2xi64>
    %3 = arith.addi %1, %splat : tensor<2xi64>
    %4 = "tile.expand_dims"(%3) {axis = 1 : i32} : (tensor<2xi64>) -> tensor<2x1xi64>
    %5 = "tile.expand_dims"(%4) {axis = 2 : i32} : (tensor<2x1xi64>) -> tensor<2x1x1xi64>
    %splat_0 = tensor.splat %c32_i64 : tensor<2x1x1xi64>
    %6 = arith.muli %5, %splat_0 : tensor<2x1x1xi64>
    %7 = "tile.broadcast"(%6) : (tensor<2x1x1xi64>) -> tensor<2x4x8xi64>
    %8 = "tile.range"() {end = 4 : i32, start = 0 : i32} : () -> tensor<4xi32>
    %9 = arith.extsi %8 : tensor<4xi32> to tensor<4xi64>
    %10 = arith.extsi %c0_i32 : i32 to i64
    %splat_1 = tensor.splat %10 : tensor<4xi64>
    %11 = arith.addi %9, %splat_1 : tensor<4xi64>
    %12 = "tile.expand_dims"(%11) {axis = 0 : i32} : (tensor<4xi64>) -> tensor<1x4xi64>
    %13 = "tile.expand_dims"(%12) {axis = 2 : i32} : (tensor<1x4xi64>) -> tensor<1x4x1xi64>
    %splat_2 = tensor.splat %c8_i64 : tensor<1x4x1xi64>
    %14 = arith.muli %13, %splat_2 : tensor<1x4x1xi64>
    %15 = "tile.broadcast"(%14) : (tensor<1x4x1xi64>) -> tensor<2x4x8xi64>
    %16 = arith.addi %7, %15 : tensor<2x4x8xi64>
    %17 = "tile.range"() {end = 8 : i32, start = 0 : i32} : () -> tensor<8xi32>
    %18 = arith.extsi %17 : tensor<8xi32> to tensor<8xi64>
    %19 = arith.extsi %c0_i32 : i32 to i64
    %splat_3 = tensor.splat %19 : tensor<8xi64>
    %20 = arith.addi %18, %splat_3 : tensor<8xi64>
    %21 = "tile.expand_dims"(%20) {axis = 0 : i32} : (tensor<8xi64>) -> tensor<1x8xi64>
    %22 = "tile.expand_dims"(%21) {axis = 1 : i32} : (tensor<1x8xi64>) -> tensor<1x1x8xi64>
    %23 = "tile.broadcast"(%22) : (tensor<1x1x8xi64>) -> tensor<2x4x8xi64>
    %24 = arith.addi %16, %23 : tensor<2x4x8xi64>
    %splat_4 = tensor.splat %arg0 : tensor<2x4x8x!tile.ptr<f32>>
    %25 = "tile.addptr"(%splat_4, %24) : (tensor<2x4x8x!tile.ptr<f32>>, tensor<2x4x8xi64>) -> tensor<2x4x8x!tile.ptr<f32>>
    %26 = "tile.load"(%25) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<2x4x8x!tile.ptr<f32>>) -> tensor<2x4x8xf32>
    %27 = arith.addf %26, %cst : tensor<2x4x8xf32>
    "tile.store"(%25, %27) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x4x8x!tile.ptr<f32>>, tensor<2x4x8xf32>) -> ()
    return
  }
}
