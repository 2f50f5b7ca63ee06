"""`x.T`, `tl.trans`, `tl.permute`, `x.permute` on the CPU against NumPy (ragged
shapes), `tl.dot`'s input_precision / allow_tf32 against a NumPy model of the
tf32 rounding, its out_dtype, tl.range hints, `tilec.device_info()`; GPU
compilation and the misuse errors."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import tilec
import tilec.language as tl

THIS_FILE = str(pathlib.Path(__file__).resolve())


@tilec.kernel
def transpose(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, HOW: tl.constexpr):
    """y [N, M] = x [M, N].T, one BM x BN block per program."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N))
    if HOW == 0:
        t = x.T
    elif HOW == 1:
        t = tl.trans(x)
    elif HOW == 2:
        t = tl.permute(x, (1, 0))
    elif HOW == 3:
        t = x.permute(1, 0)
    elif HOW == 4:
        t = tl.trans(x, 1, 0)
    else:
        t = tl.permute(x, 0, 1).trans()
    tl.store(y_ptr + rn[:, None] * M + rm[None, :], t, mask=(rn[:, None] < N) & (rm[None, :] < M))


@pytest.mark.parametrize("how", range(6))
@pytest.mark.parametrize("m,n", [(1, 1), (37, 21), (16, 64), (100, 3)])
def test_transposes_match_numpy(how: int, m: int, n: int) -> None:
    x = np.random.default_rng(m + n).standard_normal((m, n)).astype(np.float32)
    y = np.full((n, m), np.nan, np.float32)
    transpose[(tilec.cdiv(m, 16), tilec.cdiv(n, 32))](x, y, m, n, BM=16, BN=32, HOW=how)
    np.testing.assert_array_equal(y, x.T)


@tilec.kernel
def dot_bt(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """c = a @ b.T with b given as [N, K]."""
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K),
                other=0.0)
    b = tl.load(b_ptr + rn[:, None] * K + rk[None, :], mask=(rn[:, None] < N) & (rk[None, :] < K),
                other=0.0)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b.T),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def test_dot_with_a_transposed_operand() -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((13, 29)).astype(np.float32)
    b = rng.standard_normal((9, 29)).astype(np.float32)
    c = np.zeros((13, 9), np.float32)
    dot_bt[(1,)](a, b, c, 13, 9, 29, BM=16, BN=16, BK=32)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.T, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ tf32

@tilec.kernel
def mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
       P: tl.constexpr, TF32: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K),
                other=0.0)
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N),
                other=0.0)
    if TF32 is None:
        c = tl.dot(a, b, input_precision=P)
    else:
        c = tl.dot(a, b, allow_tf32=TF32)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c, mask=(rm[:, None] < M) & (rn[None, :] < N))


