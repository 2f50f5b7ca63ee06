# RUN: %tilec ir %S/kernels.py --target sm90 --kernel variants --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 HINTS=1 --num-warps 8 --stage tile-opt > %t.hints.mlir
# RUN: %tilec-opt %t.hints.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=ALL
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel variants --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 CACHE=1 --num-warps 8 --stage tile-opt > %t.cache.mlir
# RUN: %tilec-opt %t.cache.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=ALL
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel variants --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 ROW_MASK=1 --num-warps 8 --stage tile-opt > %t.lt.mlir
# RUN: %tilec-opt %t.lt.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=ALL
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel variants --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 ROW_MASK=2 --num-warps 8 --stage tile-opt > %t.le.mlir
# RUN: %tilec-opt %t.le.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=ALL
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel variants --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 ROW_MASK=3 --num-warps 8 --stage tile-opt > %t.gt.mlir
# RUN: %tilec-opt %t.gt.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=ALL
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel variants --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 HINTS=1 CACHE=1 ROW_MASK=1 --num-warps 8 --stage tile-opt > %t.all.mlir
# RUN: %tilec-opt %t.all.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=ALL
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel variants --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 ROW_MASK=4 --num-warps 8 --stage tile-opt > %t.n.mlir
# RUN: %tilec-opt %t.n.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=NOTA
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel variants --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 ROW_MASK=5 --num-warps 8 --stage tile-opt > %t.m1.mlir
# RUN: %tilec-opt %t.m1.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=NOTA
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel variants --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 ROW_MASK=6 --num-warps 8 --stage tile-opt > %t.poly.mlir
# RUN: %tilec-opt %t.poly.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=NOTA
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel variants --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1,i32:16,i32=1" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 ROW_MASK=7 --num-warps 8 --stage tile-opt > %t.modn.mlir
# RUN: %tilec-opt %t.modn.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=NOTA
# RUN: %tilec ir %S/kernels.py --target sm90 --kernel variants --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32:16,i32=1,i32:16,i32=1" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=64 HINTS=1 --num-warps 8 --stage tile-opt > %t.stride.mlir
# RUN: %tilec-opt %t.stride.mlir --pass tile-tma-pointers --target sm90 --num-warps 8 | %FileCheck %s --check-prefix=NOTA

# Variants of the tutorial's source (kernels.py, `variants`).  The hints
# (tl.multiple_of / tl.max_contiguous on the offsets and row strides) leave
# nothing in the IR, nor do the cache and eviction keywords of tl.load /
# tl.store: A, B and C are maps as in tutorial.py.  A row conjunct
# `offs_am < M` on A, whose rows are `% M` (also `<= M - 1`, `M > offs_am`),
# is `x % M < M`: it holds wherever the wrap's map is not empty, so it adds
# no bound and A's rows are bounded by the wrap (its dead rows), as without it.
# ALL: tile.tensormaps = "{\220\22: {\22base\22: 0, \22block\22: [128, 64], \22elem_bytes\22: 2, \22inferred\22: true, \22shape\22: {{\[\[}}\22arg\22, 3], [\22arg\22, 5]], \22strides\22: {{\[\[}}\22arg\22, 6], [\22const\22, 1]]}, \221\22: {\22base\22: 1, \22block\22: [64, 128], \22elem_bytes\22: 2, \22inferred\22: true, \22shape\22: {{\[\[}}\22arg\22, 5], [\22arg\22, 4]], \22strides\22: {{\[\[}}\22arg\22, 8], [\22const\22, 1]]}, \222\22: {\22base\22: 2, \22block\22: [128, 128], \22elem_bytes\22: 2, \22inferred\22: true, \22shape\22: {{\[\[}}\22arg\22, 3], [\22arg\22, 4]], \22store\22: true, \22strides\22: {{\[\[}}\22arg\22, 10], [\22const\22, 1]]}}"
# ALL: "tile.tma_coords"(%{{.*}}, %{{.*}}) {tma = 0 : i32}
# ALL-NEXT: "tile.load"({{.*}}tile.tma = 0 : i32}
# ALL: "tile.tma_coords"(%{{.*}}, %{{.*}}) {tma = 1 : i32}
# ALL-NEXT: "tile.load"({{.*}}tile.tma = 1 : i32}
# ALL: "tile.tma_coords"(%{{.*}}, %{{.*}}) {tma = 2 : i32}
# ALL-NEXT: "tile.store"({{.*}}tile.tma = 2 : i32}

# Near misses: A's row conjunct is `offs_am < N` (a bound, not the wrap's
# M), `offs_am < M - 1` (one row short of the wrap), `2 offs_am - rows < M`
# (the index polynomials read the left side as the remainder's x, but it is
# not the remainder), `offs_am % N < N` (a remainder by another divisor: for
# N <= 0 it is false); or the column stride of A is not 1 (stride_ak
# unspecialized, with the hints).  A stays a pointer load; B and C are maps.
# NOTA: tile.tensormaps = "{\220\22: {\22base\22: 1, {{.*}} \221\22: {\22base\22: 2, {{[^}]*}}}}"
# NOTA-NOT: \22base\22: 0
