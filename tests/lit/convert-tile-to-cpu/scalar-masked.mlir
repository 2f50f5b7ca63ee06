// RUN: %tilec-opt %s --pass tile-verify,convert-tile-to-cpu | %FileCheck %s

// A masked load of one element is an scf.if that loads on the true branch and
// yields `other` on the false one; a masked scalar store is an scf.if too.
// CHECK-LABEL: func.func private @scalar_masked_body(
// CHECK-SAME: %[[X:[^:]*]]: !llvm.ptr, %[[OUT:[^:]*]]: !llvm.ptr, %[[N:[^:]*]]: i32, %[[PID:[^:]*]]: i32
// CHECK-NOT: tile.
// CHECK-DAG: %[[OTHER:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[P:.*]] = llvm.getelementptr %[[X]][%[[PID]]] : (!llvm.ptr, i32) -> !llvm.ptr, f32
// CHECK: %[[M:.*]] = arith.cmpi slt, %[[PID]], %[[N]] : i32
// CHECK: %[[V:.*]] = scf.if %[[M]] -> (f32) {
// CHECK-NEXT: %[[L:.*]] = llvm.load %[[P]] {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK-NEXT: scf.yield %[[L]] : f32
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[OTHER]] : f32
// CHECK-NEXT: }
// CHECK: %[[Q:.*]] = llvm.getelementptr %[[OUT]][%[[PID]]]
// CHECK: scf.if %[[M]] {
// CHECK-NEXT: llvm.store %[[V]], %[[Q]] {alignment = 4 : i64} : f32, !llvm.ptr
func.func @scalar_masked(%arg0: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %arg1: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %arg2: i32) attributes {tile.kernel} {
  %cst = arith.constant 1.000000e+00 : f32
  %0 = "tile.program_id"() {axis = 0 : i32} : () -> i32
  %1 = "tile.addptr"(%arg0, %0) : (!tile.ptr<f32>, i32) -> !tile.ptr<f32>
  %2 = arith.cmpi slt, %0, %arg2 : i32
  %3 = "tile.load"(%1, %2, %cst) {operandSegmentSizes = array<i32: 1, 1, 1>} : (!tile.ptr<f32>, i1, f32) -> f32
  %4 = "tile.addptr"(%arg1, %0) : (!tile.ptr<f32>, i32) -> !tile.ptr<f32>
  "tile.store"(%4, %3, %2) {operandSegmentSizes = array<i32: 1, 1, 1>} : (!tile.ptr<f32>, f32, i1) -> ()
  return
}