def tf32_round(x: np.ndarray) -> np.ndarray:
    """NumPy model of cvt.rna.tf32.f32: 10 mantissa bits, ties away from zero."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x1000) & 0xFFFFE000).astype(np.uint32)
    special = (bits & 0x7F800000) == 0x7F800000
    return np.where(special, x.astype(np.float32).view(np.uint32), rounded).view(np.float32)


def model_dot(a: np.ndarray, b: np.ndarray, mode: str) -> np.ndarray:
    """Sequential f32 accumulation in k order (one rounding per step, as FMA)."""
    if mode == "ieee":
        pairs = [(a, b)]
    elif mode == "tf32":
        pairs = [(tf32_round(a), tf32_round(b))]
    else:
        ab, bb = tf32_round(a), tf32_round(b)
        pairs = [(tf32_round(a - ab), bb), (ab, tf32_round(b - bb)), (ab, bb)]
    c = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for x, y in pairs:
        for k in range(a.shape[1]):
            c = (c.astype(np.float64) + np.outer(x[:, k].astype(np.float64), y[k, :])
                 ).astype(np.float32)
    return c


def test_tf32_rounding_model_on_known_values() -> None:
    one_ulp = np.float32(1 + 2.0 ** -10)
    vals = np.array([1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, -(1 + 2.0 ** -11), 1 + 2.0 ** -12,
                     np.inf, 3.4e38], np.float32)
    got = tf32_round(vals)
    assert got[0] == one_ulp and got[1] == np.float32(1 + 2 * 2.0 ** -10)  # ties away
    assert got[2] == -one_ulp and got[3] == 1.0 and np.isinf(got[4])


@pytest.mark.parametrize("mode", ["ieee", "tf32", "tf32x3"])
@pytest.mark.parametrize("m,n,k", [(16, 16, 32), (13, 7, 29), (3, 30, 5)])
def test_input_precision_matches_the_numpy_model(mode: str, m: int, n: int, k: int) -> None:
    rng = np.random.default_rng(m * n * k)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.full((m, n), np.nan, np.float32)
    mm[(1,)](a, b, c, m, n, k, BM=16, BN=32, BK=32, P=mode, TF32=None)
    np.testing.assert_array_equal(c, model_dot(a, b, mode))
    exact = a.astype(np.float64) @ b
    err = np.abs(c - exact).max()
    assert err < {"ieee": 1e-5, "tf32": 5e-2, "tf32x3": 1e-5}[mode]
    if mode == "tf32":
        assert err > 1e-5, "tf32 must round the operands"


def test_allow_tf32_is_tf32_and_ieee_is_the_default() -> None:
    rng = np.random.default_rng(7)
    a = rng.standard_normal((16, 32)).astype(np.float32)
    b = rng.standard_normal((32, 16)).astype(np.float32)
    outs = {}
    for key, p, t in [("default", None, None), ("allow", None, True), ("deny", None, False)]:
        c = np.zeros((16, 16), np.float32)
        mm[(1,)](a, b, c, 16, 16, 32, BM=16, BN=16, BK=32, P=p, TF32=t)
        outs[key] = c
    np.testing.assert_array_equal(outs["default"], model_dot(a, b, "ieee"))
    np.testing.assert_array_equal(outs["deny"], model_dot(a, b, "ieee"))
    np.testing.assert_array_equal(outs["allow"], model_dot(a, b, "tf32"))
    tile_ir = mm.compile(target="cpu", signature="*fp32,*fp32,*fp32,i32,i32,i32",
                         constexprs={"BM": 16, "BN": 16, "BK": 32, "P": "tf32x3",
                                     "TF32": None}).asm["tile"]
    assert 'input_precision = "tf32x3"' in tile_ir


@pytest.mark.parametrize("target", ["sm80", "sm90", "sm100", "gfx942", "gfx1100"])
def test_tf32_and_transposes_compile_for_gpus(target: str) -> None:
    for kernel, sig, cx in [
        (mm, "*fp32,*fp32,*fp32,i32,i32,i32", {"BM": 32, "BN": 32, "BK": 32, "P": "tf32x3",
                                               "TF32": None}),
        (transpose, "*fp16,*fp16,i32,i32", {"BM": 32, "BN": 64, "HOW": 3}),
        (dot_bt, "*fp16,*fp16,*fp32,i32,i32,i32", {"BM": 32, "BN": 32, "BK": 32}),
    ]:
        ck = kernel.compile(target=target, signature=sig, constexprs=cx)
        assert ck.asm.get("cubin") or ck.asm.get("hsaco")


@tilec.kernel
def int8_dot(a_ptr, b_ptr, c_ptr, OUT: tl.constexpr):
    r = tl.arange(0, 16)
    a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
    b = tl.load(b_ptr + r[:, None] * 16 + r[None, :])
    tl.store(c_ptr + r[:, None] * 16 + r[None, :], tl.dot(a, b, out_dtype=OUT))


def test_dot_out_dtypes() -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(-128, 128, (16, 16), dtype=np.int8)
    b = rng.integers(-128, 128, (16, 16), dtype=np.int8)
    c = np.zeros((16, 16), np.int32)
    int8_dot[(1,)](a, b, c, OUT=tl.int32)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))
    h = rng.standard_normal((16, 16)).astype(np.float16)
    ch = np.zeros((16, 16), np.float16)
    int8_dot[(1,)](h, h, ch, OUT=tl.float16)
    np.testing.assert_allclose(ch, h.astype(np.float64) @ h, rtol=2e-2, atol=5e-2)


# ------------------------------------------------------------------ misuse

@tilec.kernel
def bad_lang(x_ptr, n, CASE: tl.constexpr):
    r = tl.arange(0, 16)
    m = tl.load(x_ptr + r[:, None] * 16 + r[None, :])
    v = tl.load(x_ptr + r)
    if CASE == 0:
        y = tl.permute(m, (0, 0))  # <- 0
    elif CASE == 1:
        y = tl.permute(m, 1, 0, 2)  # <- 1
    elif CASE == 2:
        y = tl.permute(m)  # <- 2
    elif CASE == 3:
        y = tl.dot(m, m, input_precision="tf32", allow_tf32=True)  # <- 3
    elif CASE == 4:
        y = tl.dot(m, m, input_precision="bf16x3")  # <- 4
    elif CASE == 5:
        y = v.T  # <- 5
    else:
        y = tl.dot(tl.load(x_ptr + r[:, None] * 16 + r[None, :]).to(tl.int8),  # <- 6
                   m.to(tl.int8), out_dtype=tl.float16)
    tl.store(x_ptr + r[:, None] * 16 + r[None, :], y)


@pytest.mark.parametrize("case,text", [
    (0, "is not a permutation of the dimensions [0, 1]"),
    (1, "is not a permutation of the dimensions [0, 1]"),
    (2, "needs the permutation of the 2 dimensions"),
    (3, "give input_precision or allow_tf32, not both"),
    (4, "input_precision must be one of"),
    (5, "needs the permutation of the 1 dimensions"),
    (6, "accumulates in tl.int32, not tl.float16"),
])
def test_misuse_points_at_the_line(case: int, text: str) -> None:
    with pytest.raises(tilec.TilecError) as e:
        bad_lang.compile(target="cpu", signature="*fp32,i32", constexprs={"CASE": case})
    err = e.value
    assert err.loc is not None and pathlib.Path(err.loc.file).resolve() == pathlib.Path(THIS_FILE)
    assert f"<- {case}" in str(err) and text in str(err), str(err)


# ------------------------------------------------------------------ loops, host

@tilec.kernel
def hinted(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in tl.range(0, n, num_stages=4, flatten=True, warp_specialize=True):
        acc += tl.load(x_ptr + i * BLOCK + offs)
    for j in tl.static_range(3):
        acc += tl.load(x_ptr + j * BLOCK + offs)
    tl.store(x_ptr + offs, acc)


def test_range_hints_are_loop_attributes_and_change_nothing() -> None:
    ck = hinted.compile(target="cpu", signature="*fp32,i32", constexprs={"BLOCK": 16})
    assert "tile.num_stages = 4 : i32" in ck.asm["tile"]
    assert "tile.flatten" in ck.asm["tile"] and "tile.warp_specialize" in ck.asm["tile"]
    assert ck.asm["tile"].count("scf.for") == 1   # static_range is unrolled
    x = np.random.default_rng(0).standard_normal((5, 16)).astype(np.float32)
    want = x.sum(0) + x[:3].sum(0)
    hinted[(1,)](x, 5, BLOCK=16)
    np.testing.assert_allclose(x[0], want, rtol=1e-5, atol=1e-5)


@tilec.kernel
def bad_hints(x_ptr, n, CASE: tl.constexpr):
    if CASE == 0:
        for i in tl.range(0, n, num_stages=n):  # <- 0
            tl.store(x_ptr + i, 1.0)
    else:
        for i in tl.range(0, n, flatten=2):  # <- 1
            tl.store(x_ptr + i, 1.0)


@pytest.mark.parametrize("case,text", [(0, "num_stages must be a compile-time constant"),
                                       (1, "flatten must be True or False")])
def test_bad_range_hints(case: int, text: str) -> None:
    with pytest.raises(tilec.TilecError) as e:
        bad_hints.compile(target="cpu", signature="*fp32,i32", constexprs={"CASE": case})
    assert f"<- {case}" in str(e.value) and text in str(e.value), str(e.value)


def test_device_info_falls_back_to_the_cpu_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    import tilec.device as device
    monkeypatch.setattr(device, "_cuda_via_torch", lambda d: None)
    monkeypatch.setattr(device, "_cuda_via_driver", lambda d: None)
    monkeypatch.setenv("TILEC_NUM_THREADS", "3")
    info = tilec.device_info()
    assert info.kind == "cpu" and info.num_sms == 3 and info.capability is None
    monkeypatch.delenv("TILEC_NUM_THREADS")
    import os
    assert tilec.device_info().num_sms == (os.cpu_count() or 1)


def test_device_info_reads_torch_cuda_properties(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import types

    import tilec.device as device

    props = types.SimpleNamespace(name="NVIDIA H200", multi_processor_count=132, major=9,
                                  minor=0)
    cuda = types.SimpleNamespace(is_available=lambda: True,
                                 get_device_properties=lambda d: props)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    info = device.device_info()
    assert (info.kind, info.num_sms, info.capability) == ("cuda", 132, (9, 0))
