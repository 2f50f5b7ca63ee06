# RUN: %tilec ir %s --target cpu --kernel k --constexpr BLOCK=16 --debug-info | %FileCheck %s
# RUN: %tilec ir %s --target cpu --kernel k --constexpr BLOCK=16 | %FileCheck %s --check-prefix=NOLOC

# The frontend gives every op the user's file, line and column: statements at
# their first token, calls at the call, binary operators at the operator.
# `tilec ir --debug-info` prints the frontend's tile IR with the locations inline.
import tilec
import tilec.language as tl


@tilec.kernel
def k(x_ptr: "*fp32", y_ptr: "*fp32", n: "i32", BLOCK: tl.constexpr):
    # CHECK-LABEL: func.func @k(
    # CHECK-SAME: %arg0: !tile.ptr<f32> {{{.*}}tile.name = "x_ptr"{{.*}}} loc("{{.*}}locations.py":[[@LINE-2]]:1)
    pid = tl.program_id(0)
    # CHECK: "tile.program_id"() {axis = 0 : i32} : () -> i32 loc("{{.*}}locations.py":[[@LINE-1]]:11)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    # CHECK: arith.muli {{.*}} loc("{{.*}}locations.py":[[@LINE-1]]:16)
    # CHECK: "tile.range"() {end = 16 : i32, start = 0 : i32} : () -> tensor<16xi32> loc("{{.*}}locations.py":[[@LINE-2]]:26)
    # CHECK: arith.addi {{.*}} : tensor<16xi32> loc("{{.*}}locations.py":[[@LINE-3]]:24)
    mask = offs < n
    # CHECK: arith.cmpi slt, {{.*}} : tensor<16xi32> loc("{{.*}}locations.py":[[@LINE-1]]:12)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    # CHECK: "tile.addptr"({{.*}}) : (tensor<16x!tile.ptr<f32>>, tensor<16xi32>) -> tensor<16x!tile.ptr<f32>> loc("{{.*}}locations.py":[[@LINE-1]]:23)
    # CHECK: "tile.load"({{.*}}) {operandSegmentSizes = array<i32: 1, 1, 1>} {{.*}} loc("{{.*}}locations.py":[[@LINE-2]]:9)
    tl.store(y_ptr + offs, x * 2.0, mask=mask)
    # CHECK: "tile.addptr"({{.*}} loc("{{.*}}locations.py":[[@LINE-1]]:20)
    # CHECK: arith.mulf {{.*}} loc("{{.*}}locations.py":[[@LINE-2]]:30)
    # CHECK: "tile.store"({{.*}}) {operandSegmentSizes = array<i32: 1, 1, 1>} {{.*}} loc("{{.*}}locations.py":[[@LINE-3]]:5)
    # CHECK: return loc("{{.*}}locations.py"


# Without --debug-info no location is printed.
# NOLOC: "tile.load"
# NOLOC-NOT: loc(
