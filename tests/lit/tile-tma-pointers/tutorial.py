# RUN: %tilec ir %S/kernels.py --target sm90 --kernel tutorial --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 ROW_SUM=0 OTHER=0.0 STORE_ROWS=1 --num-warps 8 --stage tile-opt > %t.mlir
# RUN: %tilec-opt %t.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s
# RUN: %tilec-opt %t.mlir --pass tile-tma-pointers --target sm80 --num-warps 8 | %FileCheck %s --check-prefix=SM80
# RUN: %tilec-opt %t.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 --debug | %FileCheck %s --check-prefix=SM80
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel tutorial --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 ROW_SUM=1 OTHER=0.0 STORE_ROWS=1 --num-warps 8 --stage tile-opt > %t.sum.mlir
# RUN: %tilec-opt %t.sum.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=SUM
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel tutorial --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 ROW_SUM=0 OTHER=1.0 STORE_ROWS=1 --num-warps 8 --stage tile-opt > %t.other.mlir
# RUN: %tilec-opt %t.other.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=OTHER
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel tutorial --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 ROW_SUM=0 OTHER=0.0 STORE_ROWS=0 --num-warps 8 --stage tile-opt > %t.rows.mlir
# RUN: %tilec-opt %t.rows.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=ROWS
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel tutorial --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32,i32=1,i32:16,i32=1,i32:16,i32=1" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 ROW_SUM=0 OTHER=0.0 STORE_ROWS=1 --num-warps 8 --stage tile-opt > %t.unaligned.mlir
# RUN: %tilec-opt %t.unaligned.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=UNALIGNED
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel tutorial --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 ROW_SUM=0 OTHER=0.0 STORE_ROWS=1 MASK_FORM=1 --num-warps 8 --stage tile-opt > %t.le.mlir
# RUN: %tilec-opt %t.le.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=FORM
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel tutorial --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 ROW_SUM=0 OTHER=0.0 STORE_ROWS=1 MASK_FORM=2 --num-warps 8 --stage tile-opt > %t.gt.mlir
# RUN: %tilec-opt %t.gt.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=FORM
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel tutorial --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 ROW_SUM=0 OTHER=0.0 STORE_ROWS=1 MASK_FORM=3 --num-warps 8 --stage tile-opt > %t.ge.mlir
# RUN: %tilec-opt %t.ge.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=FORM
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel tutorial --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32=1,i32:16,i32:16,i32=1" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 ROW_SUM=0 OTHER=0.0 STORE_ROWS=1 --num-warps 8 --stage tile-opt > %t.kmajor.mlir
# RUN: %tilec-opt %t.kmajor.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=KMAJOR

# Triton's tutorial-03 body: A [128, 64] at (row0, 64 k) of the [M, K] tensor
# with row stride stride_am (rows past M wrapped by % M: dead, since only the
# dot's rows read them and the C store masks rows >= M); B [64, 128] at
# (64 k, col0) of [K, N] (columns wrapped by % N, masked at the store); the C
# store at (row0, col0) of [M, N] (its mask is exactly the two bounds).  Each
# access is tagged with its map id, its coordinates computed right before it.
# CHECK: tile.tensormaps = "{\220\22: {\22base\22: 0, \22block\22: [128, 64], \22elem_bytes\22: 2, \22inferred\22: true, \22shape\22: {{\[\[}}\22arg\22, 3], [\22arg\22, 5]], \22strides\22: {{\[\[}}\22arg\22, 6], [\22const\22, 1]]}, \221\22: {\22base\22: 1, \22block\22: [64, 128], \22elem_bytes\22: 2, \22inferred\22: true, \22shape\22: {{\[\[}}\22arg\22, 5], [\22arg\22, 4]], \22strides\22: {{\[\[}}\22arg\22, 8], [\22const\22, 1]]}, \222\22: {\22base\22: 2, \22block\22: [128, 128], \22elem_bytes\22: 2, \22inferred\22: true, \22shape\22: {{\[\[}}\22arg\22, 3], [\22arg\22, 4]], \22store\22: true, \22strides\22: {{\[\[}}\22arg\22, 10], [\22const\22, 1]]}}"
# CHECK: scf.for %[[IV:.*]] = %{{.*}} to
# CHECK: %[[K0:.*]] = arith.muli %{{.*}}, %[[IV]] : i32
# CHECK: "tile.tma_coords"(%{{.*}}, %[[K0]]) {tma = 0 : i32}
# CHECK-NEXT: "tile.load"({{.*}}tile.tma = 0 : i32}
# CHECK: %[[K1:.*]] = arith.muli %{{.*}}, %[[IV]] : i32
# CHECK: "tile.tma_coords"(%[[K1]], %{{.*}}) {tma = 1 : i32}
# CHECK-NEXT: "tile.load"({{.*}}tile.tma = 1 : i32}
# CHECK: "tile.tma_coords"(%{{.*}}, %{{.*}}) {tma = 2 : i32}
# CHECK-NEXT: "tile.store"({{.*}}tile.tma = 2 : i32}

