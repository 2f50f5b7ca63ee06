// RUN: %tilec-opt %s --pass tile-layout,convert-tile-to-gpu --target sm90 | %FileCheck %s --check-prefixes=CHECK,NV
// RUN: %tilec-opt %s --pass tile-layout,convert-tile-to-gpu --target gfx942 | %FileCheck %s --check-prefixes=CHECK,AMD

// tile.atomic_rmw and tile.atomic_cas become LLVM atomics at device scope in
// the back end's memory model (target.atomic_scope: NVPTX "device", AMDGPU
// "agent"), acq_rel; on NVIDIA an atomicrmw is PTX's `atom.acq_rel.gpu` in
// inline asm (LLVM 22's NVPTX prints `atomicrmw acq_rel` as a relaxed atom:
// targets/nvidia/atomics.py), cmpxchg stays LLVM's.  A masked tile atomic is one guarded atomic per element
// (scf.if on the lane's mask bit, and on gfx942, whose 256 threads hold 128
// elements, on the thread owning the element; 0 for the others); a scalar
// atomic is issued as it is.

// CHECK-LABEL: gpu.func @atom(
// CHECK-SAME: kernel
// CHECK: vector.extract %{{.*}}[0] : i1 from vector<1xi1>
// CHECK: scf.if %{{.*}} -> (f32) {
// NV: llvm.inline_asm has_side_effects "atom.acq_rel.gpu.global.add.f32 $0, [$1], $2;", "=f,l,f" %{{.*}}, %{{.*}} : (!llvm.ptr<1>, f32) -> f32
// AMD: llvm.atomicrmw fadd %{{.*}}, %{{.*}} syncscope("agent") acq_rel : !llvm.ptr<1>, f32
// CHECK: } else {
// CHECK: arith.constant 0.000000e+00 : f32
// CHECK: scf.if %{{.*}} -> (i32) {
// NV: llvm.inline_asm has_side_effects "atom.acq_rel.gpu.global.max.s32 $0, [$1], $2;", "=r,l,r" %{{.*}}, %{{.*}} : (!llvm.ptr<1>, i32) -> i32
// AMD: llvm.atomicrmw max %{{.*}}, %{{.*}} syncscope("agent") acq_rel : !llvm.ptr<1>, i32
// NV: %[[CAS:.*]] = llvm.cmpxchg %arg1, %{{.*}}, %{{.*}} syncscope("device") acq_rel acquire : !llvm.ptr<1>, i32
// AMD: %[[CAS:.*]] = llvm.cmpxchg %arg1, %{{.*}}, %{{.*}} syncscope("agent") acq_rel acquire : !llvm.ptr<1>, i32
// CHECK-NEXT: llvm.extractvalue %[[CAS]][0] : !llvm.struct<(i32, i1)>
// NV: llvm.inline_asm has_side_effects "atom.acq_rel.gpu.global.exch.b32 $0, [$1], $2;", "=r,l,r" %{{.*}}, %c5_i32 : (!llvm.ptr<1>, i32) -> i32
// AMD: llvm.atomicrmw xchg %{{.*}}, %{{.*}} syncscope("agent") acq_rel : !llvm.ptr<1>, i32
// CHECK: gpu.return
// CHECK-NOT: tile.
// NV-NOT: llvm.atomicrmw

module {
  func.func @atom(%arg0: !tile.ptr<f32> {tile.divisibility = 16 : i32}, %arg1: !tile.ptr<i32> {tile.divisibility = 16 : i32}, %arg2: i32) attributes {tile.kernel} {
    %cst = arith.constant dense<1.000000e+00> : tensor<128xf32>
    %c5_i32 = arith.constant 5 : i32
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %0 = "tile.range"() {end = 128 : i32, start = 0 : i32} : () -> tensor<128xi32>
    %splat = tensor.splat %arg2 : tensor<128xi32>
    %1 = arith.cmpi slt, %0, %splat : tensor<128xi32>
    %splat_0 = tensor.splat %arg0 : tensor<128x!tile.ptr<f32>>
    %2 = "tile.addptr"(%splat_0, %0) : (tensor<128x!tile.ptr<f32>>, tensor<128xi32>) -> tensor<128x!tile.ptr<f32>>
    %3 = "tile.atomic_rmw"(%2, %cst, %1) {kind = "fadd", operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<128x!tile.ptr<f32>>, tensor<128xf32>, tensor<128xi1>) -> tensor<128xf32>
    %splat_1 = tensor.splat %arg1 : tensor<128x!tile.ptr<i32>>
    %4 = "tile.addptr"(%splat_1, %0) : (tensor<128x!tile.ptr<i32>>, tensor<128xi32>) -> tensor<128x!tile.ptr<i32>>
    %5 = "tile.atomic_rmw"(%4, %0, %1) {kind = "max", operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<128x!tile.ptr<i32>>, tensor<128xi32>, tensor<128xi1>) -> tensor<128xi32>
    %6 = "tile.atomic_cas"(%arg1, %c0_i32, %c1_i32) : (!tile.ptr<i32>, i32, i32) -> i32
    %7 = "tile.addptr"(%arg1, %c1_i32) : (!tile.ptr<i32>, i32) -> !tile.ptr<i32>
    %8 = "tile.atomic_rmw"(%7, %c5_i32) {kind = "xchg", operandSegmentSizes = array<i32: 1, 1, 0>} : (!tile.ptr<i32>, i32) -> i32
    return
  }
}
