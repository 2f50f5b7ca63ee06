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


CASES = [(16, 16, 16), (32, 64, 16), (64, 32, 128), (1, 16, 8), (16, 1, 4), (8, 8, 1),
         (64, 128, 32), (128, 8, 64)]


@pytest.mark.sample(2)        # the test command: each shape with two or three of the dtypes
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


# ------------------------------------------------------------------ big tiles
# Tiles of more than passes/cpu/tiled.BIG elements live in stack buffers and
# tl.dot runs the register-blocked microkernel (passes/cpu/microkernel.py).

@tilec.kernel
def mm_big(a_ptr, b_ptr, c_ptr, M, N, K, s_am, s_ak, s_bk, s_bn, s_cm, s_cn,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, ACC: tl.constexpr,
           TRANS_B: tl.constexpr, PREC: tl.constexpr):
    """c = a @ b over a grid of (BM, BN) tiles, any strides, masks on M, N and K;
    with TRANS_B the B tile is loaded as [BN, BK] and transposed (b.T)."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=ACC)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * s_am + (k + rk)[None, :] * s_ak,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0)
        if TRANS_B:
            bt = tl.load(b_ptr + rn[:, None] * s_bn + (k + rk)[None, :] * s_bk,
                         mask=(rn[:, None] < N) & ((k + rk)[None, :] < K), other=0)
            b = bt.T
        else:
            b = tl.load(b_ptr + (k + rk)[:, None] * s_bk + rn[None, :] * s_bn,
                        mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0)
        acc = tl.dot(a, b, acc, input_precision=PREC)
    tl.store(c_ptr + rm[:, None] * s_cm + rn[None, :] * s_cn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def _run_mm_big(a: Any, b: Any, c: Any, blocks: tuple[int, int, int], acc: tl.dtype,
                trans_b: bool = False, prec: str = "ieee") -> None:
    """Launch mm_big on arrays or tensors (strides in elements, from any view)."""
    def strides(x: Any) -> tuple[int, int]:
        if hasattr(x, "stride") and callable(x.stride):
            return x.stride(0), x.stride(1)
        return x.strides[0] // x.itemsize, x.strides[1] // x.itemsize
    m, k = a.shape
    n = c.shape[1]
    bm, bn, bk = blocks
    sb = strides(b)
    s_bk, s_bn = (sb[1], sb[0]) if trans_b else sb
    mm_big[(tilec.cdiv(m, bm), tilec.cdiv(n, bn))](
        a, b, c, m, n, k, *strides(a), s_bk, s_bn, *strides(c),
        BM=bm, BN=bn, BK=bk, ACC=acc, TRANS_B=trans_b, PREC=prec)


BIG_SHAPES = [((100, 150, 70), (64, 128, 32)), ((129, 65, 200), (128, 64, 64)),
              ((33, 300, 17), (32, 256, 16))]


@pytest.mark.parametrize("mnk,blocks", BIG_SHAPES, ids=["100x150x70", "129x65x200", "33x300x17"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int8"])
def test_big_tile_dot_matches_numpy(mnk: tuple[int, int, int], blocks: tuple[int, int, int],
                                    dtype: str) -> None:
    m, n, k = mnk
    rng = np.random.default_rng(m + n + k)
    if dtype == "int8":
        a = rng.integers(-128, 128, (m, k), dtype=np.int8)
        b = rng.integers(-128, 128, (k, n), dtype=np.int8)
        c = np.full((m, n), -7, np.int32)
        _run_mm_big(a, b, c, blocks, tl.int32)
        np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))
        return
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    c = np.full((m, n), np.nan, np.float32)
    _run_mm_big(a, b, c, blocks, tl.float32)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5 * np.sqrt(k))


def test_big_tile_dot_bf16_and_fp16_output() -> None:
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(5)
    a = torch.randn(90, 130, generator=g).to(torch.bfloat16)
    b = torch.randn(130, 200, generator=g).to(torch.bfloat16)
    c = torch.full((90, 200), float("nan"))
    _run_mm_big(a, b, c, (64, 128, 64), tl.float32)
    torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=1e-5, atol=1e-4)
    c16 = torch.full((90, 200), float("nan"), dtype=torch.float16)   # stored as fp16
    _run_mm_big(a.half(), b.half(), c16, (128, 64, 32), tl.float32)
    torch.testing.assert_close(c16.double(), (a.half().double() @ b.half().double()).half()
                               .double(), rtol=2e-3, atol=2e-3)


def test_big_tile_dot_strided_views_and_transposed_b() -> None:
    rng = np.random.default_rng(11)
    base_a = rng.standard_normal((150, 2 * 90)).astype(np.float32)
    a = base_a[:, ::2]                                     # column stride 2
    bt = rng.standard_normal((70, 90)).astype(np.float32)  # b = bt.T, given as [N, K]
    c_base = np.full((150, 2 * 70), np.nan, np.float32)
    c = c_base[:, 1::2]                                    # strided output view
    want = a.astype(np.float64) @ bt.T.astype(np.float64)
    _run_mm_big(a, bt, c, (64, 64, 32), tl.float32, trans_b=True)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)
    assert np.isnan(c_base[:, ::2]).all()                 # nothing written between
    c2 = np.full((150, 70), np.nan, np.float32)
    _run_mm_big(np.asfortranarray(a), bt.T, c2, (128, 64, 64), tl.float32)  # column-major A, B
    np.testing.assert_allclose(c2, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("prec", ["tf32", "tf32x3"])
def test_big_tile_dot_input_precision(prec: str) -> None:
    from test_transpose_precision import model_dot
    rng = np.random.default_rng(2)
    a = rng.standard_normal((70, 100)).astype(np.float32)
    b = rng.standard_normal((100, 80)).astype(np.float32)
    c = np.full((70, 80), np.nan, np.float32)
    _run_mm_big(a, b, c, (64, 64, 128), tl.float32, prec=prec)   # one K step: the model's order
    np.testing.assert_array_equal(c, model_dot(a, b, prec))


def test_big_tile_dot_with_accumulator_and_out_dtype() -> None:
    rng = np.random.default_rng(4)
    a = rng.standard_normal((64, 32)).astype(np.float32)
    b = rng.standard_normal((32, 128)).astype(np.float32)
    c = rng.standard_normal((64, 128)).astype(np.float32)
    want = c.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    dot_tile[(1,)](a, b, c, M=64, N=128, K=32, ACC=True, OUT16=False)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
    a16, b16 = a.astype(np.float16), b.astype(np.float16)
    c16 = np.full((64, 128), np.nan, np.float16)
    dot_tile[(1,)](a16, b16, c16, M=64, N=128, K=32, ACC=False, OUT16=True)
    np.testing.assert_allclose(c16, a16.astype(np.float64) @ b16.astype(np.float64),
                               rtol=2e-2, atol=5e-2)
