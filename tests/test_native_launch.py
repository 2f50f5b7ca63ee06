"""The C launch fast path (`tilec/runtime/_launch.c`), without a GPU.

cuLaunchKernel is replaced by a ctypes callback that records what it is given
and decodes the argument block, so every decision of the C path (match, fall
back, pack, report an error) is checked here; the GPU suite and the launch
benchmark run the same path on the H200.
"""
from __future__ import annotations

import ctypes
import pathlib
from types import SimpleNamespace
from typing import Any

import pytest

import tilec
import tilec.language as tl
from tilec.errors import TilecError
from tilec.options import CompileOptions
from tilec.runtime import launch_entries, native
from tilec.runtime.args import _TENSOR_TYPES, fast_arg
from tilec.runtime.cuda import CudaKernel, param_slots
from tilec.specialization import Params, Specialization

torch = pytest.importorskip("torch")

LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint,
                          ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                          ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


@pytest.fixture(scope="module")
def module() -> Any:
    m = native.launch_module()
    if m is None:
        reason = native.status()
        if "no C compiler" in reason or "no Python headers" in reason:
            pytest.skip(f"C launch path unavailable here: {reason}")
        pytest.fail(f"the C launch path did not build: {reason}")
    return m


class FakeDriver:
    """A cuLaunchKernel stand-in: records calls, decodes params by slot types."""

    def __init__(self, slot_types: list[Any], code: int = 0) -> None:
        self.slot_types = slot_types
        self.code = code
        self.calls: list[tuple[Any, ...]] = []
        self.fn = LAUNCH(self._launch)

    def _launch(self, f: int, gx: int, gy: int, gz: int, bx: int, by: int, bz: int,
                shared: int, stream: int | None, params: int, extra: int | None) -> int:
        ptrs = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
        values = [t.from_address(ptrs[i]).value for i, t in enumerate(self.slot_types)]
        self.calls.append((f, (gx, gy, gz), (bx, by, bz), shared, stream or 0, values))
        return self.code


def fake_kernel(driver: FakeDriver, types: list[str], threads: int = 128,
                shared: int = 0) -> SimpleNamespace:
    return SimpleNamespace(_raw_launch=driver.fn, _function_handle=0x5150,
                           _slots=param_slots([tl.parse_type(t) for t in types]),
                           threads=threads, shared=shared)


def plan_of(x, y, n, BLOCK: tl.constexpr = 64):  # the parameters of the kernel under test
    pass


def plan_with_default(x, y, n=7, BLOCK: tl.constexpr = 64):
    pass


def plan_annotated(x: "*fp32", y, n, BLOCK: tl.constexpr = 64):
    pass


PLAN = Params(plan_of)


def entry_for(args: tuple[Any, ...], kwargs: dict[str, Any], target: Any,
              globals_read: list[tuple[str, Any]], plan: Params = PLAN) -> Any:
    """The C entry of a launch, made as Kernel.run makes it: from its Specialization."""
    values, options = plan.bind(args, kwargs)
    infos, constexprs = plan.classify(values)
    spec = Specialization.of(plan, infos, constexprs, "sm90", CompileOptions.from_launch(options),
                             {})
    return launch_entries.entry_for(spec, [p.name for p in plan.params], args, kwargs, target,
                                    globals_read)


TYPES = ["*fp32", "*fp32", "i32"]


def setup(module: Any, grid: tuple[int, int, int] = (3, 1, 1), code: int = 0,
          stream: tuple[Any, Any] = (None, None)) -> tuple[Any, FakeDriver, list[Any], dict[str, Any]]:
    driver = FakeDriver([ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int32], code)
    fallbacks: list[Any] = []
    g: dict[str, Any] = {"SCALE": 2.0}
    address = ctypes.cast(driver.fn, ctypes.c_void_p).value

    def on_error(c: int) -> None:
        raise TilecError(f"driver error {c}")
    launcher = module.Launcher(grid, lambda *a, **k: fallbacks.append((a, k)), on_error,
                               stream[0], stream[1], g)
    assert address
    return launcher, driver, fallbacks, g


