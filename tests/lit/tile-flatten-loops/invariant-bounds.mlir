// RUN: %tilec-opt %s --pass tile-flatten-loops --target cpu | %FileCheck %s

// The K loop's trip count computed inside the tile loop from values defined
// outside it (`range(tl.cdiv(K, BLOCK_K))` written in the loop): the ops that
// compute it move in front of the tile loop and the nest flattens.  A bound
// that reads the tile index (@ragged_inner in not-flattened.mlir) stays.

// CHECK-LABEL: func.func @invariant_bound
// CHECK: %[[A:.*]] = arith.addi %arg1, %{{.*}} : i32
// CHECK-NEXT: %[[KT:.*]] = arith.divsi %[[A]], %{{.*}} : i32
// CHECK-NOT: tile.flatten}
// CHECK: } {tile.flattened}
func.func @invariant_bound(%n: i32, %k: i32, %x: f32) -> f32 attributes {tile.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %z = arith.constant 0.0 : f32
  %r = scf.for %t = %c0 to %n step %c1 iter_args(%s = %z) -> (f32) : i32 {
    %c63 = arith.constant 63 : i32
    %c64 = arith.constant 64 : i32
    %a = arith.addi %k, %c63 : i32
    %kt = arith.divsi %a, %c64 : i32
    %acc = scf.for %j = %c0 to %kt step %c1 iter_args(%v = %z) -> (f32) : i32 {
      %w = arith.addf %v, %x : f32
      scf.yield %w : f32
    }
    %s2 = arith.addf %s, %acc : f32
    scf.yield %s2 : f32
  } {tile.flatten}
  return %r : f32
}
