# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_bwd_dkdv --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,*fp32:16,fp32,i32,i32:16" --constexpr HEAD_DIM=64 BLOCK_M=64 BLOCK_N=128 CAUSAL=False --num-warps 8 --num-stages 3 --print-after-all | %FileCheck %s
# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_bwd_dkdv --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,*fp32:16,fp32,i32,i32:16" --constexpr HEAD_DIM=128 BLOCK_M=64 BLOCK_N=128 CAUSAL=False --num-warps 8 --num-stages 3 --print-after-all | %FileCheck %s --check-prefix=WIDE
# RUN: %tilec ir %S/../../../examples/attention.py --kernel _attn_bwd_dkdv --target sm80 --signature "*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp16:16,*fp32:16,*fp32:16,fp32,i32,i32:16" --constexpr HEAD_DIM=64 BLOCK_M=64 BLOCK_N=128 CAUSAL=False --num-warps 8 --num-stages 3 --print-after-all | %FileCheck %s --check-prefix=NOWGMMA

# The dK/dV loop of the attention backward loads the log-sum-exp and delta
# vectors of each query block: on sm90 both are loaded one iteration ahead
# (the first before the loop, the next at the top of each iteration, carried).
# CHECK-LABEL: IR Dump After tile-prefetch-vectors 
# CHECK: "tile.load"{{.*}} -> tensor<64xf32>
# CHECK: "tile.load"{{.*}} -> tensor<64xf32>
# CHECK: scf.for {{.*}} iter_args({{.*}}) -> (tensor<128x64xf32>, tensor<128x64xf32>, tensor<64xf32>, tensor<64xf32>)
# CHECK: "tile.load"{{.*}} -> tensor<64xf32>
# CHECK: "tile.load"{{.*}} -> tensor<64xf32>
# CHECK: scf.yield {{.*}} : tensor<128x64xf32>, tensor<128x64xf32>, tensor<64xf32>, tensor<64xf32>
# CHECK-LABEL: IR Dump After tile-layout 

# At d = 128 the dK and dV accumulators take 128 registers a thread: no prefetch.
# WIDE-LABEL: IR Dump After tile-prefetch-vectors 
# WIDE: scf.for {{.*}} -> (tensor<128x128xf32>, tensor<128x128xf32>)  : i32 {
# WIDE-LABEL: IR Dump After tile-layout 

# No wgmma (sm80): the pass leaves the loop alone.
# NOWGMMA-LABEL: IR Dump After tile-prefetch-vectors 
# NOWGMMA: scf.for {{.*}} -> (tensor<128x64xf32>, tensor<128x64xf32>)  : i32 {
# NOWGMMA-LABEL: IR Dump After tile-layout 
