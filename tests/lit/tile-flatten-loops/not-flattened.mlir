// RUN: %tilec-opt %s --pass tile-flatten-loops --target cpu | %FileCheck %s

// A loop whose body holds two inner loops keeps its nest and its attribute;
// so does one whose inner bounds depend on the tile.

// CHECK-LABEL: func.func @two_inner
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// CHECK: } {tile.flatten}
// CHECK-NOT: tile.flattened
func.func @two_inner(%n: i32) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  scf.for %t = %c0 to %n step %c1 : i32 {
    scf.for %k = %c0 to %n step %c1 : i32 {
    }
    scf.for %k = %c0 to %n step %c1 : i32 {
    }
  } {tile.flatten}
  return
}

// CHECK-LABEL: func.func @ragged_inner
// CHECK: scf.for
// CHECK: scf.for
// CHECK: } {tile.flatten}
// CHECK-NOT: tile.flattened
func.func @ragged_inner(%n: i32) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  scf.for %t = %c0 to %n step %c1 : i32 {
    %u = arith.addi %t, %c1 : i32
    scf.for %k = %c0 to %u step %c1 : i32 {
    }
  } {tile.flatten}
  return
}
