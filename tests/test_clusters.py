"""num_ctas=2: a program split over a cluster of two CTAs (tile-split-ctas) with
B multicast to both (passes/pipeline_cluster.py).  The split itself runs on
the CPU, where the two halves are two program instances, against NumPy; the
sm90 code is checked by ptxas and its metadata here and runs on the H200
(scripts/gpu_suite.py, "cluster multicast")."""
from __future__ import annotations

import ctypes
import pathlib
import sys
from typing import Any

import numpy as np
import pytest
import torch

import tilec
import tilec.language as tl
from tilec.runtime.cuda import CudaKernel
from tilec.runtime.launch_entries import native_target

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "examples"))
from matmul_persistent import matmul_persistent  # noqa: E402

F16 = "*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16,i32:16"
F8 = "*fp8e4nv:16,*fp8e4nv:16,*fp16:16,i32:16,i32:16,i32:16"


@pytest.mark.parametrize("m,n,k,block,dtype,c_f32", [
    (100, 70, 45, (64, 32, 32), torch.float16, False),
    (257, 129, 200, (64, 64, 32), torch.float16, False),
    (33, 129, 96, (32, 32, 32), torch.bfloat16, True),
    (50, 40, 30, (32, 32, 32), torch.float8_e4m3fn, False),
    (128, 64, 0, (64, 32, 32), torch.float16, False),
])
def test_split_program_matches_numpy_on_the_cpu(m: int, n: int, k: int, block: tuple[int, int, int],
                                                 dtype: torch.dtype, c_f32: bool) -> None:
    """Each CTA computes, loads and stores its half of the program's rows (A's
    and C's blocks at row offset rank * BLOCK_M / 2): every element of C is
    written once, by the right half, over ragged M, N, K (K = 0: the flattened
    loop's zero tile), with fewer programs than tiles (the persistent walk)."""
    g = torch.Generator().manual_seed(m * n + k)
    a = torch.randn((m, k), generator=g).to(dtype)
    b = torch.randn((n, k), generator=g).to(dtype)
    c = torch.full((m, n), 7.0, dtype=torch.float32 if c_f32 else torch.float16)
    bm, bn, bk = block
    matmul_persistent[(3,)](a, b, c, m, n, k, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=2,
                            NUM_SMS=3, C_F32=c_f32, num_ctas=2)
    want = (a.double() @ b.double().T).numpy()
    np.testing.assert_allclose(c.double().numpy(), want, rtol=2e-2, atol=2e-2 * np.sqrt(k + 1))
    sig = F8 if dtype == torch.float8_e4m3fn else F16
    if dtype == torch.bfloat16 or c_f32:
        sig = ",".join(["*bf16:16"] * 2 + ["*fp32:16" if c_f32 else "*fp16:16"]) + \
            ",i32:16,i32:16,i32:16"
    meta = matmul_persistent.compile(signature=sig, target="cpu", num_ctas=2, constexprs=dict(
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=2, NUM_SMS=3, C_F32=c_f32)).metadata
    assert meta["cluster_ctas"] == 2


@tilec.kernel
def _scaled_bias_matmul(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K, alpha, BM: tl.constexpr,
                        BN: tl.constexpr, BK: tl.constexpr):
    a_d = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_d = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    c_d = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        acc = tl.dot(a_d.load([pm * BM, k * BK]), b_d.load([k * BK, pn * BN]), acc)
    offs_n = pn * BN + tl.arange(0, BN)
    bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0)
    c_d.store([pm * BM, pn * BN], (acc * alpha + bias[None, :]).to(tl.float16))


