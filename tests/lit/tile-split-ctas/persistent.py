# RUN: %tilec ir %S/../../../examples/matmul_persistent.py --target sm90 --signature "*fp8e4nv:16,*fp8e4nv:16,*fp16:16,i32:16,i32:16,i32:16" --constexpr BLOCK_M=256 BLOCK_N=256 BLOCK_K=128 GROUP_M=8 NUM_SMS=66 --num-warps 8 --num-stages 4 --num-ctas 2 --print-after-all > %t.txt
# RUN: %FileCheck %s --input-file %t.txt
# RUN: %FileCheck %s --check-prefix=RING --input-file %t.txt
# RUN: %FileCheck %s --check-prefix=GPU --input-file %t.txt

# num_ctas=2 splits the persistent example's 256 x 256 program over a cluster
# of two CTAs: each holds 128 rows of the accumulator, loads its 128 rows of A
# and stores its 128 rows of C (row offset + rank * 128 through descriptors of
# 128-row blocks), and both load the whole 256-row B block, tagged for
# multicast; the flattened loop's K = 0 branch stores half a zero tile too.

# CHECK-LABEL: IR Dump After tile-split-ctas
# CHECK: attributes {tile.kernel, tile.num_ctas = 2 : i32}
# CHECK: %[[RANK:.*]] = "tile.cta_rank"() : () -> i32
# CHECK-DAG: %[[AD:.*]] = "tile.make_descriptor"(%arg0, {{.*}} -> !tile.tensordesc<tensor<128x128xf8E4M3FN>>
# CHECK-DAG: %[[BD:.*]] = "tile.make_descriptor"(%arg1, {{.*}} -> !tile.tensordesc<tensor<256x128xf8E4M3FN>>
# CHECK-DAG: %[[CD:.*]] = "tile.make_descriptor"(%arg2, {{.*}} -> !tile.tensordesc<tensor<128x256xf16>>
# CHECK: scf.for {{.*}} iter_args(%[[ACC:[a-z0-9_]+]] = %{{[a-z0-9_]+}}, %[[AM:[a-z0-9_]+]] = %{{[a-z0-9_]+}}, %[[BN:[a-z0-9_]+]] = {{.*}} -> (tensor<128x256xf32>,
# CHECK: %[[OFF:.*]] = arith.muli %[[RANK]], %c128_i32{{[_0-9]*}}
# CHECK: %[[ROW:.*]] = arith.addi %[[AM]], %[[OFF]]
# CHECK: "tile.descriptor_load"(%[[AD]], %[[ROW]], {{.*}} -> tensor<128x128xf8E4M3FN>
# CHECK: "tile.descriptor_load"(%[[BD]], %[[BN]], {{.*}} {tile.multicast = 2 : i32} {{.*}} -> tensor<256x128xf8E4M3FN>
# CHECK: "tile.dot"({{.*}} -> tensor<128x256xf32>
# CHECK: arith.truncf {{.*}} : tensor<128x256xf32> to tensor<128x256xf16>
# CHECK: arith.muli %[[RANK]], %c128_i32{{[_0-9]*}}
# CHECK: "tile.descriptor_store"(%[[CD]], {{.*}} tensor<128x256xf16>
# CHECK: } else {
# CHECK: arith.truncf {{.*}} : tensor<128x256xf32> to tensor<128x256xf16>
# CHECK: "tile.descriptor_store"(%[[CD]],
# CHECK-LABEL: IR Dump After tile-tma-descriptors

# The pipeliner's TMA rings: B's copies multicast, a second barrier array
# counting the cluster's CTAs, cluster barriers after the barriers' set-up and
# after the loop, and each refill preceded by the cluster-wide release.

# RING-LABEL: IR Dump After tile-pipeline 
# RING: %[[FULL:.*]] = "tile.mbarrier_alloc"() {slots = 4 : i32}
# RING-NEXT: %[[FREE:.*]] = "tile.mbarrier_alloc"() {slots = 4 : i32, tile.arrivals = "ctas"}
# RING-NEXT: "tile.cluster_barrier"()
# RING: "tile.tma_copy"({{.*}}) {tma = 0 : i32}
# RING-NEXT: "tile.tma_copy"({{.*}}) {tile.multicast = 2 : i32, tma = 1 : i32}
# RING: scf.for
# RING: "tile.mma_wait"({{.*}}) {pending = 1 : i32}
# RING-NEXT: "tile.barrier"()
# RING: "tile.cluster_release"(%[[FREE]],
# RING-NEXT: "tile.tma_expect"(%[[FULL]],
# RING-NEXT: "tile.tma_copy"({{.*}}) {tma = 0 : i32}
# RING-NEXT: "tile.tma_copy"({{.*}}) {tile.multicast = 2 : i32, tma = 1 : i32}
# RING: "tile.tma_store_wait"()
# RING-NEXT: "tile.barrier"()
# RING-NEXT: "tile.cluster_barrier"()
# RING-NEXT: "tile.mbarrier_inval"(%[[FREE]])
# RING-NEXT: "tile.mbarrier_inval"(%[[FULL]])

# GPU-LABEL: IR Dump After convert-tile-to-gpu
# GPU: gpu.func @matmul_persistent({{.*}} kernel attributes {{{.*}}nvvm.cluster_dim = array<i32: 2, 1, 1>
# GPU: nvvm.read.ptx.sreg.cluster.ctaid.x
# GPU-LABEL: IR Dump After ptx
# GPU: .reqnctapercluster 2, 1, 1
# GPU: mbarrier.init.shared.b64 [{{.*}}], 2;
# GPU: fence.mbarrier_init.release.cluster;
# GPU: barrier.cluster.arrive.aligned;
# GPU-NEXT: barrier.cluster.wait.aligned;
# GPU: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster
# GPU: wgmma.wait_group.sync.aligned 1;
# GPU: bar.sync 0;
# GPU: elect.sync
# GPU: mapa.shared::cluster.u32 %remote, [[FREE:%r[0-9]+]], 0;
# GPU-NEXT: mbarrier.arrive.shared::cluster.b64 _, [%remote];
# GPU-NEXT: mapa.shared::cluster.u32 %remote, [[FREE]], 1;
# GPU-NEXT: mbarrier.arrive.shared::cluster.b64 _, [%remote];
# GPU: mbarrier.try_wait.parity.shared::cta.b64 P1, [[[FREE]]],
# GPU: mbarrier.arrive.expect_tx.shared.b64 _, [{{.*}}], 49152;
# GPU: .multicast::cluster [{{.*}}], [{{.*}}], [{{.*}}], %rs{{[0-9]+}};
