"""GPU correctness suite: examples and differential checks on a real NVIDIA GPU.

Not part of CI (CI has no GPU).  Two phases, like the benchmarks, because the
compiler cannot travel to the GPU machine:

    # here: compile every case's specialization for the GPU target into a cache
    TILEC_CACHE_DIR=$PWD/.carry/tilec-cache .venv/bin/python scripts/gpu_suite.py prepare
    # on the GPU machine: run every case against PyTorch; then under compute-sanitizer
    TILEC_CACHE_DIR=$PWD/.carry/tilec-cache python3 scripts/gpu_suite.py run
    compute-sanitizer --tool memcheck python3 scripts/gpu_suite.py run
    compute-sanitizer --tool racecheck python3 scripts/gpu_suite.py run
    python3 scripts/gpu_suite.py run --only "inferred tensor maps" "tl.dot"   (some cases)

Every case draws fresh random inputs, poisons its outputs (NaN / a sentinel)
and compares with PyTorch computed in float64 where it matters.  The closing
line is 'N passed, N failed'.
"""
from __future__ import annotations

import argparse
import functools
import importlib.util
import os
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import tilec  # noqa: E402
import tilec.language as tl  # noqa: E402


def _example(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@tilec.kernel
def elementwise(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1)
    y = tl.load(y_ptr + offs, mask=m, other=1)
    r = tl.where(x > y, x - y, y * 2) + tl.maximum(x, y)
    tl.store(out_ptr + offs, r, mask=m)


@tilec.kernel
def argmax_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=float("-inf"))
    tl.store(out_ptr + row, tl.argmax(x, axis=0))


@tilec.kernel
def cumsum_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=m, other=0)
    tl.store(out_ptr + row * n_cols + cols, tl.cumsum(x, axis=0), mask=m)


@tilec.kernel
def histogram(x_ptr, bins_ptr, n, n_bins, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x_ptr + offs, mask=m, other=0)
    tl.atomic_add(bins_ptr + v % n_bins, 1, mask=m)


@tilec.kernel
def locked_update(acc_ptr, lock_ptr, count_ptr, order_ptr, BLOCK: tl.constexpr):
    """Every program adds 1 to a shared row under a spin lock (Triton tutorial
    05's pattern) and draws a ticket with a scalar atomic_add: each must run
    once per program, not once per thread."""
    cols = tl.arange(0, BLOCK)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    row = tl.load(acc_ptr + cols)
    tl.store(acc_ptr + cols, row + 1)
    tl.atomic_xchg(lock_ptr, 0)
    ticket = tl.atomic_add(count_ptr, 1)
    tl.store(order_ptr + tl.program_id(0), ticket)


@tilec.kernel
def col_sums(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    cols = tl.program_id(0) * BN + tl.arange(0, BN)
    acc = tl.zeros((BN,), tl.float32)
    for r0 in range(0, M, BM):
        rows = r0 + tl.arange(0, BM)
        m = (rows[:, None] < M) & (cols[None, :] < N)
        x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=m, other=0.0)
        acc += tl.sum(x, axis=0)
    tl.store(out_ptr + cols, acc, mask=cols < N)


@tilec.kernel
def trans_reshape(x_ptr, t_ptr, r_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)
    cols = tl.arange(0, N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :])
    tl.store(t_ptr + cols[:, None] * M + rows[None, :], tl.trans(x))
    tl.store(r_ptr + cols[:, None] * M + rows[None, :], tl.reshape(x, (N, M)))


@dataclass
class Case:
    name: str
    run: Callable[[Any, str, bool], None]   # (torch, device, launch) -> raises on mismatch