def test_split_epilogue_with_a_scalar_and_a_broadcast_row() -> None:
    """`acc * alpha + bias[None, :]`: the scalar's splat and the row's
    broadcast take the CTA's half of the rows, the bias row stays whole; a
    2-D grid (program_id(1) untouched by the cluster along x)."""
    g = torch.Generator().manual_seed(5)
    m, n, k = 150, 90, 70
    a = torch.randn((m, k), generator=g).to(torch.float16)
    b = torch.randn((k, n), generator=g).to(torch.float16)
    bias = torch.randn(n, generator=g)
    c = torch.full((m, n), 7.0, dtype=torch.float16)
    grid = (tilec.cdiv(m, 64), tilec.cdiv(n, 32))
    _scaled_bias_matmul[grid](a, b, bias, c, m, n, k, 0.5, BM=64, BN=32, BK=32, num_ctas=2)
    want = 0.5 * (a.double() @ b.double()) + bias.double()[None, :]
    np.testing.assert_allclose(c.double().numpy(), want.numpy(), rtol=2e-2, atol=5e-2)
    meta = _scaled_bias_matmul.compile(
        signature="*fp16:16,*fp16:16,*fp32:16,*fp16:16,i32:16,i32:16,i32:16,fp32",
        target="cpu", num_ctas=2, constexprs=dict(BM=64, BN=32, BK=32)).metadata
    assert meta["cluster_ctas"] == 2


@tilec.kernel
def _scaled_store(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, x * 2, mask=offs < n)


def test_a_kernel_that_cannot_split_runs_one_cta_per_program() -> None:
    """Pointer stores (both CTAs would repeat them): the kernel stays whole, its
    function says why, and the launch runs one program instance per program."""
    x = torch.arange(100, dtype=torch.float32)
    y = torch.zeros(100)
    _scaled_store[(4,)](x, y, 100, BLOCK=32, num_ctas=2)
    assert torch.equal(y, 2 * x)
    from tilec.driver import compile_kernel
    from tilec.options import CompileOptions
    k = compile_kernel(_scaled_store, "sm90", "*fp32:16,*fp32:16,i32", {"BLOCK": 32},
                       CompileOptions(num_ctas=2), keep_ir=True)
    assert "cluster_ctas" not in k.metadata
    assert any("the kernel has `tile.store`, which both CTAs would execute" in text
               for _, text in k.ir_after)


@pytest.mark.parametrize("target,num_ctas", [("sm80", 2), ("sm100", 2), ("gfx942", 2),
                                             ("sm90", 3), ("cpu", 4)])
def test_num_ctas_the_target_cannot_run_names_it(target: str, num_ctas: int) -> None:
    with pytest.raises(tilec.TilecError, match=f"num_ctas={num_ctas}: target {target}"):
        matmul_persistent.compile(signature=F16, target=target, num_ctas=num_ctas, constexprs=dict(
            BLOCK_M=128, BLOCK_N=64, BLOCK_K=64, GROUP_M=8, NUM_SMS=66))


@pytest.mark.parametrize("sig,block,stages", [(F8, (256, 256, 128), 4), (F8, (256, 256, 128), 3),
                                              (F16, (256, 256, 64), 4), (F16, (256, 128, 64), 4)])
