"""GPU check of the language items of issue 12's last round on a real NVIDIA GPU:
tl.sort / tl.topk, tl.gather (both index paths), scalar stores once per
program, None for unused pointers, 3-D tl.dot, tl.device_print; and
`tl.range(loop_unroll_factor=)` (tile-unroll) on a plain and a pipelined loop.

Two phases, like scripts/gpu_suite.py (the compiler cannot travel):

    # here: compile every case for sm90 into a cache that travels
    TILEC_CACHE_DIR=$PWD/.carry/tilec-cache .venv/bin/python scripts/gpu_lang_check.py prepare
    # on the GPU machine
    TILEC_CACHE_DIR=$PWD/.carry/tilec-cache python3 scripts/gpu_lang_check.py run

Each case compares with PyTorch on the device (outputs poisoned first); the
closing line is 'N passed, N failed'.  device_print's lines come from vprintf
on the process's stdout (`pid (...) idx (...) x: ...`).
"""
from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tilec  # noqa: E402
import tilec.language as tl  # noqa: E402


@tilec.jit
def sort_2d(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr, DESC: tl.constexpr):
    o = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(z_ptr + o, tl.sort(tl.load(x_ptr + o), descending=DESC))


@tilec.jit
def topk_2d(x_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(z_ptr + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :], tl.topk(x, K))


@tilec.jit
def gather_2d(s_ptr, i_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr, MI: tl.constexpr,
              NI: tl.constexpr, AXIS: tl.constexpr):
    s = tl.load(s_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    oi = tl.arange(0, MI)[:, None] * NI + tl.arange(0, NI)[None, :]
    tl.store(z_ptr + oi, tl.gather(s, tl.load(i_ptr + oi), AXIS))


@tilec.jit
def gather_tindex(s_ptr, i_ptr, z_ptr, M: tl.constexpr, N: tl.constexpr):
    s = tl.load(s_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    i = tl.load(i_ptr + tl.arange(0, M)[:, None] + tl.arange(0, N)[None, :] * M)
    tl.store(z_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], tl.gather(s, i, 1))


@tilec.jit
def row_sums(x_ptr, z_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    s = tl.sum(tl.load(x_ptr + row * BLOCK + tl.arange(0, BLOCK)))
    tl.store(z_ptr + row, s)
    tl.atomic_add(z_ptr + 2 * n, 1.0)   # counts programs (once per program)
    tl.store(z_ptr + n + row, s * 2, mask=row < 2)


@tilec.jit
def bias_add(x_ptr, b_ptr, z_ptr, n, HAS_B: tl.constexpr, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    x = tl.load(x_ptr + o, mask=m)
    if HAS_B:
        x += tl.load(b_ptr + o, mask=m)
    tl.store(z_ptr + o, x, mask=m)


@tilec.jit
def bmm(q_ptr, k_ptr, c_ptr, o_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
        K: tl.constexpr):
    b = tl.arange(0, B)[:, None, None]
    q = tl.load(q_ptr + b * M * K + tl.arange(0, M)[None, :, None] * K
                + tl.arange(0, K)[None, None, :])
    k = tl.load(k_ptr + b * K * N + tl.arange(0, K)[None, :, None] * N
                + tl.arange(0, N)[None, None, :])
    offs = b * M * N + tl.arange(0, M)[None, :, None] * N + tl.arange(0, N)[None, None, :]
    tl.store(o_ptr + offs, tl.dot(q, k, acc=tl.load(c_ptr + offs)))


@tilec.jit
def printer(x_ptr, n):
    tl.device_print("x", tl.load(x_ptr + tl.arange(0, 8)))
    print("n", n)


@tilec.jit
def asm_ops(x_ptr, y_ptr, s_ptr, m_ptr, b_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = tl.load(y_ptr + offs, mask=offs < n)
    s, m = tl.inline_asm_elementwise(
        asm="add.s32 $0, $2, $3;\n\tmax.s32 $1, $2, $3;", constraints="=r,=r,r,r",
        args=[x, y], dtype=(tl.int32, tl.int32), is_pure=True, pack=1)
    tl.store(s_ptr + offs, s, mask=offs < n)
    tl.store(m_ptr + offs, m, mask=offs < n)
    bytes_in = tl.load(x_ptr + offs, mask=offs < n).to(tl.uint8)
    shifted = tl.inline_asm_elementwise(asm="shl.b32 $0, $1, 3;", constraints="=r,r",
                                        args=[bytes_in], dtype=tl.uint8, is_pure=True, pack=4)
    tl.store(b_ptr + offs, shifted, mask=offs < n)


Call = Callable[..., None]


@tilec.jit
def unrolled_sum(x_ptr, z_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], tl.float32)
    for start in tl.range(0, n, BLOCK, loop_unroll_factor=3):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(z_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), acc)


@tilec.jit
def unrolled_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                    BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], tl.float32)
    for k in tl.range(0, K, BK, num_stages=3, loop_unroll_factor=2):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :],
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _unroll(torch: Any, dev: str, call: Call, launch: bool) -> None:
    for n in (-5, 0, 1, 128, 383, 384, 385, 1000):
        x = torch.randn(max(n, 1), device=dev)
        z = torch.full((128,), float("nan"), device=dev)
        call(unrolled_sum, (1,), x, z, n, BLOCK=128)
        if launch:
            want = torch.zeros(128, device=dev, dtype=torch.float64)
            if n > 0:
                xp = torch.nn.functional.pad(x[:n].double(), (0, (-n) % 128))
                want = xp.view(-1, 128).sum(0)
            torch.testing.assert_close(z.double(), want, rtol=1e-5, atol=1e-4)
    for m, nn, k in ((128, 128, 64), (200, 136, 96), (128, 128, 224), (64, 64, 320)):
        a = torch.randn(m, k, device=dev, dtype=torch.float16)
        b = torch.randn(k, nn, device=dev, dtype=torch.float16)
        c = torch.full((m, nn), float("nan"), device=dev)
        call(unrolled_matmul, (tilec.cdiv(m, 64), tilec.cdiv(nn, 64)), a, b, c, m, nn, k,
             BM=64, BN=64, BK=32)
        if launch:
            torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=1e-3, atol=1e-2)


