// RUN: %tilec-opt %s --pass tile-layout,convert-tile-to-gpu --target sm90 | %FileCheck %s
// RUN: %tilec-opt %s --pass tile-layout,convert-tile-to-gpu --target gfx942 | %FileCheck %s
// RUN: %tilec-opt %s --pass tile-layout,convert-tile-to-gpu --target gfx1100 | %FileCheck %s

// 64-bit values on GPUs (issue 11, findings 3 and 4):
//   math.absi of i64 becomes x < 0 ? 0 - x : x (no math.absi reaches the
//   back end, whose NVVM translation has no rule for it);
//   the reduction's butterfly shuffles an i64 as two i32 words (trunc and
//   shift right, shuffle each, extend and or them back), not as a bitcast
//   to vector<2xi32> (the scalar store of the sum may still move its i64 as
//   two words: NVIDIA's predicated store, once per program on thread 0).

// CHECK-LABEL: gpu.func @wide(
// CHECK-NOT: math.absi
// CHECK: arith.cmpi slt, %{{.*}}, %{{.*}} : vector<{{[0-9]+}}xi64>
// CHECK: arith.subi
// CHECK: arith.select
// CHECK: %[[LO:.*]] = arith.trunci %{{.*}} : i64 to i32
// CHECK: %[[SH:.*]] = arith.shrui %{{.*}}, %{{.*}} : i64
// CHECK: %[[HI:.*]] = arith.trunci %[[SH]] : i64 to i32
// CHECK: gpu.shuffle xor %[[LO]], %{{.*}}, %{{.*}} : i32
// CHECK: gpu.shuffle xor %[[HI]], %{{.*}}, %{{.*}} : i32
// CHECK: arith.extui %{{.*}} : i32 to i64
// CHECK: arith.shli
// CHECK: arith.ori
// CHECK-NOT: gpu.shuffle {{.*}}vector<2xi32>
// CHECK: arith.cmpi eq, %{{.*}}, %{{.*}} : i32
// CHECK-NOT: gpu.shuffle
// CHECK: gpu.return

module {
  func.func private @__tilec_sum_i64(%arg0: i64, %arg1: i64) -> i64 {
    %0 = arith.addi %arg0, %arg1 : i64
    return %0 : i64
  }
  func.func @wide(%arg0: !tile.ptr<i64> {tile.divisibility = 16 : i32, tile.name = "x_ptr"}, %arg1: !tile.ptr<i64> {tile.divisibility = 16 : i32, tile.name = "o_ptr"}) attributes {tile.kernel} {
    %0 = "tile.range"() {end = 64 : i32, start = 0 : i32} : () -> tensor<64xi32>
    %splat = tensor.splat %arg0 : tensor<64x!tile.ptr<i64>>
    %1 = "tile.addptr"(%splat, %0) : (tensor<64x!tile.ptr<i64>>, tensor<64xi32>) -> tensor<64x!tile.ptr<i64>>
    %2 = "tile.load"(%1) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<64x!tile.ptr<i64>>) -> tensor<64xi64>
    %3 = math.absi %2 : tensor<64xi64>
    %splat_0 = tensor.splat %arg1 : tensor<64x!tile.ptr<i64>>
    %4 = "tile.addptr"(%splat_0, %0) : (tensor<64x!tile.ptr<i64>>, tensor<64xi32>) -> tensor<64x!tile.ptr<i64>>
    "tile.store"(%4, %3) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<64x!tile.ptr<i64>>, tensor<64xi64>) -> ()
    %5 = "tile.reduce"(%3) {axis = 0 : i32, combine = @__tilec_sum_i64, operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>} : (tensor<64xi64>) -> i64
    "tile.store"(%arg1, %5) {operandSegmentSizes = array<i32: 1, 1, 0>} : (!tile.ptr<i64>, i64) -> ()
    return
  }
}

