"""The launch API: grids, arguments, options, the in-memory and disk caches, IR stages."""
from __future__ import annotations

import multiprocessing
import pathlib
from typing import Any

import numpy as np
import pytest

import kernels_for_tests
from processes import run_workers
import tilec
import tilec.driver
import tilec.language as tl


@tilec.kernel
def axpb(x_ptr, o_ptr, a, n, BLOCK: tl.constexpr, B: tl.constexpr = 1.0):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=m) * a + B, mask=m)


@pytest.fixture
def cache_dir(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """A fresh, empty disk cache for one test."""
    d = tmp_path / "cache"
    monkeypatch.setenv("TILEC_CACHE_DIR", str(d))
    return d


def fresh(k: tilec.Kernel) -> tilec.Kernel:
    """A new Kernel object for the same function (empty in-memory cache)."""
    return tilec.kernel(k.fn)


def data(n: int = 1000) -> tuple[np.ndarray, np.ndarray]:
    return np.arange(n, dtype=np.float32), np.zeros(n, np.float32)


# ---------------------------------------------------------------- grids and arguments

@pytest.mark.parametrize("kind", ["tuple", "list", "int", "lambda", "numpy-int"])
def test_grid_forms(kind: str, cache_dir: pathlib.Path) -> None:
    x, o = data(1000)
    blocks = tilec.cdiv(1000, 128)
    grid: Any = {"tuple": (blocks,), "list": [blocks], "int": blocks,
                 "lambda": lambda meta: (tilec.cdiv(meta["n"], meta["BLOCK"]),),
                 "numpy-int": (np.int64(blocks),)}[kind]
    axpb[grid](x, o, 2.0, 1000, BLOCK=128)
    np.testing.assert_array_equal(o, x * 2 + 1)


def test_empty_grid_runs_nothing(cache_dir: pathlib.Path) -> None:
    x, o = data(10)
    axpb[(0,)](x, o, 2.0, 10, BLOCK=128)
    assert not o.any()


def test_constexprs_positional_keyword_and_default(cache_dir: pathlib.Path) -> None:
    x, o = data(300)
    axpb[(3,)](x, o, 2.0, 300, 128)                   # positional, B defaulted
    np.testing.assert_array_equal(o, x * 2 + 1)
    axpb[(3,)](x, o, 2.0, 300, 128, -4.0)             # positional, B given
    np.testing.assert_array_equal(o, x * 2 - 4)
    axpb[(3,)](x, o, 2.0, 300, B=0.5, BLOCK=128)      # keywords, any order
    np.testing.assert_array_equal(o, x * 2 + 0.5)
    axpb[(3,)](x_ptr=x, o_ptr=o, a=3.0, n=300, BLOCK=128)   # everything by keyword
    np.testing.assert_array_equal(o, x * 3 + 1)
    axpb[(3,)](x, o, 2.0, 300, BLOCK=tl.constexpr(128))     # a tl.constexpr value
    np.testing.assert_array_equal(o, x * 2 + 1)


def test_scalar_argument_kinds(cache_dir: pathlib.Path) -> None:
    x, o = data(300)
    for a in (2, 2.0, np.float32(2.0), np.int32(2), True):
        axpb[(3,)](x, o, a, 300, BLOCK=128)
        np.testing.assert_array_equal(o, x * float(a) + 1)


def test_called_without_grid() -> None:
    x, o = data(10)
    with pytest.raises(tilec.TilecError, match=r"axpb\[grid\]"):
        axpb(x, o, 2.0, 10, BLOCK=128)


def test_num_warps_and_num_stages_accepted(cache_dir: pathlib.Path, compiles: list[str]) -> None:
    x, o = data(300)
    k = fresh(axpb)
    k[(3,)](x, o, 2.0, 300, BLOCK=128, num_warps=8)
    np.testing.assert_array_equal(o, x * 2 + 1)
    k[(3,)](x, o, 2.0, 300, BLOCK=128, num_warps=8, num_stages=3)  # the default, spelled out
    assert compiles == ["axpb"]
    # num_stages is a compile option (the pipeliner's depth), so part of the key.
    k[(3,)](x, o, 2.0, 300, BLOCK=128, num_warps=8, num_stages=2)
    np.testing.assert_array_equal(o, x * 2 + 1)
    assert compiles == ["axpb", "axpb"]
    with pytest.raises(tilec.TilecError, match="num_stages must be a positive int"):
        k[(3,)](x, o, 2.0, 300, BLOCK=128, num_stages=0)


# ---------------------------------------------------------------- caches

def test_memory_cache_reuses_specializations(cache_dir: pathlib.Path,
                                            compiles: list[str]) -> None:
    k = fresh(axpb)
    x, o = data(1000)
    for n in (1000, 999, 3, 500):            # same types and divisibility: one compile
        k[(tilec.cdiv(n, 128),)](x, o, 2.0, n, BLOCK=128)
    assert compiles == ["axpb"]
    k[(8,)](x, o, 2.0, 1000, BLOCK=128)      # n % 16 == 0 is a separate specialization
    k[(8,)](x, o, 2.0, 992, BLOCK=128)
    assert len(compiles) == 2
    k[(4,)](x, o, 2.0, 999, BLOCK=256)       # another constexpr
    assert len(compiles) == 3
    k[(4,)](x.astype(np.float64), o, 2.0, 999, BLOCK=256)   # another dtype
    assert len(compiles) == 4
    k[(4,)](x[1:], o, 2.0, 999, BLOCK=256)   # a pointer that is not 16-aligned
    assert len(compiles) == 5
    np.testing.assert_array_equal(o[:999], x[1:1000] * 2 + 1)
    k[(4,)](x[1:], o, 2.0, 999, BLOCK=256)
    assert len(compiles) == 5


def test_disk_cache_reused_by_a_fresh_kernel(cache_dir: pathlib.Path,
                                             compiles: list[str]) -> None:
    x, o = data(1000)
    fresh(axpb)[(8,)](x, o, 2.0, 999, BLOCK=128)
    assert compiles == ["axpb"]
    assert any(cache_dir.rglob("kernel.so"))
    o[:] = 0
    fresh(axpb)[(8,)](x, o, 3.0, 999, BLOCK=128)   # new object, same function: disk hit
    assert compiles == ["axpb"]
    np.testing.assert_array_equal(o[:999], x[:999] * 3 + 1)


def test_warmup_fills_the_cache(cache_dir: pathlib.Path, compiles: list[str]) -> None:
    x, o = data(1000)
    k = fresh(axpb)
    k.warmup(x, o, 2.0, 999, BLOCK=128)
    assert compiles == ["axpb"] and not o.any()    # compiled, not launched
    k[(8,)](x, o, 2.0, 999, BLOCK=128)
    fresh(axpb)[(8,)](x, o, 2.0, 999, BLOCK=128)
    assert compiles == ["axpb"]
    np.testing.assert_array_equal(o[:999], x[:999] * 2 + 1)


def test_corrupt_cache_entry_is_rebuilt(cache_dir: pathlib.Path, compiles: list[str]) -> None:
    x, o = data(1000)
    fresh(axpb)[(8,)](x, o, 2.0, 999, BLOCK=128)
    (so,) = list(cache_dir.rglob("kernel.so"))
    so.write_bytes(b"\x7fELF garbage" + bytes(100))
    o[:] = 0
    fresh(axpb)[(8,)](x, o, 2.0, 999, BLOCK=128)   # corrupt entry: rebuilt, then runs
    assert compiles == ["axpb", "axpb"]
    np.testing.assert_array_equal(o[:999], x[:999] * 2 + 1)
    (so,) = list(cache_dir.rglob("kernel.so"))
    assert so.read_bytes()[:4] == b"\x7fELF" and len(so.read_bytes()) > 1000


def test_truncated_cache_entry_is_rebuilt(cache_dir: pathlib.Path, compiles: list[str]) -> None:
    x, o = data(1000)
    fresh(axpb)[(8,)](x, o, 2.0, 999, BLOCK=128)
    (manifest,) = list(cache_dir.rglob("manifest.json"))
    manifest.write_text("{not json")
    fresh(axpb)[(8,)](x, o, 4.0, 999, BLOCK=128)
    assert compiles == ["axpb", "axpb"]
    np.testing.assert_array_equal(o[:999], x[:999] * 4 + 1)


def test_two_processes_compile_the_same_kernel(tmp_path: pathlib.Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    start, results = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=kernels_for_tests.compile_and_run,
                         args=(str(tmp_path / "cache"), start, results)) for _ in range(2)]
    outcomes = run_workers(procs, results, timeout=180, before_get=start.set)
    assert [o[0] for o in outcomes] == ["ok", "ok"], outcomes
    assert sum(o[1] for o in outcomes) == 1                 # one compiled, under the lock
    assert len(list((tmp_path / "cache").rglob("manifest.json"))) == 1   # one entry


