// RUN: %tilec-opt %s --pass tile-expand-fp8 --debug-info | %FileCheck %s

// fp8 storage becomes i8 everywhere (arguments, pointers, loads, layout ops);
// extf decodes the bits to f32 in integer ops, truncf rounds in integer ops.

// CHECK-LABEL: func.func @roundtrip(
// CHECK-SAME: !tile.ptr<i8>
// CHECK-SAME: !tile.ptr<i8>
// CHECK-NOT: f8E4M3FN
// CHECK: "tile.load"({{.*}} : (tensor<64x!tile.ptr<i8>>) -> tensor<64xi8>
// CHECK: arith.extui {{.*}} : tensor<64xi8> to tensor<64xi32> loc("k.py":3:9)
// e4m3fn: only S.1111.111 is NaN (0x7FF00000 = 2146435072 as torch makes it)
// CHECK: arith.constant dense<2146435072> : tensor<64xi32>
// CHECK: %[[F:.*]] = arith.bitcast {{.*}} : tensor<64xi32> to tensor<64xf32> loc("k.py":3:9)
// CHECK: arith.mulf %[[F]]
// CHECK: arith.bitcast {{.*}} : tensor<64xf32> to tensor<64xi32> loc("k.py":5:9)
// saturation at 448 (0x7E = 126), NaN code 0x7F
// CHECK: arith.constant dense<126> : tensor<64xi32>
// CHECK: arith.minui
// CHECK: arith.trunci {{.*}} : tensor<64xi32> to tensor<64xi8> loc("k.py":5:9)
// CHECK: "tile.store"({{.*}} : (tensor<64x!tile.ptr<i8>>, tensor<64xi8>) -> ()
// CHECK-NOT: f8E
func.func @roundtrip(%x: !tile.ptr<f8E4M3FN>, %y: !tile.ptr<f8E4M3FN>) attributes {tile.kernel} {
  %r = "tile.range"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32>
  %px = tensor.splat %x : tensor<64x!tile.ptr<f8E4M3FN>>
  %p = "tile.addptr"(%px, %r) : (tensor<64x!tile.ptr<f8E4M3FN>>, tensor<64xi32>) -> tensor<64x!tile.ptr<f8E4M3FN>>
  %v = "tile.load"(%p) {operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<64x!tile.ptr<f8E4M3FN>>) -> tensor<64xf8E4M3FN>
  %f = arith.extf %v : tensor<64xf8E4M3FN> to tensor<64xf32> loc("k.py":3:9)
  %g = arith.mulf %f, %f : tensor<64xf32>
  %h = arith.truncf %g : tensor<64xf32> to tensor<64xf8E4M3FN> loc("k.py":5:9)
  %py = tensor.splat %y : tensor<64x!tile.ptr<f8E4M3FN>>
  %q = "tile.addptr"(%py, %r) : (tensor<64x!tile.ptr<f8E4M3FN>>, tensor<64xi32>) -> tensor<64x!tile.ptr<f8E4M3FN>>
  "tile.store"(%q, %h) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<64x!tile.ptr<f8E4M3FN>>, tensor<64xf8E4M3FN>) -> ()
  return
}

// e5m2 keeps infinities: overflow goes to 0x7C (124).
// CHECK-LABEL: func.func @e5m2(
// CHECK: arith.constant 124 : i32
// CHECK: arith.trunci {{.*}} : i32 to i8
func.func @e5m2(%a: f32) -> f8E5M2 attributes {tile.kernel} {
  %h = arith.truncf %a : f32 to f8E5M2
  return %h : f8E5M2
}

// An fp8 dot runs on f16 operands (exact) with its f32 accumulator, the
// formats named in tile.fp8_decoded; a splat fp8 constant becomes its i8
// code (1.0 in e4m3fn = 0x38 = 56).
// CHECK-LABEL: func.func @dot(
// CHECK: arith.constant dense<56> : tensor<16x16xi8>
// CHECK: %[[A:.*]] = arith.truncf {{.*}} : tensor<16x16xf32> to tensor<16x16xf16>
// CHECK: %[[B:.*]] = arith.truncf {{.*}} : tensor<16x16xf32> to tensor<16x16xf16>
// CHECK: "tile.dot"(%[[A]], %[[B]], %arg1) {tile.fp8_decoded = ["f8E4M3FN", "f8E4M3FN"]} : (tensor<16x16xf16>, tensor<16x16xf16>, tensor<16x16xf32>)
func.func @dot(%a: tensor<16x16xf8E4M3FN>, %c: tensor<16x16xf32>) -> tensor<16x16xf32> attributes {tile.kernel} {
  %one = arith.constant dense<1.0> : tensor<16x16xf8E4M3FN>
  %d = "tile.dot"(%a, %one, %c) : (tensor<16x16xf8E4M3FN>, tensor<16x16xf8E4M3FN>, tensor<16x16xf32>) -> tensor<16x16xf32>
  return %d : tensor<16x16xf32>
}
