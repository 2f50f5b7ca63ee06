"""tl.dot: differential tests on the CPU against NumPy (float64 / exact integer
references), its mistakes, and the GPU lowering through ptxas / ld.lld.  (Every
`examples/matmul.py` spec also compiles for every GPU target in test_targets.)"""
from __future__ import annotations

import pathlib
from typing import Any

import numpy as np
import pytest

import tilec
import tilec.language as tl

THIS_FILE = str(pathlib.Path(__file__).resolve())


@tilec.kernel
def dot_tile(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
             ACC: tl.constexpr, OUT16: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if OUT16:
        c = tl.dot(a, b, out_dtype=tl.float16)
    elif ACC:
        c0 = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
        c = tl.dot(a, b, c0)
    else:
        c = tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


CASES = [(16, 16, 16), (32, 64, 16), (64, 32, 128), (1, 16, 8), (16, 1, 4), (8, 8, 1)]


@pytest.mark.parametrize("M,N,K", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int8", "int32"])
def test_dot_matches_numpy(M: int, N: int, K: int, dtype: str) -> None:
    rng = np.random.default_rng(M * 1000 + N * 10 + K)
    if dtype.startswith("int"):
        a = rng.integers(-100, 100, (M, K)).astype(dtype)
        b = rng.integers(-100, 100, (K, N)).astype(dtype)
        c = np.full((M, N), -7, np.int32)
        dot_tile[(1,)](a, b, c, M=M, N=N, K=K, ACC=False, OUT16=False)
        np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))
        return
    a = rng.standard_normal((M, K)).astype(dtype)
    b = rng.standard_normal((K, N)).astype(dtype)
    out_t = np.float64 if dtype == "float64" else np.float32
    c = np.full((M, N), np.nan, out_t)
    dot_tile[(1,)](a, b, c, M=M, N=N, K=K, ACC=False, OUT16=False)
    want = a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-12 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(c, want, rtol=tol, atol=tol * np.sqrt(K))


def test_dot_with_accumulator_and_fp16_output() -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((32, 16)).astype(np.float32)
    b = rng.standard_normal((16, 64)).astype(np.float32)
    c = rng.standard_normal((32, 64)).astype(np.float32)
    want = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    dot_tile[(1,)](a, b, c, M=32, N=64, K=16, ACC=True, OUT16=False)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
    a16, b16 = a.astype(np.float16), b.astype(np.float16)
    c16 = np.full((32, 64), np.nan, np.float16)
    dot_tile[(1,)](a16, b16, c16, M=32, N=64, K=16, ACC=False, OUT16=True)
    np.testing.assert_allclose(c16, a16.astype(np.float64) @ b16.astype(np.float64),
                               rtol=2e-2, atol=2e-2)


def test_dot_bf16() -> None:
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(0)
    a = torch.randn(32, 32, generator=g).to(torch.bfloat16)
    b = torch.randn(32, 16, generator=g).to(torch.bfloat16)
    c = torch.full((32, 16), float("nan"))
    dot_tile[(1,)](a, b, c, M=32, N=16, K=32, ACC=False, OUT16=False)
    want = a.double() @ b.double()
    torch.testing.assert_close(c.double(), want, rtol=1e-5, atol=1e-5)


@tilec.kernel
def bad_dot(x_ptr, n, CASE: tl.constexpr):
    r = tl.arange(0, 16)
    m = tl.load(x_ptr + r[:, None] * 16 + r[None, :])
    v = tl.load(x_ptr + r)
    if CASE == 0:
        y = tl.dot(m, tl.load(x_ptr + tl.arange(0, 8)[:, None] * 16 + r[None, :]))  # <- 0
    elif CASE == 1:
        y = tl.dot(v, m)  # <- 1
    elif CASE == 2:
        y = tl.dot(m, m.to(tl.float16))  # <- 2
    elif CASE == 3:
        y = tl.dot(m, m, out_dtype=tl.int32)  # <- 3
    elif CASE == 4:
        y = tl.dot(m, m, acc=v)  # <- 4
    elif CASE == 5:
        y = tl.dot(m, m, input_precision="fast")  # <- 5
    else:
        y = tl.dot(m > 0, m > 0)  # <- 6
    tl.store(x_ptr + r[:, None] * 16 + r[None, :], y)


