# RUN: %tilec ir %s --target cpu --kernel k --signature "*fp32:16,*i32:16,i32:16,i32" --constexpr BLOCK=64 | %FileCheck %s

# tl.multiple_of / tl.max_contiguous / tl.max_constancy are recorded on the
# op that defines the hinted value (one entry per dimension; a second hint of
# the same kind keeps the larger), where passes/analysis/axis_info.py reads
# them: here Triton's persistent-matmul idiom, a clamped index declared
# contiguous over the block.  A hinted function argument keeps what its
# specialization says (nothing recorded).
import tilec
import tilec.language as tl


@tilec.kernel
def k(x_ptr, y_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    # CHECK: arith.select {{.*}} {tile.hint_max_contiguous = array<i32: 64>, tile.hint_multiple_of = array<i32: 64>}
    offs = tl.where(offs < n, offs, 0)
    offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)
    # CHECK: "tile.load"({{.*}}) {{.*}}tile.hint_max_constancy = array<i32: 8>
    idx = tl.max_constancy(tl.load(y_ptr + offs // 8 * 8), 8)
    # CHECK: arith.addi {{.*}} {tile.hint_multiple_of = array<i32: 32>}
    idx = tl.multiple_of(tl.multiple_of(idx * 0 + 32, 16), 32)
    # CHECK-NOT: tile.hint
    s = tl.multiple_of(s, 16)
    tl.store(x_ptr + offs, (idx + s).to(tl.float32))

