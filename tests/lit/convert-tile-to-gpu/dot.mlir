// RUN: %tilec-opt %s --pass tile-layout --target sm90 | %FileCheck %s --check-prefix=LAYOUT
// RUN: %tilec-opt %s --pass tile-layout --pass convert-tile-to-gpu --target sm90 | %FileCheck %s
// RUN: %tilec-opt %s --pass tile-layout --pass convert-tile-to-gpu --target gfx942 | %FileCheck %s

// tile.dot: the accumulator and the result share the store's layout; the
// operands keep theirs.  Lowered: both operands go row-major into workgroup
// memory between barriers, then one loop over k carries the accumulator
// fragments: two workgroup-memory loads, widening and an FMA per element.

// LAYOUT: %[[D:.*]] = "tile.dot"({{.*}}) : (tensor<16x16xf16, #tile.blocked<{{.*}}>>, tensor<16x16xf16, #tile.blocked<{{.*}}>>, tensor<16x16xf32, #[[L:.*]]>) -> tensor<16x16xf32, #[[L]]>
// LAYOUT: "tile.store"({{.*}}, %[[D]]) {{.*}} tensor<16x16xf32, #[[L]]>) -> ()

// CHECK-LABEL: gpu.func @dot16
// CHECK: gpu.barrier
// CHECK: llvm.store {{.*}} : {{(vector<2xf16>|f16)}}, !llvm.ptr<3>
// CHECK: gpu.barrier
// CHECK: scf.for {{.*}} iter_args
// CHECK: llvm.load {{.*}} : !llvm.ptr<3> -> f16
// CHECK: arith.extf {{.*}} : f16 to f32
// CHECK: math.fma {{.*}} : f32
// CHECK: scf.yield
// No barrier after the loop: only the global store follows (passes/gpu/barriers.py).
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return

module {
  func.func @dot16(%arg0: !tile.ptr<f16> {tile.divisibility = 16 : i32, tile.name = "a_ptr"}, %arg1: !tile.ptr<f16> {tile.divisibility = 16 : i32, tile.name = "b_ptr"}, %arg2: !tile.ptr<f32> {tile.divisibility = 16 : i32, tile.name = "c_ptr"}) attributes {tile.kernel} {
    %cst = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
    %cst_0 = arith.constant dense<16> : tensor<16x1xi32>
    %0 = "tile.range"() {end = 16 : i32, start = 0 : i32} : () -> tensor<16xi32>
    %1 = "tile.expand_dims"(%0) {axis = 1 : i32} : (tensor<16xi32>) -> tensor<16x1xi32>
    %2 = arith.muli %1, %cst_0 : tensor<16x1xi32>
    %splat = tensor.splat %arg0 : tensor<16x1x!tile.ptr<f16>>
    %3 = "tile.addptr"(%splat, %2) : (tensor<16x1x!tile.ptr<f16>>, tensor<16x1xi32>) -> tensor<16x1x!tile.ptr<f16>>
    %4 = "tile.expand_dims"(%0) {axis = 0 : i32} : (tensor<16xi32>) -> tensor<1x16xi32>
    %5 = "tile.broadcast"(%3) : (tensor<16x1x!tile.ptr<f16>>) -> tensor<16x16x!tile.ptr<f16>>
    %6 = "tile.broadcast"(%4) : (tensor<1x16xi32>) -> tensor<16x16xi32>
    %7 = "tile.addptr"(%5, %6) : (tensor<16x16x!tile.ptr<f16>>, tensor<16x16xi32>) -> tensor<16x16x!tile.ptr<f16>>
    %8 = "tile.load"(%7) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<16x16x!tile.ptr<f16>>) -> tensor<16x16xf16>
    %9 = "tile.expand_dims"(%0) {axis = 1 : i32} : (tensor<16xi32>) -> tensor<16x1xi32>
    %10 = arith.muli %9, %cst_0 : tensor<16x1xi32>
    %splat_1 = tensor.splat %arg1 : tensor<16x1x!tile.ptr<f16>>
    %11 = "tile.addptr"(%splat_1, %10) : (tensor<16x1x!tile.ptr<f16>>, tensor<16x1xi32>) -> tensor<16x1x!tile.ptr<f16>>
    %12 = "tile.expand_dims"(%0) {axis = 0 : i32} : (tensor<16xi32>) -> tensor<1x16xi32>
    %13 = "tile.broadcast"(%11) : (tensor<16x1x!tile.ptr<f16>>) -> tensor<16x16x!tile.ptr<f16>>
    %14 = "tile.broadcast"(%12) : (tensor<1x16xi32>) -> tensor<16x16xi32>
    %15 = "tile.addptr"(%13, %14) : (tensor<16x16x!tile.ptr<f16>>, tensor<16x16xi32>) -> tensor<16x16x!tile.ptr<f16>>
    %16 = "tile.load"(%15) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<16x16x!tile.ptr<f16>>) -> tensor<16x16xf16>
    %17 = "tile.expand_dims"(%0) {axis = 1 : i32} : (tensor<16xi32>) -> tensor<16x1xi32>
    %18 = arith.muli %17, %cst_0 : tensor<16x1xi32>
    %splat_2 = tensor.splat %arg2 : tensor<16x1x!tile.ptr<f32>>
    %19 = "tile.addptr"(%splat_2, %18) : (tensor<16x1x!tile.ptr<f32>>, tensor<16x1xi32>) -> tensor<16x1x!tile.ptr<f32>>
    %20 = "tile.expand_dims"(%0) {axis = 0 : i32} : (tensor<16xi32>) -> tensor<1x16xi32>
    %21 = "tile.broadcast"(%19) : (tensor<16x1x!tile.ptr<f32>>) -> tensor<16x16x!tile.ptr<f32>>
    %22 = "tile.broadcast"(%20) : (tensor<1x16xi32>) -> tensor<16x16xi32>
    %23 = "tile.addptr"(%21, %22) : (tensor<16x16x!tile.ptr<f32>>, tensor<16x16xi32>) -> tensor<16x16x!tile.ptr<f32>>
    %24 = "tile.dot"(%8, %16, %cst) : (tensor<16x16xf16>, tensor<16x16xf16>, tensor<16x16xf32>) -> tensor<16x16xf32>
    "tile.store"(%23, %24) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<16x16x!tile.ptr<f32>>, tensor<16x16xf32>) -> ()
    return
  }
}
