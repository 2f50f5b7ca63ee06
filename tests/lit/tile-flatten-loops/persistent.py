# RUN: %tilec ir %S/../../../examples/matmul_persistent.py --target cpu --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=32 BLOCK_N=32 BLOCK_K=32 GROUP_M=8 NUM_SMS=4 --stage tile-opt > %t.mlir
# RUN: %tilec-opt %t.mlir --pass tile-flatten-loops --target cpu | %FileCheck %s
# RUN: %tilec-opt %t.mlir --pass tile-flatten-loops --target cpu | %FileCheck %s --check-prefix=NEST

# The persistent example's tile loop (tl.range(..., flatten=True)) and its K
# loop become one loop of tiles x K-block iterations: trip counts computed
# before it, the K = 0 case behind an scf.if (the nest without its empty inner
# loop: the zero accumulator is still stored), the fused loop carrying the
# accumulator, the tile's prologue recomputed from the fused index, the
# epilogue's store in an scf.if at the tile's last k which resets the
# accumulator to its init.

# CHECK: %[[OT:.*]] = arith.select
# CHECK: %[[KT:.*]] = arith.select
# CHECK: %[[HASK:.*]] = arith.cmpi sgt, %[[KT]]
# CHECK: scf.if %[[HASK]] {
# CHECK: %[[TOTAL:.*]] = arith.muli %[[OT]], %[[KT]]
# CHECK: scf.for %[[I:.*]] = %{{.*}} to %[[TOTAL]] step %{{.*}} iter_args(%[[ACC:.*]] = %[[INIT:cst[_0-9]*]])
# CHECK: arith.divui %[[I]], %[[KT]]
# CHECK: %[[KK:.*]] = arith.remui %[[I]], %[[KT]]
# CHECK: "tile.descriptor_load"
# CHECK: "tile.descriptor_load"
# CHECK: %[[P:.*]] = "tile.dot"(%{{.*}}, %{{.*}}, %[[ACC]])
# CHECK: %[[LAST:.*]] = arith.cmpi eq, %[[KK]]
# CHECK: %[[NEXT:.*]] = scf.if %[[LAST]]
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
