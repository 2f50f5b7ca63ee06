// RUN: %tilec-opt %s --split-input-file --pass tile-split-ctas --target sm90 --num-ctas 2 | %FileCheck %s
// RUN: %tilec-opt %s --split-input-file --pass tile-split-ctas --target sm90 | %FileCheck %s --check-prefix=ONE

// Kernels tile-split-ctas leaves whole (one CTA per program), each saying why;
// with num_ctas=1 the pass does nothing.

// ONE-NOT: tile.cluster_note
// ONE-NOT: tile.num_ctas

// CHECK-LABEL: func.func @pointer_store
// CHECK-SAME: tile.cluster_note = "num_ctas=2 runs one CTA per program: the kernel has `tile.store`, which both CTAs would execute"
// CHECK-NOT: tile.cta_rank
func.func @pointer_store(%p: !tile.ptr<f16>, %x: tensor<64x64xf16>) attributes {tile.kernel} {
  %c = arith.constant dense<0.0> : tensor<64x64xf32>
  %d = "tile.dot"(%x, %x, %c) : (tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %h = arith.truncf %d : tensor<64x64xf32> to tensor<64x64xf16>
  %ps = tensor.splat %p : tensor<64x64x!tile.ptr<f16>>
  "tile.store"(%ps, %h) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<64x64x!tile.ptr<f16>>, tensor<64x64xf16>) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @transposed_product
// CHECK-SAME: tile.cluster_note = "num_ctas=2 runs one CTA per program: `tile.trans` reads a tile of the dots' rows"
func.func @transposed_product(%x: tensor<128x128xf16>) -> tensor<128x128xf32> attributes {tile.kernel} {
  %c = arith.constant dense<0.0> : tensor<128x128xf32>
  %d = "tile.dot"(%x, %x, %c) : (tensor<128x128xf16>, tensor<128x128xf16>, tensor<128x128xf32>) -> tensor<128x128xf32>
  %t = "tile.trans"(%d) : (tensor<128x128xf32>) -> tensor<128x128xf32>
  return %t : tensor<128x128xf32>
}

// -----

// 64 rows fill the one warpgroup of 4 warps (wgmma); 32 per CTA would not.

// CHECK-LABEL: func.func @half_a_warpgroup
// CHECK-SAME: tile.cluster_note = "num_ctas=2 runs one CTA per program: half of the dots' 64 rows would not fill the warps' warpgroups (wgmma stacks 64 rows per CTA here), and the matrix units would fall back to mma.sync: give the program 128 rows or fewer warps"
func.func @half_a_warpgroup(%x: tensor<64x64xf16>) -> tensor<64x64xf32> attributes {tile.kernel} {
  %c = arith.constant dense<0.0> : tensor<64x64xf32>
  %d = "tile.dot"(%x, %x, %c) : (tensor<64x64xf16>, tensor<64x64xf16>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %d : tensor<64x64xf32>
}

// -----

// CHECK-LABEL: func.func @sixteen_rows
// CHECK-SAME: tile.cluster_note = "num_ctas=2 runs one CTA per program: the dots need one M, a multiple of 32, to split over 2 CTAs"
func.func @sixteen_rows(%x: tensor<16x64xf16>, %y: tensor<64x64xf16>) attributes {tile.kernel} {
  %c = arith.constant dense<0.0> : tensor<16x64xf32>
  %d = "tile.dot"(%x, %y, %c) : (tensor<16x64xf16>, tensor<64x64xf16>, tensor<16x64xf32>) -> tensor<16x64xf32>
  return
}
