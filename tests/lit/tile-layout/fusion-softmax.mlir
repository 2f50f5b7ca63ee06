// The layout pass is also the fusion pass: it gives every tile of a fused chain
// (load -> max -> sub -> exp -> sum -> div -> store) one layout, so the chain and
// its reductions stay in registers: no tile.convert_layout, no round trip
// through memory. Layouts follow the target record (warp 32 vs 64).
// RUN: %tilec-opt %s --pass tile-layout --target sm90 --num-warps 4 | %FileCheck %s --check-prefix=NV
// RUN: %tilec-opt %s --pass tile-layout --target gfx942 --num-warps 4 | %FileCheck %s --check-prefix=AMD
// RUN: %tilec-opt %s --pass tile-layout,convert-tile-to-gpu --target sm90 --num-warps 4 | %FileCheck %s --check-prefix=GPU

// NV-NOT: tile.convert_layout
// NV: "tile.load"{{.*}} -> tensor<1024xf32, #tile.blocked<array<i32: 4>, array<i32: 32>, array<i32: 4>, array<i32: 0>>>
// NV: "tile.reduce"{{.*}}(tensor<1024xf32, #tile.blocked<array<i32: 4>, array<i32: 32>, array<i32: 4>, array<i32: 0>>>) -> f32
// NV: math.exp {{.*}} : tensor<1024xf32, #tile.blocked<array<i32: 4>, array<i32: 32>, array<i32: 4>, array<i32: 0>>>
// NV: "tile.reduce"{{.*}}(tensor<1024xf32, #tile.blocked<array<i32: 4>, array<i32: 32>, array<i32: 4>, array<i32: 0>>>) -> f32
// NV: "tile.store"
// NV-NOT: tile.convert_layout

// AMD-NOT: tile.convert_layout
// AMD: "tile.load"{{.*}} -> tensor<1024xf32, #tile.blocked<array<i32: 4>, array<i32: 64>, array<i32: 4>, array<i32: 0>>>
// AMD-NOT: tile.convert_layout

// Per thread: the loaded chunk stays in registers through both reductions
// (a 5-step shuffle butterfly and one workgroup exchange each); no tile op and
// no layout conversion survive.
// GPU-LABEL: gpu.func @softmax
// GPU-NOT: tile.
// GPU-COUNT-5: gpu.shuffle  xor
// GPU: gpu.barrier
// GPU-COUNT-5: gpu.shuffle  xor
// GPU: gpu.barrier
// GPU-NOT: tile.
module {
  func.func private @__tilec_sum_fp32(%arg0: f32, %arg1: f32) -> f32 {
    %0 = arith.addf %arg0, %arg1 : f32
    return %0 : f32
  }
  func.func private @__tilec_max_fp32(%arg0: f32, %arg1: f32) -> f32 {
    %0 = arith.maxnumf %arg0, %arg1 : f32
    return %0 : f32
  }
  func.func @softmax(%arg0: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "in_ptr"}, %arg1: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "out_ptr"}, %arg2: i32 {tile.divisibility = 16 : i32, tile.name = "stride"}, %arg3: i32 {tile.divisibility = 16 : i32, tile.name = "n_cols"}) attributes {tile.kernel} {
    %cst = arith.constant dense<0xFF800000> : tensor<1024xf32>
    %0 = "tile.program_id"() {axis = 0 : i32} : () -> i32
    %1 = "tile.range"() {end = 1024 : i32, start = 0 : i32} : () -> tensor<1024xi32>
    %splat = tensor.splat %arg3 : tensor<1024xi32>
    %2 = arith.cmpi slt, %1, %splat : tensor<1024xi32>
    %3 = arith.muli %0, %arg2 : i32
    %4 = "tile.addptr"(%arg0, %3) : (!tile.ptr<f32>, i32) -> !tile.ptr<f32>
    %splat_0 = tensor.splat %4 : tensor<1024x!tile.ptr<f32>>
    %5 = "tile.addptr"(%splat_0, %1) : (tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>) -> tensor<1024x!tile.ptr<f32>>
    %6 = "tile.load"(%5, %2, %cst) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<1024x!tile.ptr<f32>>, tensor<1024xi1>, tensor<1024xf32>) -> tensor<1024xf32>
    %7 = "tile.reduce"(%6) {axis = 0 : i32, combine = @__tilec_max_fp32, operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>} : (tensor<1024xf32>) -> f32
    %splat_1 = tensor.splat %7 : tensor<1024xf32>
    %8 = arith.subf %6, %splat_1 : tensor<1024xf32>
    %9 = math.exp %8 : tensor<1024xf32>
    %10 = "tile.addptr"(%arg1, %3) : (!tile.ptr<f32>, i32) -> !tile.ptr<f32>
    %splat_2 = tensor.splat %10 : tensor<1024x!tile.ptr<f32>>
    %11 = "tile.addptr"(%splat_2, %1) : (tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>) -> tensor<1024x!tile.ptr<f32>>
    %12 = "tile.reduce"(%9) {axis = 0 : i32, combine = @__tilec_sum_fp32, operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>} : (tensor<1024xf32>) -> f32
    %splat_3 = tensor.splat %12 : tensor<1024xf32>
    %13 = arith.divf %9, %splat_3 : tensor<1024xf32>
    "tile.store"(%11, %13, %2) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<1024x!tile.ptr<f32>>, tensor<1024xf32>, tensor<1024xi1>) -> ()
    return
  }
}