def _dtype_sweep(torch: Any, device: str, launch: bool) -> None:
    n = 10007
    for dt in (torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8,
               torch.int32, torch.int64, torch.uint8):
        if dt.is_floating_point:
            x = torch.randn(n, device=device).to(dt)
            y = torch.randn(n, device=device).to(dt)
        else:
            x = torch.randint(0, 100, (n,), device=device).to(dt)
            y = torch.randint(0, 100, (n,), device=device).to(dt)
        out = torch.full_like(x, 7)
        if not launch:
            elementwise.warmup(x, y, out, n, BLOCK=1024, target="sm90")
            continue
        elementwise[(tilec.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        ref = torch.where(x > y, x - y, y * 2) + torch.maximum(x, y)
        torch.testing.assert_close(out.double(), ref.double(), rtol=1e-2 if dt.itemsize == 2 else 1e-6,
                                   atol=1e-2 if dt.itemsize == 2 else 1e-6)


def _examples(torch: Any, device: str, launch: bool) -> None:
    va, sx, e2 = _example("vector_add"), _example("saxpy"), _example("elementwise_2d")
    n = 100003
    x, y = torch.randn(n, device=device), torch.randn(n, device=device)
    out = torch.full_like(x, float("nan"))
    grid = (tilec.cdiv(n, 1024),)
    if launch:
        va.add[grid](x, y, out, n, BLOCK=1024)
        torch.testing.assert_close(out, x + y, rtol=0, atol=0)
        out.fill_(float("nan"))
        sx.saxpy[(tilec.cdiv(n, 256),)](x, y, out, 2.5, n, BLOCK=256)
        torch.testing.assert_close(out, 2.5 * x + y)
    else:
        va.add.warmup(x, y, out, n, BLOCK=1024, target="sm90")
        sx.saxpy.warmup(x, y, out, 2.5, n, BLOCK=256, target="sm90")
    M, N = 77, 301
    big = torch.randn(M, N + 13, device=device)
    view = big[:, 5:N + 5]
    bias = torch.randn(N, device=device)
    o2 = torch.full((M, N), float("nan"), device=device)
    args = (view, bias, o2, 1.5, M, N, view.stride(0), o2.stride(0))
    if launch:
        e2.scale_bias_2d[(tilec.cdiv(M, 16), tilec.cdiv(N, 64))](*args, BLOCK_M=16, BLOCK_N=64)
        torch.testing.assert_close(o2, view * 1.5 + bias[None, :])
    else:
        e2.scale_bias_2d.warmup(*args, BLOCK_M=16, BLOCK_N=64, target="sm90")


def _norms(torch: Any, device: str, launch: bool) -> None:
    import h200_kernels as hk
    M, N = 67, 1000
    x = torch.randn(M, N, device=device)
    y = torch.full_like(x, float("nan"))
    if launch:
        hk.softmax[(M,)](x, y, N, N, BLOCK=1024)
        torch.testing.assert_close(y, torch.softmax(x, dim=1))
    else:
        hk.softmax.warmup(x, y, N, N, BLOCK=1024, target="sm90")
    xh = torch.randn(M, N, device=device, dtype=torch.float16)
    w = torch.rand(N, device=device, dtype=torch.float16)
    b = torch.randn(N, device=device, dtype=torch.float16)
    yh = torch.full_like(xh, float("nan"))
    mean = torch.empty(M, device=device)
    rstd = torch.empty(M, device=device)
    if launch:
        hk.layernorm[(M,)](xh, w, b, yh, mean, rstd, N, N, 1e-5, BLOCK=1024)
        ref = torch.nn.functional.layer_norm(xh.double(), (N,), w.double(), b.double(), 1e-5)
        torch.testing.assert_close(yh.double(), ref, rtol=1e-2, atol=1e-2)
        yh.fill_(float("nan"))
        hk.rmsnorm[(M,)](xh, w, yh, N, N, 1e-6, BLOCK=1024)
        xd = xh.double()
        ref = xd * torch.rsqrt((xd * xd).mean(1, keepdim=True) + 1e-6) * w.double()
        torch.testing.assert_close(yh.double(), ref, rtol=1e-2, atol=1e-2)
    else:
        hk.layernorm.warmup(xh, w, b, yh, mean, rstd, N, N, 1e-5, BLOCK=1024, target="sm90")
        hk.rmsnorm.warmup(xh, w, yh, N, N, 1e-6, BLOCK=1024, target="sm90")
    V = 5003
    logits = torch.randn(M, V, device=device, dtype=torch.bfloat16)
    target = torch.randint(0, V, (M,), device=device)
    loss = torch.full((M,), float("nan"), device=device)
    if launch:
        hk.cross_entropy[(M,)](logits, target, loss, V, V, BLOCK=1024)
        ref = torch.nn.functional.cross_entropy(logits.double(), target, reduction="none")
        torch.testing.assert_close(loss.double(), ref, rtol=1e-4, atol=1e-3)
    else:
        hk.cross_entropy.warmup(logits, target, loss, V, V, BLOCK=1024, target="sm90")


def _reductions(torch: Any, device: str, launch: bool) -> None:
    M, N = 41, 700
    x = torch.randint(-5, 5, (M, N), device=device).float()   # many ties
    idx = torch.full((M,), -1, device=device, dtype=torch.int32)
    xi = torch.randint(-50, 50, (M, N), device=device, dtype=torch.int32)
    cs = torch.full_like(xi, 123456)
    data = torch.randint(0, 1 << 20, (300007,), device=device, dtype=torch.int32)
    bins = torch.zeros(97, device=device, dtype=torch.int32)
    a = torch.randn(333, 250, device=device)
    s = torch.full((250,), float("nan"), device=device)
    if not launch:
        argmax_rows.warmup(x, idx, N, BLOCK=1024, target="sm90")
        cumsum_rows.warmup(xi, cs, N, BLOCK=1024, target="sm90")
        histogram.warmup(data, bins, data.numel(), 97, BLOCK=1024, target="sm90")
        col_sums.warmup(a, s, 333, 250, BM=32, BN=64, target="sm90")
        locked_update.warmup(bins, bins, bins, bins, BLOCK=256, target="sm90")
        return
    argmax_rows[(M,)](x, idx, N, BLOCK=1024)
    assert torch.equal(idx.long(), x.argmax(dim=1)), "argmax (first index on ties)"
    cumsum_rows[(M,)](xi, cs, N, BLOCK=1024)
    assert torch.equal(cs, torch.cumsum(xi, dim=1).int()), "cumsum"
    histogram[(tilec.cdiv(data.numel(), 1024),)](data, bins, data.numel(), 97, BLOCK=1024)
    assert torch.equal(bins.long(), torch.bincount((data % 97).long(), minlength=97)), "histogram"
    col_sums[(tilec.cdiv(250, 64),)](a, s, 333, 250, BM=32, BN=64)
    torch.testing.assert_close(s, a.sum(0), rtol=1e-5, atol=1e-4)
    programs = 300
    acc = torch.zeros(256, device=device, dtype=torch.int32)
    lock = torch.zeros(1, device=device, dtype=torch.int32)
    count = torch.zeros(1, device=device, dtype=torch.int32)
    order = torch.full((programs,), -1, device=device, dtype=torch.int32)
    locked_update[(programs,)](acc, lock, count, order, BLOCK=256)
    assert torch.equal(acc, torch.full_like(acc, programs)), f"spin lock: {acc[:4].tolist()}"
    assert int(count) == programs and int(lock) == 0, (int(count), int(lock))
    assert torch.equal(order.sort().values.long(), torch.arange(programs, device=device)), \
        "scalar atomic_add tickets"


def _shapes(torch: Any, device: str, launch: bool) -> None:
    x = torch.randn(32, 64, device=device)
    t = torch.full((64, 32), float("nan"), device=device)
    r = torch.full((64, 32), float("nan"), device=device)
    if not launch:
        trans_reshape.warmup(x, t, r, M=32, N=64, target="sm90")
        xb = torch.randn(128, 128, device=device)
        trans_reshape.warmup(xb, xb, xb, M=128, N=128, num_warps=8, target="sm90")
        return
    trans_reshape[(1,)](x, t, r, M=32, N=64)
    assert torch.equal(t, x.t()), "tl.trans"
    assert torch.equal(r, x.reshape(64, 32)), "tl.reshape"
    # 64 KiB of workgroup memory: beyond the 48 KiB static limit, so dynamic.
    xb = torch.randn(128, 128, device=device)
    tb, rb = torch.full_like(xb, float("nan")), torch.full_like(xb, float("nan"))
    trans_reshape[(1,)](xb, tb, rb, M=128, N=128, num_warps=8)
    assert torch.equal(tb, xb.t()), "tl.trans with dynamic shared memory"
    assert torch.equal(rb, xb), "tl.reshape with dynamic shared memory"


def _graph_and_dlpack(torch: Any, device: str, launch: bool) -> None:
    """A launch captured in a CUDA graph replays; a DLPack-only array is accepted."""
    va = _example("vector_add")
    n = 4096
    x, y = torch.randn(n, device=device), torch.randn(n, device=device)
    out = torch.full_like(x, float("nan"))
    if not launch:
        va.add.warmup(x, y, out, n, BLOCK=1024, target="sm90")
        return
    va.add[(4,)](x, y, out, n, BLOCK=1024)  # load the module outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        va.add[(4,)](x, y, out, n, BLOCK=1024)
    x.copy_(torch.randn(n, device=device))
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)

    class OnlyDLPack:
        def __init__(self, t: Any) -> None:
            self.t = t

        def __dlpack__(self, stream: Any = None) -> Any:
            return self.t.__dlpack__()

        def __dlpack_device__(self) -> Any:
            return self.t.__dlpack_device__()

    out.fill_(float("nan"))
    va.add[(4,)](OnlyDLPack(x), OnlyDLPack(y), OnlyDLPack(out), n, BLOCK=1024)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)


def _c_launch_path(torch: Any, device: str, launch: bool) -> None:
    """Repeated launches through one grid go through the C launcher (when it
    built): alternating specializations (alignment, divisibility, dtype) each
    give the right answer on fresh tensors."""
    va = _example("vector_add")
    grid = (tilec.cdiv(5000, 1024),)
    variants = []
    for dt in (torch.float32, torch.float16):
        for n, offset in ((4096, 0), (4001, 0), (4096, 1)):
            variants.append((dt, n, offset))
    if not launch:
        for dt, n, offset in variants:
            x = torch.zeros(n + offset, dtype=dt)[offset:]
            va.add.warmup(x, x, x, n, BLOCK=1024, target="sm90")
        return
    from tilec.runtime import native
    for round_ in range(3):
        for dt, n, offset in variants:
            x = torch.randn(n + offset, device=device).to(dt)[offset:]
            y = torch.randn(n + offset, device=device).to(dt)[offset:]
            out = torch.full((n + offset,), float("nan"), device=device, dtype=dt)[offset:]
            va.add[grid](x, y, out, n, BLOCK=1024)
            torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    c = va.add[grid]
    if native.status() == "built":
        assert type(c).__name__ == "Launcher" and c.entries == len(variants), (type(c), native.status())
    print(f"  C launch path: {native.status()}")