SCALE = 2


@tilec.kernel
def scaled_by_global(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * SCALE, mask=offs < n)


def test_changed_global_is_a_new_specialization(cache_dir: pathlib.Path, compiles: list[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    x, o = data(100)
    k = fresh(scaled_by_global)
    k[(1,)](x, o, 100, BLOCK=128)
    np.testing.assert_array_equal(o, x * 2)
    monkeypatch.setitem(globals(), "SCALE", 3)      # the kernel reads the new value
    k[(1,)](x, o, 100, BLOCK=128)                   # same Kernel object (fast path)
    np.testing.assert_array_equal(o, x * 3)
    k[(1,)](x, o, 100, 128)
    np.testing.assert_array_equal(o, x * 3)
    assert compiles == ["scaled_by_global"] * 2
    monkeypatch.setitem(globals(), "SCALE", 2)      # back: both are cached
    k[(1,)](x, o, 100, BLOCK=128)
    np.testing.assert_array_equal(o, x * 2)
    assert len(compiles) == 2


# ---------------------------------------------------------------- inspection

SIG = {"x_ptr": "*fp32", "o_ptr": "*fp32", "a": "fp32", "n": "i32"}


@pytest.mark.parametrize("stage,expect", [
    ("tile", ['"tile.load"', '"tile.store"', "tile.kernel", "tensor<64xf32>", "arith.mulf"]),
    ("tile-opt", ['"tile.load"', "tensor<64xf32>"]),
    ("cpu", ["@tilec_axpb", "vector<64xf32>", "llvm.intr.masked.load"]),
    ("llir", ["define void @tilec_axpb", "llvm.masked.load"]),
    ("asm", ["tilec_axpb"]),
])
def test_ir_stages(stage: str, expect: list[str]) -> None:
    text = axpb.ir(signature=SIG, constexprs={"BLOCK": 64}, stage=stage)
    assert isinstance(text, str)
    for e in expect:
        assert e in text, f"{e!r} not in stage {stage}"
    if stage in ("tile", "tile-opt", "cpu"):
        assert "tile.load" not in text if stage == "cpu" else True
        assert "!tile.ptr" not in text if stage == "cpu" else True


def test_ir_unknown_stage() -> None:
    with pytest.raises(tilec.TilecError, match="unknown stage"):
        axpb.ir(signature=SIG, constexprs={"BLOCK": 64}, stage="bogus")


def test_ir_signature_forms_and_annotations() -> None:
    a = axpb.ir(signature="*fp32,*fp32,fp32,i32", constexprs={"BLOCK": 64})
    b = axpb.ir(signature=SIG, constexprs={"BLOCK": 64})
    assert a == b
    c = axpb.ir(signature="*fp16,*fp16,fp32,i32:16", constexprs={"BLOCK": 64, "B": 2.0})
    assert "f16" in c and "tile.divisibility = 16" in c
    with pytest.raises(tilec.TilecError, match="needs a type"):
        axpb.ir(constexprs={"BLOCK": 64})
    with pytest.raises(tilec.TilecError, match="signature has 2 types"):
        axpb.ir(signature="*fp32,i32", constexprs={"BLOCK": 64})


def test_compile_returns_asm_and_metadata() -> None:
    ck = axpb.compile(signature=SIG, constexprs={"BLOCK": 64})
    for stage in ("tile", "tile-opt", "cpu", "llir", "asm", "so"):
        assert stage in ck.asm, stage
    assert isinstance(ck.asm["asm"], str) and isinstance(ck.asm["so"], bytes)
    assert ck.asm["so"][:4] == b"\x7fELF"
    assert ck.name == "axpb" and ck.target == "cpu"
    assert ck.constexprs == {"BLOCK": 64, "B": 1.0}
    assert ck.metadata["name"] == "axpb" and ck.metadata["target"] == "cpu"
    assert ck.metadata["stored_args"] == ["o_ptr"]    # x_ptr is only read
    assert [p[0] for p in ck.params] == ["x_ptr", "o_ptr", "a", "n"]


@tilec.kernel
def strided_copy(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    wide = stride.to(tl.int64)  # methods still work on an int specialized to 1
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * wide, mask=m), mask=m)


def test_int_equal_to_one_is_its_own_specialization(cache_dir: pathlib.Path,
                                                    compiles: list[str]) -> None:
    """As Triton: an int argument equal to 1 is compiled in as the constant 1
    (a stride of 1 makes the access contiguous); other values share a kernel."""
    x = np.arange(300, dtype=np.float32)
    for stride in (1, 3, 1, 2):
        out = np.full(100, np.nan, np.float32)
        strided_copy[(1,)](x, out, 100, stride, BLOCK=128)
        np.testing.assert_array_equal(out, x[: 100 * stride: stride])
    assert compiles == ["strided_copy", "strided_copy"]
    ck = strided_copy.compile(target="cpu", signature="*fp32,*fp32,i32,i32=1",
                              constexprs={"BLOCK": 128})
    assert "tile.equal_to_1" in ck.asm["tile"]
    with pytest.raises(tilec.TilecError, match="only to 1"):
        strided_copy.compile(target="cpu", signature="*fp32,*fp32,i32,i32=2",
                             constexprs={"BLOCK": 128})


@tilec.kernel(do_not_specialize=["n", "x_ptr"])
def copy_plain(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


def test_do_not_specialize_compiles_once(cache_dir: pathlib.Path, compiles: list[str]) -> None:
    """Values of the named parameters (divisibility, == 1, alignment) never
    select another specialization, on the Python and the C launch paths."""
    x = np.arange(100, dtype=np.float32)
    for n, off in ((32, 0), (1, 0), (17, 1), (64, 3), (1, 1), (32, 0)):
        out = np.full(64, np.nan, np.float32)
        copy_plain[(1,)](x[off:], out, n, BLOCK=64)
        np.testing.assert_array_equal(out[:n], x[off:off + n])
        assert np.isnan(out[n:]).all()
    assert compiles == ["copy_plain"]
    ck = copy_plain.compile(target="cpu", signature="*fp32,*fp32,i32", constexprs={"BLOCK": 64})
    assert ck.asm["tile"]
    with pytest.raises(tilec.TilecError, match="do_not_specialize names 'BLOCK'") as e:
        tilec.kernel(do_not_specialize=["BLOCK"])(copy_plain.fn)  # <- here
    assert "<- here" in str(e.value)


def test_launches_served_from_memory_run_no_process(cache_dir: pathlib.Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Tool versions are probed on the compile path only."""
    import subprocess
    x, o = data(100)
    k = fresh(axpb)
    k[(1,)](x, o, 2.0, 100, BLOCK=128)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a launch served from memory ran a process")
    monkeypatch.setattr(subprocess, "run", refuse)
    monkeypatch.setattr(subprocess, "Popen", refuse)
    for _ in range(3):
        k[(1,)](x, o, 3.0, 100, BLOCK=128)                   # the fast paths
        k[lambda meta: (1,)](x, o, 3.0, 100, BLOCK=128)      # the general path, in memory
    np.testing.assert_array_equal(o[:100], x[:100] * 3 + 1)


def test_one_specialization_behind_every_key() -> None:
    """Arguments with equal fast keys have equal Specializations; the signature,
    the manifest's params and the AOT check all come from it."""
    from tilec.options import CompileOptions
    from tilec.specialization import Specialization
    plan = strided_copy.plan
    keyfn = plan.keyfn(4, ("BLOCK",), [], {})
    x = np.zeros(64, np.float32)
    cases = [(x, x, 32, 1), (x, x, 48, 1), (x, x, 33, 2), (x, x, 35, 7), (x[1:], x, 16, 16),
             (x[1:], x, 32, 32), (x, x.astype(np.float64), 32, 1)]
    specs: dict[Any, Specialization] = {}
    for args in cases:
        values, options = plan.bind(args, {"BLOCK": 64})
        infos, constexprs = plan.classify(values)
        spec = Specialization.of(plan, infos, constexprs, "cpu", CompileOptions.from_launch(options),
                                 {})
        key = keyfn(args, {"BLOCK": 64})[0]
        assert specs.setdefault(key, spec) == spec, args
    assert len(set(specs.values())) == len(specs) == 4
    spec = specs[keyfn(cases[0], {"BLOCK": 64})[0]]
    assert spec.signature() == "*fp32:16,*fp32:16,i32:16,i32=1"
    back = Specialization.from_manifest({"target": "cpu", "params": spec.manifest_params()})
    assert back.args == spec.args
    assert back.admit("strided_copy", (x, x, 32, 1))[2:] == [32, 1]
    with pytest.raises(tilec.TilecError, match="must be 1"):
        back.admit("strided_copy", (x, x, 32, 2))
