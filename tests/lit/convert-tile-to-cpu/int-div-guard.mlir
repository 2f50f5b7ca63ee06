// RUN: %tilec-opt %s --pass tile-verify,convert-tile-to-cpu | %FileCheck %s

// x86 traps on division by zero (and INT_MIN / -1), even in a masked-off lane:
// the divisor goes through an arith.select that replaces 0 (and -1 where the
// dividend is INT_MIN) with 1 before arith.divsi / arith.remsi; unsigned
// division only guards zero.
// CHECK-LABEL: func.func private @intdiv_body(
// CHECK-SAME: %[[A:[^:]*]]: vector<8xi32>, %[[B:[^:]*]]: vector<8xi32>
// CHECK-NOT: tile.
// CHECK: %[[Z:.*]] = arith.cmpi eq, %[[B]], %{{.*}} : vector<8xi32>
// CHECK: %[[MIN:.*]] = arith.cmpi eq, %[[A]], %{{.*}} : vector<8xi32>
// CHECK: %[[NEG:.*]] = arith.cmpi eq, %[[B]], %{{.*}} : vector<8xi32>
// CHECK: %[[OVF:.*]] = arith.andi %[[MIN]], %[[NEG]] : vector<8xi1>
// CHECK: %[[BAD:.*]] = arith.ori %[[Z]], %[[OVF]] : vector<8xi1>
// CHECK: %[[SAFE:.*]] = arith.select %[[BAD]], %{{.*}}, %[[B]] : vector<8xi1>, vector<8xi32>
// CHECK-NEXT: arith.divsi %[[A]], %[[SAFE]] : vector<8xi32>
// CHECK: %[[SAFE2:.*]] = arith.select %{{.*}}, %{{.*}}, %[[B]] : vector<8xi1>, vector<8xi32>
// CHECK-NEXT: arith.remsi %[[A]], %[[SAFE2]] : vector<8xi32>
// CHECK: %[[UZ:.*]] = arith.cmpi eq, %[[B]], %{{.*}} : vector<8xi32>
// CHECK-NEXT: %[[ONE:.*]] = arith.constant dense<1> : vector<8xi32>
// CHECK-NEXT: %[[SAFE3:.*]] = arith.select %[[UZ]], %[[ONE]], %[[B]] : vector<8xi1>, vector<8xi32>
// CHECK-NEXT: arith.divui %[[A]], %[[SAFE3]] : vector<8xi32>
// Scalars are guarded the same way.
// CHECK: %[[SB:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: arith.divsi %{{.*}}, %[[SB]] : i32
func.func @intdiv(%a: tensor<8xi32>, %b: tensor<8xi32>, %s: i32, %t: i32, %out: !tile.ptr<i32> {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %q = arith.divsi %a, %b : tensor<8xi32>
  %r = arith.remsi %a, %b : tensor<8xi32>
  %u = arith.divui %a, %b : tensor<8xi32>
  %sq = arith.divsi %s, %t : i32
  %x = arith.addi %q, %r : tensor<8xi32>
  %y = arith.addi %x, %u : tensor<8xi32>
  %i = "tile.range"() {end = 8 : i32, start = 0 : i32} : () -> tensor<8xi32>
  %p0 = tensor.splat %out : tensor<8x!tile.ptr<i32>>
  %p = "tile.addptr"(%p0, %i) : (tensor<8x!tile.ptr<i32>>, tensor<8xi32>) -> tensor<8x!tile.ptr<i32>>
  "tile.store"(%p, %y) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<8x!tile.ptr<i32>>, tensor<8xi32>) -> ()
  "tile.store"(%out, %sq) {operandSegmentSizes = array<i32: 1, 1, 0>} : (!tile.ptr<i32>, i32) -> ()
  return
}
