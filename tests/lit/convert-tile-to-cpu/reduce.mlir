// RUN: %tilec-opt %s --pass tile-verify,convert-tile-to-cpu | %FileCheck %s

// 1-D reduction with a recognised combine: halves taken with
// vector.extract_strided_slice down to one 512-bit register, then
// vector.reduction (reassoc for float add: tree order).
// CHECK-LABEL: func.func private @reduce_body(
// CHECK-NOT: tile.
// CHECK: vector.extract_strided_slice %{{.*}} {offsets = [0], sizes = [32], strides = [1]} : vector<64xf32> to vector<32xf32>
// CHECK: vector.extract_strided_slice %{{.*}} {offsets = [32], sizes = [32], strides = [1]} : vector<64xf32> to vector<32xf32>
// CHECK: arith.maxnumf %{{.*}}, %{{.*}} : vector<32xf32>
// CHECK: vector.reduction <maxnumf>, %{{.*}} : vector<16xf32> into f32
// CHECK: vector.reduction <add>, %{{.*}} fastmath<reassoc> : vector<16xf32> into f32
// Scan: in-register rotations, combine, select.
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14] : vector<16xf32>, vector<16xf32>
// CHECK: arith.addf %{{.*}} : vector<16xf32>
// CHECK: arith.select %{{.*}} : vector<16xi1>, vector<16xf32>
// Atomics: one llvm.atomicrmw / llvm.cmpxchg per lane, under the mask bit.
// CHECK: scf.if
// CHECK: llvm.atomicrmw add %{{.*}}, %{{.*}} acq_rel : !llvm.ptr, i32
// CHECK: llvm.cmpxchg %{{.*}}, %{{.*}}, %{{.*}} acq_rel acquire : !llvm.ptr, i32
// Barriers vanish; trans is one shuffle.
// CHECK-NOT: barrier
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 4, 1, 5, 2, 6, 3, 7] : vector<8xf32>, vector<8xf32>
// CHECK: return
func.func private @__tilec_max_f32(%a: f32, %b: f32) -> f32 {
  %r = arith.maxnumf %a, %b : f32
  return %r : f32
}
func.func private @__tilec_sum_f32(%a: f32, %b: f32) -> f32 {
  %r = arith.addf %a, %b : f32
  return %r : f32
}
func.func @reduce(%out: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %h: !tile.ptr<i32> {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %r64 = "tile.range"() {end = 64 : i32, start = 0 : i32} : () -> tensor<64xi32>
  %xs = tensor.splat %x : tensor<64x!tile.ptr<f32>>
  %xp = "tile.addptr"(%xs, %r64) : (tensor<64x!tile.ptr<f32>>, tensor<64xi32>) -> tensor<64x!tile.ptr<f32>>
  %v = "tile.load"(%xp) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<64x!tile.ptr<f32>>) -> tensor<64xf32>
  %mx = "tile.reduce"(%v) {operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>, axis = 0 : i32, combine = @__tilec_max_f32} : (tensor<64xf32>) -> f32
  %s = "tile.reduce"(%v) {operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>, axis = 0 : i32, combine = @__tilec_sum_f32} : (tensor<64xf32>) -> f32
  %t = arith.addf %mx, %s : f32
  "tile.store"(%out, %t) {operandSegmentSizes = array<i32: 1, 1, 0>} : (!tile.ptr<f32>, f32) -> ()
  %c = "tile.scan"(%v) {operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>, axis = 0 : i32, combine = @__tilec_sum_f32} : (tensor<64xf32>) -> tensor<64xf32>
  "tile.store"(%xp, %c) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<64x!tile.ptr<f32>>, tensor<64xf32>) -> ()
  %r16 = "tile.range"() {end = 16 : i32, start = 0 : i32} : () -> tensor<16xi32>
  %hs = tensor.splat %h : tensor<16x!tile.ptr<i32>>
  %hp = "tile.addptr"(%hs, %r16) : (tensor<16x!tile.ptr<i32>>, tensor<16xi32>) -> tensor<16x!tile.ptr<i32>>
  %c8 = arith.constant dense<8> : tensor<16xi32>
  %m = arith.cmpi slt, %r16, %c8 : tensor<16xi32>
  %old = "tile.atomic_rmw"(%hp, %r16, %m) {kind = "add", operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<16x!tile.ptr<i32>>, tensor<16xi32>, tensor<16xi1>) -> tensor<16xi32>
  %prev = "tile.atomic_cas"(%hp, %old, %r16) : (tensor<16x!tile.ptr<i32>>, tensor<16xi32>, tensor<16xi32>) -> tensor<16xi32>
  "tile.store"(%hp, %prev) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<16x!tile.ptr<i32>>, tensor<16xi32>) -> ()
  "tile.barrier"() : () -> ()
  "tile.warp_sync"() : () -> ()
  %r8 = "tile.range"() {end = 8 : i32, start = 0 : i32} : () -> tensor<8xi32>
  %x8 = tensor.splat %x : tensor<8x!tile.ptr<f32>>
  %p8 = "tile.addptr"(%x8, %r8) : (tensor<8x!tile.ptr<f32>>, tensor<8xi32>) -> tensor<8x!tile.ptr<f32>>
  %w = "tile.load"(%p8) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<8x!tile.ptr<f32>>) -> tensor<8xf32>
  %w2 = "tile.reshape"(%w) : (tensor<8xf32>) -> tensor<2x4xf32>
  %wt = "tile.trans"(%w2) : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %w8 = "tile.reshape"(%wt) : (tensor<4x2xf32>) -> tensor<8xf32>
  "tile.store"(%p8, %w8) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<8x!tile.ptr<f32>>, tensor<8xf32>) -> ()
  return
}
