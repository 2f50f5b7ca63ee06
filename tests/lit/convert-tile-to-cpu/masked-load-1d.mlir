// RUN: %tilec-opt %s --pass tile-verify,convert-tile-to-cpu | %FileCheck %s

// A 1-D contiguous masked load (offsets pid * 8 + arange(8) from a 16-byte
// aligned pointer) becomes one llvm.intr.masked.load of the whole tile with the
// mask and `other` as pass-through, and the store one llvm.intr.masked.store.
// CHECK-LABEL: func.func private @copy1d_body(
// CHECK-SAME: %[[X:[^:]*]]: !llvm.ptr, %[[OUT:[^:]*]]: !llvm.ptr, %[[N:[^:]*]]: i32, %[[PID:[^:]*]]: i32
// CHECK-NOT: tile.
// CHECK-DAG: %[[OTHER:.*]] = arith.constant dense<0.000000e+00> : vector<8xf32>
// CHECK-DAG: %[[IOTA:.*]] = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : vector<8xi32>
// CHECK: %[[MASK:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : vector<8xi32>
// CHECK: %[[PX:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (vector<8x!llvm.ptr>, vector<8xi32>) -> vector<8x!llvm.ptr>, f32
// CHECK: %[[BASE:.*]] = vector.extract %[[PX]][0] : !llvm.ptr from vector<8x!llvm.ptr>
// CHECK: %[[V:.*]] = llvm.intr.masked.load %[[BASE]], %[[MASK]], %[[OTHER]] {alignment = {{[0-9]+}} : i32} : (!llvm.ptr, vector<8xi1>, vector<8xf32>) -> vector<8xf32>
// CHECK-NOT: llvm.intr.masked.load
// CHECK-NOT: llvm.intr.masked.gather
// CHECK: llvm.intr.masked.store %[[V]], %{{.*}}, %[[MASK]] {{.*}} : vector<8xf32>, vector<8xi1> into !llvm.ptr
// CHECK: return
func.func @copy1d(%arg0: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %arg1: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %arg2: i32) attributes {tile.kernel} {
  %cst = arith.constant dense<0.000000e+00> : tensor<8xf32>
  %c8_i32 = arith.constant 8 : i32
  %0 = "tile.program_id"() {axis = 0 : i32} : () -> i32
  %1 = arith.muli %0, %c8_i32 : i32
  %2 = "tile.range"() {end = 8 : i32, start = 0 : i32} : () -> tensor<8xi32>
  %splat = tensor.splat %1 : tensor<8xi32>
  %3 = arith.addi %splat, %2 : tensor<8xi32>
  %splat_0 = tensor.splat %arg2 : tensor<8xi32>
  %4 = arith.cmpi slt, %3, %splat_0 : tensor<8xi32>
  %splat_1 = tensor.splat %arg0 : tensor<8x!tile.ptr<f32>>
  %5 = "tile.addptr"(%splat_1, %3) : (tensor<8x!tile.ptr<f32>>, tensor<8xi32>) -> tensor<8x!tile.ptr<f32>>
  %6 = "tile.load"(%5, %4, %cst) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<8x!tile.ptr<f32>>, tensor<8xi1>, tensor<8xf32>) -> tensor<8xf32>
  %splat_2 = tensor.splat %arg1 : tensor<8x!tile.ptr<f32>>
  %7 = "tile.addptr"(%splat_2, %3) : (tensor<8x!tile.ptr<f32>>, tensor<8xi32>) -> tensor<8x!tile.ptr<f32>>
  "tile.store"(%7, %6, %4) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<8x!tile.ptr<f32>>, tensor<8xf32>, tensor<8xi1>) -> ()
  return
}
