// RUN: %tilec-opt %s --pass tile-verify,convert-tile-to-cpu | %FileCheck %s --check-prefix=NATIVE
// RUN: %tilec-opt %s --pass tile-verify,convert-tile-to-cpu --without-feature masked_narrow_memory | %FileCheck %s --check-prefix=LOOP

// A loop's masked load and store of 128 f16 lanes (x - max(x) per row).  With
// native narrow masks (AVX-512BW) each is one llvm.intr.masked.load/store.
// Without them (LLVM would branch once per lane, and its code generation of
// a 2048-lane row did not finish in 300 s): if the mask is all true, the plain
// load (store); else a loop over groups of 32 lanes (64 bytes) through stack
// buffers of the pointers, the mask bytes and the values, a group whose mask
// bytes are all true moving as one vector<32xf16>, the others lane by lane
// under an scf.if.
// NATIVE-LABEL: func.func private @shift_rows_body(
// NATIVE: llvm.intr.masked.load {{.*}} -> vector<128xf16>
// NATIVE: llvm.intr.masked.store {{.*}} : vector<128xf16>, vector<128xi1> into !llvm.ptr
// NATIVE-NOT: vector<32xi8>

// LOOP-LABEL: func.func private @shift_rows_body(
// LOOP-NOT: llvm.intr.masked
// LOOP: %[[MASK:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : vector<128xi32>
// LOOP: scf.for
// LOOP: %[[ALL:.*]] = vector.reduction <and>, %[[MASK]] : vector<128xi1> into i1
// LOOP: %[[V:.*]] = scf.if %[[ALL]] -> (vector<128xf16>) {
// LOOP: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr -> vector<128xf16>
// LOOP: } else {
// LOOP: llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : vector<128x!llvm.ptr>, !llvm.ptr
// LOOP: llvm.store %{{.*}}, %{{.*}} {alignment = 1 : i64} : vector<128xi8>, !llvm.ptr
// LOOP: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// LOOP: llvm.load %{{.*}} {alignment = 1 : i64} : !llvm.ptr -> vector<32xi8>
// LOOP: vector.reduction <and>, %{{.*}} : vector<32xi1> into i1
// LOOP: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr -> vector<32xf16>
// LOOP: } else {
// LOOP: scf.for
// LOOP: scf.if
// LOOP: llvm.load %{{.*}} {alignment = 2 : i64} : !llvm.ptr -> f16
// LOOP: llvm.load %{{.*}} {alignment = 2 : i64} : !llvm.ptr -> vector<128xf16>
// LOOP: %[[ALL2:.*]] = vector.reduction <and>, %[[MASK]] : vector<128xi1> into i1
// LOOP: scf.if %[[ALL2]] {
// LOOP: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<128xf16>, !llvm.ptr
// LOOP: } else {
// LOOP: scf.for
// LOOP: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<32xf16>, !llvm.ptr
// LOOP: scf.for
// LOOP: llvm.store %{{.*}}, %{{.*}} {alignment = 2 : i64} : f16, !llvm.ptr
// LOOP-NOT: llvm.intr.masked
// LOOP: return
func.func private @__tilec_max_fp16(%arg0: f16, %arg1: f16) -> f16 {
  %0 = arith.maxnumf %arg0, %arg1 : f16
  return %0 : f16
}
func.func @shift_rows(%arg0: !tile.ptr<f16> {tile.divisibility = 16 : i32, tile.name = "X"}, %arg1: !tile.ptr<f16> {tile.divisibility = 16 : i32, tile.name = "Out"}, %arg2: i32 {tile.name = "rows"}, %arg3: i32 {tile.name = "n"}) attributes {tile.kernel} {
  %0 = "tile.range"() {end = 128 : i32, start = 0 : i32} : () -> tensor<128xi32>
  %splat = tensor.splat %arg3 : tensor<128xi32>
  %1 = arith.cmpi slt, %0, %splat : tensor<128xi32>
  %c0_i32 = arith.constant 0 : i32
  %c1_i32 = arith.constant 1 : i32
  scf.for %arg4 = %c0_i32 to %arg2 step %c1_i32  : i32 {
    %c128_i32 = arith.constant 128 : i32
    %2 = arith.muli %arg4, %c128_i32 : i32
    %3 = "tile.addptr"(%arg0, %2) : (!tile.ptr<f16>, i32) -> !tile.ptr<f16>
    %splat_0 = tensor.splat %3 : tensor<128x!tile.ptr<f16>>
    %4 = "tile.addptr"(%splat_0, %0) : (tensor<128x!tile.ptr<f16>>, tensor<128xi32>) -> tensor<128x!tile.ptr<f16>>
    %cst = arith.constant 0.000000e+00 : f16
    %splat_1 = tensor.splat %cst : tensor<128xf16>
    %5 = "tile.load"(%4, %1, %splat_1) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<128x!tile.ptr<f16>>, tensor<128xi1>, tensor<128xf16>) -> tensor<128xf16>
    %c128_i32_2 = arith.constant 128 : i32
    %6 = arith.muli %arg4, %c128_i32_2 : i32
    %7 = "tile.addptr"(%arg1, %6) : (!tile.ptr<f16>, i32) -> !tile.ptr<f16>
    %splat_3 = tensor.splat %7 : tensor<128x!tile.ptr<f16>>
    %8 = "tile.addptr"(%splat_3, %0) : (tensor<128x!tile.ptr<f16>>, tensor<128xi32>) -> tensor<128x!tile.ptr<f16>>
    %9 = "tile.reduce"(%5) {axis = 0 : i32, combine = @__tilec_max_fp16, operandSegmentSizes = array<i32: 1, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0>} : (tensor<128xf16>) -> f16
    %splat_4 = tensor.splat %9 : tensor<128xf16>
    %10 = arith.subf %5, %splat_4 : tensor<128xf16>
    "tile.store"(%8, %10, %1) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<128x!tile.ptr<f16>>, tensor<128xf16>, tensor<128xi1>) -> ()
  }
  return
}
