# RUN: %tilec ir %s --target cpu --constexpr B=16 --stage tile-opt --debug-info | %FileCheck %s

# `acc += tl.dot(a, b)` in a K loop leaves tile-opt as a dot accumulating into
# the loop-carried tile, at the `tl.dot` call's location; no add remains.
import tilec
import tilec.language as tl


@tilec.kernel
def k(a_ptr: "*fp16", b_ptr: "*fp16", c_ptr: "*fp32", n: "i32", B: tl.constexpr):
    r = tl.arange(0, B)
    acc = tl.zeros((B, B), dtype=tl.float32)
    for i in range(n):
        acc += tl.dot(tl.load(a_ptr + r[:, None] * B + r[None, :]), tl.load(b_ptr + r[:, None] * B + r[None, :]))
        # CHECK: scf.for {{.*}} iter_args(%[[ACC:[^ ]*]] = %{{.*}}
        # CHECK-NOT: arith.addf
        # CHECK: %[[D:.*]] = "tile.dot"(%{{.*}}, %{{.*}}, %[[ACC]]) {{.*}} loc("{{.*}}acc-plus-dot.py":[[@LINE-3]]:16)
        # CHECK-NOT: arith.addf
        # CHECK: scf.yield %[[D]]
    tl.store(c_ptr + r[:, None] * B + r[None, :], acc)
