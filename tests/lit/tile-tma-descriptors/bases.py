# RUN: %tilec ir %S/kernels.py --target sm90 --kernel batched_desc --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 --num-warps 8 --num-stages 3 --stage tile-opt > %t.mlir
# RUN: %tilec-opt %t.mlir --pass tile-tma-descriptors --target sm90 --num-warps 8 --num-stages 3 | %FileCheck %s
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel batched_desc --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 BASE=2 --num-warps 8 --num-stages 3 --stage tile-opt > %t.2.mlir
# RUN: %tilec-opt %t.2.mlir --pass tile-tma-descriptors --target sm90 --num-warps 8 --num-stages 3 | %FileCheck %s --check-prefix=FACTOR
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel batched_desc --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 BASE=3 --num-warps 8 --num-stages 3 --stage tile-opt > %t.3.mlir
# RUN: %tilec-opt %t.3.mlir --pass tile-tma-descriptors --target sm90 --num-warps 8 --num-stages 3 | %FileCheck %s --check-prefix=NEXT
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel batched_desc --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 BASE=4 --num-warps 8 --num-stages 3 --stage tile-opt > %t.4.mlir
# RUN: %tilec-opt %t.4.mlir --pass tile-tma-descriptors --target sm90 --num-warps 8 --num-stages 3 | %FileCheck %s --check-prefix=CONST
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel batched_desc --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 BASE=5 --num-warps 8 --num-stages 3 --stage tile-opt > %t.5.mlir
# RUN: %tilec-opt %t.5.mlir --pass tile-tma-descriptors --target sm90 --num-warps 8 --num-stages 3 | %FileCheck %s --check-prefix=UNALIGNED
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel batched_desc --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32,i32:16,i32:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 --num-warps 8 --num-stages 3 --stage tile-opt > %t.u.mlir
# RUN: %tilec-opt %t.u.mlir --pass tile-tma-descriptors --target sm90 --num-warps 8 --num-stages 3 | %FileCheck %s --check-prefix=ARG
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel heads_desc --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32,i32,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_D=64 --num-warps 8 --num-stages 3 --stage tile-opt > %t.h.mlir
# RUN: %tilec-opt %t.h.mlir --pass tile-tma-descriptors --target sm90 --num-warps 8 --num-stages 3 | %FileCheck %s --check-prefix=HEADS
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel heads_desc --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32,i32,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_D=64 EXTRA=1 --num-warps 8 --num-stages 3 --stage tile-opt > %t.x.mlir
# RUN: %tilec-opt %t.x.mlir --pass tile-tma-descriptors --target sm90 --num-warps 8 --num-stages 3 | %FileCheck %s --check-prefix=EXTRA
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel reversed_copy --signature "*fp16:16,*fp16:16,i32:16,i32:16,i32,i32:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=64 BLOCK_N=64 --num-warps 4 --stage tile-opt > %t.r.mlir
# RUN: %tilec-opt %t.r.mlir --pass tile-tma-descriptors --target sm90 --num-warps 4 | %FileCheck %s --check-prefix=REVERSED
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel reversed_copy --signature "*fp16:16,*fp16:16,i32:16,i32:16,i32,i32:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=64 BLOCK_N=64 FORM=1 --num-warps 4 --stage tile-opt > %t.r1.mlir
# RUN: %tilec-opt %t.r1.mlir --pass tile-tma-descriptors --target sm90 --num-warps 4 | %FileCheck %s --check-prefix=FORWARD
# RUN: %tilec-opt %t.mlir --pass tile-tma-descriptors --target sm80 --num-warps 8 --num-stages 3 | %FileCheck %s --check-prefix=SM80

