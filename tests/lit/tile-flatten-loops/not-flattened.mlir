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

// A K loop that carries pointers (`ptrs += BLOCK_K`) keeps its nest (fused,
// the pipeliner could not prefetch its loads) and the loop says why.
// CHECK-LABEL: func.func @carried_pointers
// CHECK: scf.for
// CHECK: scf.for
// CHECK: } {tile.flatten, tile.flatten_note = "not flattened: the K loop carries pointers
// CHECK-NOT: tile.flattened
func.func @carried_pointers(%n: i32, %pa: tensor<8x!tile.ptr<f32>>, %c8: tensor<8xi32>) attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  scf.for %t = %c0 to %n step %c1 : i32 {
    %q = scf.for %k = %c0 to %n step %c1 iter_args(%p = %pa) -> (tensor<8x!tile.ptr<f32>>) : i32 {
      %pn = "tile.addptr"(%p, %c8) : (tensor<8x!tile.ptr<f32>>, tensor<8xi32>) -> tensor<8x!tile.ptr<f32>>
      scf.yield %pn : tensor<8x!tile.ptr<f32>>
    }
  } {tile.flatten}
  return
}
