// RUN: %tilec-opt %s --pass tile-tma-pointers --target sm90 --num-warps 4 | %FileCheck %s

// A [64, 64] copy, rows and columns masked at M and N: both accesses are map
// blocks, but the load carries an attribute the pass does not know (here a
// volatile flag: tl.load's `volatile=` is not in the IR today, tl.load and
// tl.store drop their cache and eviction hints; tl.multiple_of and
// tl.max_contiguous annotate the index ops, not the access).  Only attribute-free accesses are
// proven, so an access whose semantics a future attribute changes stays a
// pointer access: here only the store is tagged.
// CHECK: tile.tensormaps = "{\220\22: {\22base\22: 1, {{[^}]*}}}}"
// CHECK-NOT: tile.tma = 1
// CHECK: "tile.load"(%{{.*}}) {operandSegmentSizes = array<i32: 1, 1, 0>, tile.volatile} :
// CHECK: "tile.tma_coords"(%{{.*}}, %{{.*}}) {tma = 0 : i32}
// CHECK-NEXT: "tile.store"({{.*}}tile.tma = 0 : i32}
module {
  func.func @copy(%arg0: !tile.ptr<f16> {tile.divisibility = 16 : i32, tile.name = "x_ptr"}, %arg1: !tile.ptr<f16> {tile.divisibility = 16 : i32, tile.name = "y_ptr"}, %arg2: i32 {tile.name = "M"}, %arg3: i32 {tile.name = "N"}, %arg4: i32 {tile.divisibility = 16 : i32, tile.name = "stride"}) attributes {tile.kernel} {
    %c64_i32 = arith.constant 64 : i32
    %0 = "tile.program_id"() {axis = 0 : i32} : () -> i32
    %1 = arith.muli %0, %c64_i32 : i32
    %2 = "tile.range"() {end = 64 : i32, start = 0 : i32} : () -> tensor<64xi32>
    %splat = tensor.splat %1 : tensor<64xi32>
    %3 = arith.addi %splat, %2 : tensor<64xi32>
    %4 = "tile.program_id"() {axis = 1 : i32} : () -> i32
    %5 = arith.muli %4, %c64_i32 : i32
    %6 = "tile.range"() {end = 64 : i32, start = 0 : i32} : () -> tensor<64xi32>
    %splat_0 = tensor.splat %5 : tensor<64xi32>
    %7 = arith.addi %splat_0, %6 : tensor<64xi32>
    %8 = "tile.expand_dims"(%3) {axis = 1 : i32} : (tensor<64xi32>) -> tensor<64x1xi32>
    %splat_1 = tensor.splat %arg2 : tensor<64x1xi32>
    %9 = arith.cmpi slt, %8, %splat_1 : tensor<64x1xi32>
    %10 = "tile.expand_dims"(%7) {axis = 0 : i32} : (tensor<64xi32>) -> tensor<1x64xi32>
    %splat_2 = tensor.splat %arg3 : tensor<1x64xi32>
    %11 = arith.cmpi slt, %10, %splat_2 : tensor<1x64xi32>
    %12 = "tile.broadcast"(%9) : (tensor<64x1xi1>) -> tensor<64x64xi1>
    %13 = "tile.broadcast"(%11) : (tensor<1x64xi1>) -> tensor<64x64xi1>
    %14 = arith.andi %12, %13 : tensor<64x64xi1>
    %15 = "tile.expand_dims"(%3) {axis = 1 : i32} : (tensor<64xi32>) -> tensor<64x1xi32>
    %splat_3 = tensor.splat %arg4 : tensor<64x1xi32>
    %16 = arith.muli %15, %splat_3 : tensor<64x1xi32>
    %splat_4 = tensor.splat %arg0 : tensor<64x1x!tile.ptr<f16>>
    %17 = "tile.addptr"(%splat_4, %16) : (tensor<64x1x!tile.ptr<f16>>, tensor<64x1xi32>) -> tensor<64x1x!tile.ptr<f16>>
    %18 = "tile.expand_dims"(%7) {axis = 0 : i32} : (tensor<64xi32>) -> tensor<1x64xi32>
    %19 = "tile.broadcast"(%17) : (tensor<64x1x!tile.ptr<f16>>) -> tensor<64x64x!tile.ptr<f16>>
    %20 = "tile.broadcast"(%18) : (tensor<1x64xi32>) -> tensor<64x64xi32>
    %21 = "tile.addptr"(%19, %20) : (tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>) -> tensor<64x64x!tile.ptr<f16>>
    %22 = "tile.load"(%21, %14) {operandSegmentSizes = array<i32: 1, 1, 0>, tile.volatile} : (tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi1>) -> tensor<64x64xf16>
    %23 = "tile.expand_dims"(%3) {axis = 1 : i32} : (tensor<64xi32>) -> tensor<64x1xi32>
    %24 = arith.muli %23, %splat_3 : tensor<64x1xi32>
    %splat_5 = tensor.splat %arg1 : tensor<64x1x!tile.ptr<f16>>
    %25 = "tile.addptr"(%splat_5, %24) : (tensor<64x1x!tile.ptr<f16>>, tensor<64x1xi32>) -> tensor<64x1x!tile.ptr<f16>>
    %26 = "tile.expand_dims"(%7) {axis = 0 : i32} : (tensor<64xi32>) -> tensor<1x64xi32>
    %27 = "tile.broadcast"(%25) : (tensor<64x1x!tile.ptr<f16>>) -> tensor<64x64x!tile.ptr<f16>>
    %28 = "tile.broadcast"(%26) : (tensor<1x64xi32>) -> tensor<64x64xi32>
    %29 = "tile.addptr"(%27, %28) : (tensor<64x64x!tile.ptr<f16>>, tensor<64x64xi32>) -> tensor<64x64x!tile.ptr<f16>>
    "tile.store"(%29, %22, %14) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<64x64x!tile.ptr<f16>>, tensor<64x64xf16>, tensor<64x64xi1>) -> ()
    return
  }
}