@pytest.mark.parametrize("case,text", [
    (0, "inner dimensions differ"), (1, "needs 2-D tiles"), (2, "must have one dtype"),
    (3, "accumulates in tl.float32"), (4, "acc must be a [16, 16] tile of tl.float32"),
    (5, "input_precision must be one of"), (6, "does not support tl.int1"),
])
def test_dot_mistakes_point_at_the_line(case: int, text: str) -> None:
    with pytest.raises(tilec.TilecError) as e:
        bad_dot.compile(target="cpu", signature="*fp32,i32", constexprs={"CASE": case})
    err = e.value
    assert err.loc is not None and pathlib.Path(err.loc.file).resolve() == pathlib.Path(THIS_FILE)
    assert f"<- {case}" in str(err) and text in str(err), str(err)


@pytest.mark.parametrize("target", ["sm80", "sm90", "sm100", "gfx90a", "gfx942", "gfx1100"])
def test_dot_gpu_lowering_assembles(target: str) -> None:
    k = dot_tile.compile(target=target, signature="*fp16,*fp16,*fp32",
                         constexprs={"M": 64, "N": 32, "K": 32, "ACC": False, "OUT16": False})
    asm: Any = k.asm
    if target.startswith("sm"):
        assert asm["cubin"] and "mma.sync.aligned.m16n8k16" in asm["ptx"]
        assert "bar.sync" in asm["ptx"]
        assert "ld.shared" in asm["ptx"] and "st.shared" in asm["ptx"]
    else:
        gcn = asm["amdgcn"]
        assert asm["hsaco"] and ("ds_read" in gcn or "ds_load" in gcn) and "s_barrier" in gcn


@pytest.mark.parametrize("m,n,warps", [(64, 64, 4), (16, 32, 4), (128, 128, 8), (32, 8, 1)])
def test_mma_accumulator_layout_is_the_mma_fragment(m: int, n: int, warps: int) -> None:
    """Every thread's chunks (2i, 2j) / (2i+1, 2j) hold exactly the c0,c1 / c2,c3
    elements of mma.m16n8k16 tile (i, j) of its warp (PTX ISA fragment layout:
    groupID = lane >> 2 picks the row, 2 * (lane % 4) the column pair)."""
    from tilec.passes.analysis.layouts import Distribution, mma_accumulator_layout
    layout = mma_accumulator_layout(m, n, 16, 32, warps)
    assert layout is not None
    d = Distribution.of(layout, (m, n))
    for tid in range(32 * warps):
        lane, warp = tid % 32, tid // 32
        g, t = lane >> 2, lane % 4
        coords = d.thread_coords(tid, 32)
        for i in range(m // 16):
            for j in range(n // (8 * warps)):
                n0 = 8 * warp + 8 * warps * j
                assert coords[(2 * i, 2 * j)] == (16 * i + g, n0 + 2 * t)
                assert coords[(2 * i, 2 * j + 1)] == (16 * i + g, n0 + 2 * t + 1)
                assert coords[(2 * i + 1, 2 * j)] == (16 * i + g + 8, n0 + 2 * t)
    assert mma_accumulator_layout(64, 16, 16, 32, 4) is None   # n < 8 * warps
    assert mma_accumulator_layout(8, 64, 16, 32, 4) is None    # m < 16
    assert mma_accumulator_layout(64, 64, 16, 64, 4) is None   # wave64


@pytest.mark.parametrize("dtype,mma", [("fp16", "f16"), ("bf16", "bf16"), ("fp32", None)])
@pytest.mark.parametrize("target", ["sm80", "sm90"])
def test_nvidia_dot_uses_the_tensor_cores(target: str, dtype: str, mma: str | None) -> None:
    k = dot_tile.compile(target=target, signature=f"*{dtype},*{dtype},*fp32",
                         constexprs={"M": 64, "N": 64, "K": 32, "ACC": False, "OUT16": False})
    ptx = k.asm["ptx"]
    assert k.asm["cubin"]
    if mma is None:
        assert "mma.sync" not in ptx and "fma.rn.f32" in ptx   # f32 stays exact (no tf32)
    else:
        # 4 x 2 tiles of 16 x 8 per warp, 2 k-steps of 16
        assert ptx.count(f"mma.sync.aligned.m16n8k16.row.col.f32.{mma}.{mma}.f32") == 16
