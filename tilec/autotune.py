"""`tilec.autotune` and `tilec.heuristics`: choose meta-parameters per launch.

Written like Triton's, so ported kernels keep their decorators::

    @tilec.autotune(configs=[tilec.Config({"BLOCK": 512}, num_warps=4),
                             tilec.Config({"BLOCK": 2048}, num_warps=8)], key=["n"])
    @tilec.kernel
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr): ...

    add[lambda meta: (tilec.cdiv(n, meta["BLOCK"]),)](x, y, out, n)

The first launch with a new key (the values of the `key` arguments, the dtypes
of the array arguments and the device) times every config on the launch's own
arguments and keeps the fastest; later launches with that key use it straight
away.  Results are also kept on disk (`<cache>/autotune/`), so a new process
does not tune again (`cache_results=False` turns that off).
`TILEC_AUTOTUNE=0` skips tuning: a result on disk, else the first config.
`TILEC_PRINT_AUTOTUNING=1` prints each choice and its timings.
"""
from __future__ import annotations

import abc
import hashlib
import json
import os
import statistics
import sys
import time
import warnings
from typing import Any, Callable, Mapping, Sequence

from tilec.errors import CompilerBugError, TilecError
from tilec.jit import _for_user, call_grid, user_launcher
from tilec.kernel import Kernel
from tilec.options import CompileOptions
from tilec.specialization import LAUNCH_OPTIONS, NO_DEFAULT
from tilec.version import __version__


AMD_HINTS = ("waves_per_eu", "matrix_instr_nonkdim", "kpack")