def _matmul(torch: Any, device: str, launch: bool) -> None:
    """tl.dot through the matmul example: fp32 and fp16 (masked odd sizes, a
    transposed view), int8 -> int32, against float64 / exact references."""
    mm = _example("matmul")
    cases = [(torch.float32, 100, 70, 45, False), (torch.float16, 257, 130, 300, True),
             (torch.float32, 512, 512, 512, False)]
    for dt, m, n, k, trans in cases:
        a = torch.randn(m, k, device=device).to(dt)
        b = (torch.randn(n, k, device=device).to(dt).t() if trans else
             torch.randn(k, n, device=device).to(dt))
        c = torch.full((m, n), float("nan"), device=device, dtype=dt)
        bm, bn, bk = (32, 32, 16) if dt == torch.float32 else (64, 64, 32)
        args = (a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                c.stride(0), c.stride(1))
        if not launch:
            mm.matmul.warmup(*args, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, target="sm90")
            continue
        mm.matmul[(tilec.cdiv(m, bm), tilec.cdiv(n, bn))](*args, BLOCK_M=bm, BLOCK_N=bn,
                                                          BLOCK_K=bk)
        want = a.double() @ b.double()
        tol = 1e-4 if dt == torch.float32 else 2e-2
        torch.testing.assert_close(c.double(), want, rtol=tol, atol=tol * k ** 0.5)
    a8 = torch.randint(-128, 128, (40, 100), device=device, dtype=torch.int8)
    b8 = torch.randint(-128, 128, (100, 24), device=device, dtype=torch.int8)
    c8 = torch.zeros(40, 24, device=device, dtype=torch.int32)
    if not launch:
        mm.matmul_i8.warmup(a8, b8, c8, 40, 24, 100, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16,
                            target="sm90")
        return
    mm.matmul_i8[(3, 2)](a8, b8, c8, 40, 24, 100, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    assert torch.equal(c8.cpu().long(), a8.cpu().long() @ b8.cpu().long()), "int8 matmul"


def _tma_matmul(torch: Any, device: str, launch: bool) -> None:
    """Descriptor loads as TMA copies (examples/matmul_persistent.py, 128-byte
    rows): ragged M/N, K = 0 (a tensor map over nothing), a K that is not a
    multiple of 16 (the pointer-load specialization), pipeline depths 2-5, fp8;
    against float64 references."""
    pm = _example("matmul_persistent")
    cases = [(torch.float16, 256, 512, 512, (128, 256, 64), 8, 4),
             (torch.float16, 127, 300, 4000, (128, 128, 64), 8, 3),
             (torch.float16, 200, 136, 0, (128, 128, 64), 8, 3),
             (torch.float16, 130, 260, 1001, (128, 128, 64), 8, 3),
             (torch.bfloat16, 384, 256, 320, (128, 128, 64), 4, 2)]
    cases += [(torch.float16, 192, 256, 640, (128, 128, 64), 8, s) for s in (2, 3, 4, 5)]
    cases += [(torch.float8_e4m3fn, 256, 256, 1024, (128, 128, 128), 8, 3)]
    for dt, m, n, k, (bm, bn, bk), warps, stages in cases:
        a = torch.randn(m, k, device=device).to(dt)
        b = torch.randn(n, k, device=device).to(dt)
        c = torch.full((m, n), float("nan"), device=device, dtype=torch.float16)
        cx = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, NUM_SMS=132,
                  num_warps=warps, num_stages=stages)
        if not launch:
            pm.matmul_persistent.warmup(a, b, c, m, n, k, **cx, target="sm90")
            continue
        tiles = tilec.cdiv(m, bm) * tilec.cdiv(n, bn)
        pm.matmul_persistent[(min(132, tiles),)](a, b, c, m, n, k, **cx)
        want = a.double() @ b.double().t()
        tol = 2e-2 if dt != torch.float8_e4m3fn else 5e-2
        torch.testing.assert_close(c.double(), want, rtol=tol, atol=tol * max(k, 1) ** 0.5)


def _tma_pointer_matmul(torch: Any, device: str, launch: bool) -> None:
    """Pointer-tile loads and stores copied through inferred tensor maps
    (tile-tma-pointers): the tutorial-03 source (benchmarks/matmul_kernels.py)
    with rows and columns wrapped by `% M` / `% N` past ragged edges, K masked,
    K = 0, strides that are not multiples of 16 (those accesses stay pointer
    accesses, beside inferred ones), pipeline depths 1-5, bf16, B given
    K-major (the map's block transposed; fp16, bf16, fp8), a ragged N over
    padded rows (wgmma, not the mma_sync fallback), an f32 epilogue (rows
    exchanged in f32 after the rings' release), Triton's persistent tutorial
    (hinted clamped indices), K masks written four ways, a batched matmul
    (`_tma_pointer_batched`); against float64."""
    from matmul_kernels import mm_tutorial
    cases = [(torch.float16, 256, 512, 512, (128, 256, 64), 8, 3),
             (torch.float16, 129, 1024, 640, (128, 256, 64), 8, 3),
             (torch.float16, 384, 1040, 320, (128, 256, 64), 8, 4),
             (torch.float16, 127, 300, 4000, (128, 128, 64), 8, 3),
             (torch.float16, 130, 260, 1001, (128, 128, 64), 8, 3),
             (torch.float16, 200, 144, 0, (128, 128, 64), 4, 3),
             (torch.float16, 1000, 1008, 1024, (64, 128, 64), 4, 3),
             (torch.bfloat16, 1000, 1008, 1024, (128, 256, 64), 8, 3)]
    cases += [(torch.float16, 320, 528, 704, (128, 128, 64), 8, s) for s in (1, 2, 3, 4, 5)]
    # B given K-major (a [K, N] view of an [N, K] tensor): the map's block is
    # the transpose of the tile; fp8 runs fp8 wgmma that way
    kmajor = [(torch.float16, 256, 384, 640, (128, 128, 64), 8, 3),
              (torch.float16, 200, 336, 1008, (128, 256, 64), 8, 4),
              (torch.bfloat16, 130, 260, 1001, (128, 128, 64), 8, 3),
              (torch.float8_e4m3fn, 300, 400, 1024, (128, 128, 128), 8, 3)]
    # N ragged (not a multiple of 16) over B's rows padded to 16-element
    # multiples: B's `% N` wrap leaves 2-byte pointer accesses, yet both loads
    # are map blocks, so the dot runs on wgmma with TMA copies
    padded = [(torch.float16, 300, 1000, 1024, (128, 256, 64), 8, 3),
              (torch.bfloat16, 129, 260, 640, (128, 128, 64), 8, 4)]
    for dt, m, n, k, (bm, bn, bk), warps, stages in cases + kmajor + padded:
        a = torch.randn(m, k, device=device).to(dt)
        if (dt, m, n, k, (bm, bn, bk), warps, stages) in kmajor:
            b = torch.randn(n, k, device=device).to(dt).t()
        elif (dt, m, n, k, (bm, bn, bk), warps, stages) in padded:
            b = torch.randn(k, _padded(n), device=device).to(dt)[:, :n]
        else:
            b = torch.randn(k, n, device=device).to(dt)
        c = torch.full((m, n), float("nan"), device=device, dtype=torch.float16)
        args = (a, b, c, m, n, k, k, 1, b.stride(0), b.stride(1), n, 1)
        cx = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=warps,
                  num_stages=stages)
        if not launch:
            mm_tutorial.warmup(*args, **cx, target="sm90")
            continue
        mm_tutorial[(tilec.cdiv(m, bm) * tilec.cdiv(n, bn),)](*args, **cx)
        want = a.double() @ b.double()
        tol = 5e-2 if dt == torch.float8_e4m3fn else 2e-2
        torch.testing.assert_close(c.double(), want, rtol=tol, atol=tol * max(k, 1) ** 0.5)
    # An f32 epilogue (kernels.py `bias_f32`: scale, column bias, row term):
    # the accumulator's rows exchanged in f32 in the released rings' bytes.
    kmod = _pointer_kernels()
    for m, n, k, bn, stages in ((300, 1000, 1024, 256, 3), (129, 260, 640, 128, 4)):
        a = torch.randn(m, k, device=device).to(torch.float16)
        b = torch.randn(k, _padded(n), device=device).to(torch.float16)[:, :n]
        bias = torch.randn(n, device=device)
        c = torch.full((m, n), float("nan"), device=device, dtype=torch.float16)
        args = (a, b, c, bias, m, n, k, k, b.stride(0), n)
        cx = dict(BLOCK_M=128, BLOCK_N=bn, BLOCK_K=64, num_warps=8, num_stages=stages)
        if not launch:
            kmod.bias_f32.warmup(*args, **cx, target="sm90")
            continue
        kmod.bias_f32[(tilec.cdiv(m, 128), tilec.cdiv(n, bn))](*args, **cx)
        rows = (torch.arange(m, device=device) % 7).double()[:, None]
        want = (a.double() @ b.double()) * 0.5 + bias.double()[None, :] + rows
        torch.testing.assert_close(c.double(), want, rtol=2e-2, atol=2e-2 * k ** 0.5,
                                   msg=f"bias_f32 {m}x{n}x{k} BLOCK_N={bn}")
    # Triton's persistent tutorial (09) as written (kernels.py
    # `persistent_tutorial`): clamped rows and columns hinted contiguous (N a
    # multiple of 16, as its hints need), cp.async into wgmma rings in the
    # flattened loop; ragged M and K, few programs and one per SM.
    for m, n, k, (bm, bn, bk), warps, stages, programs in (
            (300, 528, 1000, (128, 256, 64), 8, 3, 5), (1000, 784, 704, (128, 128, 64), 8, 4, 132),
            (129, 272, 96, (128, 128, 64), 4, 3, 3)):
        a = torch.randn(m, k, device=device).to(torch.float16)
        b = torch.randn(k, n, device=device).to(torch.float16)
        c = torch.full((m, n), float("nan"), device=device, dtype=torch.float16)
        args = (a, b, c, m, n, k, k, 1, n, 1, n, 1)
        cx = dict(BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8,
                  NUM_SMS=programs, num_warps=warps, num_stages=stages)
        if not launch:
            kmod.persistent_tutorial.warmup(*args, **cx, target="sm90")
            continue
        tiles = tilec.cdiv(m, bm) * tilec.cdiv(n, bn)
        kmod.persistent_tutorial[(min(programs, tiles),)](*args, **cx)
        torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=2e-2,
                                   atol=2e-2 * k ** 0.5, msg=f"persistent tutorial {m}x{n}x{k}")
    # A's K mask as <, <=, > and >= (the same bound: maps), and A's masked
    # lanes filled with 1.0 (B's are 0, so the product is the same; A stays a
    # pointer load): tests/lit/tile-tma-pointers/kernels.py.
    m, n, k = 200, 336, 1000 + 8
    a = torch.randn(m, k, device=device).to(torch.float16)
    b = torch.randn(k, n, device=device).to(torch.float16)
    c = torch.full((m, n), float("nan"), device=device, dtype=torch.float16)
    args = (a, b, c, m, n, k, k, 1, n, 1, n, 1)
    for form, other in ((0, 0.0), (1, 0.0), (2, 0.0), (3, 0.0), (0, 1.0)):
        cx = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, ROW_SUM=0, OTHER=other, STORE_ROWS=1,
                  MASK_FORM=form, num_warps=8, num_stages=3)
        if not launch:
            kmod.tutorial.warmup(*args, **cx, target="sm90")
            continue
        c.fill_(float("nan"))
        kmod.tutorial[(tilec.cdiv(m, 128), tilec.cdiv(n, 128))](*args, **cx)
        torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=2e-2,
                                   atol=2e-2 * k ** 0.5, msg=f"mask form {form}, other {other}")
    # Common variants of the source (kernels.py `variants`): hints, cache
    # keywords, a row conjunct `x % M < M` (dropped: maps) and near misses
    # (4, 5: rows past the bound read zeros; A a pointer load), ragged M.
    m, n, k = 300, 400, 1000
    a = torch.randn(m, k, device=device).to(torch.float16)
    b = torch.randn(k, n, device=device).to(torch.float16)
    c = torch.empty((m, n), device=device, dtype=torch.float16)
    args = (a, b, c, m, n, k, k, 1, n, 1, n, 1)
    for hints, cache, row in ((1, 0, 0), (0, 1, 0), (0, 0, 1), (0, 0, 2), (0, 0, 3),
                              (1, 1, 1), (0, 0, 4), (0, 0, 5)):
        cx = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, HINTS=hints, CACHE=cache,
                  ROW_MASK=row, num_warps=8, num_stages=3)
        if not launch:
            kmod.variants.warmup(*args, **cx, target="sm90")
            continue
        c.fill_(float("nan"))
        kmod.variants[(tilec.cdiv(m, 128), tilec.cdiv(n, 128))](*args, **cx)
        want = a.double() @ b.double()
        if row in (4, 5):   # A's rows at or past N / M - 1 read as zeros
            want[(n if row == 4 else m - 1):] = 0
        torch.testing.assert_close(c.double(), want, rtol=2e-2, atol=2e-2 * k ** 0.5,
                                   msg=f"variant hints={hints} cache={cache} row={row}")