# Descriptors with a per-program base (kernels.py, `batched_desc`:
# `make_tensor_descriptor(x_ptr + pid_b * stride_xb, [rows, cols], [stride, 1], ..)`)
# are blocks of rank-3 maps: shape [2^31, rows, cols], strides [stride_xb,
# stride, 1], block [1, R, C], coordinates (pid_b, the access's offsets).
# CHECK: tile.tensormaps = "{\220\22: {\22base\22: 0, \22block\22: [1, 128, 64], \22elem_bytes\22: 2, \22shape\22: {{\[\[}}\22const\22, 2147483648], [\22arg\22, 3], [\22arg\22, 5]], \22strides\22: {{\[\[}}\22arg\22, 6], [\22arg\22, 7], [\22const\22, 1]]}, \221\22: {\22base\22: 1, \22block\22: [1, 64, 128], {{.*}} \22strides\22: {{\[\[}}\22arg\22, 8], [\22arg\22, 9], [\22const\22, 1]]}, \222\22: {\22base\22: 2, \22block\22: [1, 128, 128], \22elem_bytes\22: 2, \22shape\22: {{\[\[}}\22const\22, 2147483648], [\22arg\22, 3], [\22arg\22, 4]], \22store\22: true, \22strides\22: {{\[\[}}\22arg\22, 10], [\22arg\22, 11], [\22const\22, 1]]}}"
# CHECK: %[[B:.*]] = "tile.program_id"() {axis = 2 : i32}
# CHECK: "tile.tma_coords"(%[[B]], %{{.*}}, %{{.*}}) {tma = 0 : i32} : (i32, i32, i32) -> ()
# CHECK: "tile.load"({{.*}}tile.tma = 0 : i32}
# CHECK: "tile.tma_coords"(%[[B]], %{{.*}}, %{{.*}}) {tma = 1 : i32} : (i32, i32, i32) -> ()
# CHECK: "tile.load"({{.*}}tile.tma = 1 : i32}
# CHECK: "tile.tma_coords"(%[[B]], %{{.*}}, %{{.*}}) {tma = 2 : i32} : (i32, i32, i32) -> ()
# CHECK: "tile.store"({{.*}}tile.tma = 2 : i32}
# CHECK-NOT: tile.descriptor

# `pid_b * 64 * stride_am`: the constant factor goes into the batch stride
# (64 stride_am), the coordinate stays pid_b.
# FACTOR: \220\22: {\22base\22: 0, \22block\22: [1, 128, 64], {{.*}} \22strides\22: {{\[\[}}\22mul\22, [\22const\22, 64], [\22arg\22, 7]], [\22arg\22, 7], [\22const\22, 1]]}
# FACTOR: %[[B:.*]] = "tile.program_id"() {axis = 2 : i32}
# FACTOR: "tile.tma_coords"(%[[B]], %{{.*}}, %{{.*}}) {tma = 0 : i32}

# `(pid_b + 1) * stride_ab`: one group, coordinate pid_b + 1 built before the access.
# NEXT: \220\22: {\22base\22: 0, {{.*}} \22strides\22: {{\[\[}}\22arg\22, 6], [\22arg\22, 7], [\22const\22, 1]]}
# NEXT: %[[B:.*]] = "tile.program_id"() {axis = 2 : i32}
# NEXT: %[[N:.*]] = arith.addi %{{.*}}, %[[B]] : i32
# NEXT-NEXT: "tile.tma_coords"(%[[N]], %{{.*}}, %{{.*}}) {tma = 0 : i32}

# `pid_b * 24` (48 bytes): terms free of arguments are one batch of constant stride.
# CONST: \220\22: {\22base\22: 0, {{.*}} \22strides\22: {{\[\[}}\22const\22, 24], [\22arg\22, 7], [\22const\22, 1]]}

# `pid_b * 20` (40 bytes) is no multiple of 16 bytes: A keeps its descriptor
# (tile-lower-descriptors lowers it), B and C are maps 0 and 1.
# UNALIGNED: \220\22: {\22base\22: 1,
# UNALIGNED-NOT: \22base\22: 0
# UNALIGNED: "tile.descriptor_load"
# UNALIGNED-NOT: tile.tma = 2

