"""bf16 on the CPU without vector bf16 conversions (targets/cpu/bf16.py), against
torch: casts from f32, f64 and f16 (ties to even, NaNs, infinities, zeros,
subnormals, overflow; f64 values that rounding through f32 would round twice),
elementwise arithmetic and masked row reductions over 1021 of 1024 lanes, and
the code generation time that was minutes before.  Both ways run: the host's
own, and with the feature dropped as on a host without AVX512-BF16 (each with
kernel objects of its own; the dropped ones in a cache of the module's own, so
the slow 1024-lane `_arith` compiles once for both tests that launch it)."""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tilec  # noqa: E402
import tilec.language as tl  # noqa: E402
from targets.cpu import backend, bf16  # noqa: E402
from tilec.targets import Feature, get_target  # noqa: E402


def _cast(X, Out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(Out + offs, tl.load(X + offs, mask=m).to(tl.bfloat16), mask=m)


def _arith(A, B, C, Out, Red, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(A + row * BLOCK + offs, mask=m, other=0)
    b = tl.load(B + row * BLOCK + offs, mask=m, other=0)
    c = tl.load(C + row * BLOCK + offs, mask=m, other=0)
    y = tl.where(a > b, a * b + c, tl.maximum(a, c) - b)
    tl.store(Out + row * BLOCK + offs, y, mask=m)
    tl.store(Red + row * 3, tl.max(tl.where(m, y, -1e30), axis=0))
    tl.store(Red + row * 3 + 1, tl.min(tl.where(m, y, 1e30), axis=0))
    tl.store(Red + row * 3 + 2, tl.sum(tl.where(m, y, 0), axis=0))


def _without_bf16(target: Any) -> Any:
    return dataclasses.replace(target, features=target.features - {Feature.BF16_VECTOR_CONVERT})


def _drop_bf16(monkeypatch: pytest.MonkeyPatch, cache: Path) -> None:
    """Compile as on a host without AVX512-BF16, into `cache` (the run's shared
    cache holds the host's kernels under the same keys)."""
    monkeypatch.setenv("TILEC_CACHE_DIR", str(cache))
    real = backend.host_target
    monkeypatch.setattr(backend, "host_target", lambda t: _without_bf16(real(t)))


@pytest.fixture(scope="module")
def no_bf16_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("no-bf16-cache")


def _wide_args() -> tuple[Any, ...]:
    x = torch.ones(2, 1024, dtype=torch.bfloat16)
    return x, x, 2 * x, torch.zeros_like(x), torch.zeros(2, 3, dtype=torch.bfloat16), 1000


@pytest.fixture(scope="module")
def wide_arith_seconds(no_bf16_cache: Path) -> float:
    """Seconds to compile `_arith` (BLOCK 1024, bf16) without AVX512-BF16, into
    the module's no-bf16 cache: the one compile of that kernel, whichever of
    test_arith_and_row_reductions[no-bf16-convert] (same specialization) and
    test_wide_bf16_reduction_compiles_quickly comes first."""
    with pytest.MonkeyPatch.context() as mp:
        _drop_bf16(mp, no_bf16_cache)
        t0 = time.perf_counter()
        tilec.kernel(_arith).warmup(*_wide_args(), BLOCK=1024)
        return time.perf_counter() - t0


@pytest.fixture(params=["host", "no-bf16-convert"])
def kernels(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
            no_bf16_cache: Path) -> Iterator[dict[str, Any]]:
    if request.param == "no-bf16-convert":
        if request.function is test_arith_and_row_reductions:
            request.getfixturevalue("wide_arith_seconds")     # compiled (timed) there first
        _drop_bf16(monkeypatch, no_bf16_cache)
    yield {"cast": tilec.kernel(_cast), "arith": tilec.kernel(_arith)}


def _bits(t: Any) -> np.ndarray:
    return t.view(torch.int16).numpy().astype(np.uint16)


F32_SPECIAL = np.array([0x3F808000, 0x3F818000, 0x3F808001, 0x3F817FFF, 0xBF808000,
                        0x7F800001, 0xFFC00000, 0x7F800000, 0xFF800000, 0x80000000, 0,
                        0x00000001, 0x00008000, 0x00018000, 0x007FFFFF, 0x7F7FFFFF,
                        0x7F7F8000, 0x7F7F7FFF], np.uint32)


def test_casts_from_f32_round_like_torch(kernels: dict[str, Any]) -> None:
    rng = np.random.default_rng(3)
    x = np.concatenate([F32_SPECIAL, rng.integers(0, 2 ** 32, 3000, dtype=np.uint32)])
    xt = torch.from_numpy(x.view(np.float32).copy())
    out = torch.zeros(len(x), dtype=torch.bfloat16)
    kernels["cast"][(tilec.cdiv(len(x), 512),)](xt, out, len(x), BLOCK=512)
    want = xt.to(torch.bfloat16)
    nan = torch.isnan(want).numpy()
    np.testing.assert_array_equal(torch.isnan(out).numpy(), nan)
    np.testing.assert_array_equal(_bits(out)[~nan], _bits(want)[~nan])


def test_casts_from_f64_round_once(kernels: dict[str, Any]) -> None:
    # (value, bf16 bits): through f32 the first two would round to 1.0 (a tie)
    cases = [(1 + 2 ** -8 + 2 ** -30, 0x3F81), (-(1 + 2 ** -8 + 2 ** -40), 0xBF81),
             (1 + 2 ** -8, 0x3F80), (1 + 2 ** -7 + 2 ** -8, 0x3F82),
             (1 + 2 ** -8 - 2 ** -30, 0x3F80), (1e300, 0x7F80), (-1e300, 0xFF80),
             (1e-300, 0x0000), (-0.0, 0x8000), (3.0, 0x4040)]
    x = torch.tensor([v for v, _ in cases] + [float("nan")], dtype=torch.float64)
    out = torch.zeros(len(x), dtype=torch.bfloat16)
    kernels["cast"][(1,)](x, out, len(x), BLOCK=512)
    np.testing.assert_array_equal(_bits(out)[:-1], np.array([b for _, b in cases], np.uint16))
    assert torch.isnan(out[-1])


def test_casts_from_f16(kernels: dict[str, Any]) -> None:
    x = torch.from_numpy(np.arange(0, 2 ** 16, dtype=np.uint16).view(np.float16).copy())
    out = torch.zeros(len(x), dtype=torch.bfloat16)
    kernels["cast"][(tilec.cdiv(len(x), 512),)](x, out, len(x), BLOCK=512)
    want = x.to(torch.float32).to(torch.bfloat16)
    nan = torch.isnan(want).numpy()
    np.testing.assert_array_equal(torch.isnan(out).numpy(), nan)
    np.testing.assert_array_equal(_bits(out)[~nan], _bits(want)[~nan])


def test_arith_and_row_reductions(kernels: dict[str, Any]) -> None:
    rows, block, n = 3, 1024, 1021
    g = torch.Generator().manual_seed(5)
    a, b, c = (torch.randint(-8, 9, (rows, block), generator=g).to(torch.bfloat16) / 4
               for _ in range(3))
    out = torch.zeros(rows, block, dtype=torch.bfloat16)
    red = torch.zeros(rows, 3, dtype=torch.bfloat16)
    kernels["arith"][(rows,)](a, b, c, out, red, n, BLOCK=block)
    y = torch.where(a > b, a * b + c, torch.maximum(a, c) - b)[:, :n]
    torch.testing.assert_close(out[:, :n], y, rtol=0, atol=0)
    torch.testing.assert_close(red[:, 0], y.amax(1), rtol=0, atol=0)
    torch.testing.assert_close(red[:, 1], y.amin(1), rtol=0, atol=0)
    # quarters summed exactly in f32 and rounded once
    torch.testing.assert_close(red[:, 2], y.float().sum(1).to(torch.bfloat16), rtol=0, atol=0)


def test_wide_bf16_reduction_compiles_quickly(wide_arith_seconds: float, no_bf16_cache: Path,
                                              monkeypatch: pytest.MonkeyPatch,
                                              compiles: list[str]) -> None:
    # 105 s of code generation before, on a host without AVX512-BF16
    assert wide_arith_seconds < 60
    _drop_bf16(monkeypatch, no_bf16_cache)
    x, _, x2, out, red, n = _wide_args()
    tilec.kernel(_arith)[(2,)](x, x, x2, out, red, n, BLOCK=1024)   # y = 1
    assert compiles == []                 # the launch is the specialization timed
    assert red[:, 2].tolist() == [1000.0, 1000.0]


def test_retype_keeps_float_operations_on_bfloat() -> None:
    kept = "define bfloat @f(bfloat %a) {\n  %b = fadd bfloat %a, %a\n  ret bfloat %b\n}\n"
    assert bf16.retype(kept) == kept
    reduce = ("declare bfloat @llvm.vector.reduce.fmax.v8bf16(<8 x bfloat>)\n")
    assert bf16.retype(reduce) == reduce


def test_retype_moves_bits_as_i16() -> None:
    text = ("declare <8 x bfloat> @llvm.masked.load.v8bf16.p0(ptr, i32, <8 x i1>, <8 x bfloat>)\n"
            "declare <8 x i16> @llvm.masked.load.v8i16.p0(ptr, i32, <8 x i1>, <8 x i16>)\n"
            "define <8 x bfloat> @f(ptr %p, <8 x i1> %m) {\n"
            "  %v = call <8 x bfloat> @llvm.masked.load.v8bf16.p0(ptr %p, i32 2, <8 x i1> %m,"
            " <8 x bfloat> splat (bfloat 0xR3F80))\n"
            "  ret <8 x bfloat> %v\n}\n")
    out = bf16.retype(text)
    assert "bfloat" not in out and "bf16" not in out
    assert "@llvm.masked.load.v8i16.p0" in out and "splat (i16 u0x3F80)" in out
    assert out.count("declare") == 1             # the two forms are one function now
    import llvmlite.binding as llb
    backend.host_cpu()
    llb.parse_assembly(out).verify()


def test_host_target_follows_the_host() -> None:
    _, flat = backend.host_cpu()
    has = "+avx512bf16" in flat.split(",")
    assert backend.host_target(get_target("cpu")).has(Feature.BF16_VECTOR_CONVERT) == has