def add_entry(launcher: Any, driver: FakeDriver, args: tuple[Any, ...],
              kwargs: dict[str, Any], g: dict[str, Any]) -> None:
    for a in args:
        fast_arg(a)  # registers torch's tensor type, as a first launch does
    target = launch_entries.native_target(fake_kernel(driver, TYPES))
    assert target is not None
    spec = entry_for(args, kwargs, target, [("SCALE", g["SCALE"])])
    assert spec is not None
    launcher.add(spec)


def test_matching_call_packs_and_launches(module: Any) -> None:
    launcher, driver, fallbacks, g = setup(module, grid=(3, 2, 1),
                                           stream=(lambda: 0, lambda d: 0xABC0 + d))
    x, y = torch.ones(64), torch.zeros(64)
    add_entry(launcher, driver, (x, y, 100), {"BLOCK": 32}, g)
    assert launcher.entries == 1
    x2, y2 = torch.ones(48), torch.ones(80)
    launcher(x2, y2, 36, BLOCK=32)
    assert not fallbacks
    assert driver.calls == [(0x5150, (3, 2, 1), (128, 1, 1), 0, 0xABC0,
                             [x2.data_ptr(), y2.data_ptr(), 36])]


def test_negative_int_and_zero_grid(module: Any) -> None:
    launcher, driver, fallbacks, g = setup(module, grid=(0, 1, 1))
    x = torch.ones(64)
    add_entry(launcher, driver, (x, x, -32), {"BLOCK": 32}, g)
    launcher(x, x, -16, BLOCK=32)
    assert not fallbacks and not driver.calls  # an empty grid launches nothing


@pytest.mark.parametrize("case", [
    "dtype", "misaligned", "int_not_divisible", "int_too_wide", "bool_for_int", "float_for_int",
    "int_is_one", "constexpr_value", "constexpr_type", "extra_keyword", "missing_keyword",
    "positional_constexpr",
    "global_changed", "launch_option", "numpy_array",
])
def test_anything_else_falls_back(module: Any, case: str) -> None:
    import numpy as np
    launcher, driver, fallbacks, g = setup(module)
    x = torch.ones(64)
    add_entry(launcher, driver, (x, x, 32), {"BLOCK": 32}, g)
    args: tuple[Any, ...] = (x, x, 32)
    kwargs: dict[str, Any] = {"BLOCK": 32}
    if case == "dtype":
        args = (x.half(), x, 32)
    elif case == "misaligned":
        args = (x[1:], x, 32)
    elif case == "int_not_divisible":
        args = (x, x, 33)
    elif case == "int_is_one":
        args = (x, x, 1)  # 1 is its own specialization (compiled in as a constant)
    elif case == "int_too_wide":
        args = (x, x, 2 ** 31)
    elif case == "bool_for_int":
        args = (x, x, True)
    elif case == "float_for_int":
        args = (x, x, 32.0)
    elif case == "constexpr_value":
        kwargs = {"BLOCK": 64}
    elif case == "constexpr_type":
        kwargs = {"BLOCK": 32.0}  # equal, but another specialization
    elif case == "extra_keyword":
        kwargs = {"BLOCK": 32, "num_warps": 8}
    elif case == "missing_keyword":
        kwargs = {}
    elif case == "positional_constexpr":
        args, kwargs = (x, x, 32, 32), {}
    elif case == "global_changed":
        g["SCALE"] = 3.0
    elif case == "launch_option":
        launcher2, driver2, fallbacks2, g2 = setup(module)
        add_entry(launcher2, driver2, (x, x, 32), {"BLOCK": 32, "num_warps": 4}, g2)
        launcher2(x, x, 32, BLOCK=32, num_warps=8)
        assert fallbacks2 and not driver2.calls
        launcher2(x, x, 32, BLOCK=32, num_warps=4)
        assert len(driver2.calls) == 1
        return
    elif case == "numpy_array":
        args = (np.ones(64, np.float32), x, 32)
    launcher(*args, **kwargs)
    assert not driver.calls, case
    assert len(fallbacks) == 1
    assert fallbacks[0][0] == args and fallbacks[0][1] == kwargs


def test_an_int_specialized_to_one(module: Any) -> None:
    launcher, driver, fallbacks, g = setup(module)
    x = torch.ones(64)
    add_entry(launcher, driver, (x, x, 1), {"BLOCK": 32}, g)
    launcher(x, x, 1, BLOCK=32)
    assert driver.calls and driver.calls[-1][-1][2] == 1 and not fallbacks
    launcher(x, x, 17, BLOCK=32)
    launcher(x, x, 1.0, BLOCK=32)
    assert len(fallbacks) == 2 and len(driver.calls) == 1


