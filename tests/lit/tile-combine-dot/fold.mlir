// RUN: %tilec-opt %s --pass tile-combine-dot --debug-info | %FileCheck %s

// acc + dot(a, b, 0) -> dot(a, b, acc): the dot's attributes and location are
// kept, the add and the old dot are gone.
// CHECK-LABEL: func.func @fold_f32(
// CHECK-NOT: arith.addf
// CHECK: %[[D:.*]] = "tile.dot"(%arg0, %arg1, %arg2) {input_precision = "ieee"} {{.*}} loc("k.py":3:12)
// CHECK-NOT: "tile.dot"
// CHECK-NOT: arith.addf
// CHECK: return %[[D]]
func.func @fold_f32(%a: tensor<16x8xf32>, %b: tensor<8x16xf32>, %acc: tensor<16x16xf32>) -> tensor<16x16xf32> attributes {tile.kernel} {
  %z = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
  %d = "tile.dot"(%a, %b, %z) {input_precision = "ieee"} : (tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("k.py":3:12)
  %s = arith.addf %acc, %d : tensor<16x16xf32> loc("k.py":3:8)
  return %s : tensor<16x16xf32>
}

// The other operand order, and a zero written as a splat of a scalar constant.
// CHECK-LABEL: func.func @fold_dot_first(
// CHECK: %[[D:.*]] = "tile.dot"(%arg0, %arg1, %arg2)
// CHECK-NOT: arith.addf
// CHECK: return %[[D]]
func.func @fold_dot_first(%a: tensor<16x16xf16>, %b: tensor<16x16xf16>, %acc: tensor<16x16xf32>) -> tensor<16x16xf32> attributes {tile.kernel} {
  %c0 = arith.constant 0.000000e+00 : f32
  %z = tensor.splat %c0 : tensor<16x16xf32>
  %d = "tile.dot"(%a, %b, %z) : (tensor<16x16xf16>, tensor<16x16xf16>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %s = arith.addf %d, %acc : tensor<16x16xf32>
  return %s : tensor<16x16xf32>
}

// Integers: addi of an i32 dot on a zero accumulator.
// CHECK-LABEL: func.func @fold_i32(
// CHECK: %[[D:.*]] = "tile.dot"(%arg0, %arg1, %arg2)
// CHECK-NOT: arith.addi
// CHECK: return %[[D]]
func.func @fold_i32(%a: tensor<16x16xi8>, %b: tensor<16x16xi8>, %acc: tensor<16x16xi32>) -> tensor<16x16xi32> attributes {tile.kernel} {
  %z = arith.constant dense<0> : tensor<16x16xi32>
  %d = "tile.dot"(%a, %b, %z) : (tensor<16x16xi8>, tensor<16x16xi8>, tensor<16x16xi32>) -> tensor<16x16xi32>
  %s = arith.addi %acc, %d : tensor<16x16xi32>
  return %s : tensor<16x16xi32>
}

// A K loop: the dot accumulates into the loop-carried tile.
// CHECK-LABEL: func.func @fold_loop(
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}})
// CHECK-NEXT: %[[D:.*]] = "tile.dot"(%arg0, %arg1, %[[ACC]])
// CHECK-NEXT: scf.yield %[[D]]
func.func @fold_loop(%a: tensor<16x16xf16>, %b: tensor<16x16xf16>, %n: i32) -> tensor<16x16xf32> attributes {tile.kernel} {
  %z = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (tensor<16x16xf32>) : i32 {
    %d = "tile.dot"(%a, %b, %z) : (tensor<16x16xf16>, tensor<16x16xf16>, tensor<16x16xf32>) -> tensor<16x16xf32>
    %s = arith.addf %acc, %d : tensor<16x16xf32>
    scf.yield %s : tensor<16x16xf32>
  }
  return %r : tensor<16x16xf32>
}

// Not folded: a nonzero accumulator (1.0, and -0.0, which is not +0.0).
// CHECK-LABEL: func.func @nonzero_acc(
// CHECK: "tile.dot"(%arg0, %arg1, %{{.*}})
// CHECK: arith.addf
// CHECK: "tile.dot"(%arg0, %arg1, %{{.*}})
// CHECK: arith.addf
func.func @nonzero_acc(%a: tensor<16x16xf32>, %b: tensor<16x16xf32>, %acc: tensor<16x16xf32>) -> (tensor<16x16xf32>, tensor<16x16xf32>) attributes {tile.kernel} {
  %one = arith.constant dense<1.000000e+00> : tensor<16x16xf32>
  %d = "tile.dot"(%a, %b, %one) : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %s = arith.addf %acc, %d : tensor<16x16xf32>
  %nz = arith.constant dense<-0.000000e+00> : tensor<16x16xf32>
  %d2 = "tile.dot"(%a, %b, %nz) : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %s2 = arith.addf %acc, %d2 : tensor<16x16xf32>
  return %s, %s2 : tensor<16x16xf32>, tensor<16x16xf32>
}

