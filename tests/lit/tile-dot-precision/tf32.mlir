// RUN: %tilec-opt %s --pass tile-dot-precision --debug-info | %FileCheck %s

// "ieee" dots (or none) are left alone.
// CHECK-LABEL: func.func @ieee(
// CHECK-NOT: arith.bitcast
// CHECK: "tile.dot"(%arg0, %arg1, %arg2) {input_precision = "ieee"}
func.func @ieee(%a: tensor<16x16xf32>, %b: tensor<16x16xf32>, %c: tensor<16x16xf32>) -> tensor<16x16xf32> attributes {tile.kernel} {
  %d = "tile.dot"(%a, %b, %c) {input_precision = "ieee"} : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  return %d : tensor<16x16xf32>
}

// "tf32": each operand rounded to 10 mantissa bits, ties away from zero
// ((bits + 0x1000) & 0xFFFFE000; 0xFFFFE000 = -8192), inf/NaN kept.
// CHECK-LABEL: func.func @tf32(
// CHECK: %[[AB:.*]] = arith.bitcast %arg0 : tensor<16x8xf32> to tensor<16x8xi32> loc("k.py":7:9)
// CHECK: %[[H:.*]] = arith.constant dense<4096> : tensor<16x8xi32>
// CHECK: %[[S:.*]] = arith.addi %[[AB]], %[[H]]
// CHECK: %[[M:.*]] = arith.constant dense<-8192> : tensor<16x8xi32>
// CHECK: %[[R:.*]] = arith.andi %[[S]], %[[M]]
// CHECK: %[[E:.*]] = arith.constant dense<2139095040> : tensor<16x8xi32>
// CHECK: %[[X:.*]] = arith.andi %[[AB]], %[[E]]
// CHECK: %[[SP:.*]] = arith.cmpi eq, %[[X]]
// CHECK: %[[SEL:.*]] = arith.select %[[SP]], %[[AB]], %[[R]]
// CHECK: %[[A:.*]] = arith.bitcast %[[SEL]] : tensor<16x8xi32> to tensor<16x8xf32>
// CHECK: %[[B:.*]] = arith.bitcast %{{.*}} : tensor<8x16xi32> to tensor<8x16xf32>
// CHECK: "tile.dot"(%[[A]], %[[B]], %arg2) {input_precision = "tf32"} {{.*}} loc("k.py":7:9)
// CHECK-NOT: "tile.dot"
func.func @tf32(%a: tensor<16x8xf32>, %b: tensor<8x16xf32>, %c: tensor<16x16xf32>) -> tensor<16x16xf32> attributes {tile.kernel} {
  %d = "tile.dot"(%a, %b, %c) {input_precision = "tf32"} : (tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32> loc("k.py":7:9)
  return %d : tensor<16x16xf32>
}

// "tf32x3": big = tf32(x), small = tf32(x - big); small_a @ big_b, then
// big_a @ small_b, then big_a @ big_b, each a "tf32" dot on the running sum.
// CHECK-LABEL: func.func @tf32x3(
// CHECK: %[[BA:.*]] = arith.bitcast {{.*}} : tensor<16x16xi32> to tensor<16x16xf32>
// CHECK: %[[BB:.*]] = arith.bitcast {{.*}} : tensor<16x16xi32> to tensor<16x16xf32>
// CHECK: arith.subf %arg0, %[[BA]]
// CHECK: %[[SA:.*]] = arith.bitcast {{.*}} : tensor<16x16xi32> to tensor<16x16xf32>
// CHECK: arith.subf %arg1, %[[BB]]
// CHECK: %[[SB:.*]] = arith.bitcast {{.*}} : tensor<16x16xi32> to tensor<16x16xf32>
// CHECK: %[[D1:.*]] = "tile.dot"(%[[SA]], %[[BB]], %arg2) {input_precision = "tf32"}
// CHECK: %[[D2:.*]] = "tile.dot"(%[[BA]], %[[SB]], %[[D1]]) {input_precision = "tf32"}
// CHECK: %[[D3:.*]] = "tile.dot"(%[[BA]], %[[BB]], %[[D2]]) {input_precision = "tf32"}
// CHECK: return %[[D3]]
func.func @tf32x3(%a: tensor<16x16xf32>, %b: tensor<16x16xf32>, %c: tensor<16x16xf32>) -> tensor<16x16xf32> attributes {tile.kernel} {
  %d = "tile.dot"(%a, %b, %c) {input_precision = "tf32x3"} : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  return %d : tensor<16x16xf32>
}
