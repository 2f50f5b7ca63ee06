# RUN: %tilec ir %S/kernels.py --target sm90 --kernel batched --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32:16,i32=1,i32:16,i32:16,i32=1,i32" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 --num-warps 8 --stage tile-opt > %t.mlir
# RUN: %tilec-opt %t.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s
# RUN: %tilec-opt %t.mlir --pass tile-tma-pointers --target sm80 --num-warps 8 | %FileCheck %s --check-prefix=SM80
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel batched --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32:16,i32=1,i32:16,i32:16,i32=1,i32" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 A_BATCH=4 --num-warps 8 --stage tile-opt > %t.next.mlir
# RUN: %tilec-opt %t.next.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=NEXT
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel batched --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32:16,i32=1,i32:16,i32:16,i32=1,i32" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 A_BATCH=5 --num-warps 8 --stage tile-opt > %t.loop.mlir
# RUN: %tilec-opt %t.loop.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=LOOP
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel batched --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32:16,i32=1,i32:16,i32:16,i32=1,i32" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 A_BATCH=1 --num-warps 8 --stage tile-opt > %t.rowstride.mlir
# RUN: %tilec-opt %t.rowstride.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=NOTA
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel batched --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32:16,i32=1,i32:16,i32:16,i32=1,i32" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 A_BATCH=2 --num-warps 8 --stage tile-opt > %t.const.mlir
# RUN: %tilec-opt %t.const.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=NOTA
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel batched --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32:16,i32=1,i32:16,i32:16,i32=1,i32" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 A_BATCH=3 --num-warps 8 --stage tile-opt > %t.flat.mlir
# RUN: %tilec-opt %t.flat.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=NOTA
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel batched --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32,i32:16,i32=1,i32:16,i32:16,i32=1,i32:16,i32:16,i32=1,i32" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 --num-warps 8 --stage tile-opt > %t.unaligned.mlir
# RUN: %tilec-opt %t.unaligned.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=NOTA
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel batched --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32:16,i32:16,i32=1,i32" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 --num-warps 8 --stage tile-opt > %t.kmajor.mlir
# RUN: %tilec-opt %t.kmajor.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=KMAJOR

