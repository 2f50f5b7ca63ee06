# RUN: %tilec ir %S/../../../examples/matmul_persistent.py --target cpu --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=32 BLOCK_N=32 BLOCK_K=32 GROUP_M=8 NUM_SMS=4 --stage tile-opt > %t.mlir
# RUN: %tilec-opt %t.mlir --pass tile-flatten-loops --target cpu > %t.flat.mlir
# RUN: %FileCheck %s --input-file %t.flat.mlir
# RUN: %FileCheck %s --check-prefix=NEST --input-file %t.flat.mlir

# The persistent example's tile loop (tl.range(..., flatten=True)) and its K
# loop become one loop of tiles x K-block iterations: trip counts computed
# before it, the K = 0 case behind an scf.if (the nest without its empty inner
# loop: the zero accumulator is still stored), the fused loop carrying the
# accumulator, the tile's coordinates (offs_am, offs_bn) and counters; no
# division in the body but under `wrap` (the next tile's coordinates, once
# per tile) and in the epilogue branch (the stored tile's, once per tile),
# which resets the accumulator to its init.

# CHECK: %[[OT:.*]] = arith.select
# CHECK: %[[KT:.*]] = arith.select
# CHECK: %[[HASK:.*]] = arith.cmpi sgt, %[[KT]]
# CHECK: scf.if %[[HASK]] {
# CHECK: %[[AM0:.*]] = arith.muli %{{.*}}, %c32_i32
# CHECK: %[[BN0:.*]] = arith.muli %{{.*}}, %c32_i32
# CHECK: %[[TOTAL:.*]] = arith.muli %[[OT]], %[[KT]]
# CHECK: scf.for %[[I:.*]] = %{{.*}} to %[[TOTAL]] step %{{.*}} iter_args(%[[ACC:.*]] = %[[INIT:cst[_0-9]*]], %[[AM:.*]] = %[[AM0]], %[[BN:.*]] = %[[BN0]], %[[TB:.*]] = %{{.*}}, %[[KB:.*]] = %{{.*}}, %[[TE:.*]] = %{{.*}}, %[[KE:.*]] = %{{.*}})
# CHECK-NOT: arith.divsi
# CHECK-NOT: arith.remsi
# CHECK: "tile.descriptor_load"(%{{.*}}, %[[AM]],
# CHECK: "tile.descriptor_load"(%{{.*}}, %[[BN]],
# CHECK: %[[P:.*]] = "tile.dot"(%{{.*}}, %{{.*}}, %[[ACC]])
# CHECK: %[[KN:.*]] = arith.addi %[[KB]]
# CHECK: %[[WRAP:.*]] = arith.cmpi eq, %[[KN]], %[[KT]]
# CHECK-NOT: arith.divsi
# CHECK: scf.if %[[WRAP]] -> (i32, i32) {
# CHECK: arith.divsi
# CHECK: } else {
# CHECK-NEXT: scf.yield %[[AM]], %[[BN]]
# CHECK: %[[LAST:.*]] = arith.cmpi eq, %[[KE]]
# CHECK: %[[NEXT:.*]] = scf.if %[[LAST]]
# CHECK: arith.divsi %[[TE]]
# CHECK: arith.truncf %[[P]]
# CHECK: "tile.descriptor_store"
# CHECK: scf.yield %[[INIT]]
# CHECK: } else {
# CHECK: scf.yield %[[P]]
# CHECK: scf.yield %[[NEXT]]
# CHECK: } {tile.flattened}

# NEST: } {tile.flattened}
# NEST-NEXT: } else {
# NEST-NEXT: scf.for
# NEST-NOT: scf.for
# NEST-NOT: tile.dot
# NEST: "tile.descriptor_store"
# NEST-NOT: tile.flatten
