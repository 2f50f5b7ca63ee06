"""Masked loads and stores of 8- and 16-bit lanes on hosts without native
narrow masks (passes/cpu/narrow_masks.py), against NumPy: contiguous rows with
ragged lengths (all-true, partly true and empty masks; groups all true, mixed
and all false), masks that are not a prefix, and a strided gather/scatter.
Both ways run here: the host's own (`host_target`), and with the feature
dropped as on a host without AVX-512BW (each with kernel objects of its own,
so that no compiled kernel is shared between the two)."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

import tilec
import tilec.language as tl
from targets.cpu import backend
from tilec.targets import Feature, get_target


def _shift_rows(X, Out, rows, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    for r in range(0, rows):
        x = tl.load(X + r * BLOCK + offs, mask=m, other=7)
        tl.store(Out + r * BLOCK + offs, x - tl.min(x, axis=0), mask=m)


def _odd_lanes(X, Out, rows, n, STRIDE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = ((offs % 3) != 1) & (offs < n)
    for r in range(0, rows):
        x = tl.load(X + r * BLOCK * STRIDE + offs * STRIDE, mask=m, other=5)
        tl.store(Out + r * BLOCK * STRIDE + offs * STRIDE, x + x.to(tl.int8).to(x.dtype), mask=m)


@pytest.fixture(params=["host", "no-narrow-masks"])
def host(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
         tmp_path: Path) -> Iterator[dict[str, Any]]:
    if request.param == "no-narrow-masks":
        monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
        real = backend.host_target

        def lacking(target: Any) -> Any:
            import dataclasses
            t = real(target)
            return dataclasses.replace(t, features=t.features - {Feature.MASKED_NARROW_MEMORY})
        monkeypatch.setattr(backend, "host_target", lacking)
    yield {"shift_rows": tilec.kernel(_shift_rows), "odd_lanes": tilec.kernel(_odd_lanes)}


DTYPES = ["float16", "int16", "int8", "uint8"]


def _sample(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    rng = np.random.default_rng(1)
    return rng.integers(0, 60, size=shape).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_contiguous_rows(host: dict[str, Any], dtype: str) -> None:
    block, rows = 512, 3
    for n in (0, 1, 31, 32, 33, 100, 511, 512):
        x = _sample(dtype, (rows, block))
        out = np.full_like(x, 99)
        host["shift_rows"][(1,)](x, out, rows, n, BLOCK=block)
        want = np.full_like(x, 99)
        low = np.where(np.arange(block) < n, x, np.array(7, dtype)).min(axis=1, keepdims=True)
        want[:, :n] = x[:, :n] - low
        np.testing.assert_array_equal(out, want, err_msg=f"n={n}")


@pytest.mark.parametrize("dtype", ["float16", "int8"])
def test_strided_non_prefix_mask(host: dict[str, Any], dtype: str) -> None:
    block, rows, stride = 256, 2, 3
    for n in (256, 200):
        x = _sample(dtype, (rows, block * stride))
        out = np.full_like(x, 99)
        host["odd_lanes"][(1,)](x, out, rows, n, STRIDE=stride, BLOCK=block)
        want = np.full_like(x, 99)
        lanes = np.arange(block)
        keep = ((lanes % 3) != 1) & (lanes < n)
        cols = lanes[keep] * stride
        v = x[:, cols]
        want[:, cols] = v + v.astype(np.int8).astype(dtype)
        np.testing.assert_array_equal(out, want, err_msg=f"n={n}")


def test_wide_f16_row_compiles_quickly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The softmax row that took LLVM over 300 s to generate code for, with
    # the feature dropped (as on a host without AVX-512BW).
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path))
    target = get_target("cpu")
    monkeypatch.setattr(backend, "host_target", lambda t: _without(target))
    x = np.ones((2, 2048), np.float16)
    out = np.zeros_like(x)
    t0 = time.perf_counter()
    tilec.kernel(_shift_rows)[(1,)](x, out, 2, 2000, BLOCK=2048)
    assert time.perf_counter() - t0 < 60
    np.testing.assert_array_equal(out[:, :2000], 0)


def _without(target: Any) -> Any:
    import dataclasses
    return dataclasses.replace(target, features=target.features - {Feature.MASKED_NARROW_MEMORY})


def test_host_target_follows_the_host() -> None:
    _, flat = backend.host_cpu()
    has_bw = "+avx512bw" in flat.split(",")
    assert backend.host_target(get_target("cpu")).has(Feature.MASKED_NARROW_MEMORY) == has_bw
