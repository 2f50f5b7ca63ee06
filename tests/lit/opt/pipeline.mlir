// RUN: %tilec-opt %s --pass "tile-verify,func.func(canonicalize{max-iterations=2},cse),tile-dce" | %FileCheck %s
// RUN: %tilec-opt %s --pass tile-verify --pass canonicalize --pass tile-dce | %FileCheck %s
// RUN: %tilec-opt - --pass tile-dce < %s | %FileCheck %s --check-prefix=STDIN

// `tilec opt` runs tilec passes by name and hands everything else to MLIR's
// pass manager (nested pipelines and pass options included); --pass repeats.
// canonicalize folds the dead arith; tile-dce removes the dead tile ops.
// CHECK-LABEL: func.func @f(
// CHECK-NOT: arith.addi
// CHECK-NOT: "tile.range"
// CHECK: "tile.store"
// STDIN-NOT: "tile.range"
// STDIN: "tile.store"
func.func @f(%x: !tile.ptr<f32>, %v: f32, %a: i32) attributes {tile.kernel} {
  %r = "tile.range"() {start = 0 : i32, end = 4 : i32} : () -> tensor<4xi32>
  %s = arith.addi %a, %a : i32
  "tile.store"(%x, %v) {operandSegmentSizes = array<i32: 1, 1, 0>} : (!tile.ptr<f32>, f32) -> ()
  return
}
