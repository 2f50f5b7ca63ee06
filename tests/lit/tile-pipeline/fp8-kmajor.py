# RUN: %tilec ir %S/../../../examples/matmul_persistent.py --target sm90 --signature "*fp8e4nv:16,*fp8e4nv:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=128 BLOCK_K=128 GROUP_M=8 NUM_SMS=132 --num-warps 8 --num-stages 4 --print-after-all | %FileCheck %s
# RUN: %tilec ir %S/../../../examples/matmul_persistent.py --target sm90 --signature "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=128 BLOCK_N=256 BLOCK_K=64 GROUP_M=8 NUM_SMS=132 --num-warps 8 --num-stages 3 --stage ptx | %FileCheck %s --check-prefix=F16

# The persistent descriptor example: B is given as [N, K] and used through b.T,
# so its ring holds B K-major and wgmma reads it so (imm-trans-b 0).  With fp8
# operands the dot selection marks the dot (tile.mma_fp8), tile-expand-fp8
# leaves the operands as bytes, and the product is wgmma ...k32.f32.e4m3.e4m3.
# The loads are TMA copies (tile-pipeline/tma.py), A's rows kept in order.

# CHECK: IR Dump After tile-accelerate-dot
# CHECK: "tile.dot"{{.*}}tile.mma = "wgmma", tile.mma_fp8 = "e4m3"
# CHECK: IR Dump After tile-expand-fp8
# CHECK: "tile.dot"{{.*}} : (tensor<128x128xi8>, tensor<128x128xi8>, tensor<128x128xf32>)
# CHECK: IR Dump After tile-pipeline
# CHECK: "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<4x128x128xi8, 3>
# CHECK: "tile.mma"({{.*}}) {kind = "wgmma", tile.b_kmajor, tile.mma_fp8 = "e4m3"}
# CHECK: IR Dump After ptx
# CHECK: wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3

# F16: wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {{.*}}, p, 1,  1, 0,  0;