class Config:
    """One choice of constexpr values and compile options (`num_warps`,
    `num_stages`: a `CompileOptions`, checked here)."""

    def __init__(self, kwargs: Mapping[str, Any], num_warps: int = 4, num_stages: int = 3,
                 num_ctas: int = 1, maxnreg: int | None = None,
                 pre_hook: Callable[[dict[str, Any]], None] | None = None,
                 ir_override: Any = None) -> None:
        # Triton's AMD back end reads these compile hints from a config's
        # kwargs (tutorial 03's HIP configs): `waves_per_eu` becomes the compile
        # option of that name (used by the AMD back end), `matrix_instr_nonkdim`
        # and `kpack` are kept and not used.
        self.kwargs = {k: v for k, v in kwargs.items() if k not in AMD_HINTS}
        self.backend_hints = {k: v for k, v in kwargs.items() if k in AMD_HINTS}
        self.options = CompileOptions(num_warps=num_warps, num_stages=num_stages,
                                      num_ctas=num_ctas, maxnreg=maxnreg,
                                      waves_per_eu=self.backend_hints.get("waves_per_eu", 0))
        self.pre_hook = pre_hook

    @property
    def num_ctas(self) -> int:
        return self.options.num_ctas

    @property
    def maxnreg(self) -> int | None:
        return self.options.maxnreg

    def all_kwargs(self) -> dict[str, Any]:
        """Triton's name for the constexprs and options together."""
        return self.launch_kwargs()

    @property
    def num_warps(self) -> int:
        return self.options.num_warps

    @property
    def num_stages(self) -> int:
        return self.options.num_stages

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and (self.kwargs, self.options) == \
            (other.kwargs, other.options)

    def __repr__(self) -> str:
        return f"Config({self.kwargs!r}, num_warps={self.num_warps}, num_stages={self.num_stages})"

    def launch_kwargs(self) -> dict[str, Any]:
        return {**self.kwargs, **self.options.as_dict()}

    def __str__(self) -> str:
        parts = [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return ", ".join(parts + [f"num_warps={self.num_warps}", f"num_stages={self.num_stages}"])


def _base_kernel(fn: Any, decorator: str) -> Kernel:
    if isinstance(fn, Kernel):
        return fn
    inner = getattr(fn, "kernel", None)
    if isinstance(inner, Kernel):
        return inner
    raise TilecError(f"@tilec.{decorator} must be applied to a @tilec.kernel function (or to "
                     f"another tilec.autotune / tilec.heuristics), got {type(fn).__name__}")


class _Wrapped(abc.ABC):
    """A kernel behind a decorator: launched with `obj[grid](*args)` like the kernel."""

    inner: Any
    kernel: Kernel

    @abc.abstractmethod
    def run(self, grid: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        """Launch on `grid` with the decorator's choices added to `kwargs`."""

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        return user_launcher(self.run, grid)

    def grid_for(self, grid: Any, meta: dict[str, Any]) -> Any:
        """A grid function applied here, where the kernel comes next (a tuple
        grid takes the kernel's fast launch path); left to the inner decorator
        otherwise, which knows more of the meta-parameters."""
        if callable(grid) and isinstance(self.inner, Kernel):
            g = call_grid(grid, meta)
            return tuple(g) if isinstance(g, (tuple, list)) else (g,)
        return grid

    def named_args(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """Parameter name -> value for what the launch passes, plus defaults."""
        params = self.kernel.params
        if len(args) > len(params):
            raise TilecError(f"kernel '{self.kernel.name}' takes {len(params)} arguments but "
                             f"{len(args)} were given")
        named = {p.name: v for p, v in zip(params, args)}
        named.update((k, v) for k, v in kwargs.items() if k not in LAUNCH_OPTIONS)
        for p in params:
            if p.name not in named and p.default is not NO_DEFAULT:
                named[p.name] = p.default
        return named

    def __repr__(self) -> str:
        return f"<tilec.{type(self).__name__.lower()} of {self.kernel.name}>"


class Autotuner(_Wrapped):
    """A kernel whose meta-parameters are chosen by timing `configs`."""

    def __init__(self, inner: Any, configs: Sequence[Config], key: Sequence[str],
                 reset_to_zero: Sequence[str] = (), restore_value: Sequence[str] = (),
                 prune_configs_by: Mapping[str, Any] | None = None, warmup: float = 25.0,
                 rep: float = 100.0, cache_results: bool = True) -> None:
        self.inner = inner
        self.kernel = _base_kernel(inner, "autotune")
        name = self.kernel.name
        if not configs:
            raise TilecError(f"tilec.autotune of '{name}' needs at least one tilec.Config")
        params = {p.name: p for p in self.kernel.params}
        for c in configs:
            if not isinstance(c, Config):
                raise TilecError(f"tilec.autotune of '{name}': configs must be tilec.Config, "
                                 f"got {type(c).__name__}")
            for k in c.kwargs:
                if k not in params:
                    raise TilecError(f"tilec.autotune of '{name}': a config sets '{k}', which "
                                     f"is not a parameter of the kernel")
                if not params[k].constexpr:
                    raise TilecError(f"tilec.autotune of '{name}': a config sets '{k}', which "
                                     "is not a tl.constexpr parameter")
        # Unknown `key` names are ignored (as Triton does); the others must be parameters.
        key = [k for k in key if k in params]
        for group, names in (("reset_to_zero", reset_to_zero),
                             ("restore_value", restore_value)):
            for k in names:
                if k not in params:
                    raise TilecError(f"tilec.autotune of '{name}': {group} names '{k}', which "
                                     "is not a parameter of the kernel")
        self.configs = list(configs)
        self.key = list(key)
        self.reset_to_zero = list(reset_to_zero)
        self.restore_value = list(restore_value)
        self.prune_configs_by = dict(prune_configs_by or {})
        self.warmup_ms, self.rep_ms = float(warmup), float(rep)
        self.cache_results = cache_results
        self.cache: dict[Any, Config] = {}
        self.best_config: Config | None = None
        self.timings: dict[Any, dict[str, float]] = {}  # key -> config text -> ms

    # ------------------------------------------------------------ launching
    def run(self, grid: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        named = self.named_args(args, kwargs)
        passed = {p.name for p in self.kernel.params[:len(args)]} | set(kwargs)
        clash = sorted(k for c in self.configs for k in c.kwargs if k in passed)
        if clash:
            raise TilecError(f"kernel '{self.kernel.name}': {', '.join(sorted(set(clash)))} is "
                             "chosen by tilec.autotune and must not be passed to the launch")
        key = self._key(named)
        try:
            config = self.cache.get(key)
        except TypeError:  # an unhashable key argument: the user's mistake
            raise TilecError(f"kernel '{self.kernel.name}': the tilec.autotune key "
                             f"{self.key} must name arguments with hashable values (ints, "
                             "floats, arrays), got " + ", ".join(
                                 f"{k}={type(named.get(k)).__name__}" for k in self.key)) from None
        if config is None:
            config = self._choose(grid, args, kwargs, named, key)
            self.cache[key] = config
        self.best_config = config
        meta = {**named, **config.kwargs}
        if config.pre_hook is not None:
            config.pre_hook(meta)
        self.inner.run(self.grid_for(grid, meta), args, {**kwargs, **config.launch_kwargs()})

    def _key(self, named: Mapping[str, Any]) -> tuple[Any, ...]:
        parts: list[Any] = []
        for k in self.key:
            v: Any = named.get(k)
            parts.append((tuple(v.shape), str(v.dtype)) if _is_array(v) else v)
        parts.append(tuple(str(v.dtype) for v in named.values() if _is_array(v)))
        parts.append(_device(named.values()))
        return tuple(parts)

    def _choose(self, grid: Any, args: Sequence[Any], kwargs: Mapping[str, Any],
                named: dict[str, Any], key: tuple[Any, ...]) -> Config:
        path = self._result_path(key)
        stored = _read_result(path, self.configs) if path is not None else None
        if stored is not None:
            return stored
        from tilec.launch import launching
        if os.environ.get("TILEC_AUTOTUNE", "1") == "0" or not launching():
            return self.configs[0]
        configs = self._prune(named, kwargs)
        times: dict[int, float] = {}
        failures: list[str] = []
        # Arrays the timed launches write are put back afterwards, so the real
        # launch sees what the caller passed (an accumulating kernel adds once).
        before = {n: _clone(named[n]) for n in dict.fromkeys(self.reset_to_zero + self.restore_value)}
        saved = {n: before[n] for n in self.restore_value}
        from tilec import progress
        from tilec.runtime.record import skipped
        skipped_before = skipped()
        for i, c in enumerate(self.configs):
            if c not in configs:
                continue
            progress.autotune_step(self.kernel.name, len(times) + len(failures), len(configs),
                                   str(c))
            try:
                times[i] = self._bench(grid, args, kwargs, named, c, saved)
            except CompilerBugError:
                raise
            except TilecError as e:
                failures.append(f"{c}: {e.message}")
        for n, v in before.items():
            _copy_into(named[n], v)
        if not times:
            raise TilecError(f"kernel '{self.kernel.name}': no autotune config could run; "
                             + "; ".join(failures))
        if failures:
            warnings.warn(f"tilec.autotune of '{self.kernel.name}' skipped configs that failed: "
                          + "; ".join(failures), stacklevel=4)
        best = min(times, key=lambda i: times[i])
        self.timings[key] = {str(self.configs[i]): t for i, t in times.items()}
        if os.environ.get("TILEC_PRINT_AUTOTUNING") == "1":
            print(f"tilec.autotune {self.kernel.name} {key}: {self.configs[best]} "
                  f"({times[best]:.4f} ms; " + ", ".join(
                      f"{self.configs[i]}: {t:.4f}" for i, t in times.items()) + ")")
        # Record mode (tilec/runtime/record.py) skipped launches: the timings
        # measured nothing, so they stay out of the disk cache.
        if path is not None and skipped() == skipped_before:
            _write_result(path, best, self.configs[best], self.timings[key])
        return self.configs[best]

    def _prune(self, named: Mapping[str, Any], kwargs: Mapping[str, Any]) -> list[Config]:
        configs = list(self.configs)
        early = self.prune_configs_by.get("early_config_prune")
        if early is not None:
            # Triton's signature: early(configs, named_args, **launch_keyword_args)
            configs = list(early(configs, dict(named), **dict(kwargs)))
        model = self.prune_configs_by.get("perf_model")
        top_k = self.prune_configs_by.get("top_k")
        if model is not None and top_k:
            k = int(top_k * len(configs)) if isinstance(top_k, float) and top_k <= 1 else int(top_k)
            configs.sort(key=lambda c: model(**named, **c.kwargs, num_warps=c.num_warps,
                                             num_stages=c.num_stages))
            configs = configs[:max(k, 1)]
        return configs or list(self.configs[:1])

    def _bench(self, grid: Any, args: Sequence[Any], kwargs: Mapping[str, Any],
               named: dict[str, Any], config: Config, saved: Mapping[str, Any]) -> float:
        """Median milliseconds of one launch with `config` (the hooks, zeroing and
        restoring around it are not timed)."""
        launch_kwargs = {**kwargs, **config.launch_kwargs()}
        meta = {**named, **config.kwargs}
        g = self.grid_for(grid, meta)

        def prepare() -> None:
            if config.pre_hook is not None:
                config.pre_hook(meta)
            for n in self.reset_to_zero:
                _zero(named[n])

        def launch() -> None:
            self.inner.run(g, args, launch_kwargs)

        def restore() -> None:
            for n, v in saved.items():
                _copy_into(named[n], v)
        prepare()
        launch()  # compiles (or loads) the specialization outside the timing
        restore()
        if _device(named.values()) == "cuda":
            return _time_cuda(prepare, launch, restore, self.warmup_ms, self.rep_ms)
        return _time_host(prepare, launch, restore, self.warmup_ms, self.rep_ms)

    def _result_path(self, key: tuple[Any, ...]) -> Any:
        if not self.cache_results:
            return None
        from tilec.cache import default_cache_dir
        k = self.kernel
        text = json.dumps([__version__, k.name, k.source_hash(), sorted(k.used_globals().items()),
                           [str(c) for c in self.configs], repr(key), _device_name(key[-1])],
                          default=str)
        return default_cache_dir() / "autotune" / (hashlib.sha256(text.encode()).hexdigest()
                                                    + ".json")

    def warmup(self, *args: Any, target: str = "cpu", **kwargs: Any) -> None:
        """Fill the compile cache for every config (for a machine with no compiler)."""
        for c in self.configs:
            self.inner.warmup(*args, target=target, **{**kwargs, **c.launch_kwargs()})


class Heuristics(_Wrapped):
    """A kernel whose named constexprs are computed from the launch's arguments."""

    def __init__(self, inner: Any, values: Mapping[str, Callable[[dict[str, Any]], Any]]) -> None:
        self.inner = inner
        self.kernel = _base_kernel(inner, "heuristics")
        params = {p.name for p in self.kernel.params}
        for k, fn in values.items():
            if k not in params:
                raise TilecError(f"tilec.heuristics of '{self.kernel.name}' sets '{k}', which is "
                                 "not a parameter of the kernel")
            if not callable(fn):
                raise TilecError(f"tilec.heuristics of '{self.kernel.name}': the value for '{k}' "
                                 "must be a function of the arguments (a dict)")
        self.values = dict(values)

    def run(self, grid: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        named = self.named_args(args, kwargs)
        extra: dict[str, Any] = {}
        for k, fn in self.values.items():
            try:
                extra[k] = fn(named)
            except Exception as e:  # the user's function: report it as theirs
                raise TilecError(f"the tilec.heuristics function for '{k}' of kernel "
                                 f"'{self.kernel.name}' raised {type(e).__name__}: {e}") from None
        self.inner.run(self.grid_for(grid, {**named, **extra}), args, {**kwargs, **extra})

    def warmup(self, *args: Any, target: str = "cpu", **kwargs: Any) -> None:
        named = self.named_args(args, kwargs)
        extra = {k: fn(named) for k, fn in self.values.items()}
        self.inner.warmup(*args, target=target, **{**kwargs, **extra})


def autotune(configs: Sequence[Config], key: Sequence[str], *, reset_to_zero: Sequence[str] = (),
             restore_value: Sequence[str] = (), prune_configs_by: Mapping[str, Any] | None = None,
             warmup: float = 25.0, rep: float = 100.0, cache_results: bool = True,
             do_bench: Any = None, use_cuda_graph: bool = False) -> Callable[[Any], Autotuner]:
    """Decorator: time `configs` on the first launch of each `key` and use the fastest.

    `warmup`/`rep` are milliseconds spent warming up / timing each config.
    `reset_to_zero` arrays are zeroed before every timed launch (for kernels
    that accumulate with atomics); `restore_value` arrays are restored after
    each timed launch.  Both are given back their values from before tuning
    once it ends, so the launch that follows computes what the caller asked.  `prune_configs_by` takes `early_config_prune`
    (configs, named_args) -> configs, and `perf_model` with `top_k`.
    """
    def decorate(fn: Any) -> Autotuner:
        try:
            return Autotuner(fn, configs, key, reset_to_zero, restore_value, prune_configs_by,
                             warmup, rep, cache_results)
        except TilecError as e:
            raise _for_user(e, sys._getframe(1)) from None
    return decorate


def heuristics(values: Mapping[str, Callable[[dict[str, Any]], Any]]) -> Callable[[Any], Heuristics]:
    """Decorator: compute constexprs from the launch's arguments, e.g.
    `@tilec.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})`."""
    def decorate(fn: Any) -> Heuristics:
        try:
            return Heuristics(fn, values)
        except TilecError as e:
            raise _for_user(e, sys._getframe(1)) from None
    return decorate


# ------------------------------------------------------------------ helpers
def _is_array(v: Any) -> bool:
    return hasattr(v, "dtype") and hasattr(v, "shape") and getattr(v, "shape", ()) != ()


def _device(values: Any) -> str:
    for v in values:
        if getattr(v, "is_cuda", False) is True or hasattr(v, "__cuda_array_interface__"):
            return "cuda"
    return "cpu"


def _device_name(device: str) -> str:
    if device == "cuda":
        torch = sys.modules.get("torch")
        if torch is not None:
            try:
                return str(torch.cuda.get_device_name())
            except Exception:  # no usable CUDA in torch: the key still names the kind
                return "cuda"
    import platform
    return f"cpu {platform.machine()} {os.cpu_count()}"


def _zero(v: Any) -> None:
    if hasattr(v, "zero_"):
        v.zero_()
    else:
        v[...] = 0


def _clone(v: Any) -> Any:
    return v.clone() if hasattr(v, "clone") else v.copy()


def _copy_into(dst: Any, src: Any) -> None:
    if hasattr(dst, "copy_"):
        dst.copy_(src)
    else:
        dst[...] = src


def _time_host(prepare: Callable[[], None], launch: Callable[[], None],
               restore: Callable[[], None], warmup_ms: float, rep_ms: float) -> float:
    t0 = time.perf_counter()
    while (time.perf_counter() - t0) * 1e3 < warmup_ms:
        prepare()
        launch()
        restore()
    times: list[float] = []
    t0 = time.perf_counter()
    while len(times) < 3 or ((time.perf_counter() - t0) * 1e3 < rep_ms and len(times) < 1000):
        prepare()
        s = time.perf_counter()
        launch()
        times.append((time.perf_counter() - s) * 1e3)
        restore()
    return statistics.median(times)


_FLUSH: list[Any] = []


def _time_cuda(prepare: Callable[[], None], launch: Callable[[], None],
               restore: Callable[[], None], warmup_ms: float, rep_ms: float) -> float:
    """Median of per-launch CUDA-event times.  Before each launch a 256 MiB
    buffer is cleared, which empties the L2 (each launch starts cold, as one in
    a real program does) and keeps the GPU busy while the host prepares the
    launch, so host time does not show in the events."""
    import torch
    if not _FLUSH:
        _FLUSH.append(torch.empty(256 << 20, dtype=torch.int8, device="cuda"))
    flush = _FLUSH[0]

    def timed(n: int) -> list[float]:
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        for s, e in zip(starts, ends):
            prepare()
            flush.zero_()
            s.record()
            launch()
            e.record()
            restore()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) for s, e in zip(starts, ends)]
    estimate = max(statistics.median(timed(5)), 1e-3)
    timed(max(1, min(1000, int(warmup_ms / estimate))))
    return statistics.median(timed(max(5, min(1000, int(rep_ms / estimate)))))


def _read_result(path: Any, configs: Sequence[Config]) -> Config | None:
    try:
        data = json.loads(path.read_text())
        i = int(data["best"])
        if 0 <= i < len(configs) and data.get("config") == str(configs[i]):
            return configs[i]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def _write_result(path: Any, best: int, config: Config, timings: Mapping[str, float]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"best": best, "config": str(config), "timings_ms": timings},
                                  indent=1))
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache: tune again next time
