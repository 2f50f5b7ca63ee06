// RUN: %tilec-opt %s --pass tile-verify,convert-tile-to-cpu | %FileCheck %s

// A 2 x 8 tile at x + rows[:, None] * stride + cols[None, :] (stride unknown):
// each row is contiguous, so the load becomes one 8-wide masked load per row,
// each from the row's first pointer with its slice of the mask, inserted into
// the flat 16-element result; the store likewise per row.
// CHECK-LABEL: func.func private @rows2d_body(
// CHECK-NOT: tile.
// CHECK: %[[P:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (vector<16x!llvm.ptr>, vector<16xi32>) -> vector<16x!llvm.ptr>, f32
// CHECK: %[[P0:.*]] = vector.extract %[[P]][0] : !llvm.ptr from vector<16x!llvm.ptr>
// CHECK: %[[M0:.*]] = vector.extract_strided_slice %[[MASK:[^ ]*]] {offsets = [0], sizes = [8], strides = [1]} : vector<16xi1> to vector<8xi1>
// CHECK: %[[R0:.*]] = llvm.intr.masked.load %[[P0]], %[[M0]], %{{.*}} : (!llvm.ptr, vector<8xi1>, vector<8xf32>) -> vector<8xf32>
// CHECK: %[[A0:.*]] = vector.insert_strided_slice %[[R0]], %{{.*}} {offsets = [0], strides = [1]} : vector<8xf32> into vector<16xf32>
// CHECK: %[[P1:.*]] = vector.extract %[[P]][8] : !llvm.ptr from vector<16x!llvm.ptr>
// CHECK: %[[M1:.*]] = vector.extract_strided_slice %[[MASK]] {offsets = [8], sizes = [8], strides = [1]} : vector<16xi1> to vector<8xi1>
// CHECK: %[[R1:.*]] = llvm.intr.masked.load %[[P1]], %[[M1]], %{{.*}} : (!llvm.ptr, vector<8xi1>, vector<8xf32>) -> vector<8xf32>
// CHECK: %[[X:.*]] = vector.insert_strided_slice %[[R1]], %[[A0]] {offsets = [8], strides = [1]} : vector<8xf32> into vector<16xf32>
// CHECK-NOT: llvm.intr.masked.load
// CHECK-NOT: llvm.intr.masked.gather
// CHECK: vector.extract_strided_slice %[[X]] {offsets = [0], sizes = [8], strides = [1]}
// CHECK: llvm.intr.masked.store {{.*}} : vector<8xf32>, vector<8xi1> into !llvm.ptr
// CHECK: vector.extract_strided_slice %[[X]] {offsets = [8], sizes = [8], strides = [1]}
// CHECK: llvm.intr.masked.store {{.*}} : vector<8xf32>, vector<8xi1> into !llvm.ptr
// CHECK-NOT: llvm.intr.masked.s
// CHECK: return
func.func @rows2d(%arg0: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %arg1: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %arg2: i32, %arg3: i32, %arg4: i32) attributes {tile.kernel} {
  %cst = arith.constant dense<8> : tensor<2x1xi32>
  %cst_0 = arith.constant dense<0.000000e+00> : tensor<2x8xf32>
  %c2_i32 = arith.constant 2 : i32
  %0 = "tile.program_id"() {axis = 0 : i32} : () -> i32
  %1 = arith.muli %0, %c2_i32 : i32
  %2 = "tile.range"() {end = 2 : i32, start = 0 : i32} : () -> tensor<2xi32>
  %splat = tensor.splat %1 : tensor<2xi32>
  %3 = arith.addi %splat, %2 : tensor<2xi32>
  %4 = "tile.range"() {end = 8 : i32, start = 0 : i32} : () -> tensor<8xi32>
  %5 = "tile.expand_dims"(%3) {axis = 1 : i32} : (tensor<2xi32>) -> tensor<2x1xi32>
  %splat_1 = tensor.splat %arg2 : tensor<2x1xi32>
  %6 = arith.cmpi slt, %5, %splat_1 : tensor<2x1xi32>
  %7 = "tile.expand_dims"(%4) {axis = 0 : i32} : (tensor<8xi32>) -> tensor<1x8xi32>
  %splat_2 = tensor.splat %arg3 : tensor<1x8xi32>
  %8 = arith.cmpi slt, %7, %splat_2 : tensor<1x8xi32>
  %9 = "tile.broadcast"(%6) : (tensor<2x1xi1>) -> tensor<2x8xi1>
  %10 = "tile.broadcast"(%8) : (tensor<1x8xi1>) -> tensor<2x8xi1>
  %11 = arith.andi %9, %10 : tensor<2x8xi1>
  %splat_3 = tensor.splat %arg4 : tensor<2x1xi32>
  %13 = arith.muli %5, %splat_3 : tensor<2x1xi32>
  %splat_4 = tensor.splat %arg0 : tensor<2x1x!tile.ptr<f32>>
  %14 = "tile.addptr"(%splat_4, %13) : (tensor<2x1x!tile.ptr<f32>>, tensor<2x1xi32>) -> tensor<2x1x!tile.ptr<f32>>
  %16 = "tile.broadcast"(%14) : (tensor<2x1x!tile.ptr<f32>>) -> tensor<2x8x!tile.ptr<f32>>
  %17 = "tile.broadcast"(%7) : (tensor<1x8xi32>) -> tensor<2x8xi32>
  %18 = "tile.addptr"(%16, %17) : (tensor<2x8x!tile.ptr<f32>>, tensor<2x8xi32>) -> tensor<2x8x!tile.ptr<f32>>
  %19 = "tile.load"(%18, %11, %cst_0) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x8x!tile.ptr<f32>>, tensor<2x8xi1>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %21 = arith.muli %5, %cst : tensor<2x1xi32>
  %splat_5 = tensor.splat %arg1 : tensor<2x1x!tile.ptr<f32>>
  %22 = "tile.addptr"(%splat_5, %21) : (tensor<2x1x!tile.ptr<f32>>, tensor<2x1xi32>) -> tensor<2x1x!tile.ptr<f32>>
  %24 = "tile.broadcast"(%22) : (tensor<2x1x!tile.ptr<f32>>) -> tensor<2x8x!tile.ptr<f32>>
  %26 = "tile.addptr"(%24, %17) : (tensor<2x8x!tile.ptr<f32>>, tensor<2x8xi32>) -> tensor<2x8x!tile.ptr<f32>>
  "tile.store"(%26, %19, %11) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x8x!tile.ptr<f32>>, tensor<2x8xf32>, tensor<2x8xi1>) -> ()
  return
}
