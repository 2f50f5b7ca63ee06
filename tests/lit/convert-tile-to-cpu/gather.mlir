// RUN: %tilec-opt %s --pass tile-verify,convert-tile-to-cpu | %FileCheck %s

// x + offs * stride with a runtime stride is not contiguous: the load becomes a
// masked gather over the 8 pointers (element alignment); the contiguous store
// to out + offs stays a masked store.
// CHECK-LABEL: func.func private @strided_body(
// CHECK-SAME: %[[X:[^:]*]]: !llvm.ptr, %{{[^:]*}}: !llvm.ptr, %{{[^:]*}}: i32, %[[STRIDE:[^:]*]]: i32
// CHECK-NOT: tile.
// CHECK: %[[MASK:.*]] = arith.cmpi slt, %{{.*}} : vector<8xi32>
// CHECK: %[[S:.*]] = vector.broadcast %[[STRIDE]] : i32 to vector<8xi32>
// CHECK: %[[OFF:.*]] = arith.muli %{{.*}}, %[[S]] : vector<8xi32>
// CHECK: %[[XS:.*]] = vector.broadcast %[[X]] : !llvm.ptr to vector<8x!llvm.ptr>
// CHECK: %[[P:.*]] = llvm.getelementptr %[[XS]][%[[OFF]]] : (vector<8x!llvm.ptr>, vector<8xi32>) -> vector<8x!llvm.ptr>, f32
// CHECK: %[[V:.*]] = llvm.intr.masked.gather %[[P]], %[[MASK]], %{{.*}} {alignment = 4 : i32} : (vector<8x!llvm.ptr>, vector<8xi1>, vector<8xf32>) -> vector<8xf32>
// CHECK-NOT: llvm.intr.masked.load
// CHECK: llvm.intr.masked.store %[[V]], %{{.*}}, %[[MASK]]
// CHECK-NOT: llvm.intr.masked.scatter
func.func @strided(%arg0: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %arg1: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %arg2: i32, %arg3: i32) attributes {tile.kernel} {
  %cst = arith.constant dense<0.000000e+00> : tensor<8xf32>
  %c8_i32 = arith.constant 8 : i32
  %0 = "tile.program_id"() {axis = 0 : i32} : () -> i32
  %1 = arith.muli %0, %c8_i32 : i32
  %2 = "tile.range"() {end = 8 : i32, start = 0 : i32} : () -> tensor<8xi32>
  %splat = tensor.splat %1 : tensor<8xi32>
  %3 = arith.addi %splat, %2 : tensor<8xi32>
  %splat_0 = tensor.splat %arg2 : tensor<8xi32>
  %4 = arith.cmpi slt, %3, %splat_0 : tensor<8xi32>
  %splat_1 = tensor.splat %arg3 : tensor<8xi32>
  %5 = arith.muli %3, %splat_1 : tensor<8xi32>
  %splat_2 = tensor.splat %arg0 : tensor<8x!tile.ptr<f32>>
  %6 = "tile.addptr"(%splat_2, %5) : (tensor<8x!tile.ptr<f32>>, tensor<8xi32>) -> tensor<8x!tile.ptr<f32>>
  %7 = "tile.load"(%6, %4, %cst) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<8x!tile.ptr<f32>>, tensor<8xi1>, tensor<8xf32>) -> tensor<8xf32>
  %splat_3 = tensor.splat %arg1 : tensor<8x!tile.ptr<f32>>
  %8 = "tile.addptr"(%splat_3, %3) : (tensor<8x!tile.ptr<f32>>, tensor<8xi32>) -> tensor<8x!tile.ptr<f32>>
  "tile.store"(%8, %7, %4) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<8x!tile.ptr<f32>>, tensor<8xf32>, tensor<8xi1>) -> ()
  return
}

// A scatter for a strided store with no mask: the mask is all true.
// CHECK-LABEL: func.func private @scatter_body(
// CHECK: %[[TRUE:.*]] = arith.constant dense<true> : vector<4xi1>
// CHECK: llvm.intr.masked.scatter %{{.*}}, %{{.*}}, %[[TRUE]] {alignment = 4 : i32} : vector<4xf32>, vector<4xi1> into vector<4x!llvm.ptr>
func.func @scatter(%arg0: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %arg1: i32, %v: f32) attributes {tile.kernel} {
  %r = "tile.range"() {end = 4 : i32, start = 0 : i32} : () -> tensor<4xi32>
  %s = tensor.splat %arg1 : tensor<4xi32>
  %o = arith.muli %r, %s : tensor<4xi32>
  %p0 = tensor.splat %arg0 : tensor<4x!tile.ptr<f32>>
  %p = "tile.addptr"(%p0, %o) : (tensor<4x!tile.ptr<f32>>, tensor<4xi32>) -> tensor<4x!tile.ptr<f32>>
  %vs = tensor.splat %v : tensor<4xf32>
  "tile.store"(%p, %vs) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<4x!tile.ptr<f32>>, tensor<4xf32>) -> ()
  return
}