@functools.lru_cache(maxsize=None)
def _padded(x: int) -> int:
    """A padded row length for x elements: the next multiple of 16 past x, so
    row strides are 16-element multiples that are not the view's size."""
    return (x + 31) // 16 * 16


def _lit_kernels(folder: str) -> Any:
    """tests/lit/<folder>/kernels.py as a module."""
    spec = importlib.util.spec_from_file_location(
        f"{folder.replace('-', '_')}_kernels", ROOT / "tests" / "lit" / folder / "kernels.py")
    assert spec is not None and spec.loader is not None
    kmod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kmod)
    return kmod


def _pointer_kernels() -> Any:
    return _lit_kernels("tile-tma-pointers")


def _tma_batched(torch: Any, device: str, launch: bool) -> None:
    kmod = _pointer_kernels()
    _tma_pointer_batched(torch, device, launch, kmod)
    _tma_batched_k_major(torch, device, launch, kmod)
    _tma_heads(torch, device, launch, kmod)
    _tma_batch_mask(torch, device, launch, kmod)
    dmod = _lit_kernels("tile-tma-descriptors")
    _tma_descriptor_batches(torch, device, launch, dmod)
    _tma_descriptor_heads(torch, device, launch, dmod)


def _tma_descriptor_batches(torch: Any, device: str, launch: bool, dmod: Any) -> None:
    """Per-batch descriptors (`batched_desc`: base `x_ptr + pid_b * stride_xb`,
    rank-3 maps; A's base also `pid_b * 64 * stride_am` and `(pid_b + 1) *
    stride_ab`): ragged M, N, K, K = 0, 128x256 tiles (a `.3d` TMA store) and
    128x128, 8 and 4 warps, depths 2-4; against float64."""
    f16, bf16 = torch.float16, torch.bfloat16
    for dt, base, nb, m, n, k, bn, warps, stages in (
            (f16, 0, 3, 300, 520, 200, 256, 8, 3), (bf16, 0, 2, 129, 136, 0, 128, 8, 2),
            (f16, 2, 3, 64, 264, 136, 128, 4, 4), (bf16, 3, 2, 257, 128, 72, 256, 8, 3)):
        rows = 64 if base == 2 else m + 3
        kp, np_ = _padded(k), _padded(n)
        big_a = torch.randn(nb + 1, rows, kp, device=device).to(dt)
        big_b = torch.randn(nb, k + 2, np_, device=device).to(dt)
        big_c = torch.full((nb + 1, m + 1, np_), float("nan"), device=device, dtype=dt)
        first = 1 if base == 3 else 0
        a, b, c = big_a[first:first + nb, :m, :k], big_b[:, :k, :n], big_c[:nb, :m, :n]
        sa, sb, sc = big_a.stride(), big_b.stride(), big_c.stride()
        args = (big_a, big_b, big_c, m, n, k, sa[0], sa[1], sb[0], sb[1], sc[0], sc[1])
        cx = dict(BLOCK_M=128, BLOCK_N=bn, BLOCK_K=64, BASE=base, num_warps=warps,
                  num_stages=stages)
        if not launch:
            dmod.batched_desc.warmup(*args, **cx, target="sm90")
            continue
        dmod.batched_desc[(tilec.cdiv(m, 128), tilec.cdiv(n, bn), nb)](*args, **cx)
        torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=2e-2,
                                   atol=2e-2 * max(k, 1) ** 0.5,
                                   msg=f"batched_desc {dt} base={base} {nb}x{m}x{n}x{k}")
        assert big_c[:, m:].isnan().all() and big_c[..., n:].isnan().all() and \
            big_c[nb:].isnan().all(), "stored past C"


