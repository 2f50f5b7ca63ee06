// RUN: %tilec-opt %s --pass tile-layout --target sm90 | %FileCheck %s
// RUN: %tilec-opt %s --pass tile-layout --target gfx942 | %FileCheck %s --check-prefix=AMD

// A 64x64 row-major tile of a strided matrix: rows are contiguous along dim 1
// (order [1, 0]), 4 x f32 per thread, a warp covers 2 x 64 (4 x 64 with wave64);
// the 1-D row and column indices get slice layouts of the same parent, so
// expand_dims and broadcast need no data movement.

// CHECK-LABEL: func.func @scale
// CHECK: "tile.range"() {{.*}} -> tensor<64xi32, #tile.slice<1 : i32, #tile.blocked<array<i32: 1, 4>, array<i32: 2, 16>, array<i32: 4, 1>, array<i32: 1, 0>>>>
// CHECK: "tile.range"() {{.*}} -> tensor<64xi32, #tile.slice<0 : i32, #tile.blocked<array<i32: 1, 4>, array<i32: 2, 16>, array<i32: 4, 1>, array<i32: 1, 0>>>>
// CHECK: "tile.expand_dims"({{.*}}) {axis = 1 : i32} : (tensor<64xi32, #tile.slice<1 : i32, {{.*}}>>) -> tensor<64x1xi32, #tile.blocked<array<i32: 1, 4>, array<i32: 2, 16>, array<i32: 4, 1>, array<i32: 1, 0>>>
// CHECK: "tile.broadcast"({{.*}}) -> tensor<64x64xi32, #tile.blocked<array<i32: 1, 4>, array<i32: 2, 16>, array<i32: 4, 1>, array<i32: 1, 0>>>
// CHECK: "tile.load"{{.*}} -> tensor<64x64xf32, #tile.blocked<array<i32: 1, 4>, array<i32: 2, 16>, array<i32: 4, 1>, array<i32: 1, 0>>>
// CHECK-NOT: tile.convert_layout
// AMD: tensor<64x64xf32, #tile.blocked<array<i32: 1, 4>, array<i32: 4, 16>, array<i32: 4, 1>, array<i32: 1, 0>>>

func.func @scale(%x: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %o: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %m: i32, %n: i32 {tile.divisibility = 16 : i32}, %stride: i32 {tile.divisibility = 16 : i32}, %alpha: f32) attributes {tile.kernel} {
  %pm = "tile.program_id"() {axis = 0 : i32} : () -> i32 loc("scale.py":4:9)
  %pn = "tile.program_id"() {axis = 1 : i32} : () -> i32 loc("scale.py":5:9)
  %cm = arith.constant 64 : i32 loc("scale.py":6:20)
  %cn = arith.constant 64 : i32 loc("scale.py":7:20)
  %bm = arith.muli %pm, %cm : i32 loc("scale.py":6:11)
  %bn = arith.muli %pn, %cn : i32 loc("scale.py":7:11)
  %rm = "tile.range"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32> loc("scale.py":6:25)
  %rn = "tile.range"() {start = 0 : i32, end = 64 : i32} : () -> tensor<64xi32> loc("scale.py":7:25)
  %sbm = tensor.splat %bm : tensor<64xi32> loc("scale.py":6:11)
  %sbn = tensor.splat %bn : tensor<64xi32> loc("scale.py":7:11)
  %rows = arith.addi %sbm, %rm : tensor<64xi32> loc("scale.py":6:11)
  %cols = arith.addi %sbn, %rn : tensor<64xi32> loc("scale.py":7:11)
  %r2 = "tile.expand_dims"(%rows) {axis = 1 : i32} : (tensor<64xi32>) -> tensor<64x1xi32> loc("scale.py":8:11)
  %sst = tensor.splat %stride : tensor<64x1xi32> loc("scale.py":8:25)
  %rs = arith.muli %r2, %sst : tensor<64x1xi32> loc("scale.py":8:11)
  %rsb = "tile.broadcast"(%rs) : (tensor<64x1xi32>) -> tensor<64x64xi32> loc("scale.py":8:11)
  %c2 = "tile.expand_dims"(%cols) {axis = 0 : i32} : (tensor<64xi32>) -> tensor<1x64xi32> loc("scale.py":8:36)
  %c2b = "tile.broadcast"(%c2) : (tensor<1x64xi32>) -> tensor<64x64xi32> loc("scale.py":8:36)
  %offs = arith.addi %rsb, %c2b : tensor<64x64xi32> loc("scale.py":8:11)
  %sm = tensor.splat %m : tensor<64x1xi32> loc("scale.py":9:24)
  %mr = arith.cmpi slt, %r2, %sm : tensor<64x1xi32> loc("scale.py":9:12)
  %mrb = "tile.broadcast"(%mr) : (tensor<64x1xi1>) -> tensor<64x64xi1> loc("scale.py":9:12)
  %sn = tensor.splat %n : tensor<1x64xi32> loc("scale.py":9:45)
  %mc = arith.cmpi slt, %c2, %sn : tensor<1x64xi32> loc("scale.py":9:33)
  %mcb = "tile.broadcast"(%mc) : (tensor<1x64xi1>) -> tensor<64x64xi1> loc("scale.py":9:33)
  %mask = arith.andi %mrb, %mcb : tensor<64x64xi1> loc("scale.py":9:11)
  %px = tensor.splat %x : tensor<64x64x!tile.ptr<f32>> loc("scale.py":10:8)
  %pxo = "tile.addptr"(%px, %offs) : (tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>) -> tensor<64x64x!tile.ptr<f32>> loc("scale.py":10:8)
  %v = "tile.load"(%pxo, %mask) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi1>) -> tensor<64x64xf32> loc("scale.py":10:8)
  %sa = tensor.splat %alpha : tensor<64x64xf32> loc("scale.py":11:8)
  %w = arith.mulf %v, %sa : tensor<64x64xf32> loc("scale.py":11:8)
  %po = tensor.splat %o : tensor<64x64x!tile.ptr<f32>> loc("scale.py":12:4)
  %poo = "tile.addptr"(%po, %offs) : (tensor<64x64x!tile.ptr<f32>>, tensor<64x64xi32>) -> tensor<64x64x!tile.ptr<f32>> loc("scale.py":12:4)
  "tile.store"(%poo, %w, %mask) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<64x64x!tile.ptr<f32>>, tensor<64x64xf32>, tensor<64x64xi1>) -> () loc("scale.py":12:4)
  return loc("scale.py":12:4)
} loc("scale.py":2:0)
