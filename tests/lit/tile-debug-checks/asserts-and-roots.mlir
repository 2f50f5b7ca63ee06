// RUN: %tilec-opt %s --split-input-file --pass tile-debug-checks --debug | %FileCheck %s
// RUN: %tilec-opt %s --split-input-file --pass tile-debug-checks | %FileCheck %s --check-prefix=OFF

// tile.assert: in debug mode the first false element's flat index (row-major,
// here row * 4 + col of a 2x4 tile) goes into the record; reductions run over
// each axis in turn.  Debug off: the assert is erased, its condition stays
// for tile-dce.

// CHECK-LABEL: func.func @check(
// CHECK-NOT: tile.assert
// CHECK: %[[BAD:.*]] = arith.xori %{{.*}}, %{{.*}} : tensor<2x4xi1>
// CHECK: "tile.range"() {end = 4 : i32, start = 0 : i32}
// CHECK: "tile.range"() {end = 2 : i32, start = 0 : i32}
// CHECK: arith.muli %{{.*}}, %{{.*}} : tensor<2x4xi64>
// CHECK: %[[IDX:.*]] = arith.addi %{{.*}}, %{{.*}} : tensor<2x4xi64>
// CHECK: arith.select %[[BAD]], %[[IDX]]
// CHECK: "tile.reduce"({{.*}}) {axis = 1 : i32, combine = @__tilec_debug_min_i64{{.*}} -> tensor<2xi64>
// CHECK: "tile.reduce"({{.*}}) {axis = 0 : i32, combine = @__tilec_debug_min_i64{{.*}} -> i64
// CHECK: "tile.debug_trap"({{.*}}) {message = "x must be positive"}
// CHECK-NOT: tile.assert
// CHECK: return

// OFF-LABEL: func.func @check(
// OFF: arith.cmpf
// OFF-NOT: tile.assert
// OFF-NOT: debug_trap
// OFF: return
func.func @check(%x: tensor<2x4xf32>) attributes {tile.kernel} {
  %z = arith.constant dense<0.0> : tensor<2x4xf32>
  %c = arith.cmpf ogt, %x, %z : tensor<2x4xf32>
  "tile.assert"(%c) {message = "x must be positive"} : (tensor<2x4xi1>) -> ()
  return
}

// -----

// Roots: a pointer carried through a loop is checked against the argument it
// started from (a's extent); an atomic_cas (no mask) sends the elements
// outside to the scratch word; a pointer made from an integer (int_to_ptr)
// has no argument and is not checked.

// CHECK-LABEL: func.func @roots(
// CHECK-SAME: %[[A:[^:]*]]: !tile.ptr<f32>
// CHECK-SAME: %[[ALO:[^:]*]]: i64 {tile.name = "__debug_lo_a"}
// CHECK: scf.for
// CHECK: tensor.splat %[[ALO]]
// CHECK: "tile.debug_trap"({{.*}}) {message = "out-of-bounds load of 'a'"}
// CHECK: "tile.load"
// CHECK: scf.yield
// CHECK: "tile.debug_trap"({{.*}}) {message = "out-of-bounds atomic of 'a'"}
// CHECK: %[[SAFE:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : i64
// CHECK: %[[SP:.*]] = "tile.int_to_ptr"(%[[SAFE]]) : (i64) -> !tile.ptr<f32>
// CHECK: "tile.atomic_cas"(%[[SP]],
// CHECK: %[[Q:.*]] = "tile.int_to_ptr"(%{{.*}}) : (i64) -> !tile.ptr<f32>
// CHECK-NOT: debug_trap
// CHECK: "tile.store"(%[[Q]]
// CHECK-NOT: debug_trap
// CHECK: return
func.func @roots(%a: !tile.ptr<f32> {tile.name = "a"}, %addr: i64 {tile.name = "addr"}, %n: i32 {tile.name = "n"}) attributes {tile.kernel} {
  %r = "tile.range"() {start = 0 : i32, end = 8 : i32} : () -> tensor<8xi32>
  %pa = tensor.splat %a : tensor<8x!tile.ptr<f32>>
  %p0 = "tile.addptr"(%pa, %r) : (tensor<8x!tile.ptr<f32>>, tensor<8xi32>) -> tensor<8x!tile.ptr<f32>>
  %acc0 = arith.constant dense<0.0> : tensor<8xf32>
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c8 = arith.constant dense<8> : tensor<8xi32>
  %res:2 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %acc0, %p = %p0) -> (tensor<8xf32>, tensor<8x!tile.ptr<f32>>) : i32 {
    %v = "tile.load"(%p) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<8x!tile.ptr<f32>>) -> tensor<8xf32>
    %s = arith.addf %acc, %v : tensor<8xf32>
    %pn = "tile.addptr"(%p, %c8) : (tensor<8x!tile.ptr<f32>>, tensor<8xi32>) -> tensor<8x!tile.ptr<f32>>
    scf.yield %s, %pn : tensor<8xf32>, tensor<8x!tile.ptr<f32>>
  }
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %old = "tile.atomic_cas"(%a, %zero, %one) : (!tile.ptr<f32>, f32, f32) -> f32
  %q = "tile.int_to_ptr"(%addr) : (i64) -> !tile.ptr<f32>
  "tile.store"(%q, %one) {operandSegmentSizes = array<i32: 1, 1, 0>} : (!tile.ptr<f32>, f32) -> ()
  return
}
