// RUN: %tilec-opt %s --pass tile-debug-checks --debug --debug-info | %FileCheck %s
// RUN: %tilec-opt %s --pass tile-debug-checks | %FileCheck %s --check-prefix=OFF

// Debug on: the kernel gets lo/hi per pointer argument and the error record;
// the masked load is checked where its mask is true, the unmasked store
// everywhere; both then leave out the elements outside (the load's mask is
// and-ed with the check, the store gets the check as its mask) and keep
// their pointers; every new op carries the access's location.

// CHECK: module attributes {tile.debug_sites = "[{{.*}}load of 'x'{{.*}}store of 'out'{{.*}}]"}
// CHECK: func.func private @__tilec_debug_min_i64
// CHECK: arith.minsi
// CHECK-LABEL: func.func @copy(
// CHECK-SAME: %[[X:[^:]*]]: !tile.ptr<f32>
// CHECK-SAME: %[[OUT:[^:]*]]: !tile.ptr<f32>
// CHECK-SAME: %[[XLO:[^:]*]]: i64 {tile.name = "__debug_lo_x"}
// CHECK-SAME: %[[XHI:[^:]*]]: i64 {tile.name = "__debug_hi_x"}
// CHECK-SAME: i64 {tile.name = "__debug_lo_out"}
// CHECK-SAME: i64 {tile.name = "__debug_hi_out"}
// CHECK-SAME: %[[ERR:[^:]*]]: !tile.ptr<i64> {tile.name = "__debug_error"}
// CHECK: %[[ADDR:.*]] = "tile.ptr_to_int"(%[[P:.*]]) : (tensor<8x!tile.ptr<f32>>) -> tensor<8xi64> loc("k.py":3:7)
// CHECK: %[[END:.*]] = arith.addi %[[ADDR]], %{{.*}} : tensor<8xi64> loc("k.py":3:7)
// CHECK: %[[SLO:.*]] = tensor.splat %[[XLO]]
// CHECK: %[[GE:.*]] = arith.cmpi sge, %[[ADDR]], %[[SLO]]
// CHECK: %[[SHI:.*]] = tensor.splat %[[XHI]]
// CHECK: %[[LE:.*]] = arith.cmpi sle, %[[END]], %[[SHI]]
// CHECK: %[[OK:.*]] = arith.andi %[[GE]], %[[LE]]
// CHECK: %[[NOTOK:.*]] = arith.xori %[[OK]]
// CHECK: %[[BAD:.*]] = arith.andi %[[NOTOK]], %[[M:[^ ]*]] : tensor<8xi1>
// CHECK: arith.divsi
// CHECK: %[[FIRST:.*]] = "tile.reduce"({{.*}}) {axis = 0 : i32, combine = @__tilec_debug_min_i64
// CHECK: %[[FAILED:.*]] = arith.cmpi ne, %[[FIRST]]
// CHECK: scf.if %[[FAILED]] {
// CHECK: %[[OLD:.*]] = "tile.atomic_cas"(%[[ERR]], %{{.*}}, %{{.*}}) : (!tile.ptr<i64>, i64, i64) -> i64
// CHECK: "tile.store"
// CHECK: "tile.debug_trap"({{.*}}, %[[FIRST]]) {message = "out-of-bounds load of 'x'"} : (i32, i32, i32, i64) -> () loc("k.py":3:7)
// CHECK: }
// CHECK: %[[NM:.*]] = arith.andi %[[M]], %[[OK]] : tensor<8xi1> loc("k.py":3:7)
// CHECK: "tile.load"(%[[P]], %[[NM]]) {operandSegmentSizes = array<i32: 1, 1, 0>}
// CHECK: "tile.debug_trap"({{.*}}) {message = "out-of-bounds store of 'out'"}
// CHECK: }
// CHECK-NOT: arith.andi
// CHECK: "tile.store"(%[[Q:[^,]*]], %{{.*}}, %[[SOK:[^)]*]]) {operandSegmentSizes = array<i32: 1, 1, 1>}

// Debug off: nothing changes.
// OFF-LABEL: func.func @copy(
// OFF-SAME: %{{[^:]*}}: !tile.ptr<f32> {tile.name = "x"}, %{{[^:]*}}: !tile.ptr<f32> {tile.name = "out"}) attributes
// OFF-NOT: ptr_to_int
// OFF-NOT: debug_trap
// OFF: return
func.func @copy(%x: !tile.ptr<f32> {tile.name = "x"}, %out: !tile.ptr<f32> {tile.name = "out"}) attributes {tile.kernel} {
  %r = "tile.range"() {start = 0 : i32, end = 8 : i32} : () -> tensor<8xi32>
  %c5 = arith.constant dense<5> : tensor<8xi32>
  %m = arith.cmpi slt, %r, %c5 : tensor<8xi32>
  %px = tensor.splat %x : tensor<8x!tile.ptr<f32>>
  %p = "tile.addptr"(%px, %r) : (tensor<8x!tile.ptr<f32>>, tensor<8xi32>) -> tensor<8x!tile.ptr<f32>>
  %v = "tile.load"(%p, %m) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<8x!tile.ptr<f32>>, tensor<8xi1>) -> tensor<8xf32> loc("k.py":3:7)
  %po = tensor.splat %out : tensor<8x!tile.ptr<f32>>
  %q = "tile.addptr"(%po, %r) : (tensor<8x!tile.ptr<f32>>, tensor<8xi32>) -> tensor<8x!tile.ptr<f32>>
  "tile.store"(%q, %v) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<8x!tile.ptr<f32>>, tensor<8xf32>) -> () loc("k.py":4:3)
  return
}