# RUN: %tilec ir %S/kernels.py --target sm90 --kernel batched --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32:16,i32=1,i32:16,i32:16,i32=1,i32" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 BATCH_MASK=1 --num-warps 8 --stage tile-opt > %t.bmask.mlir
# RUN: %tilec-opt %t.bmask.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=BMASK
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel batched --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32:16,i32=1,i32:16,i32:16,i32=1,i32" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 BATCH_MASK=2 --num-warps 8 --stage tile-opt > %t.bmask2.mlir
# RUN: %tilec-opt %t.bmask2.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=BMASK2
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel batched --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32:16,i32:16,i32=1,i32" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 BATCH_MASK=1 --num-warps 8 --stage tile-opt > %t.kbmask.mlir
# RUN: %tilec-opt %t.kbmask.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=KBMASK
# A batched tutorial-03 body (kernels.py, `batched`): each operand's pointer
# is `base + pid_b * stride_xb + rows * stride_xm + cols`, which no 2-D map
# holds (the batch term is not a column bound).  Each access is the block of
# a rank-3 map, [batch, rows, columns] outermost first: strides [stride_xb,
# stride_xm, 1], the batch dimension 2^31 long (the source does not bound
# its batch index: every i32 coordinate >= 0 is inside), rows and columns
# bounded as in tutorial.py (A [M, K] with rows wrapped by % M, B [K, N]
# with columns wrapped by % N, C [M, N] by its mask); the block [1, R, C];
# coordinates (pid_b, row0, col0).
# CHECK: tile.tensormaps = "{\220\22: {\22base\22: 0, \22block\22: [1, 128, 64], \22elem_bytes\22: 2, \22inferred\22: true, \22shape\22: {{\[\[}}\22const\22, 2147483648], [\22arg\22, 3], [\22arg\22, 5]], \22strides\22: {{\[\[}}\22arg\22, 6], [\22arg\22, 7], [\22const\22, 1]]}, \221\22: {\22base\22: 1, \22block\22: [1, 64, 128], \22elem_bytes\22: 2, \22inferred\22: true, \22shape\22: {{\[\[}}\22const\22, 2147483648], [\22arg\22, 5], [\22arg\22, 4]], \22strides\22: {{\[\[}}\22arg\22, 9], [\22arg\22, 10], [\22const\22, 1]]}, \222\22: {\22base\22: 2, \22block\22: [1, 128, 128], \22elem_bytes\22: 2, \22inferred\22: true, \22shape\22: {{\[\[}}\22const\22, 2147483648], [\22arg\22, 3], [\22arg\22, 4]], \22store\22: true, \22strides\22: {{\[\[}}\22arg\22, 12], [\22arg\22, 13], [\22const\22, 1]]}}"
# CHECK: %[[B:.*]] = "tile.program_id"() {axis = 2 : i32}
# CHECK: scf.for %[[IV:.*]] = %{{.*}} to
# CHECK: %[[K0:.*]] = arith.muli %{{.*}}, %[[IV]] : i32
# CHECK: "tile.tma_coords"(%[[B]], %{{.*}}, %[[K0]]) {tma = 0 : i32} : (i32, i32, i32) -> ()
# CHECK-NEXT: "tile.load"({{.*}}tile.tma = 0 : i32}
# CHECK: %[[K1:.*]] = arith.muli %{{.*}}, %[[IV]] : i32
# CHECK: "tile.tma_coords"(%[[B]], %[[K1]], %{{.*}}) {tma = 1 : i32} : (i32, i32, i32) -> ()
# CHECK-NEXT: "tile.load"({{.*}}tile.tma = 1 : i32}
# CHECK: "tile.tma_coords"(%[[B]], %{{.*}}, %{{.*}}) {tma = 2 : i32} : (i32, i32, i32) -> ()
# CHECK-NEXT: "tile.store"({{.*}}tile.tma = 2 : i32}

# SM80-NOT: tile.tma

# A at `(pid_b + 1) * stride_ab`: batch coordinate pid_b + 1.
# NEXT: tile.tensormaps = "{\220\22: {\22base\22: 0, \22block\22: [1, 128, 64],
# NEXT: %[[B:.*]] = "tile.program_id"() {axis = 2 : i32}
# NEXT: scf.for
# NEXT: %[[B1:.*]] = arith.addi %{{.*}}, %[[B]] : i32
# NEXT: "tile.tma_coords"(%[[B1]], %{{.*}}, %{{.*}}) {tma = 0 : i32}
# NEXT-NEXT: "tile.load"({{.*}}tile.tma = 0 : i32}

# A advanced by one batch per K step: a loop-varying batch coordinate,
# pid_b + k, computed in the loop like the column 64 k.
# LOOP: tile.tensormaps = "{\220\22: {\22base\22: 0, \22block\22: [1, 128, 64],
# LOOP: %[[B:.*]] = "tile.program_id"() {axis = 2 : i32}
# LOOP: scf.for %[[IV:.*]] = %{{.*}} to
# LOOP: %[[BK:.*]] = arith.addi %[[B]], %[[IV]] : i32
# LOOP: "tile.tma_coords"(%[[BK]], %{{.*}}, %{{.*}}) {tma = 0 : i32}
# LOOP-NEXT: "tile.load"({{.*}}tile.tma = 0 : i32}

