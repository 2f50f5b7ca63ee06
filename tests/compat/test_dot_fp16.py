"""fp16-output `tl.dot` (`out_dtype=tl.float16`, an f16 `acc=`): the sum in
f32, rounded to f16 once at the end, as Triton's interpreter (NumPy's f16
matmul sums in f32) and MFMA do; 2-D, 3-D (batched), with an accumulator and
in a K loop (one rounding per dot).  The references are f32 sums in k order
(the products of f16 values are exact in f32), compared bit for bit: an f16
running sum (the CPU lowering before) differs from them in most elements.  On
sm90 / gfx942 the same kernel takes the f32-accumulator matrix instructions.
A batched dot's 3-D tiles compile for the CPU in a second (the batch
elements' picks and the stacking were whole-tile `vector.shuffle`s: B = 8 of
32 x 32 x 32 f16 took 170 s in LLVM; passes/cpu/tiled.py now copies them)."""
from __future__ import annotations

import re
import time

import numpy as np
import pytest

import tilec as triton
import tilec.language as tl


@triton.jit
def dot16_kernel(a_ptr, b_ptr, c_ptr, o_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                 K: tl.constexpr, ACC: tl.constexpr, STEPS: tl.constexpr):
    b = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    if B == 1:
        c_offs = rm[:, None] * N + rn[None, :]
        acc = tl.load(c_ptr + c_offs)
        for s in range(STEPS):
            x = tl.load(a_ptr + s * M * K + rm[:, None] * K + rk[None, :])
            y = tl.load(b_ptr + s * K * N + rk[:, None] * N + rn[None, :])
            if ACC:
                acc = tl.dot(x, y, acc, out_dtype=tl.float16)
            else:
                acc = tl.dot(x, y, out_dtype=tl.float16)
        tl.store(o_ptr + c_offs, acc)
    else:
        x = tl.load(a_ptr + b * M * K + rm[None, :, None] * K + rk[None, None, :])
        y = tl.load(b_ptr + b * K * N + rk[None, :, None] * N + rn[None, None, :])
        c_offs = b * M * N + rm[None, :, None] * N + rn[None, None, :]
        if ACC:
            out = tl.dot(x, y, tl.load(c_ptr + c_offs), out_dtype=tl.float16)
        else:
            out = tl.dot(x, y, out_dtype=tl.float16)
        tl.store(o_ptr + c_offs, out)


def _f32_sum(a: np.ndarray, b: np.ndarray, c: np.ndarray | None) -> np.ndarray:
    """c + a @ b summed in f32 in k order (a: [.., M, K], b: [.., K, N]), rounded to f16."""
    acc = np.zeros(a.shape[:-1] + b.shape[-1:], np.float32) if c is None else c.astype(np.float32)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    for k in range(a.shape[-1]):
        acc = acc + a32[..., :, k:k + 1] * b32[..., k:k + 1, :]
    return acc.astype(np.float16)


def _run(bn: int, m: int, n: int, k: int, acc: bool, steps: int = 1
         ) -> tuple[np.ndarray, np.ndarray]:
    rs = np.random.RandomState(bn * 1000 + m + n + k + steps)
    lead = (bn,) if bn > 1 else (steps,)
    a = rs.randn(*lead, m, k).astype(np.float16)
    b = rs.randn(*lead, k, n).astype(np.float16)
    c = (rs.randn(*((bn,) if bn > 1 else ()), m, n) * 4).astype(np.float16)
    out = np.full(c.shape, np.nan, np.float16)
    dot16_kernel[(1,)](a, b, c, out, B=bn, M=m, N=n, K=k, ACC=acc, STEPS=steps)
    if bn > 1:
        want = _f32_sum(a, b, c if acc else None)
    else:
        want = c
        for s in range(steps):
            want = _f32_sum(a[s], b[s], want if acc else None)
    return out, want


@pytest.mark.parametrize("bn,m,n,k,acc", [
    (1, 32, 32, 256, False), (1, 16, 64, 128, True), (4, 16, 16, 64, False),
    (2, 32, 32, 64, True), (8, 32, 32, 32, False), (8, 32, 32, 32, True)])
def test_fp16_dot_sums_in_f32_and_rounds_once(bn: int, m: int, n: int, k: int, acc: bool) -> None:
    out, want = _run(bn, m, n, k, acc)
    np.testing.assert_array_equal(out, want)


def test_fp16_accumulator_in_a_loop_rounds_once_per_dot() -> None:
    out, want = _run(1, 16, 32, 64, True, steps=3)
    np.testing.assert_array_equal(out, want)


def test_fp16_dot_matches_numpy_half_matmul() -> None:
    # NumPy's own f16 matmul (what Triton's interpreter calls) sums in f32 too.
    rs = np.random.RandomState(5)
    a = rs.randn(32, 128).astype(np.float16)
    b = rs.randn(128, 32).astype(np.float16)
    out = np.zeros((32, 32), np.float16)
    dot16_kernel[(1,)](a[None], b[None], out, out, B=1, M=32, N=32, K=128, ACC=False, STEPS=1)
    assert (out != np.matmul(a, b)).sum() <= 2   # NumPy's order may round a tie otherwise
    exact = a.astype(np.float64) @ b.astype(np.float64)
    ulp = np.spacing(np.abs(exact).astype(np.float16)).astype(np.float64)
    assert (np.abs(out.astype(np.float64) - exact) <= ulp).all()


@pytest.mark.parametrize("target,pattern", [
    ("sm90", r"wgmma\.mma_async\S*\.f32\.f16\.f16"), ("gfx942", r"v_mfma_f32_\w+_f16")])
def test_fp16_dot_takes_f32_matrix_instructions_on_gpus(target: str, pattern: str) -> None:
    from tests.compat.gpu_check import assemble
    consts = {"B": 1, "M": 64, "N": 64, "K": 64, "ACC": True, "STEPS": 2}
    assemble(dot16_kernel, target, "*fp16,*fp16,*fp16,*fp16", consts)
    ck = dot16_kernel.compile(target=target, signature="*fp16,*fp16,*fp16,*fp16",
                              constexprs=consts)
    assert re.search(pattern, ck.asm.get("ptx") or ck.asm.get("amdgcn") or "")


@pytest.mark.parametrize("acc", [False, True])
def test_batched_dot_compiles_quickly(acc: bool, tmp_path: object,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    t0 = time.perf_counter()
    dot16_kernel.compile(target="cpu", signature="*fp16,*fp16,*fp16,*fp16",
                         constexprs={"B": 8, "M": 32, "N": 32, "K": 32, "ACC": acc, "STEPS": 1})
    assert time.perf_counter() - t0 < 10.0