def test_sm90_cluster_kernel_multicasts_b_without_spills(sig: str, block: tuple[int, int, int],
                                                         stages: int) -> None:
    """The fp8 / fp16 cluster configs the benchmark adds: 0 spills (ptxas),
    `.reqnctapercluster 2`, B's box half its block's rows (each CTA copies
    its half for both), one multicast copy per ring refill, the cluster-wide
    release before each steady-state refill, and the metadata that makes the
    runtime launch two CTAs per program."""
    bm, bn, bk = block
    k = matmul_persistent.compile(signature=sig, target="sm90", num_warps=8, num_stages=stages,
                                  num_ctas=2, constexprs=dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                                              GROUP_M=8, NUM_SMS=66))
    meta, ptx = k.metadata, k.asm["ptx"]
    assert meta["cluster_ctas"] == 2 and meta["spill_stores"] == 0
    assert ".reqnctapercluster 2, 1, 1" in ptx
    a_map, b_map = meta["tensormaps"][:2]
    assert a_map["block"] == [bm // 2, a_map["block"][1]] and a_map["box"][0] <= bm // 2
    assert b_map["block"][0] == bn and b_map["box"][0] == bn // 2
    # stages - 1 prologue refills + the steady state's one
    assert ptx.count("bytes.multicast::cluster") == stages
    assert ptx.count("mbarrier.arrive.shared::cluster.b64") == 2   # both CTAs' barriers
    assert ptx.count("mapa.shared::cluster") == 2
    assert ptx.count("barrier.cluster.wait") == 2


def test_cluster_kernels_launch_two_ctas_per_program() -> None:
    """The runtime doubles the grid's x for a kernel with `cluster_ctas = 2`
    (the Python path: the C launcher, which takes the grid as given, is not
    used for it)."""
    seen: list[tuple[int, ...]] = []

    u = ctypes.c_uint
    proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, u, u, u, u, u, u, u, ctypes.c_void_p,
                             ctypes.c_void_p, ctypes.c_void_p)

    @proto
    def raw(fn: Any, gx: int, gy: int, gz: int, *rest: Any) -> int:
        seen.append((gx, gy, gz))
        return 0

    k = object.__new__(CudaKernel)
    k.cluster_ctas, k.threads, k.shared = 2, 256, 0
    k._slots, k._maps, k._raw_launch = [], None, raw
    k._function_handle = 0x7000
    k._stream_handle = lambda: None
    k._c_function = ctypes.c_void_p(0x7000)
    k._c_threads = ctypes.c_uint(256)
    k._c_one = ctypes.c_uint(1)
    k._c_shared = ctypes.c_uint(0)
    k._c_params = ctypes.c_void_p(0)
    import threading
    k._lock = threading.Lock()
    CudaKernel.launch(k, (66, 1, 1), [])
    assert seen == [(132, 1, 1)]
    assert native_target(k) is None
    k.cluster_ctas = 1
    assert native_target(k) is not None


@tilec.kernel
def _chained_products(a_ptr, b_ptr, d_ptr, o_ptr, M, K, BM: tl.constexpr, BK: tl.constexpr,
                      BN: tl.constexpr, BD: tl.constexpr):
    a_d = tl.make_tensor_descriptor(a_ptr, shape=[M, BK], strides=[BK, 1], block_shape=[BM, BK])
    b_d = tl.make_tensor_descriptor(b_ptr, shape=[K, BK], strides=[BK, 1], block_shape=[BN, BK])
    d_d = tl.make_tensor_descriptor(d_ptr, shape=[K, BD], strides=[BD, 1], block_shape=[BN, BD])
    o_d = tl.make_tensor_descriptor(o_ptr, shape=[M, BD], strides=[BD, 1], block_shape=[BM, BD])
    pm = tl.program_id(0)
    a = a_d.load([pm * BM, 0])
    acc = tl.zeros((BM, BD), tl.float32)
    for k in range(0, tl.cdiv(K, BN)):
        s = tl.dot(a, b_d.load([k * BN, 0]).T)
        acc = tl.dot(s.to(tl.float16), d_d.load([k * BN, 0]), acc)
    o_d.store([pm * BM, 0], acc.to(tl.float16))


def test_chained_products_split_and_copy_b_whole_outside_the_one_dot_rings() -> None:
    """(A @ B_k.T) @ D_k summed over k, attention's two products without the
    softmax: both dots' rows split (the first product is the second's A).  On
    the CPU against NumPy; on sm90 the loop goes to the several-dot pipeliner,
    which has no cluster release, so its B copies stay whole per CTA (no
    multicast), and the kernel still runs as a cluster."""
    g = torch.Generator().manual_seed(9)
    m, k, bk, bd = 200, 160, 64, 64
    a = (torch.randn((m, bk), generator=g) / 8).to(torch.float16)
    b = (torch.randn((k, bk), generator=g) / 8).to(torch.float16)
    d = (torch.randn((k, bd), generator=g) / 8).to(torch.float16)
    o = torch.full((m, bd), 7.0, dtype=torch.float16)
    meta = dict(BM=64, BK=bk, BN=64, BD=bd)
    _chained_products[(tilec.cdiv(m, 64),)](a, b, d, o, m, k, **meta, num_ctas=2)
    s = (a.double() @ b.double().T).half().double()
    np.testing.assert_allclose(o.double().numpy(), (s @ d.double()).numpy(), rtol=2e-2, atol=2e-2)
    sig = "*fp16:16,*fp16:16,*fp16:16,*fp16:16,i32:16,i32:16"
    k90 = _chained_products.compile(signature=sig, target="sm90", num_warps=4, num_ctas=2,
                                    constexprs=dict(BM=128, BK=64, BN=64, BD=64))
    assert k90.metadata["cluster_ctas"] == 2 and k90.metadata["spill_stores"] == 0
    assert "multicast::cluster" not in k90.asm["ptx"]
    assert "cp.async.bulk.tensor" in k90.asm["ptx"]


