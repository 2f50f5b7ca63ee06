"""tilec.autotune / tilec.heuristics / tilec.Config on the CPU target."""
from __future__ import annotations

import pathlib
import warnings
from typing import Any

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec.autotune import Autotuner

THIS_FILE = str(pathlib.Path(__file__).resolve())
FAST = {"warmup": 1.0, "rep": 3.0}


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    d = tmp_path / "cache"
    monkeypatch.setenv("TILEC_CACHE_DIR", str(d))
    monkeypatch.delenv("TILEC_AUTOTUNE", raising=False)
    return d


@pytest.fixture
def benches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The configs timed, in order (as their text)."""
    seen: list[str] = []
    real = Autotuner._bench

    def spy(self: Autotuner, grid: Any, args: Any, kwargs: Any, named: Any, config: Any,
            saved: Any) -> float:
        seen.append(str(config))
        return real(self, grid, args, kwargs, named, config, saved)
    monkeypatch.setattr(Autotuner, "_bench", spy)
    return seen


@tilec.kernel
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


CONFIGS = [tilec.Config({"BLOCK": 64}, num_warps=2), tilec.Config({"BLOCK": 256}),
           tilec.Config({"BLOCK": 1024}, num_warps=8)]
tuned_add = tilec.autotune(CONFIGS, key=["n"], **FAST)(add)


def grid(meta: dict[str, Any]) -> tuple[int]:
    return (tilec.cdiv(meta["n"], meta["BLOCK"]),)


def vectors(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(n)
    return (rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32),
            np.full(n, np.nan, np.float32))


def fresh(**kw: Any) -> Autotuner:
    return tilec.autotune(CONFIGS, key=["n"], **{**FAST, **kw})(add)


def test_tunes_once_per_key_and_launches_the_best(benches: list[str]) -> None:
    k = fresh()
    x, y, out = vectors(3000)
    k[grid](x, y, out, 3000)
    np.testing.assert_array_equal(out, x + y)
    assert benches == [str(c) for c in CONFIGS]
    assert k.best_config in CONFIGS
    (timings,) = k.timings.values()
    assert set(timings) == {str(c) for c in CONFIGS} and all(t > 0 for t in timings.values())
    assert k.best_config is not None and \
        timings[str(k.best_config)] == min(timings.values())
    x, y, out = vectors(3000)
    k[grid](x, y, out, 3000)  # same key: no tuning
    np.testing.assert_array_equal(out, x + y)
    assert len(benches) == 3
    x, y, out = vectors(777)
    k[grid](x, y, out, 777)  # another key: tuned again
    np.testing.assert_array_equal(out, x + y)
    assert len(benches) == 6


def test_result_kept_on_disk_for_a_new_process(benches: list[str]) -> None:
    x, y, out = vectors(2000)
    first = fresh()
    first[grid](x, y, out, 2000)
    assert len(benches) == 3
    second = fresh()  # as in another process: nothing in memory
    out[:] = np.nan
    second[grid](x, y, out, 2000)
    np.testing.assert_array_equal(out, x + y)
    assert len(benches) == 3 and second.best_config == first.best_config
    third = fresh(cache_results=False)
    third[grid](x, y, out, 2000)
    assert len(benches) == 6


def test_tuning_can_be_skipped(benches: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TILEC_AUTOTUNE", "0")
    k = fresh()
    x, y, out = vectors(1500)
    k[grid](x, y, out, 1500)
    np.testing.assert_array_equal(out, x + y)
    assert benches == [] and k.best_config == CONFIGS[0]


@tilec.kernel
def accumulate(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.atomic_add(out_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


@tilec.kernel
def double_in_place(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


def test_reset_to_zero_and_restore_value() -> None:
    n = 1000
    x = np.arange(n, dtype=np.float32)
    out = np.full(n, 5.0, np.float32)
    acc = tilec.autotune(CONFIGS, key=["n"], reset_to_zero=["out_ptr"], **FAST)(accumulate)
    acc[grid](x, out, n)
    # the timed launches started from zeros; then `out` got its 5s back and
    # the real launch added x once
    np.testing.assert_array_equal(out, x + 5)
    acc[grid](x, out, n)  # tuned already: just launches
    np.testing.assert_array_equal(out, 2 * x + 5)
    v = np.arange(n, dtype=np.float32)
    dbl = tilec.autotune(CONFIGS, key=["n"], restore_value=["x_ptr"], **FAST)(double_in_place)
    dbl[grid](v, n)
    np.testing.assert_array_equal(v, 2 * np.arange(n, dtype=np.float32))


def test_prune_and_perf_model(benches: list[str]) -> None:
    k = fresh(prune_configs_by={"early_config_prune":
                                lambda cs, named: [c for c in cs if c.kwargs["BLOCK"] >= 256]})
    x, y, out = vectors(999)
    k[grid](x, y, out, 999)
    np.testing.assert_array_equal(out, x + y)
    assert benches == [str(c) for c in CONFIGS[1:]]
    benches.clear()
    m = fresh(prune_configs_by={"perf_model": lambda **kw: -kw["BLOCK"], "top_k": 1},
              cache_results=False)
    m[grid](x, y, out, 999)
    assert benches == [str(CONFIGS[2])]


def test_failing_config_is_skipped_with_a_warning() -> None:
    k = tilec.autotune([tilec.Config({"BLOCK": 100}), tilec.Config({"BLOCK": 128})],
                       key=["n"], **FAST)(add)
    x, y, out = vectors(500)
    with pytest.warns(UserWarning, match="BLOCK=100"):
        k[grid](x, y, out, 500)
    np.testing.assert_array_equal(out, x + y)
    assert k.best_config is not None and k.best_config.kwargs == {"BLOCK": 128}
    bad = tilec.autotune([tilec.Config({"BLOCK": 100})], key=["n"], **FAST)(add)
    with pytest.raises(tilec.TilecError, match="no autotune config could run"):
        bad[grid](x, y, out, 500)


def _error_line(e: tilec.TilecError) -> int:
    assert e.loc is not None and pathlib.Path(e.loc.file).resolve() == pathlib.Path(THIS_FILE)
    return e.loc.line


def test_mistakes_are_reported_at_the_users_line() -> None:
    with pytest.raises(tilec.TilecError, match="'BLOCKK', which is not a parameter") as e:
        tilec.autotune([tilec.Config({"BLOCKK": 64})], key=["n"])(add)  # <- here
    assert "<- here" in str(e.value)
    with pytest.raises(tilec.TilecError, match="not a tl.constexpr parameter"):
        tilec.autotune([tilec.Config({"n": 64})], key=["n"])(add)
    assert tilec.autotune(CONFIGS, key=["size", "n"])(add).key == ["n"]  # unknown: ignored (Triton)
    with pytest.raises(tilec.TilecError, match="must be applied to a @tilec.kernel"):
        tilec.autotune(CONFIGS, key=["n"])(lambda: None)
    with pytest.raises(tilec.TilecError, match="needs at least one"):
        tilec.autotune([], key=["n"])(add)
    x, y, out = vectors(100)
    with pytest.raises(tilec.TilecError, match="BLOCK is chosen by tilec.autotune") as e:
        tuned_add[grid](x, y, out, 100, BLOCK=64)  # <- launch
    assert "<- launch" in str(e.value) and _error_line(e.value) > 0


@tilec.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@tilec.kernel
def add_even(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))
    else:
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m),
                 mask=m)


tuned_even = tilec.autotune(CONFIGS, key=["n"], **FAST)(add_even)


@pytest.mark.parametrize("n", [1024, 1000, 4096, 77])
def test_heuristics_alone_and_under_autotune(n: int) -> None:
    x, y, out = vectors(n)
    add_even[(tilec.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    np.testing.assert_array_equal(out, x + y)
    x, y, out = vectors(n)
    tuned_even[grid](x, y, out, n)
    np.testing.assert_array_equal(out, x + y)


def test_heuristics_mistakes() -> None:
    with pytest.raises(tilec.TilecError, match="sets 'NOPE'"):
        tilec.heuristics({"NOPE": lambda a: 1})(add)
    with pytest.raises(tilec.TilecError, match="must be a function"):
        tilec.heuristics({"BLOCK": 64})(add)
    broken = tilec.heuristics({"BLOCK": lambda a: 1 // 0})(add)
    x, y, out = vectors(10)
    with pytest.raises(tilec.TilecError, match="raised ZeroDivisionError") as e:
        broken[(1,)](x, y, out, 10)
    assert _error_line(e.value) > 0


def test_warmup_compiles_every_config(compiles: list[str]) -> None:
    compiled = compiles
    x, y, out = vectors(64)
    k = fresh()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        k.warmup(x, y, out, 64, target="cpu")
    assert len(compiled) == 3
    k[grid](x, y, out, 64)  # every config now loads from the cache
    assert len(compiled) == 3
    np.testing.assert_array_equal(out, x + y)


def test_grid_function_mistake_is_the_users() -> None:
    x, y, out = vectors(100)
    with pytest.raises(tilec.TilecError, match="grid function raised KeyError") as e:
        add[lambda meta: (meta["BLOK"],)](x, y, out, 100, BLOCK=64)  # <- kernel
    assert "<- kernel" in str(e.value)
    with pytest.raises(tilec.TilecError, match="grid function raised KeyError") as e:
        tuned_add[lambda meta: (meta["BLOK"],)](x, y, out, 100)  # <- tuned
    assert "<- tuned" in str(e.value)


def test_unhashable_key_value_is_the_users_mistake() -> None:
    x, y, out = vectors(10)
    with pytest.raises(tilec.TilecError, match="must name arguments with hashable values") as e:
        tuned_add[grid](x, y, out, [10])  # <- key
    assert "<- key" in str(e.value)
