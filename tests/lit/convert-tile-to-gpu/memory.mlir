// RUN: %tilec-opt %s --pass tile-layout --pass convert-tile-to-gpu --target sm90 --debug-info | %FileCheck %s
// RUN: %tilec-opt %s --pass tile-layout --pass convert-tile-to-gpu --target gfx1100 | %FileCheck %s --check-prefix=AMD
// RUN: %tilec-opt %s --pass tile-layout --pass convert-tile-to-gpu --target gfx942 | %FileCheck %s --check-prefix=BUF

// fp32 vector add per thread: 8 elements as two vector<4xf32> chunks 512
// apart, 128-bit accesses aligned to 16 bytes, one mask bit per chunk
// (n % 16 == 0 makes the mask constant over 16 elements: one scalar compare
// per chunk, on the chunk's first element, broadcast); on sm90 a masked
// access is one predicated PTX ld/st.global.v4.b32 (inline asm), on AMD a
// uniform-mask llvm.intr.masked.load.  Every op keeps the
// location of the tile op it came from.  On CDNA (gfx942, `buffer_ops`) the
// pointer is a scalar base + pid * 1024 (SGPRs) and lane offsets in [0, 1024):
// buffer loads/stores at 32-bit byte offsets, masked lanes sent out of range.

// CHECK: module attributes {gpu.container_module}
// CHECK: gpu.module @tilec
// CHECK: gpu.func @add(%{{.*}}: !llvm.ptr<1> loc({{.*}}), %{{.*}}: !llvm.ptr<1> loc({{.*}}), %{{.*}}: !llvm.ptr<1> loc({{.*}}), %{{.*}}: i32 loc({{.*}})) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK: gpu.thread_id x loc("add.py":3:0)
// CHECK: gpu.block_id x loc("add.py":5:10)
// CHECK: arith.constant dense<[0, 1, 2, 3]> : vector<4xi32>
// CHECK: arith.constant dense<[512, 513, 514, 515]> : vector<4xi32>
// CHECK: arith.cmpi slt, {{.*}} : i32 loc("add.py":7:11)
// CHECK: vector.broadcast {{.*}} : i1 to vector<4xi1> loc("add.py":7:11)
// CHECK: arith.cmpi slt, {{.*}} : i32 loc("add.py":7:11)
// CHECK-NOT: arith.cmpi
// CHECK: llvm.getelementptr {{.*}} : (vector<4x!llvm.ptr<1>>, vector<4xi32>) -> vector<4x!llvm.ptr<1>>, f32
// CHECK: llvm.inline_asm has_side_effects {{.*}}@$4 ld.global.v4.b32 { $0, $1, $2, $3 }, [ $5 + 0 ];", "=r,=r,=r,=r,b,l" {{.*}} : (i1, !llvm.ptr<1>) -> !llvm.struct<(i32, i32, i32, i32)> loc("add.py":8:8)
// CHECK: llvm.bitcast {{.*}} : vector<4xi32> to vector<4xf32>
// CHECK: arith.addf {{.*}} : vector<4xf32> loc("add.py":10:8)
// CHECK: arith.addf {{.*}} : vector<4xf32>
// CHECK: llvm.inline_asm has_side_effects "@$4 st.global.v4.b32 [ $5 + 0 ], { $0, $1, $2, $3 };", "r,r,r,r,b,l"
// CHECK: gpu.return
// CHECK-NOT: tile.

// AMD: gpu.func @add{{.*}} kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// AMD: llvm.intr.masked.load {{.*}} {alignment = 16 : i32} : (!llvm.ptr<1>, vector<4xi1>, vector<4xf32>) -> vector<4xf32>

// BUF: gpu.func @add{{.*}} kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// BUF: %[[BASE:.*]] = llvm.getelementptr %arg0[%{{.*}}] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
// BUF: %[[RSRC:.*]] = rocdl.make.buffer.rsrc %[[BASE]], %{{.*}}, %{{.*}}, %{{.*}} : <1> to <8>
// BUF: %[[OFF:.*]] = arith.select %{{.*}}, %{{.*}}, %c-2147483648_i32 : i32
// BUF: rocdl.raw.ptr.buffer.load %[[RSRC]], %[[OFF]], %{{.*}}, %{{.*}} : vector<4xi32>
// BUF: rocdl.raw.ptr.buffer.store
// BUF-NOT: llvm.intr.masked.load

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