// Not folded: a dot accumulating into a function argument (not a constant).
// CHECK-LABEL: func.func @acc_argument(
// CHECK: "tile.dot"(%arg0, %arg1, %arg3)
// CHECK: arith.addf %arg2
func.func @acc_argument(%a: tensor<16x16xf32>, %b: tensor<16x16xf32>, %acc: tensor<16x16xf32>, %c: tensor<16x16xf32>) -> tensor<16x16xf32> attributes {tile.kernel} {
  %d = "tile.dot"(%a, %b, %c) : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %s = arith.addf %acc, %d : tensor<16x16xf32>
  return %s : tensor<16x16xf32>
}

// Not folded: the dot's result has a second use.
// CHECK-LABEL: func.func @two_uses(
// CHECK: %[[D:.*]] = "tile.dot"(%arg0, %arg1, %{{.*}})
// CHECK: %[[S:.*]] = arith.addf %arg2, %[[D]]
// CHECK: return %[[S]], %[[D]]
func.func @two_uses(%a: tensor<16x16xf32>, %b: tensor<16x16xf32>, %acc: tensor<16x16xf32>) -> (tensor<16x16xf32>, tensor<16x16xf32>) attributes {tile.kernel} {
  %z = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
  %d = "tile.dot"(%a, %b, %z) : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %s = arith.addf %acc, %d : tensor<16x16xf32>
  return %s, %d : tensor<16x16xf32>, tensor<16x16xf32>
}

// Not folded: an out_dtype=fp16 dot (f32 sum, then truncf) added to an f16
// tile, and its f16 result widened and added to an f32 tile: the add's
// operand is a conversion, not the dot.
// CHECK-LABEL: func.func @type_mismatch(
// CHECK: "tile.dot"
// CHECK: arith.truncf
// CHECK: arith.addf
// CHECK: "tile.dot"
// CHECK: arith.extf
// CHECK: arith.addf
func.func @type_mismatch(%a: tensor<16x16xf16>, %b: tensor<16x16xf16>, %acc16: tensor<16x16xf16>, %acc: tensor<16x16xf32>) -> (tensor<16x16xf16>, tensor<16x16xf32>) attributes {tile.kernel} {
  %z = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
  %d = "tile.dot"(%a, %b, %z) : (tensor<16x16xf16>, tensor<16x16xf16>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %t = arith.truncf %d : tensor<16x16xf32> to tensor<16x16xf16>
  %s = arith.addf %acc16, %t : tensor<16x16xf16>
  %d2 = "tile.dot"(%a, %b, %z) : (tensor<16x16xf16>, tensor<16x16xf16>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %t2 = arith.truncf %d2 : tensor<16x16xf32> to tensor<16x16xf16>
  %w = arith.extf %t2 : tensor<16x16xf16> to tensor<16x16xf32>
  %s2 = arith.addf %acc, %w : tensor<16x16xf32>
  return %s, %s2 : tensor<16x16xf16>, tensor<16x16xf32>
}

// Not folded: the dot is outside the loop that adds its result (folding would
// move the dot into the loop).
// CHECK-LABEL: func.func @other_block(
// CHECK: %[[D:.*]] = "tile.dot"
// CHECK: scf.for
// CHECK: arith.addf %{{.*}}, %[[D]]
func.func @other_block(%a: tensor<16x16xf16>, %b: tensor<16x16xf16>, %n: i32) -> tensor<16x16xf32> attributes {tile.kernel} {
  %z = arith.constant dense<0.000000e+00> : tensor<16x16xf32>
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %d = "tile.dot"(%a, %b, %z) : (tensor<16x16xf16>, tensor<16x16xf16>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (tensor<16x16xf32>) : i32 {
    %s = arith.addf %acc, %d : tensor<16x16xf32>
    scf.yield %s : tensor<16x16xf32>
  }
  return %r : tensor<16x16xf32>
}