def test_driver_error_is_reported(module: Any) -> None:
    launcher, driver, fallbacks, g = setup(module, code=700)
    x = torch.ones(64)
    add_entry(launcher, driver, (x, x, 32), {"BLOCK": 32}, g)
    with pytest.raises(TilecError, match="driver error 700"):
        launcher(x, x, 32, BLOCK=32)
    assert not fallbacks


def test_entries_are_bounded_and_oldest_replaced(module: Any) -> None:
    launcher, driver, fallbacks, g = setup(module)
    x = torch.ones(64)
    for block in range(10):
        add_entry(launcher, driver, (x, x, 32), {"BLOCK": block}, g)
    assert launcher.entries == 8
    launcher(x, x, 32, BLOCK=0)  # replaced: falls back
    launcher(x, x, 32, BLOCK=9)
    assert len(fallbacks) == 1 and len(driver.calls) == 1
    launcher.clear()
    assert launcher.entries == 0


def test_bad_entries_are_refused(module: Any) -> None:
    launcher, *_ = setup(module)
    with pytest.raises(ValueError):
        launcher.add((1, 0, ((0, 9, None, None, None, False, 0),), (), 1, 128, 0, 1, 0, 0, 0))
    with pytest.raises(ValueError):
        launcher.add((1, 0, ((5, 2, None, None, None, False, 0),), (), 1, 128, 0, 1, 0, 0, 0))
    with pytest.raises(ValueError):
        launcher.add((1, 0, ((0, 2, None, None, None, False, 3),), (), 1, 128, 0, 1, 0, 0, 0))
    with pytest.raises(TypeError):
        launcher.add("not an entry")
    with pytest.raises(TypeError):
        launcher.add((1, 0, ("not a check",), (), 1, 128, 0, 1, 0, 0, 0))
    with pytest.raises(TypeError):
        launcher.add((0, 0, (), (("G",),), 1, 128, 0, 0, 0, 0, 0))
    assert launcher.entries == 0


def test_entry_spec_declines_what_c_cannot_check(module: Any) -> None:
    driver = FakeDriver([])
    kern = launch_entries.native_target(fake_kernel(driver, TYPES))
    assert kern is not None
    x = torch.ones(4)
    fast_arg(x)
    # Annotated parameters are checked on the general path: no fast key, so no entry.
    assert Params(plan_annotated).keyfn(3, (), [], {})((x, x, 4), {}) is None
    assert entry_for((x, x), {}, kern, [], Params(plan_with_default)) is None  # runtime default
    assert entry_for((x, x, 2 ** 40), {}, kern, []) is None   # i64: no C check
    assert entry_for((x, x, 1.5), {}, kern, []) is None  # slot is i32
    no_raw = SimpleNamespace(**{**vars(fake_kernel(driver, TYPES)), "_raw_launch": None})
    assert launch_entries.native_target(no_raw) is None
    spec = entry_for((x, x, 4), {}, kern, [])
    assert spec is not None and spec[2][-1] == (2, launch_entries.K_I32, None, None, None, False, 2)


def test_entries_follow_the_specialization(module: Any) -> None:
    """Where a parameter is not specialized on its value (do_not_specialize, or
    a kernel compiled ahead of time for `i32:1`), its C check takes any value."""
    driver = FakeDriver([])
    kern = launch_entries.native_target(fake_kernel(driver, TYPES))
    x = torch.ones(4)
    fast_arg(x)
    plain = Params(plan_of, do_not_specialize=["n", "x"])
    spec = entry_for((x, x, 1), {}, kern, [], plain)
    assert spec is not None
    assert spec[2][0][5] == launch_entries.ANY_VALUE and spec[2][1][5] == 1
    assert spec[2][2] == (2, launch_entries.K_I32, None, None, None, launch_entries.ANY_VALUE, 2)
    aot = Specialization.from_manifest({"target": "sm90", "params": [
        {"name": "x", "type": "*fp32", "divisibility": 16},
        {"name": "y", "type": "*fp32", "divisibility": 1},
        {"name": "n", "type": "i32", "divisibility": 16}]})
    checks = launch_entries.entry_for(aot, aot.names, (x, x, 32), {}, kern, [])[2]
    assert [c[5] for c in checks] == [1, launch_entries.ANY_VALUE, 1]


