// RUN: %tilec-opt %s --pass tile-layout --pass convert-tile-to-gpu --target sm90 | %FileCheck %s --check-prefixes=CHECK,W32
// RUN: %tilec-opt %s --pass tile-layout --pass convert-tile-to-gpu --target gfx1100 | %FileCheck %s --check-prefixes=CHECK,W32
// RUN: %tilec-opt %s --pass tile-layout --pass convert-tile-to-gpu --target gfx942 | %FileCheck %s --check-prefixes=CHECK,W64

// A 1024-wide fp32 row sum with 4 warps: in-thread adds, a butterfly of
// gpu.shuffle xor over the lane bits (16..1 on wave32, 32..1 on wave64, width =
// the warp size), then one canonical lane per warp stores its partial to
// workgroup memory, one gpu.barrier, and every thread folds the 4 partials.

// CHECK: llvm.mlir.global internal @__tilec_smem_rowsum() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<16 x i8>
// CHECK: gpu.func @rowsum
// CHECK: arith.addf {{.*}} : f32
// W64: %[[O32:[a-z0-9_]+]] = arith.constant 32 : i32
// W64-NEXT: %[[W64A:[a-z0-9_]+]] = arith.constant 64 : i32
// W64-NEXT: gpu.shuffle xor %{{.*}}, %[[O32]], %[[W64A]] : f32
// CHECK: %[[O16:[a-z0-9_]+]] = arith.constant 16 : i32
// W32-NEXT: %[[W16:[a-z0-9_]+]] = arith.constant 32 : i32
// W64-NEXT: %[[W16:[a-z0-9_]+]] = arith.constant 64 : i32
// CHECK-NEXT: gpu.shuffle xor %{{.*}}, %[[O16]], %[[W16]] : f32
// CHECK-NEXT: arith.addf
// CHECK-NEXT: %[[O8:[a-z0-9_]+]] = arith.constant 8 : i32
// CHECK-NEXT: %[[W8:[a-z0-9_]+]] = arith.constant
// CHECK-NEXT: gpu.shuffle xor %{{.*}}, %[[O8]], %[[W8]] : f32
// CHECK: %[[O4:[a-z0-9_]+]] = arith.constant 4 : i32
// CHECK-NEXT: %[[W4:[a-z0-9_]+]] = arith.constant
// CHECK-NEXT: gpu.shuffle xor %{{.*}}, %[[O4]], %[[W4]] : f32
// CHECK: %[[O2:[a-z0-9_]+]] = arith.constant 2 : i32
// CHECK-NEXT: %[[W2:[a-z0-9_]+]] = arith.constant
// CHECK-NEXT: gpu.shuffle xor %{{.*}}, %[[O2]], %[[W2]] : f32
// CHECK: %[[O1:[a-z0-9_]+]] = arith.constant 1 : i32
// CHECK-NEXT: %[[W1:[a-z0-9_]+]] = arith.constant
// CHECK-NEXT: gpu.shuffle xor %{{.*}}, %[[O1]], %[[W1]] : f32
// CHECK-NEXT: arith.addf
// CHECK-NOT: gpu.shuffle
// CHECK: scf.if
// CHECK: llvm.store {{.*}} : f32, !llvm.ptr<3>
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK-COUNT-4: llvm.load {{.*}} : !llvm.ptr<3> -> f32
// CHECK: gpu.return
// CHECK-NOT: tile.
// CHECK-NOT: func.func

func.func private @__tilec_sum_f32(%a: f32, %b: f32) -> f32 {
  %r = arith.addf %a, %b : f32
  return %r : f32
}
func.func @rowsum(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %o: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %stride: i32 {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %ipid = "tile.program_id"() {axis = 0 : i32} : () -> i32
  %irow = arith.muli %ipid, %stride : i32
  %ir = "tile.range"() {start = 0 : i32, end = 1024 : i32} : () -> tensor<1024xi32>
  %irs = tensor.splat %irow : tensor<1024xi32>
  %ioff = arith.addi %irs, %ir : tensor<1024xi32>
  %ib = tensor.splat %x : tensor<1024x!tile.ptr<f32>>
  %ip = "tile.addptr"(%ib, %ioff) : (tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>) -> tensor<1024x!tile.ptr<f32>>
  %v = "tile.load"(%ip) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<1024x!tile.ptr<f32>>) -> tensor<1024xf32>
  %s = "tile.reduce"(%v) {operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>, axis = 0 : i32, combine = @__tilec_sum_f32} : (tensor<1024xf32>) -> f32
  %pid = "tile.program_id"() {axis = 0 : i32} : () -> i32
  %op = "tile.addptr"(%o, %pid) : (!tile.ptr<f32>, i32) -> !tile.ptr<f32>
  "tile.store"(%op, %s) {operandSegmentSizes = array<i32: 1, 1, 0>} : (!tile.ptr<f32>, f32) -> ()
  return
}
