// RUN: %tilec-opt %s --split-input-file --pass tile-verify 2>&1 | %FileCheck %s --check-prefix=OK --allow-empty
// RUN: not %tilec-opt %s.bad --split-input-file --pass tile-verify 2>&1 | %FileCheck %s.bad

// A well-formed TMA store (its buffer holds one tile of the value's shape and
// element type, two i32 coordinates, or three to five for a batched map's block
// (a tensor map has rank <= 5), a
// map id, a known row permutation) and its wait verify; tma-store.mlir.bad
// breaks each rule once.
// OK-NOT: error
func.func @ok(%v: tensor<128x64xf16>, %r: i32, %c: i32) attributes {tile.kernel} {
  %b = "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<1x128x64xf16, 3>
  "tile.tma_store"(%b, %v, %r, %c) {row_permutation = "wgmma", tma = 2 : i32} : (memref<1x128x64xf16, 3>, tensor<128x64xf16>, i32, i32) -> ()
  "tile.tma_store"(%b, %v, %r, %r, %c) {row_permutation = "none", tma = 3 : i32} : (memref<1x128x64xf16, 3>, tensor<128x64xf16>, i32, i32, i32) -> ()
  "tile.tma_store"(%b, %v, %r, %r, %r, %r, %c) {row_permutation = "none", tma = 4 : i32} : (memref<1x128x64xf16, 3>, tensor<128x64xf16>, i32, i32, i32, i32, i32) -> ()
  "tile.tma_store_wait"() : () -> ()
  "tile.local_dealloc"(%b) : (memref<1x128x64xf16, 3>) -> ()
  return
}

// -----

// A buffer of a power-of-two fraction of the tile's columns, in whole
// 128-byte atoms (the 128x256 f16 tile in 4 passes of 64 columns, in 2 of
// 128): the store writes the tile in column passes.
func.func @passes(%v: tensor<128x256xf16>, %r: i32, %c: i32) attributes {tile.kernel} {
  %b = "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<1x128x64xf16, 3>
  "tile.tma_store"(%b, %v, %r, %c) {row_permutation = "wgmma", tma = 2 : i32} : (memref<1x128x64xf16, 3>, tensor<128x256xf16>, i32, i32) -> ()
  %h = "tile.local_alloc"() {row_permutation = "none", swizzle = 128 : i32} : () -> memref<1x128x128xf16, 3>
  "tile.tma_store"(%h, %v, %r, %c) {row_permutation = "none", tma = 2 : i32} : (memref<1x128x128xf16, 3>, tensor<128x256xf16>, i32, i32) -> ()
  "tile.tma_store_wait"() : () -> ()
  return
}
