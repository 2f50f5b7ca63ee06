# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_fwd --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,fp32,i32,i32,i32:16" --constexpr HEAD_DIM=128 BLOCK_M=128 BLOCK_N=64 CAUSAL=False WARP_SPECIALIZE=True OVERLAP=False --num-warps 8 --num-stages 4 --stage tiled | %FileCheck %s
# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_fwd --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,fp32,i32,i32,i32:16" --constexpr HEAD_DIM=128 BLOCK_M=128 BLOCK_N=64 CAUSAL=False WARP_SPECIALIZE=True OVERLAP=False --num-warps 8 --num-stages 4 --stage ptx | %FileCheck %s --check-prefix=PTX

# On the attention forward (`tl.range(..., warp_specialize=True)`, TMA rings,
# 8 warps) tile-warp-specialize gives the key/value loop's copies to a
# producer warpgroup (tests/lit/tile-warp-specialize/attention.py), and no
# loop is left for warpgroup turns: the split loop and the tail loop inside
# the consumers' region drop the hint.  (With the producer, turns measured no
# faster on the H200: benchmarks/results/README.md.)  Turns on a loop the
# split leaves: carried.py.

# CHECK-NOT: "tile.turn_
# CHECK: tile.producer_role
# CHECK-NOT: "tile.turn_
# CHECK-NOT: tile.pingpong
# PTX-NOT: bar.arrive
