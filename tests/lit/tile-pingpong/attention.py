# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_fwd --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,fp32,i32,i32,i32:16" --constexpr HEAD_DIM=128 BLOCK_M=128 BLOCK_N=64 CAUSAL=False WARP_SPECIALIZE=True --num-warps 8 --num-stages 4 --stage tiled | %FileCheck %s
# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_fwd --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,fp32,i32,i32,i32:16" --constexpr HEAD_DIM=128 BLOCK_M=128 BLOCK_N=64 CAUSAL=False WARP_SPECIALIZE=True --num-warps 8 --num-stages 4 --stage ptx | %FileCheck %s --check-prefix=PTX
# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_fwd --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,fp32,i32,i32,i32:16" --constexpr HEAD_DIM=64 BLOCK_M=128 BLOCK_N=64 CAUSAL=True WARP_SPECIALIZE=True --num-warps 4 --num-stages 3 --stage tiled | %FileCheck %s --check-prefix=FOUR

# tile-pingpong on the attention forward (`tl.range(..., warp_specialize=True)`,
# 8 warps): one turn_init at the kernel's start; in both key/value loops (the
# unmasked blocks, then the masked tail) each wgmma product is issued between
# a turn_wait and a turn_pass, so the two warpgroups alternate: one issues
# its products while the other computes its softmax.

# CHECK: func.func @_attn_fwd
# CHECK-NEXT: "tile.turn_init"()
# CHECK-NOT: "tile.turn_init"
# CHECK: scf.for
# CHECK: "tile.turn_wait"()
# CHECK-NEXT: "tile.mma"({{.*}}) {kind = "wgmma", tile.b_kmajor}
# CHECK-NEXT: "tile.turn_pass"()
# CHECK: "tile.turn_wait"()
# CHECK-NEXT: "tile.mma"({{.*}}) {kind = "wgmma"}
# CHECK-NEXT: "tile.turn_pass"()
# CHECK: } {tile.pingpong, tile.warp_specialize}
# CHECK: scf.for
# CHECK: "tile.turn_wait"()
# CHECK: } {tile.pingpong, tile.warp_specialize}
# CHECK-NOT: "tile.turn_

# Named barriers 1 and 2, one per warpgroup: warpgroup 1 arrives once at the
# start (warpgroup 0 goes first); a wait (`bar.sync` on its own barrier)
# before each wgmma group, a pass (`bar.arrive` on the other's) after it.
# PTX: bar.arrive %r{{[0-9]+}}, 256;
# PTX: bar.sync %r[[MINE:[0-9]+]], 256;
# PTX: wgmma.fence.sync.aligned;
# PTX: wgmma.commit_group.sync.aligned;
# PTX: bar.arrive %r[[OTHER:[0-9]+]], 256;
# PTX: bar.sync %r[[MINE]], 256;
# PTX: wgmma.fence.sync.aligned;
# PTX: bar.arrive %r[[OTHER]], 256;

# Four warps are one warpgroup: no turns, and the loop says why.
# FOUR-NOT: "tile.turn_
# FOUR: tile.warp_specialize_note = "turns need num_warps=8 (two warpgroups)"
# FOUR-NOT: "tile.turn_

