// RUN: %tilec-opt %s --pass tile-layout --target sm90 --num-warps 4 | %FileCheck %s --check-prefix=SM90
// RUN: %tilec-opt %s --pass tile-layout --target gfx942 --num-warps 4 | %FileCheck %s --check-prefix=GFX942
// RUN: %tilec-opt %s --pass tile-layout --target gfx1100 --num-warps 8 | %FileCheck %s --check-prefix=GFX1100

// Vector add: one layout for the whole kernel, 16-byte chunks per thread
// (4 x f32), lanes = the target's warp size, warps = num_warps.

// SM90-LABEL: func.func @add
// SM90: "tile.range"() {{.*}} -> tensor<1024xi32, #tile.blocked<array<i32: 4>, array<i32: 32>, array<i32: 4>, array<i32: 0>>>
// SM90: "tile.load"{{.*}} -> tensor<1024xf32, #tile.blocked<array<i32: 4>, array<i32: 32>, array<i32: 4>, array<i32: 0>>>
// SM90: arith.addf {{.*}} : tensor<1024xf32, #tile.blocked<array<i32: 4>, array<i32: 32>, array<i32: 4>, array<i32: 0>>>
// SM90-NOT: tile.convert_layout
// GFX942: tensor<1024xf32, #tile.blocked<array<i32: 4>, array<i32: 64>, array<i32: 4>, array<i32: 0>>>
// GFX1100: tensor<1024xf32, #tile.blocked<array<i32: 4>, array<i32: 32>, array<i32: 8>, array<i32: 0>>>

func.func @add(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %y: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %o: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %n: i32 {tile.divisibility = 16 : i32}) attributes {tile.kernel} {
  %0 = "tile.program_id"() {axis = 0 : i32} : () -> i32 loc("add.py":5:10)
  %c = arith.constant 1024 : i32 loc("add.py":6:20)
  %1 = arith.muli %0, %c : i32 loc("add.py":6:10)
  %2 = "tile.range"() {start = 0 : i32, end = 1024 : i32} : () -> tensor<1024xi32> loc("add.py":6:25)
  %3 = tensor.splat %1 : tensor<1024xi32> loc("add.py":6:10)
  %4 = arith.addi %3, %2 : tensor<1024xi32> loc("add.py":6:10)
  %5 = tensor.splat %n : tensor<1024xi32> loc("add.py":7:18)
  %6 = arith.cmpi slt, %4, %5 : tensor<1024xi32> loc("add.py":7:11)
  %7 = tensor.splat %x : tensor<1024x!tile.ptr<f32>> loc("add.py":8:8)
  %8 = "tile.addptr"(%7, %4) : (tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>) -> tensor<1024x!tile.ptr<f32>> loc("add.py":8:8)
  %9 = "tile.load"(%8, %6) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1024x!tile.ptr<f32>>, tensor<1024xi1>) -> tensor<1024xf32> loc("add.py":8:8)
  %10 = tensor.splat %y : tensor<1024x!tile.ptr<f32>> loc("add.py":9:8)
  %11 = "tile.addptr"(%10, %4) : (tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>) -> tensor<1024x!tile.ptr<f32>> loc("add.py":9:8)
  %12 = "tile.load"(%11, %6) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1024x!tile.ptr<f32>>, tensor<1024xi1>) -> tensor<1024xf32> loc("add.py":9:8)
  %s = arith.addf %9, %12 : tensor<1024xf32> loc("add.py":10:8)
  %13 = tensor.splat %o : tensor<1024x!tile.ptr<f32>> loc("add.py":11:4)
  %14 = "tile.addptr"(%13, %4) : (tensor<1024x!tile.ptr<f32>>, tensor<1024xi32>) -> tensor<1024x!tile.ptr<f32>> loc("add.py":11:4)
  "tile.store"(%14, %s, %6) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<1024x!tile.ptr<f32>>, tensor<1024xf32>, tensor<1024xi1>) -> () loc("add.py":11:4)
  return loc("add.py":11:4)
} loc("add.py":3:0)
