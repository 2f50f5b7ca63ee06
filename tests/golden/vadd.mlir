// Per-thread vector add, fp32: 128 threads, each thread owns 4 contiguous
// elements (512 per block) and moves them with one 16-byte vector access,
// predicated on `offs + 3 < n`.
// Input contract of the GPU back ends (targets/nvidia/backend.py, targets/amd/backend.py).
module {
  gpu.module @tilec {
    gpu.func @vadd(%a: !llvm.ptr<1>, %b: !llvm.ptr<1>, %c: !llvm.ptr<1>, %n: i32) kernel
        attributes {known_block_size = array<i32: 128, 1, 1>} {
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %tid32 = arith.index_cast %tid : index to i32
      %bid32 = arith.index_cast %bid : index to i32
      %c512 = arith.constant 512 : i32
      %c4 = arith.constant 4 : i32
      %c3 = arith.constant 3 : i32
      %base = arith.muli %bid32, %c512 : i32
      %t4 = arith.muli %tid32, %c4 : i32
      %offs = arith.addi %base, %t4 : i32
      %last = arith.addi %offs, %c3 : i32
      %mask = arith.cmpi slt, %last, %n : i32
      scf.if %mask {
        %pa = llvm.getelementptr inbounds %a[%offs] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
        %pb = llvm.getelementptr inbounds %b[%offs] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
        %pc = llvm.getelementptr inbounds %c[%offs] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
        %va = llvm.load %pa {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
        %vb = llvm.load %pb {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
        %vc = arith.addf %va, %vb : vector<4xf32>
        llvm.store %vc, %pc {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr<1>
      }
      gpu.return
    }
  }
}
