// RUN: not %tilec-opt %s --pass tile-verify 2>&1 | %FileCheck %s
// RUN: not %tilec-opt %s --split-input-file --pass tile-verify 2>&1 | %FileCheck %s --check-prefix=SPLIT

// Input that MLIR cannot parse is reported at its file, line and column (with
// --split-input-file, lines still count from the top of the file); the other
// inputs of a split file are still processed and printed.
// CHECK: {{.*}}parse-error.mlir:16:3: error: cannot parse the input: custom op 'tile.nonsense' is unknown
// SPLIT: {{.*}}parse-error.mlir:16:3: error: cannot parse the input: custom op 'tile.nonsense' is unknown
// SPLIT: func.func @ok()
// SPLIT-NOT: nonsense
func.func @ok() {
  return
}
// -----
func.func @bad() {
  tile.nonsense
  return
}
