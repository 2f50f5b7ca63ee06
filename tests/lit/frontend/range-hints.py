# RUN: %tilec ir %s --target cpu --kernel k --signature "*fp32,i32" --constexpr BLOCK=16 | %FileCheck %s

# tl.range's hints are recorded on the scf.for (integers as i32 attributes,
# true flags as unit attributes, False/None left out; overlap_dots, whose
# default (None) the compiler picks, as a bool when given); they change
# nothing else.
# tl.static_range unrolls: its loop variable is a constexpr.
import tilec
import tilec.language as tl


@tilec.kernel
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    # CHECK: scf.for
    # CHECK: } {tile.flatten, tile.num_stages = 3 : i32}
    for i in tl.range(0, n, 1, num_stages=3, flatten=True, warp_specialize=False):
        acc += tl.load(x_ptr + i * BLOCK + offs)
    # CHECK: scf.for
    # CHECK: } {tile.disallow_acc_multi_buffer, tile.loop_unroll_factor = 2 : i32, tile.warp_specialize}
    for j in tl.range(n, loop_unroll_factor=2, warp_specialize=True, disallow_acc_multi_buffer=True):
        acc = acc * 2.0
    # CHECK: scf.for
    # CHECK: } {tile.overlap_dots = false}
    for t in tl.range(0, n, overlap_dots=False):
        acc = acc * 3.0
    # CHECK: scf.for
    # CHECK: } {tile.overlap_dots = true}
    for u in tl.range(0, n, overlap_dots=True):
        acc = acc * 4.0
    # CHECK-NOT: scf.for
    # CHECK: arith.constant 1.000000e+00 : f32
    # CHECK: arith.constant 3.000000e+00 : f32
    for s in tl.static_range(1, 4, 2):
        acc = acc + float(s)
    tl.store(x_ptr + offs, acc)