# Near misses for A (B and C stay rank-3 maps): its batch offset `pid_b *
# stride_am` (the row stride: the rows would be pid_b + row0, which neither
# the % M wrap nor a mask bounds), `pid_b * 64` (a constant: part of the
# column, whose bound then is not a host expression), `pid_b * M *
# stride_am` (the rows of a flattened [B M, K] tensor: the wrap bounds
# row0, not pid_b M + row0), or stride_ab not known to be a multiple of 16
# elements (a map's strides are multiples of 16 bytes).
# NOTA: tile.tensormaps = "{\220\22: {\22base\22: 1, \22block\22: [1, 64, 128], {{.*}} \221\22: {\22base\22: 2, \22block\22: [1, 128, 128], {{[^}]*}}}}"
# NOTA-NOT: \22base\22: 0
# NOTA: "tile.tma_coords"(%{{.*}}, %{{.*}}, %{{.*}}) {tma = 0 : i32}
# NOTA-NEXT: "tile.load"({{.*}}tile.tma = 0 : i32}

# B given K-major (stride_bk = 1, stride_bn the row stride): B's tile is the
# transpose of the block of a rank-3 map [batch, N, K], strides [stride_bb,
# stride_bn, 1]; the load reads that 2-D block at the batch's offset
# (`pid_b * stride_bb` moves the base) and `tile.trans` of it feeds the dot.
# KMAJOR: \221\22: {\22base\22: 1, \22block\22: [1, 128, 64], \22elem_bytes\22: 2, \22inferred\22: true, \22shape\22: {{\[\[}}\22const\22, 2147483648], [\22arg\22, 4], [\22arg\22, 5]], \22strides\22: {{\[\[}}\22arg\22, 9], [\22arg\22, 11], [\22const\22, 1]]}
# KMAJOR: %[[B:.*]] = "tile.program_id"() {axis = 2 : i32}
# KMAJOR: "tile.tma_coords"(%[[B]], %{{.*}}, %{{.*}}) {tma = 1 : i32} : (i32, i32, i32) -> ()
# KMAJOR: %[[BB:.*]] = arith.extsi %[[B]] : i32 to i64
# KMAJOR: %[[OFF:.*]] = arith.muli %[[BB]], %{{.*}} : i64
# KMAJOR: %[[BASE:.*]] = "tile.addptr"(%arg1, %[[OFF]]) : (!tile.ptr<f16>, i64) -> !tile.ptr<f16>
# KMAJOR: tensor.splat %[[BASE]] : tensor<128x64x!tile.ptr<f16>>
# KMAJOR: %[[T:.*]] = "tile.load"({{.*}}tile.tma = 1 : i32} : ({{.*}}) -> tensor<128x64xf16>
# KMAJOR-NEXT: "tile.trans"(%[[T]]) : (tensor<128x64xf16>) -> tensor<64x128xf16>

# A batch mask `pid_b < NB` (BATCH_MASK 1) in every mask: a lane-free
# conjunct on the batch coordinate bounds the batch dimension as a row mask
# bounds rows: each map's batch extent is NB (arg 15) instead of 2^31, so
# the masked batches read zeros and store nothing; `pid_b < NB - 1` (2):
# NB - 1.
# BMASK: tile.tensormaps = "{\220\22: {\22base\22: 0, \22block\22: [1, 128, 64], \22elem_bytes\22: 2, \22inferred\22: true, \22shape\22: {{\[\[}}\22arg\22, 15], [\22arg\22, 3], [\22arg\22, 5]], {{.*}} \221\22: {\22base\22: 1, \22block\22: [1, 64, 128], \22elem_bytes\22: 2, \22inferred\22: true, \22shape\22: {{\[\[}}\22arg\22, 15], {{.*}} \222\22: {\22base\22: 2, \22block\22: [1, 128, 128], \22elem_bytes\22: 2, \22inferred\22: true, \22shape\22: {{\[\[}}\22arg\22, 15],
# BMASK2: \22shape\22: {{\[\[}}\22add\22, [\22const\22, -1], [\22arg\22, 15]], [\22arg\22, 3], [\22arg\22, 5]]

# The batch mask on a K-major B: not taken (the 2-D block load a transposed
# access falls back to would not mask the batch); A and C are maps.
# KBMASK: tile.tensormaps = "{\220\22: {\22base\22: 0, {{.*}} \221\22: {\22base\22: 2, {{[^}]*}}}}"
# KBMASK-NOT: \22base\22: 1,
