"""tile-combine-dot end to end: a K loop written `acc += tl.dot(a, b)` (or
`acc = tl.dot(a, b) + acc`) computes what `acc = tl.dot(a, b, acc)` computes,
bit for bit on the CPU, and compiles to the same machine code on the GPU
targets (the dot accumulates in place: no second accumulator, no add per K
step).  The pass's own cases (what is folded and what is not) are in
tests/lit/tile-combine-dot/."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tilec
import tilec.language as tl


@tilec.kernel
def k_loop(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
           FORM: tl.constexpr, INT: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.int32 if INT else tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        if FORM == 0:
            acc += tl.dot(a, b)
        elif FORM == 1:
            acc = tl.dot(a, b) + acc
        else:
            acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def _run(a: np.ndarray, b: np.ndarray, form: int, bm: int, bn: int, bk: int) -> np.ndarray:
    m, k = a.shape
    n = b.shape[1]
    is_int = a.dtype.kind == "i"
    c = np.full((m, n), -7 if is_int else np.nan, np.int32 if is_int else np.float32)
    k_loop[(m // bm, n // bn)](a, b, c, m, n, k, BM=bm, BN=bn, BK=bk, FORM=form, INT=is_int)
    return c


@pytest.mark.parametrize("dtype", ["float16", "float32", "int8"])
def test_acc_plus_dot_equals_dot_into_acc_bit_for_bit_on_cpu(dtype: str) -> None:
    rng = np.random.default_rng(12)
    m, n, k, bm, bn, bk = 64, 32, 256, 32, 32, 32
    if dtype == "int8":
        a = rng.integers(-100, 100, (m, k)).astype(np.int8)
        b = rng.integers(-100, 100, (k, n)).astype(np.int8)
    else:
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((k, n)).astype(dtype)
    want = _run(a, b, 2, bm, bn, bk)
    for form in (0, 1):
        got = _run(a, b, form, bm, bn, bk)
        assert got.tobytes() == want.tobytes(), f"form {form}"
    if dtype == "int8":
        np.testing.assert_array_equal(want, a.astype(np.int64) @ b.astype(np.int64))
    else:
        exact = a.astype(np.float64) @ b.astype(np.float64)
        np.testing.assert_allclose(want, exact, rtol=1e-4, atol=1e-4 * np.sqrt(k))


SIG = "*fp16:16,*fp16:16,*fp32:16,i32:16,i32:16,i32:16"


@pytest.mark.parametrize("target,stage", [("sm90", "ptx"), ("sm80", "ptx"), ("gfx942", "amdgcn")])
def test_acc_plus_dot_compiles_like_dot_into_acc(target: str, stage: str) -> None:
    """128x128x64 fp16 with 4 warps: on sm90 a pipelined wgmma loop.  Before the
    fold the `+=` form kept a second 128x128 f32 tile and 128 add.f32 per K step
    (sm90: 255 registers and 248 bytes of spill stores, against 232 and none)."""
    cx = {"BM": 128, "BN": 128, "BK": 64, "INT": False}
    ks: list[Any] = [k_loop.compile(target=target, signature=SIG, constexprs={**cx, "FORM": f},
                                    num_warps=4) for f in (0, 1, 2)]
    texts = [k.asm[stage] for k in ks]
    assert texts[0] == texts[2] and texts[1] == texts[2]
    if target == "sm90":
        assert "wgmma.mma_async" in texts[0] and "add.f32" not in texts[0]
        if ks[0].asm.get("cubin"):
            md = ks[0].metadata
            assert md["spill_stores"] == 0 and md["registers"] == ks[2].metadata["registers"]
