# RUN: %tilec ir %S/../../../examples/matmul_persistent.py --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 GROUP_M=8 NUM_SMS=132 --num-warps 8 --num-stages 3 --stage tile-opt > %t.mlir
# RUN: %tilec-opt %t.mlir --pass tile-tma-descriptors --target sm90 --num-warps 8 --num-stages 3 | %FileCheck %s
# RUN: %tilec ir %S/../../../examples/matmul_persistent.py --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32,i32:16" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 GROUP_M=8 NUM_SMS=132 --num-warps 8 --num-stages 3 --stage tile-opt > %t.2.mlir
# RUN: %tilec-opt %t.2.mlir --pass tile-tma-descriptors --target sm90 --num-warps 8 --num-stages 3 | %FileCheck %s --check-prefix=UNALIGNED
# RUN: %tilec-opt %t.mlir --pass tile-tma-descriptors --target sm80 --num-warps 8 --num-stages 3 | %FileCheck %s --check-prefix=SM80

# The persistent example's descriptor store of C qualifies as its loads do (a
# kernel-argument base known to be 16-byte aligned, shape and strides of the
# kernel's arguments, a row stride N known to be a multiple of 16 elements,
# 128-row blocks of 128-byte atoms): it is the masked pointer store of
# tile-lower-descriptors tagged tile.tma = 2, its coordinates kept by a
# tile.tma_coords hint right before its index arithmetic, and its recipe is
# the third entry of tile.tensormaps, marked "store".
# CHECK: tile.tensormaps = "{{.*}}\222\22: {\22base\22: 2, \22block\22: [128, 128], \22elem_bytes\22: 2, \22shape\22: {{.*}}\22arg\22, 3], {{.*}}\22arg\22, 4]], \22store\22: true, \22strides\22: {{.*}}\22arg\22, 4], {{.*}}\22const\22, 1]]}}"
# CHECK: "tile.tma_coords"(%{{.*}}) {tma = 0 : i32}
# CHECK: "tile.tma_coords"(%{{.*}}) {tma = 1 : i32}
# CHECK: "tile.tma_coords"(%[[M:.*]], %[[N:.*]]) {tma = 2 : i32}
# CHECK-NOT: "tile.tma_coords"
# CHECK: "tile.store"({{.*}}) {operandSegmentSizes = array<i32: 1, 1, 1>, tile.tma = 2 : i32}
# CHECK-NOT: "tile.descriptor_store"

# N without a known multiple of 16: C's row stride may not be 16-byte aligned,
# so the store is left to tile-lower-descriptors (the loads, K long, keep
# their maps).
# UNALIGNED-NOT: \22store\22
# UNALIGNED: "tile.tma_coords"(%{{.*}}) {tma = 1 : i32}
# UNALIGNED-NOT: "tile.tma_coords"
# UNALIGNED: "tile.descriptor_store"
# UNALIGNED-NOT: tile.tma = 2

# Without Feature.TMA the pass does nothing.
# SM80-NOT: tile.tma
