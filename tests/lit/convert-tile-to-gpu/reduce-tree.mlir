// RUN: %tilec-opt %s --pass tile-layout --pass convert-tile-to-gpu --target sm90 | %FileCheck %s

// In-thread folds (each of 128 threads holds 8 of the 1024 elements): a max,
// exactly associative, folds as pairwise levels (depth 3, not a chain of 7),
// so the row max an attention softmax waits on is short; a float sum keeps
// the chain in coordinate order (regrouping it would round otherwise).

// CHECK-LABEL: gpu.func @rowsum
// CHECK: %[[S0:[a-z0-9_]+]] = arith.addf %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : f32
// CHECK-NEXT: %[[S1:[a-z0-9_]+]] = arith.addf %[[S0]], %{{[a-z0-9_]+}} : f32
// CHECK-NEXT: %[[S2:[a-z0-9_]+]] = arith.addf %[[S1]], %{{[a-z0-9_]+}} : f32
// CHECK-NEXT: %[[S3:[a-z0-9_]+]] = arith.addf %[[S2]], %{{[a-z0-9_]+}} : f32
// CHECK-NEXT: %[[S4:[a-z0-9_]+]] = arith.addf %[[S3]], %{{[a-z0-9_]+}} : f32
// CHECK-NEXT: %[[S5:[a-z0-9_]+]] = arith.addf %[[S4]], %{{[a-z0-9_]+}} : f32
// CHECK-NEXT: arith.addf %[[S5]], %{{[a-z0-9_]+}} : f32
// CHECK-LABEL: gpu.func @rowmax
// CHECK: %[[M0:[a-z0-9_]+]] = arith.maxnumf %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : f32
// CHECK-NEXT: %[[M1:[a-z0-9_]+]] = arith.maxnumf %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : f32
// CHECK-NEXT: %[[M2:[a-z0-9_]+]] = arith.maxnumf %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : f32
// CHECK-NEXT: %[[M3:[a-z0-9_]+]] = arith.maxnumf %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : f32
// CHECK-NEXT: %[[M4:[a-z0-9_]+]] = arith.maxnumf %[[M0]], %[[M1]] : f32
// CHECK-NEXT: %[[M5:[a-z0-9_]+]] = arith.maxnumf %[[M2]], %[[M3]] : f32
// CHECK-NEXT: %[[M6:[a-z0-9_]+]] = arith.maxnumf %[[M4]], %[[M5]] : f32
// CHECK: gpu.shuffle xor %[[M6]]

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

func.func private @__tilec_max_f32(%a: f32, %b: f32) -> f32 {
  %r = arith.maxnumf %a, %b : f32
  return %r : f32
}
func.func @rowmax(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %o: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %stride: i32 {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %ipid = "tile.program_id"() {axis = 0 : i32} : () -> i32
  %irow = arith.muli %ipid, %stride : i32
  %ir = "tile.range"() {start = 0 : i32, end = 1024 : i32} : () -> tensor<1024xi32>
  %irs = tensor.splat %irow : tensor<1024xi32>
  %ioff = arith.addi %irs, %ir : tensor<1024xi32>
  %ib = tensor.splat %x : tensor<1024x!tile.ptr<f32>>
  %ip = "tile.addptr"(%ib, %ioff) : (tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>) -> tensor<1024x!tile.ptr<f32>>
  %v = "tile.load"(%ip) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<1024x!tile.ptr<f32>>) -> tensor<1024xf32>
  %s = "tile.reduce"(%v) {operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>, axis = 0 : i32, combine = @__tilec_max_f32} : (tensor<1024xf32>) -> f32
  %pid = "tile.program_id"() {axis = 0 : i32} : () -> i32
  %op = "tile.addptr"(%o, %pid) : (!tile.ptr<f32>, i32) -> !tile.ptr<f32>
  "tile.store"(%op, %s) {operandSegmentSizes = array<i32: 1, 1, 0>} : (!tile.ptr<f32>, f32) -> ()
  return
}
