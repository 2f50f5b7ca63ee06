// RUN: %tilec-opt %s --split-input-file --target sm90 --pass tile-loop-pointers | %FileCheck %s
// RUN: %tilec-opt %s --split-input-file --target sm100 --pass tile-loop-pointers | %FileCheck %s --check-prefix=OFF

// A pointer tile advanced by a scalar step each iteration: the loop carries the
// scalar base, the tile is rebuilt at the top of the body and after the loop.

// Without Feature.LOOP_SCALAR_BASES (sm100) the loop keeps its pointer tile.
// OFF-LABEL: func.func @walk
// OFF: scf.for {{.*}} -> (tensor<16xf32>, tensor<16x!tile.ptr<f32>>)

// CHECK-LABEL: func.func @walk
// CHECK: %[[OFFS:.*]] = "tile.range"
// CHECK: %[[R:.*]]:2 = scf.for %{{.*}} = %{{.*}} to %arg2 step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}, %[[B:.*]] = %arg0) -> (tensor<16xf32>, !tile.ptr<f32>)
// CHECK-NEXT: %[[S:.*]] = tensor.splat %[[B]] : tensor<16x!tile.ptr<f32>>
// CHECK-NEXT: %[[P:.*]] = "tile.addptr"(%[[S]], %[[OFFS]])
// CHECK: "tile.load"(%[[P]])
// CHECK: %[[NB:.*]] = "tile.addptr"(%[[B]], %arg3) : (!tile.ptr<f32>, i32) -> !tile.ptr<f32>
// CHECK: scf.yield %{{.*}}, %[[NB]] : tensor<16xf32>, !tile.ptr<f32>
// CHECK: %[[S2:.*]] = tensor.splat %[[R]]#1 : tensor<16x!tile.ptr<f32>>
// CHECK: %[[P2:.*]] = "tile.addptr"(%[[S2]], %[[OFFS]])
// CHECK: "tile.load"(%[[P2]])

module {
  func.func @walk(%arg0: !tile.ptr<f32>, %arg1: !tile.ptr<f32>, %arg2: i32, %arg3: i32) attributes {tile.kernel} {
    %0 = "tile.range"() {end = 16 : i32, start = 0 : i32} : () -> tensor<16xi32>
    %s = tensor.splat %arg0 : tensor<16x!tile.ptr<f32>>
    %p0 = "tile.addptr"(%s, %0) : (tensor<16x!tile.ptr<f32>>, tensor<16xi32>) -> tensor<16x!tile.ptr<f32>>
    %cst = arith.constant dense<0.000000e+00> : tensor<16xf32>
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %r:2 = scf.for %i = %c0 to %arg2 step %c1 iter_args(%acc = %cst, %p = %p0) -> (tensor<16xf32>, tensor<16x!tile.ptr<f32>>) : i32 {
      %x = "tile.load"(%p) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<16x!tile.ptr<f32>>) -> tensor<16xf32>
      %a = arith.addf %acc, %x : tensor<16xf32>
      %d = tensor.splat %arg3 : tensor<16xi32>
      %q = "tile.addptr"(%p, %d) : (tensor<16x!tile.ptr<f32>>, tensor<16xi32>) -> tensor<16x!tile.ptr<f32>>
      scf.yield %a, %q : tensor<16xf32>, tensor<16x!tile.ptr<f32>>
    }
    %y = "tile.load"(%r#1) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<16x!tile.ptr<f32>>) -> tensor<16xf32>
    return
  }
}

// -----

// The stepped tile is also read inside the loop: not rewritten.

// CHECK-LABEL: func.func @used_twice
// CHECK: scf.for {{.*}} -> (tensor<16x!tile.ptr<f32>>)

module {
  func.func @used_twice(%arg0: !tile.ptr<f32>, %arg2: i32, %arg3: i32) attributes {tile.kernel} {
    %0 = "tile.range"() {end = 16 : i32, start = 0 : i32} : () -> tensor<16xi32>
    %s = tensor.splat %arg0 : tensor<16x!tile.ptr<f32>>
    %p0 = "tile.addptr"(%s, %0) : (tensor<16x!tile.ptr<f32>>, tensor<16xi32>) -> tensor<16x!tile.ptr<f32>>
    %c0 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %r = scf.for %i = %c0 to %arg2 step %c1 iter_args(%p = %p0) -> (tensor<16x!tile.ptr<f32>>) : i32 {
      %d = tensor.splat %arg3 : tensor<16xi32>
      %q = "tile.addptr"(%p, %d) : (tensor<16x!tile.ptr<f32>>, tensor<16xi32>) -> tensor<16x!tile.ptr<f32>>
      %x = "tile.load"(%q) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<16x!tile.ptr<f32>>) -> tensor<16xf32>
      scf.yield %q : tensor<16x!tile.ptr<f32>>
    }
    return
  }
}
