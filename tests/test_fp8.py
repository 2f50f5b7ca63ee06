"""fp8 (tl.float8e4nv = torch.float8_e4m3fn, tl.float8e5 = torch.float8_e5m2): casts
bit-exact against torch's on the CPU (all 256 codes, a random and a special f32
sample), fp8 dots, GPU compilation (ptxas / ld.lld) and the misuse errors."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest
import torch

import tilec
import tilec.language as tl

THIS_FILE = str(pathlib.Path(__file__).resolve())
FP8 = [(torch.float8_e4m3fn, tl.float8e4nv), (torch.float8_e5m2, tl.float8e5)]
WIDE = [(torch.float32, tl.float32), (torch.float16, tl.float16),
        (torch.bfloat16, tl.bfloat16), (torch.float64, tl.float64)]
_INT_VIEW = {torch.float32: torch.int32, torch.float16: torch.int16,
             torch.bfloat16: torch.int16, torch.float64: torch.int64}


@tilec.kernel
def convert(x_ptr, y_ptr, n, BLOCK: tl.constexpr, DST: tl.constexpr, CAST: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.cast(x, DST) if CAST else x.to(DST)
    tl.store(y_ptr + offs, y, mask=m)


def _run(x: torch.Tensor, dst: torch.dtype, dst_tl: tl.dtype, cast: bool = False) -> torch.Tensor:
    y = torch.empty(x.numel(), dtype=dst)
    convert[(tilec.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024, DST=dst_tl, CAST=cast)
    return y


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(_INT_VIEW.get(t.dtype, torch.uint8))


@pytest.mark.parametrize("fp8,fp8_tl", FP8, ids=["e4m3fn", "e5m2"])
@pytest.mark.parametrize("wide,wide_tl", WIDE[:3], ids=["f32", "f16", "bf16"])
def test_every_fp8_code_widens_like_torch(fp8: torch.dtype, fp8_tl: tl.dtype,
                                          wide: torch.dtype, wide_tl: tl.dtype) -> None:
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(fp8)
    got = _run(codes, wide, wide_tl)
    assert torch.equal(_bits(got), _bits(codes.to(wide))), "bits differ from torch (NaNs too)"


def _f32_sample() -> torch.Tensor:
    g = torch.Generator().manual_seed(10)
    scaled = [torch.randn(20000, generator=g) * s for s in (1e-5, 3e-3, 1.0, 300.0, 7e4)]
    raw = torch.randint(-2 ** 31, 2 ** 31 - 1, (30000,), generator=g, dtype=torch.int64)
    special = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), -float("nan"),
                            448.0, 449.0, 464.0, 464.0001, 480.0, -500.0, 57344.0, 61439.0,
                            61440.0, 65536.0, 2.0 ** -6, 2.0 ** -9, 2.0 ** -10, 1.5 * 2.0 ** -9,
                            2.5 * 2.0 ** -9, 2.0 ** -16, 2.0 ** -17, 1.0001 * 2.0 ** -17,
                            1e-45, 3.4e38])
    # Every fp8 value and the midpoints between neighbours (ties to even).
    e4 = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e4m3fn).float()
    e5 = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e5m2).float()
    vals = torch.cat([e4, e5]).unique()
    vals = vals[torch.isfinite(vals)].sort().values
    mids = (vals[1:].double() + vals[:-1].double()).div(2).float()
    return torch.cat([*scaled, raw.to(torch.int32).view(torch.float32), special, vals, mids])


@pytest.mark.parametrize("fp8,fp8_tl", FP8, ids=["e4m3fn", "e5m2"])
@pytest.mark.parametrize("wide,wide_tl", WIDE, ids=["f32", "f16", "bf16", "f64"])
def test_narrowing_to_fp8_matches_torch(fp8: torch.dtype, fp8_tl: tl.dtype,
                                        wide: torch.dtype, wide_tl: tl.dtype) -> None:
    src = _f32_sample().to(wide)
    got = _run(src, fp8, fp8_tl)
    want = src.to(fp8)
    bad = (got.view(torch.uint8) != want.view(torch.uint8)).nonzero().flatten()
    assert bad.numel() == 0, [(src[i].item(), got.view(torch.uint8)[i].item(),
                               want.view(torch.uint8)[i].item()) for i in bad[:5]]


def test_tl_cast_and_fp8_to_fp8_and_ints() -> None:
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e5m2)
    got = _run(codes, torch.float8_e4m3fn, tl.float8e4nv, cast=True)
    assert torch.equal(got.view(torch.uint8), codes.to(torch.float8_e4m3fn).view(torch.uint8))
    ints = torch.arange(-600, 600, dtype=torch.int32)
    got = _run(ints, torch.float8_e4m3fn, tl.float8e4nv)
    assert torch.equal(got.view(torch.uint8),
                       ints.float().to(torch.float8_e4m3fn).view(torch.uint8))
    finite = codes.float().isfinite()
    got = _run(codes, torch.int32, tl.int32)
    assert torch.equal(got[finite], codes.float()[finite].to(torch.int32))


@tilec.kernel
def fp8_dot(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
            BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K),
                other=0.0)
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N),
                other=0.0)
    acc = tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def _sequential_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """f32 accumulation in k order; fp8 products are exact in f32."""
    c = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k in range(a.shape[1]):
        c = (c.astype(np.float64) + np.outer(a[:, k], b[k, :])).astype(np.float32)
    return c


@pytest.mark.parametrize("fp8", [torch.float8_e4m3fn, torch.float8_e5m2], ids=["e4m3fn", "e5m2"])
@pytest.mark.parametrize("m,n,k", [(16, 16, 32), (13, 7, 29)])
def test_fp8_dot_on_the_cpu(fp8: torch.dtype, m: int, n: int, k: int) -> None:
    g = torch.Generator().manual_seed(m + n + k)
    a = torch.randn((m, k), generator=g).to(fp8)
    b = torch.randn((k, n), generator=g).to(fp8)
    c = torch.empty((m, n), dtype=torch.float16)
    fp8_dot[(1,)](a, b, c, m, n, k, BM=16, BN=16, BK=32)
    want = _sequential_dot(a.float().numpy(), b.float().numpy()).astype(np.float16)
    np.testing.assert_array_equal(c.numpy(), want)


@pytest.mark.parametrize("target", ["sm80", "sm90", "sm100", "gfx942", "gfx1100"])
def test_fp8_compiles_for_gpus(target: str) -> None:
    specs = [(convert, "*fp32,*fp8e4nv,i32", {"DST": tl.float8e4nv}),
             (convert, "*fp8e5,*bf16,i32", {"DST": tl.bfloat16}),
             (convert, "*fp8e4nv,*fp16,i32", {"DST": tl.float16}),
             (fp8_dot, "*fp8e4nv,*fp8e4nv,*fp16,i32,i32,i32", {"BM": 32, "BN": 32, "BK": 32})]
    for kernel, sig, cx in specs:
        if kernel is convert:
            cx = {**cx, "BLOCK": 256, "CAST": False}
        ck = kernel.compile(target=target, signature=sig, constexprs=cx)
        binary = ck.asm.get("cubin") or ck.asm.get("hsaco")
        assert binary, ck.metadata.get("cubin_error")
        text = ck.asm.get("ptx") or ck.asm["amdgcn"]
        assert "f8E" not in ck.asm["gpu"]  # no fp8 type is left for the GPU lowering
        assert text


@tilec.kernel
def bad_fp8(x_ptr, y_ptr, CASE: tl.constexpr):
    r = tl.arange(0, 16)
    x = tl.load(x_ptr + r[:, None] * 16 + r[None, :])
    if CASE == 0:
        y = x + x  # <- 0
    elif CASE == 1:
        y = tl.dot(x, x, acc=tl.zeros((16, 16), tl.float16))  # <- 1
    elif CASE == 3:
        y = tl.atomic_add(x_ptr + r[:, None] * 16 + r[None, :], x)  # <- 3
    elif CASE == 4:
        y = tl.max(x, axis=0)[None, :]  # <- 4
    elif CASE == 2:
        y = tl.dot(x, x, out_dtype=tl.float16)  # <- 2
    tl.store(y_ptr + r[:, None] * 16 + r[None, :], y)


@pytest.mark.parametrize("case,text", [
    (0, "fp8 is a storage type"), (1, "acc must be a [16, 16] tile of tl.float32"),
    (2, "accumulates in tl.float32, not tl.float16"),
    (3, "tile.atomic_rmw on fp8 values is not supported"),
    (4, "on fp8 values is not supported"),
])
def test_fp8_misuse_points_at_the_line(case: int, text: str) -> None:
    with pytest.raises(tilec.TilecError) as e:
        bad_fp8.compile(target="cpu", signature="*fp8e4nv,*fp32", constexprs={"CASE": case})
    err = e.value
    assert err.loc is not None and pathlib.Path(err.loc.file).resolve() == pathlib.Path(THIS_FILE)
    assert f"<- {case}" in str(err) and text in str(err), str(err)


def test_torch_fp8_tensors_are_pointers_to_fp8() -> None:
    from tilec.runtime.args import classify
    for fp8, fp8_tl in FP8:
        info = classify(torch.zeros(4, dtype=fp8))
        assert info.type == tl.pointer_type(fp8_tl)
    assert tl.parse_type("*fp8e4nv") == tl.pointer_type(tl.float8e4nv)
    assert tl.parse_type("fp8e5") is tl.float8e5