def _tma_descriptor_heads(torch: Any, device: str, launch: bool, dmod: Any) -> None:
    """Per-head descriptors (`heads_desc`: Q and K at `z * s_z + h * s_h`
    (+ `x * s_x`): rank-4 / rank-5 maps, K's blocks transposed; O at
    `zh * M * N`, rank 3): ragged M, N, D; against float64."""
    f16, bf16 = torch.float16, torch.bfloat16
    for dt, extra, z, h, x, m, n, d, warps, stages in (
            (f16, 0, 2, 3, 1, 300, 256, 128, 8, 3), (bf16, 1, 2, 2, 3, 129, 136, 96, 4, 2)):
        dp = _padded(d)
        big_q = torch.randn(z, h, x, m + 2, dp, device=device).to(dt)
        big_k = torch.randn(z, n, h, x, dp, device=device).to(dt)
        o = torch.full((z * h * x + 1, m, n), float("nan"), device=device, dtype=dt)
        q, kk = big_q[..., :m, :d], big_k[..., :d]
        sq, sk = big_q.stride(), big_k.stride()
        args = (big_q, big_k, o, m, n, d, h, x, sq[0], sq[1], sq[2], sq[3], sk[0], sk[2],
                sk[3], sk[1])
        cx = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_D=64, EXTRA=extra, num_warps=warps,
                  num_stages=stages)
        if not launch:
            dmod.heads_desc.warmup(*args, **cx, target="sm90")
            continue
        dmod.heads_desc[(tilec.cdiv(m, 128), tilec.cdiv(n, 128), z * h * x)](*args, **cx)
        want = torch.einsum("zhxmd,znhxd->zhxmn", q.double(), kk.double())
        torch.testing.assert_close(o[:-1].double(), want.reshape(z * h * x, m, n), rtol=2e-2,
                                   atol=2e-2 * d ** 0.5,
                                   msg=f"heads_desc {dt} extra={extra} {z}x{h}x{x} {m}x{n}x{d}")
        assert o[-1].isnan().all(), "stored past O"


def _tma_pointer_batched(torch: Any, device: str, launch: bool, kmod: Any) -> None:
    """A batched matmul (kernels.py `batched`): A, B and C blocks of rank-3
    maps ([2^31, rows, columns], `.3d` copies and stores), every operand a
    strided view of a larger tensor (batch and row strides multiples of 16
    elements that are not the view's sizes), ragged M and N, K = 0, fp16 and
    bf16, depths 1-4 (N and K not multiples of 16 in one case: 2-byte pointer
    accesses, yet map blocks, so TMA copies them into wgmma's rings); A at
    batch p + 1 (A_BATCH 4), at batch p + k in K step
    k (5: a loop-varying batch coordinate), at p rows down (1: a pointer
    load); the flattened persistent form; against float64."""
    f16, bf16 = torch.float16, torch.bfloat16
    cases = [(f16, 3, 256, 512, 512, (128, 256, 64), 8, 3, 0),
             (f16, 4, 200, 336, 1008, (128, 128, 64), 8, 4, 0),
             (bf16, 5, 130, 272, 1024, (128, 128, 64), 8, 2, 0),
             (f16, 3, 300, 400, 320, (128, 128, 64), 8, 1, 0),
             (f16, 3, 200, 144, 0, (128, 128, 64), 4, 3, 0),
             (bf16, 3, 1000, 1008, 640, (64, 128, 64), 4, 3, 0),
             (bf16, 3, 129, 528, 704, (128, 256, 64), 8, 3, 0),
             (f16, 3, 130, 260, 1001, (128, 128, 64), 8, 3, 0),   # N, K ragged: TMA + wgmma
             (f16, 3, 200, 336, 1008, (128, 128, 64), 8, 3, 4),
             (f16, 4, 130, 272, 1024, (128, 128, 64), 8, 3, 5),
             (f16, 3, 200, 336, 1008, (128, 128, 64), 8, 3, 1)]

    for dt, nb, m, n, k, (bm, bn, bk), warps, stages, a_batch in cases:
        extra = {4: 1, 5: max(tilec.cdiv(k, bk) - 1, 0)}.get(a_batch, 0)
        big_a = torch.randn(nb + extra, m + 5, _padded(k), device=device).to(dt)
        big_b = torch.randn(nb, k + 3, _padded(n), device=device).to(dt)
        big_c = torch.full((nb, m + 2, _padded(n)), float("nan"), device=device, dtype=dt)
        a, b, c = big_a[:, :m, :k], big_b[:, :k, :n], big_c[:, :m, :n]
        args = (a, b, c, m, n, k, a.stride(0), a.stride(1), 1, b.stride(0), b.stride(1), 1,
                c.stride(0), c.stride(1), 1)
        cx = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, A_BATCH=a_batch, num_warps=warps,
                  num_stages=stages)
        if not launch:
            kmod.batched.warmup(*args, **cx, target="sm90")
            continue
        kmod.batched[(tilec.cdiv(m, bm), tilec.cdiv(n, bn), nb)](*args, **cx)
        if a_batch == 1:   # A's batch p at p rows down
            a = torch.stack([big_a[0, p:p + m, :k] for p in range(nb)])
        want = torch.zeros(nb, m, n, dtype=torch.float64, device=device)
        for p in range(nb):
            for s in range(0, k, bk):
                q = p + {4: 1, 5: s // bk}.get(a_batch, 0)
                want[p] += a[q, :, s:s + bk].double() @ b[p, s:s + bk].double()
        torch.testing.assert_close(c.double(), want, rtol=2e-2, atol=2e-2 * max(k, 1) ** 0.5,
                                   msg=f"batched {dt} {nb}x{m}x{n}x{k} A_BATCH={a_batch}")
        assert big_c[:, m:].isnan().all() and big_c[:, :, n:].isnan().all(), "stored past C"
    # B shared by every batch: one [K, N] matrix, its batch stride passed as 0
    # (a map whose batch stride is 0).
    m, n, k, nb = 200, 336, 1008, 3
    a = torch.randn(nb, m, k, device=device).to(f16)
    b = torch.randn(1, k, n, device=device).to(f16)
    c = torch.full((nb, m, n), float("nan"), device=device, dtype=f16)
    args = (a, b, c, m, n, k, a.stride(0), a.stride(1), 1, 0, n, 1, c.stride(0), c.stride(1), 1)
    cx = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, A_BATCH=0, num_warps=8, num_stages=3)
    if not launch:
        kmod.batched.warmup(*args, **cx, target="sm90")
    else:
        kmod.batched[(tilec.cdiv(m, 128), tilec.cdiv(n, 128), nb)](*args, **cx)
        torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=2e-2,
                                   atol=2e-2 * k ** 0.5, msg="batched, B's batch stride 0")
    # The flattened persistent form (kernels.py `batched_persistent`: the batch
    # a quotient of the tile id): 32 programs for 72 and 27 tiles, so a
    # program's tiles (and the next tile's copies in flight) cross batches.
    for dt, nb, m, n, k in ((f16, 4, 700, 720, 512), (bf16, 3, 300, 528, 1024)):
        a = torch.randn(nb, m, k, device=device).to(dt)
        b = torch.randn(nb, k, n, device=device).to(dt)
        c = torch.full((nb, m, n), float("nan"), device=device, dtype=dt)
        args = (a, b, c, m, n, k, nb, m * k, k, k * n, n, m * n, n)
        cx = dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, NUM_SMS=32, num_warps=8, num_stages=3)
        if not launch:
            kmod.batched_persistent.warmup(*args, **cx, target="sm90")
            continue
        kmod.batched_persistent[(32,)](*args, **cx)
        torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=2e-2,
                                   atol=2e-2 * k ** 0.5, msg=f"persistent batched {dt}")