# ---------------------------------------------------------------- through Kernel

class FakeTensor:
    """A stand-in for a CUDA tensor on a machine without one."""

    __module__ = "torch"

    def __init__(self, address: int, dtype: Any = None) -> None:
        self._address = address
        self.dtype = dtype if dtype is not None else torch.float32
        self.device = SimpleNamespace(type="cuda")
        self.is_cuda = True

    def data_ptr(self) -> int:
        return self._address

    def is_contiguous(self) -> bool:
        return True

    def dim(self) -> int:
        return 1


@tilec.kernel
def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
              ) -> tuple[list[tuple[Any, ...]], list[FakeDriver]]:
    """Loaded NVIDIA kernels whose Python launches and driver calls are recorded
    (the cubin is compiled for sm90 here as usual)."""
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    import tilec.runtime.cuda as cuda_rt
    python_launches: list[tuple[Any, ...]] = []
    drivers: list[FakeDriver] = []

    class FakeCudaKernel(CudaKernel):
        def __init__(self, image: bytes, name: str, arg_types: Any, threads: int,
                     shared_bytes: int = 0, tensormaps: Any = (), cluster_ctas: int = 1) -> None:
            assert image and not tensormaps
            self.threads, self.shared, self.cluster_ctas = threads, shared_bytes, cluster_ctas
            self._maps = None
            self._slots = param_slots(arg_types)
            self._function_handle = 0x7000
            driver = FakeDriver([type(s) for s in self._slots])
            drivers.append(driver)
            self._raw_launch = driver.fn

        def launch(self, grid: tuple[int, int, int], raw_args: Any) -> None:
            python_launches.append((grid, list(raw_args)))

    monkeypatch.setattr(cuda_rt, "CudaKernel", FakeCudaKernel)
    monkeypatch.setattr(cuda_rt, "target_for_device", lambda: "sm90")
    monkeypatch.setattr(launch_entries, "stream_functions", lambda: (None, None))
    return python_launches, drivers


def test_kernel_launches_go_through_the_c_path(
        module: Any, fake_cuda: tuple[list[tuple[Any, ...]], list[FakeDriver]]) -> None:
    python_launches, drivers = fake_cuda
    x, out = FakeTensor(0x10000), FakeTensor(0x20000)
    scale[(4,)](x, out, 1000, BLOCK=256)
    assert python_launches == [((4, 1, 1), [0x10000, 0x20000, 1000])]
    launcher = scale[(4,)]
    assert type(launcher).__name__ == "Launcher" and launcher.entries == 1
    x2 = FakeTensor(0x30000)
    scale[(4,)](x2, out, 1000, BLOCK=256)
    assert len(python_launches) == 1
    assert drivers[0].calls == [(0x7000, (4, 1, 1), (128, 1, 1), 0, 0, [0x30000, 0x20000, 1000])]
    # Another specialization (misaligned pointer) takes the general path and adds an entry.
    scale[(4,)](FakeTensor(0x30004), out, 1000, BLOCK=256)
    assert len(python_launches) == 2 and launcher.entries == 2
    # User mistakes raised on the fallback path still point at the caller's line.
    with pytest.raises(TilecError) as info:
        scale[(4,)](x, out, BLOCK=256)
    assert "test_native_launch.py" in str(info.value)


def test_aot_kernel_launches_go_through_the_c_path(
        module: Any, fake_cuda: tuple[list[tuple[Any, ...]], list[FakeDriver]],
        tmp_path: pathlib.Path) -> None:
    from tilec.cli import main
    python_launches, drivers = fake_cuda
    root = pathlib.Path(__file__).resolve().parent.parent
    assert main(["compile", str(root / "examples" / "vector_add.py"), "--target", "sm90",
                 "--signature", "*fp32,*fp32,*fp32,i32:16", "--constexpr", "BLOCK=1024",
                 "-o", str(tmp_path / "out")]) == 0
    k = tilec.load(tmp_path / "out" / "add")
    _TENSOR_TYPES.discard(FakeTensor)  # as in a process that only ever used tilec.load
    x, y, out = FakeTensor(0x10000), FakeTensor(0x20000), FakeTensor(0x30000)
    k[(2,)](x, y, out, 2048)
    assert python_launches == [((2, 1, 1), [0x10000, 0x20000, 0x30000, 2048])]
    assert type(k[(2,)]).__name__ == "Launcher"
    k[(2,)](y, x, out, 1024)
    assert len(python_launches) == 1
    assert drivers[0].calls == [(0x7000, (2, 1, 1), (128, 1, 1), 0, 0,
                                 [0x20000, 0x10000, 0x30000, 1024])]
    # The checks of the general path still apply to what the C path does not take.
    with pytest.raises(TilecError, match="divisible by 16"):
        k[(2,)](x, y, out, 1000)
    with pytest.raises(TilecError, match="array of float32"):
        k[(2,)](FakeTensor(0x10000, torch.float16), y, out, 1024)


