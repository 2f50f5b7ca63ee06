// RUN: %tilec-opt %s --split-input-file --pass tile-verify,convert-tile-to-cpu | %FileCheck %s

// tile.dot on the CPU (passes/cpu/dot.py, passes/cpu/microkernel.py): a, b
// and acc go to stack buffers; the register-blocked microkernel loops over
// column panels (NR lanes) and row blocks (MR rows), loads MR accumulator rows,
// and an scf.for over k carries them: row_r += splat(A[i + r, k]) * B[k, j:j+NR]
// (math.fma for floats, muli + addi for integers), summed in k in order; the
// rows are stored back in place.  4 x 4 f32: MR = 4, NR = 4.

// CHECK-LABEL: func.func private @dotk_body(
// CHECK-COUNT-3: llvm.alloca %{{.*}} x f32 {alignment = 64 : i64}
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK-COUNT-4: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<4xf32>
// CHECK: %[[C:.*]]:4 = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:[^ ]*]] = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) : i32 {
// CHECK: %[[B:.*]] = llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<4xf32>
// CHECK: %[[A:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK-NEXT: %[[SPLAT:.*]] = vector.broadcast %[[A]] : f32 to vector<4xf32>
// CHECK-NEXT: %[[FMA:.*]] = math.fma %[[SPLAT]], %[[B]], %[[ACC]] : vector<4xf32>
// CHECK-COUNT-3: math.fma
// CHECK: scf.yield %[[FMA]], %{{.*}}, %{{.*}}, %{{.*}} : vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>
// CHECK: llvm.store %[[C]]#0, %{{.*}} {alignment = 4 : i64} : vector<4xf32>, !llvm.ptr
// CHECK-COUNT-3: llvm.store %[[C]]#
// CHECK-LABEL: func.func @tilec_dotk(
// CHECK-NOT: tile.

module {
  func.func @dotk(%arg0: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %arg1: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %arg2: !tile.ptr<f32> {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
    %cst = arith.constant dense<0.000000e+00> : tensor<4x4xf32>
    %cst_0 = arith.constant dense<4> : tensor<4x1xi32>
    %0 = "tile.range"() {end = 4 : i32, start = 0 : i32} : () -> tensor<4xi32>
    %1 = "tile.expand_dims"(%0) {axis = 1 : i32} : (tensor<4xi32>) -> tensor<4x1xi32>
    %2 = arith.muli %1, %cst_0 : tensor<4x1xi32>
    %splat = tensor.splat %arg0 : tensor<4x1x!tile.ptr<f32>>
    %3 = "tile.addptr"(%splat, %2) : (tensor<4x1x!tile.ptr<f32>>, tensor<4x1xi32>) -> tensor<4x1x!tile.ptr<f32>>
    %4 = "tile.expand_dims"(%0) {axis = 0 : i32} : (tensor<4xi32>) -> tensor<1x4xi32>
    %5 = "tile.broadcast"(%3) : (tensor<4x1x!tile.ptr<f32>>) -> tensor<4x4x!tile.ptr<f32>>
    %6 = "tile.broadcast"(%4) : (tensor<1x4xi32>) -> tensor<4x4xi32>
    %7 = "tile.addptr"(%5, %6) : (tensor<4x4x!tile.ptr<f32>>, tensor<4x4xi32>) -> tensor<4x4x!tile.ptr<f32>>
    %8 = "tile.load"(%7) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<4x4x!tile.ptr<f32>>) -> tensor<4x4xf32>
    %9 = "tile.expand_dims"(%0) {axis = 1 : i32} : (tensor<4xi32>) -> tensor<4x1xi32>
    %10 = arith.muli %9, %cst_0 : tensor<4x1xi32>
    %splat_1 = tensor.splat %arg1 : tensor<4x1x!tile.ptr<f32>>
    %11 = "tile.addptr"(%splat_1, %10) : (tensor<4x1x!tile.ptr<f32>>, tensor<4x1xi32>) -> tensor<4x1x!tile.ptr<f32>>
    %12 = "tile.expand_dims"(%0) {axis = 0 : i32} : (tensor<4xi32>) -> tensor<1x4xi32>
    %13 = "tile.broadcast"(%11) : (tensor<4x1x!tile.ptr<f32>>) -> tensor<4x4x!tile.ptr<f32>>
    %14 = "tile.broadcast"(%12) : (tensor<1x4xi32>) -> tensor<4x4xi32>
    %15 = "tile.addptr"(%13, %14) : (tensor<4x4x!tile.ptr<f32>>, tensor<4x4xi32>) -> tensor<4x4x!tile.ptr<f32>>
    %16 = "tile.load"(%15) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<4x4x!tile.ptr<f32>>) -> tensor<4x4xf32>
    %17 = "tile.dot"(%8, %16, %cst) : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %18 = "tile.expand_dims"(%0) {axis = 1 : i32} : (tensor<4xi32>) -> tensor<4x1xi32>
    %19 = arith.muli %18, %cst_0 : tensor<4x1xi32>
    %splat_2 = tensor.splat %arg2 : tensor<4x1x!tile.ptr<f32>>
    %20 = "tile.addptr"(%splat_2, %19) : (tensor<4x1x!tile.ptr<f32>>, tensor<4x1xi32>) -> tensor<4x1x!tile.ptr<f32>>
    %21 = "tile.expand_dims"(%0) {axis = 0 : i32} : (tensor<4xi32>) -> tensor<1x4xi32>
    %22 = "tile.broadcast"(%20) : (tensor<4x1x!tile.ptr<f32>>) -> tensor<4x4x!tile.ptr<f32>>
    %23 = "tile.broadcast"(%21) : (tensor<1x4xi32>) -> tensor<4x4xi32>
    %24 = "tile.addptr"(%22, %23) : (tensor<4x4x!tile.ptr<f32>>, tensor<4x4xi32>) -> tensor<4x4x!tile.ptr<f32>>
    "tile.store"(%24, %17) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<4x4x!tile.ptr<f32>>, tensor<4x4xf32>) -> ()
    return
  }
}