def _flat_matmul(torch: Any, device: str, launch: bool) -> None:
    """The flattened persistent loop (tile-flatten-loops + tile-pipeline): few
    programs for many tiles (the next tile's blocks in flight during an
    epilogue, ring phases carried across tiles), K shorter than the pipeline
    (k tiles < stages), K < BLOCK_K, 128x256 and fp8; against float64."""
    pm = _example("matmul_persistent")
    cases = [(torch.float16, 640, 768, 192, (128, 128, 64), 8, s, 5) for s in (2, 3, 4, 5)]
    cases += [(torch.float16, 520, 1030, 64, (128, 256, 64), 8, 3, 3),
              (torch.float16, 300, 400, 40, (128, 128, 64), 8, 4, 2),
              (torch.float16, 256, 256, 4096, (128, 128, 64), 4, 3, 1),
              (torch.bfloat16, 384, 512, 136, (128, 128, 64), 8, 3, 7),
              (torch.float8_e4m3fn, 512, 768, 384, (128, 256, 128), 8, 3, 4)]
    for dt, m, n, k, (bm, bn, bk), warps, stages, programs in cases:
        a = torch.randn(m, k, device=device).to(dt)
        b = torch.randn(n, k, device=device).to(dt)
        c = torch.full((m, n), float("nan"), device=device, dtype=torch.float16)
        cx = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, NUM_SMS=programs,
                  num_warps=warps, num_stages=stages)
        if not launch:
            pm.matmul_persistent.warmup(a, b, c, m, n, k, **cx, target="sm90")
            continue
        pm.matmul_persistent[(programs,)](a, b, c, m, n, k, **cx)
        want = a.double() @ b.double().t()
        tol = 2e-2 if dt != torch.float8_e4m3fn else 5e-2
        torch.testing.assert_close(c.double(), want, rtol=tol, atol=tol * max(k, 1) ** 0.5)


def _tma_store_matmul(torch: Any, device: str, launch: bool) -> None:
    """The epilogue's TMA store (tile.tma_store): M and N not multiples of the
    block (N a multiple of 16, so C's rows are 16-byte aligned and the store
    map qualifies; TMA clips the boxes), at the configs the benchmarks time
    (128x256x64 s3 / s4, 128x128x64 s4, fp8 128x256x128 s3 / s4; at 4 slots
    the tile goes out in four column passes through one atom's buffer), with
    few programs (one buffer reused by many tiles) and one tile per program;
    C is a view at the start of a poisoned buffer whose tail must stay
    poisoned (no write past the tensor)."""
    pm = _example("matmul_persistent")
    f16, f8 = torch.float16, torch.float8_e4m3fn
    cases = [(f16, 333, 400, 256, (128, 256, 64), 8, 3, 5),
             (f16, 520, 1040, 192, (128, 256, 64), 8, 3, 132),
             (f16, 200, 272, 640, (128, 128, 64), 8, 4, 3),
             (f16, 129, 144, 64, (128, 128, 64), 8, 4, 132),
             (f16, 1000, 784, 4096, (128, 128, 64), 8, 4, 7),
             (f8, 300, 528, 384, (128, 256, 128), 8, 3, 4),
             (f8, 64, 16, 128, (128, 256, 128), 8, 3, 1),
             # 4 slots: the tile stored in 4 column passes through a 16 KiB buffer
             (f16, 333, 400, 256, (128, 256, 64), 8, 4, 5),
             (f16, 1000, 1040, 704, (128, 256, 64), 8, 4, 132),
             (f8, 300, 528, 384, (128, 256, 128), 8, 4, 4),
             (f8, 520, 784, 1024, (128, 256, 128), 8, 5, 3)]
    for dt, m, n, k, block, warps, stages, programs in cases:
        # (tests/test_tma_store.py checks that these specializations store with TMA.)
        _poisoned_persistent(torch, device, launch, pm, dt, m, n, k, block, warps, stages,
                             programs, 2e-2 if dt != f8 else 5e-2)
    # C in f32 (C_F32=True): the 128 KiB tile in 2 column passes beside 3
    # slots, in 8 beside 4.
    for m, n, k, stages, programs in ((333, 400, 256, 3, 5), (520, 784, 640, 4, 132)):
        _poisoned_persistent(torch, device, launch, pm, f16, m, n, k, (128, 256, 64), 8, stages,
                             programs, 1e-3, C_F32=True)


def _poisoned_persistent(torch: Any, device: str, launch: bool, pm: Any, dt: Any, m: int, n: int,
                         k: int, block: tuple[int, int, int], warps: int, stages: int,
                         programs: int, tol: float, **extra: Any) -> None:
    """One launch of the persistent example on min(programs, tiles) programs
    (`extra`: C_F32, num_ctas), C a view at the start of a NaN-poisoned buffer
    whose tail must stay poisoned (no write past C), against float64; with
    `launch` False, its specialization compiled for sm90."""
    a = torch.randn(m, k, device=device).to(dt)
    b = torch.randn(n, k, device=device).to(dt)
    buf = torch.full((m * n + 8192,), float("nan"), device=device,
                     dtype=torch.float32 if extra.get("C_F32") else torch.float16)
    c = buf[:m * n].view(m, n)
    bm, bn, bk = block
    cx = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, NUM_SMS=programs,
              num_warps=warps, num_stages=stages, **extra)
    if not launch:
        pm.matmul_persistent.warmup(a, b, c, m, n, k, **cx, target="sm90")
        return
    tiles = tilec.cdiv(m, bm) * tilec.cdiv(n, bn)
    pm.matmul_persistent[(min(programs, tiles),)](a, b, c, m, n, k, **cx)
    torch.testing.assert_close(c.double(), a.double() @ b.double().t(), rtol=tol,
                               atol=tol * max(k, 1) ** 0.5,
                               msg=f"persistent {dt} {m}x{n}x{k} {block} s{stages} {extra}")
    assert torch.isnan(buf[m * n:]).all(), f"{(m, n, k)} {extra}: a write past C"


def _cluster_matmul(torch: Any, device: str, launch: bool) -> None:
    """num_ctas=2 (tile-split-ctas + multicast rings): each program a cluster of
    two CTAs, each computing half its rows, B's blocks copied once per
    cluster and multicast into both CTAs' rings (a ring slot refilled only
    when both released it).  Ragged M and N (a cluster's second CTA past M),
    K shorter than the ring, many tiles per cluster and one, depths 2-4,
    fp16 / bf16 / fp8, C in f32, and a K whose rows are not 16-byte aligned
    (no tensor maps: the split alone, loads through pointers); C a view at
    the start of a poisoned buffer whose tail must stay poisoned."""
    pm = _example("matmul_persistent")
    f16, bf16, f8 = torch.float16, torch.bfloat16, torch.float8_e4m3fn
    cases = [(f16, 1000, 1040, 704, (256, 256, 64), 8, 3, 5, False),
             (f16, 333, 400, 256, (256, 256, 64), 8, 4, 66, False),
             (f16, 520, 784, 128, (256, 256, 64), 8, 4, 3, False),
             (f16, 640, 768, 192, (256, 128, 64), 8, 2, 4, False),
             (f16, 300, 272, 640, (128, 256, 64), 4, 4, 2, False),
             (bf16, 384, 512, 192, (256, 128, 64), 8, 3, 7, False),
             (f8, 300, 528, 384, (256, 256, 128), 8, 3, 4, False),
             (f8, 1000, 784, 1024, (256, 256, 128), 8, 4, 66, False),
             (f8, 64, 16, 128, (256, 256, 128), 8, 4, 1, False),
             (f16, 520, 784, 640, (256, 256, 64), 8, 3, 5, True),
             (f16, 257, 136, 200, (256, 128, 64), 8, 3, 3, False)]
    for dt, m, n, k, block, warps, stages, programs, c_f32 in cases:
        # (tests/test_clusters.py checks that such specializations multicast.)
        _poisoned_persistent(torch, device, launch, pm, dt, m, n, k, block, warps, stages,
                             programs, 5e-2 if dt == f8 else 1e-3 if c_f32 else 2e-2,
                             C_F32=c_f32, num_ctas=2)


