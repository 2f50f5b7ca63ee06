# RUN: %tilec ir %s --kernel scaled_sum --target sm90 --signature "*fp32:16,*fp32:16,i32" --constexpr BLOCK=128 --stage tiled | %FileCheck %s
# RUN: %tilec ir %s --kernel scaled_sum --target gfx942 --signature "*fp32:16,*fp32:16,i32" --constexpr BLOCK=128 --stage tiled | %FileCheck %s
# RUN: %tilec ir %s --kernel scaled_sum --target sm90 --signature "*fp32:16,*fp32:16,i32" --constexpr BLOCK=128 --stage ptx | %FileCheck %s --check-prefix=PTX

# `loop_unroll_factor=3` (Triton's hint): tile-unroll runs upstream MLIR's
# loopUnrollByFactor on the loop.  The upper bound is first raised to the lower
# one (max), then a loop over groups of three bodies (step 3 * BLOCK) and a
# loop over the 0-2 iterations left (step BLOCK); the factor is gone from both.
# The loop without the hint keeps its one body.
import tilec
import tilec.language as tl


@tilec.kernel
def scaled_sum(X, Out, n, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], tl.float32)
    for start in tl.range(0, n, BLOCK, loop_unroll_factor=3):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(X + offs, mask=offs < n, other=0.0)
    for start in tl.range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += 2.0 * tl.load(X + offs, mask=offs < n, other=0.0)
    tl.store(Out + tl.arange(0, BLOCK), acc)

# CHECK: arith.maxsi
# CHECK: scf.for
# CHECK-COUNT-3: tile.load
# CHECK: scf.yield
# CHECK-NOT: tile.loop_unroll_factor
# CHECK: scf.for
# CHECK-COUNT-1: tile.load
# CHECK: scf.yield
# CHECK: scf.for
# CHECK-COUNT-1: tile.load
# CHECK: scf.yield
# CHECK-NOT: tile.unroll_now

# PTX: .entry scaled_sum
