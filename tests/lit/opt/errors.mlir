// RUN: not %tilec-opt %s --pass tile-verify,no-such-pass 2>&1 | %FileCheck %s --check-prefix=UNKNOWN
// RUN: not %tilec-opt %s --pass tile-verify 2>&1 | %FileCheck %s --check-prefix=VERIFY
// RUN: not %tilec-opt %S/does-not-exist.mlir --pass tile-verify 2>&1 | %FileCheck %s --check-prefix=MISSING
// RUN: not %tilec-opt %s --pass tile-dce --target sm7 2>&1 | %FileCheck %s --check-prefix=TARGET
// RUN: not %tilec-opt %s --pass tile-dce --num-warps 3 2>&1 | %FileCheck %s --check-prefix=WARPS
// RUN: not %tilec-opt %s --pass tile-dce --num-stages 0 2>&1 | %FileCheck %s --check-prefix=STAGES

// UNKNOWN: error: unknown pass or bad pipeline 'no-such-pass'
// UNKNOWN: tilec passes: {{.*}}convert-tile-to-cpu{{.*}}tile-dce{{.*}}tile-verify
// VERIFY: k.py:3:7: error: 'tile.addptr' op pointer, offset and result must have the same shape and type
// VERIFY-NOT: module
// MISSING: error: cannot read {{.*}}does-not-exist.mlir
// WARPS: error: --num-warps must be a power of two >= 1, got 3
// STAGES: error: --num-stages must be >= 1, got 0
// TARGET: error: unknown target 'sm7'; valid targets are: sm80, sm90, sm100, gfx90a, gfx942, gfx950, gfx1100, cpu
func.func @bad(%p: tensor<4x!tile.ptr<f32>>, %o: tensor<8xi32>) attributes {tile.kernel} {
  %q = "tile.addptr"(%p, %o) : (tensor<4x!tile.ptr<f32>>, tensor<8xi32>) -> tensor<4x!tile.ptr<f32>> loc("k.py":3:7)
  return
}