_TUNED: Any = None


def _autotune(torch: Any, device: str, launch: bool) -> None:
    """tilec.autotune times its configs with CUDA events and launches the best."""
    global _TUNED
    va = _example("vector_add")
    if _TUNED is None:
        configs = [tilec.Config({"BLOCK": b}, num_warps=w) for b, w in ((256, 2), (1024, 4),
                                                                         (4096, 8))]
        _TUNED = tilec.autotune(configs, key=["n"], cache_results=False)(va.add)
    n = (1 << 22) + 3
    x, y = torch.randn(n, device=device), torch.randn(n, device=device)
    out = torch.full_like(x, float("nan"))
    if not launch:
        _TUNED.warmup(x, y, out, n, target="sm90")
        return
    _TUNED[lambda meta: (tilec.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)
    (timings,) = _TUNED.timings.values()
    assert len(timings) == 3 and all(t > 0 for t in timings.values()), timings
    print(f"  autotune chose {_TUNED.best_config}; ms: "
          + ", ".join(f"{k.split(',')[0]} {v:.4f}" for k, v in timings.items()))


def _more_examples(torch: Any, device: str, launch: bool) -> None:
    """The remaining examples' kernels on device tensors, checked against torch."""
    sm, ln, rms = _example("softmax"), _example("layernorm"), _example("rmsnorm")
    ce, hist, ps, ann = (_example("cross_entropy"), _example("histogram"),
                         _example("prefix_sum"), _example("kernels_annotated"))
    calls: list[tuple[Any, tuple[Any, ...], tuple[Any, ...], dict[str, Any]]] = []

    def call(k: Any, grid: tuple[Any, ...], *args: Any, **kw: Any) -> None:
        calls.append((k, grid, args, kw))
        if launch:
            k[grid](*args, **kw)
        else:
            k.warmup(*args, target="sm90", **kw)

    R, C = 37, 781
    x = torch.randn(R, C, device=device)
    y1, y2 = torch.full_like(x, float("nan")), torch.full_like(x, float("nan"))
    call(sm.softmax_kernel, (R,), y1, x, C, C, C, BLOCK=1024)
    call(sm.softmax_persistent, (8,), y2, x, C, C, R, C, BLOCK=1024)
    xh = torch.randn(R, 3000, device=device, dtype=torch.float16)
    w = torch.rand(3000, device=device, dtype=torch.float16)
    b = torch.randn(3000, device=device, dtype=torch.float16)
    yl, yl2 = torch.full_like(xh, float("nan")), torch.full_like(xh, float("nan"))
    mean, rstd = torch.empty(R, device=device), torch.empty(R, device=device)
    call(ln.layer_norm_fwd, (R,), xh, yl, w, b, mean, rstd, 3000, 3000, 1e-5, BLOCK_SIZE=4096)
    call(ln.layer_norm_fwd_looped, (R,), xh, yl2, w, b, mean, rstd, 3000, 3000, 1e-5,
         BLOCK_SIZE=1024)
    yr = torch.full_like(xh, float("nan"))
    rs = torch.empty(R, device=device)
    call(rms.rms_norm_fwd, (R,), xh, yr, w, rs, 3000, 3000, 3000, 1e-6, BLOCK_SIZE=4096)
    V = 50257
    logits = torch.randn(R, V, device=device, dtype=torch.bfloat16)
    tgt = torch.randint(0, V, (R,), device=device)
    tgt[3] = -100
    loss = torch.full((R,), float("nan"), device=device)
    call(ce.cross_entropy_fwd, (R,), logits, tgt, loss, V, V, BLOCK=4096)
    n, bins = 100003, 77
    vals = torch.randint(-5, bins + 5, (n,), device=device, dtype=torch.int32)
    h = torch.zeros(bins, device=device, dtype=torch.int32)
    call(hist.histogram_kernel, (tilec.cdiv(n, 1024),), vals, h, n, bins, BLOCK=1024)
    data = torch.randn(5000, device=device)
    out = torch.full_like(data, float("nan"))
    call(ps.cumsum_single_block, (1,), data, out, 5000, BLOCK=8192)
    xa = torch.randn(1000, device=device)
    oa, ob = torch.full_like(xa, float("nan")), torch.full_like(xa, float("nan"))
    call(ann.scale, (tilec.cdiv(1000, 256),), xa, oa, 3.0, 1000)
    call(ann.relu, (tilec.cdiv(1000, 256),), xa, ob, 1000)
    if not launch:
        return
    torch.testing.assert_close(y1, torch.softmax(x, 1))
    torch.testing.assert_close(y2, torch.softmax(x, 1))
    ref = torch.nn.functional.layer_norm(xh.double(), (3000,), w.double(), b.double(), 1e-5)
    torch.testing.assert_close(yl.double(), ref, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(yl2.double(), ref, rtol=1e-2, atol=1e-2)
    xd = xh.double()
    torch.testing.assert_close(yr.double(), xd * torch.rsqrt((xd * xd).mean(1, keepdim=True)
                                                             + 1e-6) * w.double(),
                               rtol=1e-2, atol=1e-2)
    ref_ce = torch.nn.functional.cross_entropy(logits.double(), tgt, reduction="none",
                                               ignore_index=-100)
    torch.testing.assert_close(loss.double(), ref_ce, rtol=1e-4, atol=1e-3)
    ok = (vals >= 0) & (vals < bins)
    assert torch.equal(h.long(), torch.bincount(vals[ok].long(), minlength=bins)), "histogram"
    torch.testing.assert_close(out, torch.cumsum(data, 0), rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(oa, 3.0 * xa)
    torch.testing.assert_close(ob, torch.relu(xa))


def _attention(torch: Any, device: str, launch: bool) -> None:
    """examples/attention.py: forward and backward in every configuration of
    the H200 benchmark on four ragged shapes (N = 77, 200, 256, 333; D 64 and
    128; fp16 and bf16; causal and not) against SDPA in float32
    (`h200_attention.check`), then the example's `torch.autograd` wrapper with
    its default configurations against float64."""
    import math
    import h200_attention as bench
    if not launch:
        bench.prepare(checks_only=True)
        return
    bench.check()
    for z, h, n, d, dt, causal in bench.CHECKS:
        q, k, v, do = (torch.randn(z, h, n, d, device=device).to(getattr(torch, dt))
                       for _ in range(4))
        qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
        bench.tl_attn.attention(qg, kg, vg, causal, 1 / math.sqrt(d)).backward(do)
        q64, k64, v64 = (t.double().requires_grad_() for t in (q, k, v))
        o64 = torch.nn.functional.scaled_dot_product_attention(q64, k64, v64, is_causal=causal)
        o64.backward(do.double())
        for got, want in ((qg.grad, q64.grad), (kg.grad, k64.grad), (vg.grad, v64.grad)):
            assert got is not None and want is not None
            err = float((got.double() - want).abs().max() / want.abs().max())
            assert err < 2e-2, (z, h, n, d, dt, causal, err)


def _tma_batched_k_major(torch: Any, device: str, launch: bool, kmod: Any) -> None:
    """`batched` with B given K-major (a [N, K] weight per batch seen as [K,
    N]: the transpose of a rank-3 map's block): ragged M and N, K ragged and
    0, fp16 / bf16, depths 2-4, B's batch stride 0 once; against float64."""
    f16, bf16 = torch.float16, torch.bfloat16
    for dt, nb, m, n, k, warps, stages, shared in (
            (f16, 3, 200, 336, 1008, 8, 3, False), (bf16, 4, 130, 272, 1040, 8, 4, False),
            (f16, 3, 300, 400, 0, 4, 2, False), (f16, 2, 129, 200, 640, 8, 2, True)):
        kp = _padded(k)   # padded rows: strides 16-element multiples, not K
        big_a = torch.randn(nb, m + 3, kp, device=device).to(dt)
        big_b = torch.randn(1 if shared else nb, n + 5, kp, device=device).to(dt)
        c = torch.full((nb, m, n), float("nan"), device=device, dtype=dt)
        a, bt = big_a[:, :m, :k], big_b[:, :n, :k]
        args = (a, bt, c, m, n, k, a.stride(0), a.stride(1), 1, 0 if shared else bt.stride(0),
                1, bt.stride(1), c.stride(0), c.stride(1), 1)
        cx = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=warps, num_stages=stages)
        if not launch:
            kmod.batched.warmup(*args, **cx, target="sm90")
            continue
        kmod.batched[(tilec.cdiv(m, 128), tilec.cdiv(n, 128), nb)](*args, **cx)
        want = a.double() @ bt.double().transpose(1, 2)
        torch.testing.assert_close(c.double(), want, rtol=2e-2, atol=2e-2 * max(k, 1) ** 0.5,
                                   msg=f"batched K-major {dt} {nb}x{m}x{n}x{k}")


def _tma_batch_mask(torch: Any, device: str, launch: bool, kmod: Any) -> None:
    """`batched` with `pid_b < NB` (BATCH_MASK 1) or `pid_b < NB - 1` (2) in
    every mask: maps whose batch extent is that bound; programs over one
    batch more than the tensors hold, whose C stays NaN; NB = 0 (an empty
    batch dimension: every map a zero-size stand-in); against float64."""
    f16 = torch.float16
    m, n, k, nb = 200, 336, 1008, 3
    for batch_mask, live in ((1, nb), (2, nb), (1, 0)):
        a = torch.randn(nb + 1, m, k, device=device).to(f16)
        b = torch.randn(nb + 1, k, n, device=device).to(f16)
        c = torch.full((nb + 1, m, n), float("nan"), device=device, dtype=f16)
        args = (a, b, c, m, n, k, a.stride(0), a.stride(1), 1, b.stride(0), b.stride(1), 1,
                c.stride(0), c.stride(1), 1)
        cx = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, NB=live, BATCH_MASK=batch_mask,
                  num_warps=8, num_stages=3)
        if not launch:
            kmod.batched.warmup(*args, **cx, target="sm90")
            continue
        kmod.batched[(tilec.cdiv(m, 128), tilec.cdiv(n, 128), nb + 1)](*args, **cx)
        done = max(live - (batch_mask - 1), 0)
        torch.testing.assert_close(c[:done].double(), a[:done].double() @ b[:done].double(),
                                   rtol=2e-2, atol=2e-2 * k ** 0.5,
                                   msg=f"batch mask {batch_mask} NB={live}")
        assert c[done:].isnan().all(), f"batch mask {batch_mask} NB={live}: stored a masked batch"


def _tma_heads(torch: Any, device: str, launch: bool, kmod: Any) -> None:
    """`heads` (Q K^T per batch and head, pointers as attention kernels write
    them): rank-4 maps (two batch terms) and rank-5 (three), K read K-major
    from a sequence-major [Z, N, H, X, D] tensor, Q and O head-major views
    with padded rows; ragged M, N, D; 8 and 4 warps (a `.5d` TMA store);
    against float64."""
    f16, bf16 = torch.float16, torch.bfloat16
    for dt, extra, z, h, x, m, n, d, warps, stages in (
            (f16, 0, 2, 3, 1, 300, 260, 128, 8, 3), (bf16, 0, 3, 2, 1, 129, 513, 64, 8, 2),
            (f16, 1, 2, 2, 3, 200, 136, 96, 4, 3), (bf16, 1, 1, 3, 2, 128, 128, 208, 8, 4)):
        dp, np_ = _padded(d), _padded(n)   # padded: 16-element strides
        big_q = torch.randn(z, h, x, m + 2, dp, device=device).to(dt)
        big_k = torch.randn(z, n, h, x, dp, device=device).to(dt)
        big_o = torch.full((z, h, x, m + 1, np_), float("nan"), device=device, dtype=dt)
        q, kk, o = big_q[..., :m, :d], big_k[..., :d], big_o[..., :m, :n]
        sq, sk, so = big_q.stride(), big_k.stride(), big_o.stride()
        args = (big_q, big_k, big_o, m, n, d, h, x, sq[0], sq[1], sq[2], sq[3], sk[0], sk[2],
                sk[3], sk[1], so[0], so[1], so[2], so[3])
        cx = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_D=64, EXTRA=extra, num_warps=warps,
                  num_stages=stages)
        if not launch:
            kmod.heads.warmup(*args, **cx, target="sm90")
            continue
        kmod.heads[(tilec.cdiv(m, 128), tilec.cdiv(n, 128), z * h * x)](*args, **cx)
        want = torch.einsum("zhxmd,znhxd->zhxmn", q.double(), kk.double())
        torch.testing.assert_close(o.double(), want, rtol=2e-2, atol=2e-2 * d ** 0.5,
                                   msg=f"heads {dt} extra={extra} {z}x{h}x{x} {m}x{n}x{d}")
        assert big_o[..., m:, :].isnan().all() and big_o[..., n:].isnan().all(), "stored past O"