def test_grid_beyond_the_targets_limit_is_refused_before_compiling(
        fake_cuda: tuple[list[tuple[Any, ...]], list[FakeDriver]]) -> None:
    with pytest.raises(TilecError, match="grid dimension y = 70000 exceeds the sm90 limit of "
                                         "65535") as e:
        scale[(1, 70000)](FakeTensor(0x10000), FakeTensor(0x20000), 10, BLOCK=256)  # <- grid
    assert "<- grid" in str(e.value)
    assert fake_cuda[0] == []


def test_uninitialized_launcher_raises_instead_of_crashing(module: Any) -> None:
    raw = module.Launcher.__new__(module.Launcher)
    with pytest.raises(TypeError, match="__init__ was not called"):
        raw()
    with pytest.raises(TypeError, match="__init__ was not called"):
        raw.add((0, 0, (), (), 1, 128, 0, 0, 0, 0, 0))


# ---------------------------------------------------------------- CPU kernels

@tilec.kernel
def axpy_cpu(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, a * tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m),
             mask=m)


def test_cpu_kernels_small_grids_run_from_c(module: Any, tmp_path: pathlib.Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    import tilec.runtime.cpu as cpu_rt
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TILEC_NUM_THREADS", "2")
    python_path: list[tuple[int, int, int]] = []
    real = cpu_rt.CpuKernel.launch

    def counting(self: Any, grid: tuple[int, int, int], raw: Any) -> None:
        python_path.append(grid)
        real(self, grid, raw)
    monkeypatch.setattr(cpu_rt.CpuKernel, "launch", counting)
    rng = np.random.default_rng(0)
    for round_ in range(3):
        x, y = rng.standard_normal(200).astype(np.float32), rng.standard_normal(200).astype(np.float32)
        out = np.full(200, np.nan, np.float32)
        axpy_cpu[(1,)](x, y, out, 2.5, 200, BLOCK=256)      # 1 program: run from C
        np.testing.assert_allclose(out, 2.5 * x + y, rtol=1e-6)
        big = np.full(200, np.nan, np.float32)
        axpy_cpu[(4,)](x, y, big, 2.5, 200, BLOCK=64)       # 4 programs: the thread pool
        np.testing.assert_allclose(big, 2.5 * x + y, rtol=1e-6)
    assert python_path == [(1, 1, 1), (4, 1, 1), (4, 1, 1), (4, 1, 1)]
    assert type(axpy_cpu[(1,)]).__name__ == "Launcher" and axpy_cpu[(1,)].entries == 1
    # Another dtype, a misaligned view, a read-only array: the general path
    # (it recompiles or refuses), never the entry made for float32 arrays.
    x64 = rng.standard_normal(200)
    o64 = np.zeros(200)
    axpy_cpu[(1,)](x64, x64, o64, 2.0, 200, BLOCK=256)
    np.testing.assert_allclose(o64, 3 * x64)
    x, y = rng.standard_normal(201).astype(np.float32), rng.standard_normal(200).astype(np.float32)
    out = np.zeros(200, np.float32)
    axpy_cpu[(1,)](x[1:], y, out, 1.0, 200, BLOCK=256)
    np.testing.assert_allclose(out, x[1:] + y, rtol=1e-6)
    ro = np.zeros(200, np.float32)
    ro.flags.writeable = False
    with pytest.raises(TilecError, match="read-only"):
        axpy_cpu[(1,)](y, y, ro, 1.0, 200, BLOCK=256)
    assert len(python_path) == 6  # the float64 and misaligned launches went through Python once