@tilec.kernel
def _epilogues(a_ptr, b_ptr, bias_ptr, rs_ptr, c_ptr, M, N, K, alpha, BM: tl.constexpr,
               BN: tl.constexpr, BK: tl.constexpr, EPI: tl.constexpr, B_KMAJOR: tl.constexpr):
    a_d = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    c_d = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = a_d.load([pm * BM, k * BK])
        if B_KMAJOR:
            b_d = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1],
                                            block_shape=[BN, BK])
            acc = tl.dot(a, b_d.load([pn * BN, k * BK]).T, acc)
        else:
            b_d = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1],
                                            block_shape=[BK, BN])
            acc = tl.dot(a, b_d.load([k * BK, pn * BN]), acc)
    offs_n = pn * BN + tl.arange(0, BN)
    bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0)
    if EPI == 1:
        acc = acc * alpha
    elif EPI == 2:
        acc = acc + bias[None, :]
    elif EPI == 3:
        acc = tl.maximum(acc, 0.0)
    elif EPI == 4:
        acc = tl.where(acc > 0, acc, acc * 0.125) - bias[None, :] * alpha
    elif EPI == 5:
        acc = 1.0 / (1.0 + tl.exp(-(acc * alpha + bias[None, :])))
    elif EPI == 6:   # a per-row vector: rank-1 rows, which the split does not take
        offs_m = pm * BM + tl.arange(0, BM)
        acc = acc * tl.load(rs_ptr + offs_m, mask=offs_m < M, other=0.0)[:, None]
    c_d.store([pm * BM, pn * BN], acc.to(tl.float16))


@pytest.mark.parametrize("epi", range(7))
@pytest.mark.parametrize("kmajor", [False, True])
def test_split_kernels_compute_what_whole_programs_do(epi: int, kmajor: bool) -> None:
    """The same kernel at num_ctas=1 and 2 on the CPU gives the same bits
    (the split changes which instance computes a row, not how), over ragged
    M, N, K and epilogues with scalars, broadcast rows, selects and exp; a
    per-row vector (EPI 6) keeps the program whole (no cluster_ctas)."""
    g = torch.Generator().manual_seed(epi * 2 + kmajor)
    m, n, k = 100 + 13 * epi, 72 + 8 * epi, 40 + 24 * epi
    a = (torch.randn((m, k), generator=g) / 4).to(torch.float16)
    b = (torch.randn((n, k) if kmajor else (k, n), generator=g) / 4).to(torch.float16)
    bias, rs = torch.randn(n, generator=g), torch.randn(m, generator=g)
    outs = []
    for ctas in (1, 2):
        c = torch.full((m, n), 7.0, dtype=torch.float16)
        _epilogues[(tilec.cdiv(m, 64), tilec.cdiv(n, 32))](
            a, b, bias, rs, c, m, n, k, 0.75, BM=64, BN=32, BK=32, EPI=epi, B_KMAJOR=kmajor,
            num_ctas=ctas)
        outs.append(c)
    assert torch.equal(outs[0], outs[1])
    prod = a.double() @ (b.double().T if kmajor else b.double())
    want = {0: prod, 1: prod * 0.75, 2: prod + bias.double()[None, :],
            3: prod.clamp(min=0),
            4: torch.where(prod > 0, prod, prod * 0.125) - bias.double()[None, :] * 0.75,
            5: torch.sigmoid(prod * 0.75 + bias.double()[None, :]),
            6: prod * rs.double()[:, None]}[epi]
    np.testing.assert_allclose(outs[1].double().numpy(), want.numpy(), rtol=2e-2, atol=2e-2)
    sig = "*fp16:16,*fp16:16,*fp32:16,*fp32:16,*fp16:16,i32,i32,i32,fp32"
    meta = _epilogues.compile(signature=sig, target="cpu", num_ctas=2, constexprs=dict(
        BM=64, BN=32, BK=32, EPI=epi, B_KMAJOR=kmajor)).metadata
    assert meta.get("cluster_ctas") == (None if epi == 6 else 2)