CASES = [Case("dtype sweep (elementwise, 8 dtypes)", _dtype_sweep),
         Case("examples: vector_add, saxpy, elementwise_2d (strided view)", _examples),
         Case("softmax, layernorm, rmsnorm, cross-entropy", _norms),
         Case("argmax ties, cumsum, atomic histogram, 2-D column sums, spin lock + scalar atomics",
              _reductions),
         Case("tl.trans and tl.reshape through workgroup memory", _shapes),
         Case("CUDA graph capture and replay; DLPack-only arrays", _graph_and_dlpack),
         Case("C launch path: alternating specializations on fresh tensors", _c_launch_path),
         Case("tilec.autotune with CUDA-event timing", _autotune),
         Case("tl.dot: matmul fp32 / fp16 (masked, transposed view) / int8", _matmul),
         Case("TMA descriptor loads: persistent matmul, ragged, K = 0, depths 2-5, fp8",
              _tma_matmul),
         Case("inferred tensor maps: tutorial-03 pointer matmul, ragged (% M, % N), K = 0, "
              "unaligned strides, depths 1-5, bf16, K-major B (fp8), source variants",
              _tma_pointer_matmul),
         Case("batched tensor maps (rank 3-5): batched matmul (batch stride 0, persistent, "
              "K-major B, batch masks), per-head Q K^T with two / three batch terms, "
              "per-batch and per-head descriptors", _tma_batched),
         Case("flattened persistent matmul: many tiles per program, short K, depths 2-5, fp8",
              _flat_matmul),
         Case("TMA store epilogue: ragged M and N, 128x256 / 128x128 / fp8, buffer reuse, "
              "column passes", _tma_store_matmul),
         Case("cluster multicast (num_ctas=2): split programs, B multicast, ragged, depths "
              "2-4, fp16 / bf16 / fp8, f32 C, unaligned K", _cluster_matmul),
         Case("examples: softmax (+persistent), layernorm (+looped), rmsnorm, cross-entropy, "
              "histogram, prefix sum, annotated kernels", _more_examples),
         Case("attention forward and backward: every benchmark configuration on ragged N, "
              "causal or not, D 64 / 128, fp16 / bf16; the autograd wrapper", _attention)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["prepare", "run"])
    ap.add_argument("--only", nargs="*", default=[],
                    help="run only the cases whose name contains one of these strings")
    args = ap.parse_args()
    import torch
    launch = args.phase == "run"
    device = "cuda" if launch else "cpu"
    torch.manual_seed(0)
    passed = failed = 0
    for case in CASES:
        if args.only and not any(w in case.name for w in args.only):
            continue
        try:
            case.run(torch, device, launch)
            if launch:
                torch.cuda.synchronize()
            passed += 1
            print(f"PASS {case.name}", flush=True)
        except Exception:
            failed += 1
            print(f"FAIL {case.name}\n{traceback.format_exc()}", flush=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