def _sorts(torch: Any, dev: str, call: Call, launch: bool) -> None:
    x = torch.randn(8, 64, device=dev)
    xi = torch.randint(-50, 50, (4, 128), device=dev, dtype=torch.int32)
    z, zi = torch.full_like(x, float("nan")), torch.full_like(xi, -7)
    t = torch.full((8, 16), float("nan"), device=dev)
    call(sort_2d, (1,), x, z, 8, 64, True)
    call(sort_2d, (1,), xi, zi, 4, 128, False)
    call(topk_2d, (1,), x, t, 8, 64, 16)
    if launch:
        assert torch.equal(z, torch.sort(x, 1, descending=True).values), "sort fp32 desc"
        assert torch.equal(zi, torch.sort(xi, 1).values), "sort int32 asc"
        assert torch.equal(t, torch.topk(x, 16, 1).values), "topk"


def _gathers(torch: Any, dev: str, call: Call, launch: bool) -> None:
    s = torch.randn(16, 32, device=dev)
    i1 = torch.randint(0, 32, (16, 64), device=dev, dtype=torch.int32)
    i0 = torch.randint(0, 16, (64, 32), device=dev, dtype=torch.int64)
    z1, z0 = torch.full((16, 64), float("nan"), device=dev), torch.full((64, 32), float("nan"),
                                                                          device=dev)
    call(gather_2d, (1,), s, i1, z1, 16, 32, 16, 64, 1)
    call(gather_2d, (1,), s, i0, z0, 16, 32, 64, 32, 0)
    st = torch.randn(32, 64, device=dev)
    it = torch.randint(0, 64, (32, 64), device=dev, dtype=torch.int32)
    zt = torch.full_like(st, float("nan"))
    call(gather_tindex, (1,), st, it.t().contiguous(), zt, 32, 64)
    if launch:
        assert torch.equal(z1, torch.gather(s, 1, i1.long())), "gather axis 1"
        assert torch.equal(z0, torch.gather(s, 0, i0)), "gather axis 0"
        assert torch.equal(zt, torch.gather(st, 1, it.long())), "gather, index in another layout"