def test_aot_build_with_two_ctas_launches_both(tmp_path: pathlib.Path) -> None:
    """`tilec compile --num-ctas 2`: the manifest carries the CTAs per program,
    and the MLIR-free loader launches both halves of each program."""
    from tilec.cli import main
    root = pathlib.Path(__file__).resolve().parent.parent
    assert main(["compile", str(root / "examples" / "matmul_persistent.py"), "--target", "cpu",
                 "--signature", F16, "--num-ctas", "2", "--constexpr", "BLOCK_M=64",
                 "BLOCK_N=32", "BLOCK_K=32", "GROUP_M=2", "NUM_SMS=3",
                 "-o", str(tmp_path)]) == 0
    k = tilec.load(tmp_path / "matmul_persistent")
    g = torch.Generator().manual_seed(3)
    a = torch.randn((96, 64), generator=g).to(torch.float16)
    b = torch.randn((80, 64), generator=g).to(torch.float16)
    c = torch.full((96, 80), 7.0, dtype=torch.float16)
    k[(3,)](a, b, c, 96, 80, 64)
    np.testing.assert_allclose(c.double().numpy(), (a.double() @ b.double().T).numpy(),
                               rtol=2e-2, atol=2e-2 * 8)


@pytest.mark.parametrize("bn,multicast", [(8, False), (16, True)])
def test_b_blocks_too_small_to_halve_are_copied_whole(bn: int, multicast: bool) -> None:
    """fp8 B blocks of 8 rows cannot be split into 8-row swizzle groups per CTA:
    each CTA copies the whole block (before: a compiler bug in the copy's
    lowering); 16 rows multicast 8 each."""
    k = matmul_persistent.compile(signature=F8, target="sm90", num_warps=4, num_stages=3,
                                  num_ctas=2, constexprs=dict(BLOCK_M=128, BLOCK_N=bn,
                                                              BLOCK_K=128, GROUP_M=8, NUM_SMS=66))
    assert k.metadata["cluster_ctas"] == 2 and k.metadata["spill_stores"] == 0
    assert ("multicast::cluster" in k.asm["ptx"]) == multicast
    assert ("mapa.shared::cluster" in k.asm["ptx"]) == multicast


def test_a_split_that_would_leave_the_warpgroups_unfilled_is_refused() -> None:
    """128 rows on 8 warps fill two warpgroups (wgmma); 64 per CTA would not
    (mma.sync, 388 bytes of spills): the program stays whole and says why."""
    from tilec.driver import compile_kernel
    from tilec.options import CompileOptions
    k = compile_kernel(matmul_persistent, "sm90", F16, dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64,
                                                            GROUP_M=8, NUM_SMS=66),
                       CompileOptions(num_warps=8, num_stages=3, num_ctas=2), keep_ir=True)
    assert "cluster_ctas" not in k.metadata and k.metadata["spill_stores"] == 0
    assert "wgmma.mma_async" in k.asm["ptx"]
    assert any("would not fill the warps' warpgroups" in text for _, text in k.ir_after)
    k4 = matmul_persistent.compile(signature=F16, target="sm90", num_warps=4, num_stages=3,
                                   num_ctas=2, constexprs=dict(BLOCK_M=128, BLOCK_N=256,
                                                               BLOCK_K=64, GROUP_M=8, NUM_SMS=66))
    assert k4.metadata["cluster_ctas"] == 2 and "wgmma.mma_async" in k4.asm["ptx"]
