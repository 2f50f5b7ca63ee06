# RUN: %tilec ir %S/../tile-tma-pointers/kernels.py --target sm90 --kernel bias_f32 --signature "*fp16:16,*fp16:16,*fp16:16,*fp32:16,i32,i32,i32:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=256 BLOCK_K=64 --num-warps 8 --num-stages 3 --stage tiled | %FileCheck %s
# RUN: %tilec ir %S/../tile-tma-pointers/kernels.py --target sm90 --kernel bias_f32 --signature "*fp16:16,*fp16:16,*fp16:16,*fp32:16,i32,i32,i32:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=256 BLOCK_K=64 --num-warps 8 --num-stages 3 --stage ptx | %FileCheck %s --check-prefix=PTX

# A TMA-fed wgmma loop keeps A's rows in order, and the accumulator's rows are
# put in place after the loop (tile.row_exchange, through workgroup memory).
# When the accumulator's first reader is f32 arithmetic, not the cast, the
# exchange moves a 128 x 256 f32 tile (128 KiB): it comes after the rings'
# release, so it takes their bytes.  Placed right after the final wait (as
# before), it sat beside 144 KiB of live rings: 282,656 bytes, more than the
# 232,448 an sm90 block may have, and the kernel did not compile.
# CHECK: "tile.mma_wait"({{.*}}) {pending = 0 : i32}
# CHECK-NEXT: "tile.barrier"()
# CHECK-NEXT: "tile.mbarrier_inval"
# CHECK-NEXT: "tile.local_dealloc"
# CHECK-NEXT: "tile.local_dealloc"
# CHECK: "tile.row_exchange"({{.*}}) {permutation = "wgmma"} : (tensor<128x256xf32
# CHECK-NEXT: arith.mulf
# PTX: wgmma.mma_async
# PTX: cp.async.bulk.tensor.2d.shared::cluster.global