# Without Feature.TMA, or in debug mode (bounds checks on the pointers),
# nothing is tagged.
# SM80-NOT: tile.tma

# The accumulator's column sums added to every row: the wrapped rows of A
# (and columns of B: the pass does not follow reductions) reach live lanes;
# only the store is a map.
# SUM: tile.tensormaps = "{\220\22: {\22base\22: 2,
# SUM-NOT: tile.tma = 1

# A's masked lanes filled with 1.0, not the map's zeros: A stays a pointer load.
# OTHER: tile.tensormaps = "{\220\22: {\22base\22: 1,
# OTHER-NOT: \22base\22: 0

# C stored without its row mask: the wrapped rows of A would be stored, and the
# store has no row bound; only B is a map.
# ROWS: tile.tensormaps = "{\220\22: {\22base\22: 1, {{[^}]*}}}}"

# stride_am not known to be a multiple of 16 elements: A's rows may not be
# 16-byte aligned, so A stays a pointer load.
# UNALIGNED: tile.tensormaps = "{\220\22: {\22base\22: 1,
# UNALIGNED-NOT: \22base\22: 0

# A's K mask written as `k + j <= K - 1`, `K - 64 k > j` or `K - 1 - 64 k >= j`:
# each is `64 k + j < K`, so A's map has the shape [M, K] every time.
# FORM: tile.tensormaps = "{\220\22: {\22base\22: 0, \22block\22: [128, 64], \22elem_bytes\22: 2, \22inferred\22: true, \22shape\22: {{\[\[}}\22arg\22, 3], [\22arg\22, 5]],

# B given K-major (stride_bk = 1, stride_bn a multiple of 16): the [64, 128]
# tile is the transpose of a [128, 64] block of the [N, K] tensor (row stride
# stride_bn); the load is replaced by that block's masked load, tagged, and
# tile.trans of it (the pipeliner's K-major B ring).
# KMAJOR: \221\22: {\22base\22: 1, \22block\22: [128, 64], \22elem_bytes\22: 2, \22inferred\22: true, \22shape\22: {{\[\[}}\22arg\22, 4], [\22arg\22, 5]], \22strides\22: {{\[\[}}\22arg\22, 9], [\22const\22, 1]]}
# KMAJOR: "tile.tma_coords"(%{{.*}}) {tma = 1 : i32}
# KMAJOR-NOT: tile.make_descriptor
# KMAJOR: %[[B:.*]] = "tile.load"({{.*}}tile.tma = 1 : i32} : (tensor<128x64x!tile.ptr<f16>>, tensor<128x64xi1>, tensor<128x64xf16>) -> tensor<128x64xf16>
# KMAJOR-NEXT: "tile.trans"(%[[B]]) : (tensor<128x64xf16>) -> tensor<64x128xf16>
# KMAJOR-NOT: tile.make_descriptor