// -----

// CHECK-LABEL: func.func private @dotk_i32_body(
// CHECK: scf.for %{{.*}} iter_args(%[[ACC:[^ ]*]] = %{{.*}}, %{{.*}}) -> (vector<4xi32>, vector<4xi32>, vector<4xi32>, vector<4xi32>) : i32 {
// CHECK: %[[P:.*]] = arith.muli %{{.*}}, %{{.*}} : vector<4xi32>
// CHECK-NEXT: %[[S:.*]] = arith.addi %[[ACC]], %[[P]] : vector<4xi32>
// CHECK: scf.yield %[[S]], %{{.*}} : vector<4xi32>, vector<4xi32>, vector<4xi32>, vector<4xi32>
// CHECK-NOT: math.fma

module {
  func.func @dotk_i32(%arg0: !tile.ptr<i32> {tile.divisibility = 16 : i32}, %arg1: !tile.ptr<i32> {tile.divisibility = 16 : i32}, %arg2: !tile.ptr<i32> {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
    %cst = arith.constant dense<0> : tensor<4x4xi32>
    %cst_0 = arith.constant dense<4> : tensor<4x1xi32>
    %0 = "tile.range"() {end = 4 : i32, start = 0 : i32} : () -> tensor<4xi32>
    %1 = "tile.expand_dims"(%0) {axis = 1 : i32} : (tensor<4xi32>) -> tensor<4x1xi32>
    %2 = arith.muli %1, %cst_0 : tensor<4x1xi32>
    %splat = tensor.splat %arg0 : tensor<4x1x!tile.ptr<i32>>
    %3 = "tile.addptr"(%splat, %2) : (tensor<4x1x!tile.ptr<i32>>, tensor<4x1xi32>) -> tensor<4x1x!tile.ptr<i32>>
    %4 = "tile.expand_dims"(%0) {axis = 0 : i32} : (tensor<4xi32>) -> tensor<1x4xi32>
    %5 = "tile.broadcast"(%3) : (tensor<4x1x!tile.ptr<i32>>) -> tensor<4x4x!tile.ptr<i32>>
    %6 = "tile.broadcast"(%4) : (tensor<1x4xi32>) -> tensor<4x4xi32>
    %7 = "tile.addptr"(%5, %6) : (tensor<4x4x!tile.ptr<i32>>, tensor<4x4xi32>) -> tensor<4x4x!tile.ptr<i32>>
    %8 = "tile.load"(%7) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<4x4x!tile.ptr<i32>>) -> tensor<4x4xi32>
    %9 = "tile.expand_dims"(%0) {axis = 1 : i32} : (tensor<4xi32>) -> tensor<4x1xi32>
    %10 = arith.muli %9, %cst_0 : tensor<4x1xi32>
    %splat_1 = tensor.splat %arg1 : tensor<4x1x!tile.ptr<i32>>
    %11 = "tile.addptr"(%splat_1, %10) : (tensor<4x1x!tile.ptr<i32>>, tensor<4x1xi32>) -> tensor<4x1x!tile.ptr<i32>>
    %12 = "tile.expand_dims"(%0) {axis = 0 : i32} : (tensor<4xi32>) -> tensor<1x4xi32>
    %13 = "tile.broadcast"(%11) : (tensor<4x1x!tile.ptr<i32>>) -> tensor<4x4x!tile.ptr<i32>>
    %14 = "tile.broadcast"(%12) : (tensor<1x4xi32>) -> tensor<4x4xi32>
    %15 = "tile.addptr"(%13, %14) : (tensor<4x4x!tile.ptr<i32>>, tensor<4x4xi32>) -> tensor<4x4x!tile.ptr<i32>>
    %16 = "tile.load"(%15) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<4x4x!tile.ptr<i32>>) -> tensor<4x4xi32>
    %17 = "tile.dot"(%8, %16, %cst) : (tensor<4x4xi32>, tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi32>
    %18 = "tile.expand_dims"(%0) {axis = 1 : i32} : (tensor<4xi32>) -> tensor<4x1xi32>
    %19 = arith.muli %18, %cst_0 : tensor<4x1xi32>
    %splat_2 = tensor.splat %arg2 : tensor<4x1x!tile.ptr<i32>>
    %20 = "tile.addptr"(%splat_2, %19) : (tensor<4x1x!tile.ptr<i32>>, tensor<4x1xi32>) -> tensor<4x1x!tile.ptr<i32>>
    %21 = "tile.expand_dims"(%0) {axis = 0 : i32} : (tensor<4xi32>) -> tensor<1x4xi32>
    %22 = "tile.broadcast"(%20) : (tensor<4x1x!tile.ptr<i32>>) -> tensor<4x4x!tile.ptr<i32>>
    %23 = "tile.broadcast"(%21) : (tensor<1x4xi32>) -> tensor<4x4xi32>
    %24 = "tile.addptr"(%22, %23) : (tensor<4x4x!tile.ptr<i32>>, tensor<4x4xi32>) -> tensor<4x4x!tile.ptr<i32>>
    "tile.store"(%24, %17) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<4x4x!tile.ptr<i32>>, tensor<4x4xi32>) -> ()
    return
  }
}
