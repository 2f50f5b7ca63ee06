# RUN: %tilec ir %S/kernels.py --target sm90 --kernel heads --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32,i32,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_D=64 --num-warps 8 --stage tile-opt > %t.mlir
# RUN: %tilec-opt %t.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel heads --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32,i32,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_D=64 EXTRA=1 --num-warps 8 --stage tile-opt > %t.extra.mlir
# RUN: %tilec-opt %t.extra.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=EXTRA
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel heads --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32,i32,i32:16,i32,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_D=64 --num-warps 8 --stage tile-opt > %t.unaligned.mlir
# RUN: %tilec-opt %t.unaligned.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=NOQ

# Scores Q K^T per (batch z, head h) written with pointers, as attention
# kernels address them (kernels.py, `heads`): each operand at
# `z * s_z + h * s_h` (z = zh // H, h = zh % H: opaque scalars).  Two
# batch terms are two batch dimensions: maps of rank 4, [z, h, rows,
# columns] outermost first, strides [s_z, s_h, s_row, 1], each batch
# dimension 2^31 long, block [1, 1, R, C], coordinates (z, h, row0, col0).
# Q [M, D] and O [M, N] are read / written as blocks; K [N, D] is read
# K-major, the transpose of its block (D the map's columns).
# CHECK: tile.tensormaps = "{\220\22: {\22base\22: 0, \22block\22: [1, 1, 128, 64], \22elem_bytes\22: 2, \22inferred\22: true, \22shape\22: {{\[\[}}\22const\22, 2147483648], [\22const\22, 2147483648], [\22arg\22, 3], [\22arg\22, 5]], \22strides\22: {{\[\[}}\22arg\22, 8], [\22arg\22, 9], [\22arg\22, 11], [\22const\22, 1]]}, \221\22: {\22base\22: 1, \22block\22: [1, 1, 128, 64], \22elem_bytes\22: 2, \22inferred\22: true, \22shape\22: {{\[\[}}\22const\22, 2147483648], [\22const\22, 2147483648], [\22arg\22, 4], [\22arg\22, 5]], \22strides\22: {{\[\[}}\22arg\22, 12], [\22arg\22, 13], [\22arg\22, 15], [\22const\22, 1]]}, \222\22: {\22base\22: 2, \22block\22: [1, 1, 128, 128], \22elem_bytes\22: 2, \22inferred\22: true, \22shape\22: {{\[\[}}\22const\22, 2147483648], [\22const\22, 2147483648], [\22arg\22, 3], [\22arg\22, 4]], \22store\22: true, \22strides\22: {{\[\[}}\22arg\22, 16], [\22arg\22, 17], [\22arg\22, 19], [\22const\22, 1]]}}"
# CHECK: %[[Z:.*]] = arith.divsi %{{.*}}, %arg6 : i32
# CHECK: %[[H:.*]] = arith.remsi %{{.*}}, %arg6 : i32
# CHECK: "tile.tma_coords"(%[[Z]], %[[H]], %{{.*}}, %{{.*}}) {tma = 0 : i32} : (i32, i32, i32, i32) -> ()
# CHECK-NEXT: "tile.load"({{.*}}tile.tma = 0 : i32}
# CHECK: "tile.tma_coords"(%[[Z]], %[[H]], %{{.*}}, %{{.*}}) {tma = 1 : i32} : (i32, i32, i32, i32) -> ()
# CHECK: "tile.load"({{.*}}tile.tma = 1 : i32}
# CHECK-NEXT: "tile.trans"
# CHECK: "tile.tma_coords"(%[[Z]], %[[H]], %{{.*}}, %{{.*}}) {tma = 2 : i32} : (i32, i32, i32, i32) -> ()
# CHECK-NEXT: "tile.store"({{.*}}tile.tma = 2 : i32}

# A third batch term x * s_x (EXTRA): maps of rank 5 (a tensor map's
# largest), coordinates (z, h, x, row0, col0).
# EXTRA: tile.tensormaps = "{\220\22: {\22base\22: 0, \22block\22: [1, 1, 1, 128, 64], {{.*}} \22strides\22: {{\[\[}}\22arg\22, 8], [\22arg\22, 9], [\22arg\22, 10], [\22arg\22, 11], [\22const\22, 1]]}, \221\22: {{.*}} \222\22: {\22base\22: 2, \22block\22: [1, 1, 1, 128, 128],
# EXTRA: "tile.tma_coords"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {tma = 0 : i32} : (i32, i32, i32, i32, i32) -> ()

# Near miss: Q's head stride s_h not known to be a multiple of 16 elements
# (a map's strides are multiples of 16 bytes): Q stays a pointer load; K and
# O are maps.
# NOQ: tile.tensormaps = "{\220\22: {\22base\22: 1, {{.*}} \221\22: {\22base\22: 2, {{[^}]*}}}}"
# NOQ-NOT: \22base\22: 0