# stride_ab without a known multiple of 16: A keeps its descriptor.
# ARG: \220\22: {\22base\22: 1,
# ARG: "tile.descriptor_load"

# Per-head descriptors (`heads_desc`: `q_ptr + (zh // H) * s_qz + (zh % H) * s_qh`)
# are rank-4 maps [2^31, 2^31, rows, cols], coordinates (z, h, row, col); O at
# `o_ptr + zh * M * N` (an i64 offset) a rank-3 map of batch stride M N.
# z = zh // H is non-negative where H > 0: Q's and K's maps list H
# (argument 6) as `positive`, which the runtime checks at launch.
# HEADS: tile.tensormaps = "{\220\22: {\22base\22: 0, \22block\22: [1, 1, 128, 64], \22elem_bytes\22: 2, \22positive\22: [6], \22shape\22: {{\[\[}}\22const\22, 2147483648], [\22const\22, 2147483648], [\22arg\22, 3], [\22arg\22, 5]], \22strides\22: {{\[\[}}\22arg\22, 8], [\22arg\22, 9], [\22arg\22, 11], [\22const\22, 1]]}, \221\22: {\22base\22: 1, \22block\22: [1, 1, 128, 64], \22elem_bytes\22: 2, \22positive\22: [6], {{.*}} \22strides\22: {{\[\[}}\22arg\22, 12], [\22arg\22, 13], [\22arg\22, 15], [\22const\22, 1]]}, \222\22: {\22base\22: 2, \22block\22: [1, 128, 128], {{.*}} \22store\22: true, \22strides\22: {{\[\[}}\22mul\22, [\22arg\22, 3], [\22arg\22, 4]], [\22arg\22, 4], [\22const\22, 1]]}}"
# HEADS: %[[ZH:.*]] = "tile.program_id"() {axis = 2 : i32}
# HEADS: %[[Z:.*]] = arith.divsi %[[ZH]], %arg6 : i32
# HEADS: %[[H:.*]] = arith.remsi %[[ZH]], %arg6 : i32
# HEADS: "tile.tma_coords"(%[[Z]], %[[H]], %{{.*}}, %{{.*}}) {tma = 0 : i32} : (i32, i32, i32, i32) -> ()
# HEADS: "tile.tma_coords"(%[[Z]], %[[H]], %{{.*}}, %{{.*}}) {tma = 1 : i32} : (i32, i32, i32, i32) -> ()
# HEADS: "tile.tma_coords"(%[[ZH]], %{{.*}}, %{{.*}}) {tma = 2 : i32} : (i32, i32, i32) -> ()

# A third batch term: rank-5 maps, coordinates (z, h, x, row, col).
# EXTRA: \220\22: {\22base\22: 0, \22block\22: [1, 1, 1, 128, 64], {{.*}} \22strides\22: {{\[\[}}\22arg\22, 8], [\22arg\22, 9], [\22arg\22, 10], [\22arg\22, 11], [\22const\22, 1]]}
# EXTRA: "tile.tma_coords"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {tma = 0 : i32} : (i32, i32, i32, i32, i32) -> ()

# `x_ptr + (NB - 1 - pid_b) * stride_xb` lies inside X, but splits into the
# groups {NB, stride_xb} (coordinate 1) and {stride_xb} (coordinate
# -1 - pid_b, below zero on every program: TMA would read zeros there): X
# stays a pointer access; Y's descriptor (pid_b) is map 0.  Written as
# `pid_b * 2 * s - pid_b * s`, the one group's coordinate is pid_b: a map.
# REVERSED: tile.tensormaps = "{\220\22: {\22base\22: 1,
# REVERSED-NOT: \22base\22: 0
# REVERSED: "tile.descriptor_load"
# FORWARD: tile.tensormaps = "{\220\22: {\22base\22: 0, \22block\22: [1, 64, 64]

# Without Feature.TMA the pass does nothing.
# SM80-NOT: tile.tma