def _scalar_store_none_bmm(torch: Any, dev: str, call: Call, launch: bool) -> None:
    x = torch.randn(6, 256, device=dev)
    z = torch.zeros(13, device=dev)
    call(row_sums, (6,), x, z, 6, BLOCK=256)
    a = torch.randn(1000, device=dev)
    bb = torch.randn(1000, device=dev)
    o1, o2 = torch.full_like(a, float("nan")), torch.full_like(a, float("nan"))
    call(bias_add, (4,), a, None, o1, 1000, False, 256)
    call(bias_add, (4,), a, bb, o2, 1000, True, 256)
    q = torch.randn(4, 16, 32, device=dev, dtype=torch.float16)
    k = torch.randn(4, 32, 16, device=dev, dtype=torch.float16)
    c = torch.randn(4, 16, 16, device=dev)
    o = torch.full_like(c, float("nan"))
    call(bmm, (1,), q, k, c, o, 4, 16, 16, 32)
    if launch:
        ref = x.sum(1)
        torch.testing.assert_close(z[:6], ref, rtol=1e-5, atol=1e-4)
        torch.testing.assert_close(z[6:8], 2 * ref[:2], rtol=1e-5, atol=1e-4)
        assert float(z[8:12].abs().sum()) == 0.0, "masked scalar store wrote"
        assert float(z[12]) == 6.0, f"scalar atomics ran {float(z[12])} times, not 6"
        assert torch.equal(o1, a) and torch.equal(o2, a + bb), "None pointer"
        ref3 = torch.matmul(q.double(), k.double()) + c.double()
        torch.testing.assert_close(o.double(), ref3, rtol=1e-3, atol=1e-3)


def _print(torch: Any, dev: str, call: Call, launch: bool) -> None:
    x = torch.arange(8, device=dev, dtype=torch.float32) * 0.5
    call(printer, (2,), x, 42)
    if launch:
        torch.cuda.synchronize()
        print("(device_print: 2 x 8 element lines and 2 scalar lines expected above)", flush=True)


def _asm(torch: Any, dev: str, call: Call, launch: bool) -> None:
    n = 1000
    x = torch.randint(-1000, 1000, (n,), device=dev, dtype=torch.int32)
    y = torch.randint(-1000, 1000, (n,), device=dev, dtype=torch.int32)
    s, m = torch.zeros_like(x), torch.zeros_like(x)
    b = torch.zeros(n, device=dev, dtype=torch.uint8)
    call(asm_ops, (4,), x, y, s, m, b, n, BLOCK=256)
    if launch:
        assert torch.equal(s, x + y) and torch.equal(m, torch.maximum(x, y)), "two results"
        # Four consecutive bytes share one 32-bit register, shifted as a whole.
        words = x.to(torch.uint8).view(torch.int32).to(torch.int64)
        want = ((words << 3) & 0xFFFFFFFF).to(torch.uint32).view(torch.uint8)
        assert torch.equal(b, want), "packed shl"


CASES = [("tl.sort / tl.topk", _sorts), ("tl.gather", _gathers),
         ("tl.inline_asm_elementwise (two results; pack=4 bytes)", _asm),
         ("scalar store once per program, None pointer, 3-D dot", _scalar_store_none_bmm),
         ("tl.device_print", _print),
         ("tl.range(loop_unroll_factor=) on a plain and a pipelined loop", _unroll)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["prepare", "run"])
    launch = ap.parse_args().phase == "run"
    import torch
    dev = "cuda" if launch else "cpu"
    torch.manual_seed(0)

    def call(k: Any, grid: tuple[int, ...], *args: Any, **kw: Any) -> None:
        if launch:
            k[grid](*args, **kw)
        else:
            k.warmup(*args, target="sm90", **kw)

    passed = failed = 0
    for name, run in CASES:
        try:
            run(torch, dev, call, launch)
            if launch:
                torch.cuda.synchronize()
            passed += 1
            print(f"PASS {name}", flush=True)
        except Exception:
            failed += 1
            print(f"FAIL {name}\n{traceback.format_exc()}", flush=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
