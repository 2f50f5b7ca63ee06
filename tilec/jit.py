"""`@tilec.kernel`: the kernel object, its specializations and launches.

A launch `k[grid](*args)` binds the arguments, computes the specialization
(argument types, 16-alignment of pointers, divisibility of ints by 16,
constexpr values, target, options), looks it up in memory, then on disk, and
only compiles on a miss.  The launch path imports no MLIR: a kernel found in
the disk cache runs without the compiler.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import linecache
import os
import platform
import sys
from dataclasses import dataclass
from types import FrameType
from typing import Any, Callable, Mapping, Sequence, TypeVar, cast

from tilec.cache import DiskCache, make_key
from tilec.errors import CompilerBugError, SourceLoc, TilecError
from tilec.language import core as tl
from tilec.runtime.args import (
    EQUAL_TO_1, ArgInfo, check_declared, classify, fast_arg, fast_arg_plain,
)

LAUNCH_OPTIONS = ("num_warps", "num_stages")
from tilec.version import __version__
_PACKAGE_DIR = os.path.realpath(os.path.dirname(__file__))
F = TypeVar("F", bound=Callable[..., Any])


def _call_site(frame: FrameType) -> tuple[SourceLoc, str] | None:
    """The location (line, column of the call expression) that `frame` is executing."""
    file = frame.f_code.co_filename
    if os.path.realpath(file).startswith(_PACKAGE_DIR + os.sep):
        return None  # called by tilec itself (e.g. the CLI): no user line to show
    line, col = frame.f_lineno, 1
    positions = getattr(frame.f_code, "co_positions", None)  # Python >= 3.11
    if positions is not None:
        pos = list(positions())[frame.f_lasti // 2]
        if pos[0] is not None and pos[2] is not None:
            line = pos[0]
            text = linecache.getline(file, line)
            col = len(text.encode()[:pos[2]].decode(errors="ignore")) + 1
    text = linecache.getline(file, line)
    if not text:
        return None
    return SourceLoc(file, line, col), text


def _for_user(e: TilecError, caller: FrameType) -> TilecError:
    """The error to raise at an API entry point, without tilec's own frames.

    A mistake in kernel code already names its line in the kernel; a launch
    mistake (wrong arguments, grid, ...) gets the user's line that launched.
    """
    if e.loc is None:
        site = _call_site(caller)
        if site is not None:
            return TilecError(e.message, site[0], site[1])
    return e.with_traceback(None)


def user_launcher(run: Callable[[Any, Sequence[Any], Mapping[str, Any]], None],
                  grid: Any) -> Callable[..., None]:
    """`obj[grid]`: a function of the launch arguments calling `run(grid, args,
    kwargs)`, which reports a `TilecError` at the line that called it."""
    def launcher(*args: Any, **kwargs: Any) -> None:
        try:
            run(grid, args, kwargs)
        except CompilerBugError:
            raise
        except TilecError as e:
            raise _for_user(e, sys._getframe(1)) from None
    return launcher


def _user_api(fn: F) -> F:
    """Report a `TilecError` raised inside `fn` at its caller: `raise ... from None`,
    no internal frames or chained internal exceptions.  Compiler bugs keep
    their traceback."""
    @functools.wraps(fn)
    def api(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except CompilerBugError:
            raise
        except TilecError as e:
            raise _for_user(e, sys._getframe(1)) from None
    return cast(F, api)


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
        # (a string annotation such as "*fp32" is itself quoted under the future import)
        if value is tl.constexpr or isinstance(value, (tl.constexpr, tl.dtype, tl.pointer_type)) \
                or isinstance(value, str) and value != ann:
            return _parse_annotation(fn, name, value)
    raise TilecError(f"parameter '{name}' of kernel '{fn.__name__}' has an annotation tilec does "
                     f"not understand: {ann!r}; use tl.constexpr or a type such as '*fp32' or 'i32'")


class Kernel:
    """A tile kernel; launch it with `kernel[grid](*args)`."""

    __tilec_kernel__ = True

    def __init__(self, fn: Callable[..., Any], do_not_specialize: Sequence[str] = ()) -> None:
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
        self._runtime_params = [p for p in params if not p.constexpr]
        self._index = {p.name: i for i, p in enumerate(params)}
        self._memory: dict[Any, Any] = {}
        self._fast: dict[Any, Any] = {}
        self._launchers: dict[Any, Callable[..., None]] = {}
        self._keyfns: dict[Any, Callable[..., Any]] = {}
        self._native: dict[Any, Any] = {}  # static grid -> C launcher (NVIDIA launches)
        self._global_names: list[str] | None = None
        runtime = {p.name for p in params if not p.constexpr}
        for n in do_not_specialize:
            if n not in runtime:
                raise TilecError(f"kernel '{self.name}': do_not_specialize names '{n}', which is "
                                 f"not a runtime parameter ({', '.join(sorted(runtime))})")
        # Parameters compiled without value facts (16-divisibility, alignment, == 1).
        self.do_not_specialize = frozenset(do_not_specialize)
        self._plan = [(p.name, p.constexpr, p.annotation is not None, p.default) for p in params]
        self._source_hash: str | None = None
        self._parsed: Any = None

    # ------------------------------------------------------------ launching
    def __getitem__(self, grid: Any) -> Callable[..., None]:
        if type(grid) is tuple:  # reuse the launcher of a grid seen before
            try:
                cached = self._launchers.get(grid)
            except TypeError:  # an unhashable grid entry: the general path reports it
                cached = None
            if cached is not None:
                return cached

        launcher = self._python_launcher(grid)
        if type(grid) is tuple and len(self._launchers) < 64:
            try:
                self._launchers[grid] = launcher
            except TypeError:
                pass
        return launcher

    def _python_launcher(self, grid: Any) -> Callable[..., None]:
        """`kernel[grid]` in Python: `run`, with a mistake reported at the caller's line."""
        return user_launcher(self.run, grid)

    def _native_launcher(self, grid: tuple[int, ...], loaded: Any) -> Any:
        """The C launcher of a static grid (made on the first launch through it that
        the C path can take; it replaces the Python launcher `kernel[grid]`
        returns), or None."""
        from tilec.runtime.cuda import raise_driver_error
        from tilec.runtime.launch_entries import make_launcher, static_grid
        dims = static_grid(grid)
        if dims is None:
            return None
        c = self._native.get(grid)
        if c is not None or len(self._native) >= 64:
            return c
        # What the C launcher cannot take it passes on, as called, to the Python
        # launcher (called from C, whose caller is the user's line).
        c = make_launcher(dims, self._python_launcher(grid), raise_driver_error,
                          self.fn.__globals__)
        if c is not None:
            self._native[grid] = c
            self._launchers[grid] = c
        return c

    def _add_native_entry(self, grid: Any, args: Sequence[Any], kwargs: Mapping[str, Any],
                          loaded: Any) -> None:
        """Teach the grid's C launcher this launch's specialization."""
        from tilec.runtime.launch_entries import entry_spec, native_target
        target = native_target(loaded._launcher) if type(grid) is tuple else None
        if target is None:
            return
        c = self._native_launcher(grid, loaded)
        if c is None:
            return
        get = self.fn.__globals__.get
        spec = entry_spec(self._plan, args, kwargs, LAUNCH_OPTIONS, target,
                          [(n, get(n)) for n in self._global_names or ()], self.do_not_specialize)
        if spec is not None:
            c.add(spec)

    @_user_api
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
            if p.name in self.do_not_specialize:
                info = dataclasses.replace(info, divisible16=False, one=False)
            infos.append(info)
        return infos, constexprs

    def _make_keyfn(self, nargs: int, kwnames: tuple[str, ...]) -> Callable[..., Any]:
        """A key function generated for one calling shape (how many positional
        arguments, which keywords): straight-line code equivalent to `_fast_key`,
        without its per-parameter branching (the launch hot path)."""
        plan = self._plan
        names = [p[0] for p in plan]
        if nargs > len(plan) or any(k not in names and k not in LAUNCH_OPTIONS for k in kwnames) \
                or len(set(kwnames) & set(names[:nargs])):
            return self._fast_key
        lines = ["def keyfn(args, kwargs):"]
        parts: list[str] = []
        raws: list[str] = []
        for i, (name, is_constexpr, annotated, default) in enumerate(plan):
            if i < nargs:
                src = f"args[{i}]"
            elif name in kwnames:
                src = f"kwargs[{name!r}]"
            elif default is not _NO_DEFAULT:
                src = f"DEFAULTS[{i}]"
            else:
                return self._fast_key
            if is_constexpr:
                parts.append(src)
                continue
            if annotated:
                return self._fast_key
            fa = "fast_arg_plain" if name in self.do_not_specialize else "fast_arg"
            lines.append(f"    a{i} = {fa}({src})")
            lines.append(f"    if a{i} is None: return None")
            parts.append(f"a{i}[0]")
            raws.append(f"a{i}[1]")
        parts += [f"({o!r}, kwargs[{o!r}])" for o in LAUNCH_OPTIONS if o in kwnames]
        lines.append("    g = GET")
        lines.append(f"    return ({', '.join(parts)}, tuple([g(n) for n in NAMES])), "
                     f"[{', '.join(raws)}]")
        if self._global_names is None:
            g = self.fn.__globals__
            self._global_names = [n for n in self.fn.__code__.co_names if n in g]
        env: dict[str, Any] = {"fast_arg": fast_arg, "fast_arg_plain": fast_arg_plain,
                               "DEFAULTS": [p[3] for p in plan],
               "GET": self.fn.__globals__.get, "NAMES": self._global_names}
        exec("\n".join(lines), env)  # noqa: S102 - generated from parameter names only
        keyfn: Callable[..., Any] = env["keyfn"]
        return keyfn

    def _fast_key(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[Any, list[Any]] | None:
        """A cheap key equivalent to the full specialization, and the raw arguments;
        None when the call needs the general path (unusual arguments or errors)."""
        plan = self._plan
        nargs = len(args)
        if nargs > len(plan):
            return None
        parts: list[Any] = []
        raws: list[Any] = []
        used = 0
        i = 0
        for name, is_constexpr, annotated, default in plan:
            if i < nargs:
                v = args[i]
            else:
                v = kwargs.get(name, _NO_DEFAULT) if kwargs else _NO_DEFAULT
                if v is _NO_DEFAULT:
                    if default is _NO_DEFAULT:
                        return None
                    v = default
                else:
                    used += 1
            i += 1
            if is_constexpr:
                parts.append(v)
                continue
            if annotated:
                return None  # annotated parameters are checked on the general path
            fk = fast_arg_plain(v) if name in self.do_not_specialize else fast_arg(v)
            if fk is None:
                return None
            parts.append(fk[0])
            raws.append(fk[1])
        if kwargs:
            for opt in LAUNCH_OPTIONS:
                if opt in kwargs:
                    parts.append((opt, kwargs[opt]))
                    used += 1
            if used != len(kwargs):
                return None
        names = self._global_names
        if names is None:  # the module globals the kernel's code names (found once)
            g = self.fn.__globals__
            names = self._global_names = [n for n in self.fn.__code__.co_names if n in g]
        get = self.fn.__globals__.get  # the globals the kernel reads are compiled in
        parts.append(tuple([get(n) for n in names]))
        return tuple(parts), raws

    def run(self, grid: Any, args: Sequence[Any], kwargs: Mapping[str, Any],
            target: str | None = None) -> None:
        fast = None
        if target is None:
            shape = (len(args), tuple(kwargs))
            keyfn = self._keyfns.get(shape)
            if keyfn is None:
                keyfn = self._keyfns[shape] = self._make_keyfn(len(args), tuple(kwargs))
            fast = keyfn(args, kwargs)
        if fast is not None:
            try:
                loaded = self._fast.get(fast[0])
            except TypeError:  # an unhashable constexpr
                fast, loaded = None, None
            if loaded is not None and fast is not None and type(grid) is tuple and \
                    len(grid) == 1 and type(grid[0]) is int and 0 <= grid[0] < 2 ** 31:
                loaded.launch((grid[0], 1, 1), fast[1])
                return
        values, options = self.bind(args, kwargs)
        infos, constexprs = self.specialize(values)
        if target is None:
            target = self._target_for(infos)
        num_warps = int(options.get("num_warps", 4))
        # The globals the kernel reads are compiled in (like constexprs): a changed
        # global value is another specialization, as in the disk cache key.
        key = (tuple((i.type, i.divisible16, i.one) for i in infos),
               tuple((k, _hashable(v)) for k, v in constexprs.items()), target, num_warps,
               tuple(self.used_globals().items()))
        g = self._grid(grid, values, constexprs)
        from tilec.targets import get_target
        get_target(target).check_grid(g)
        loaded = self._memory.get(key)
        if loaded is None:
            loaded = self._load_or_compile(infos, constexprs, target, num_warps)
            self._memory[key] = loaded
        for p, info in zip(self._runtime_params, infos):
            if isinstance(info.type, tl.pointer_type):
                if info.device != loaded.device:
                    raise TilecError(f"argument '{p.name}' is on device '{info.device}', but this "
                                     f"launch runs on {loaded.target} ('{loaded.device}')")
                if not info.writable and p.name in loaded.stored_args:
                    raise TilecError(f"argument '{p.name}' is a read-only array but kernel "
                                     f"'{self.name}' stores through it")
        loaded.launch(g, [i.raw for i in infos])
        if fast is not None:
            self._fast[fast[0]] = loaded  # this key's devices and access were checked above
            self._add_native_entry(grid, args, kwargs, loaded)

    def _target_for(self, infos: Sequence[ArgInfo]) -> str:
        """The target a launch runs on: where its arrays live."""
        devices = {i.device for i in infos if isinstance(i.type, tl.pointer_type)}
        if len(devices) > 1:
            raise TilecError(f"kernel '{self.name}' got arrays on different devices "
                             f"({', '.join(sorted(devices))}); move them to one device")
        if devices == {"cuda"}:
            from tilec.runtime.cuda import target_for_device
            return target_for_device()
        return "cpu"

    def _grid(self, grid: Any, values: Sequence[Any], constexprs: dict[str, Any]) -> tuple[int, int, int]:
        if callable(grid):
            meta = {p.name: v for p, v in zip(self.params, values)}
            grid = call_grid(grid, meta)
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
        """Hash of the kernel's source text (the same on every Python version, so a
        cache filled on one machine serves another)."""
        if self._source_hash is None:
            src = _function_text(self.fn)
            if src is None:
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
            "args": [[i.type.short, i.divisible16, i.one] for i in infos],
            "constexprs": {k: repr(v) for k, v in constexprs.items()},
            "target": target,
            "host": host_fingerprint() if target == "cpu" else "",
            "num_warps": num_warps,
            "tilec": __version__,
        })

    def _cached_entry(self, infos: Sequence[ArgInfo], constexprs: dict[str, Any], target: str,
                      num_warps: int) -> Any:
        """The disk-cache entry of a specialization, compiled first on a miss."""
        from tilec.builder import builder_fingerprint, compiler_available
        cache = DiskCache()
        key = self.cache_key(infos, constexprs, target, num_warps)
        entry = cache.get(key)
        can_build = compiler_available()
        if entry is not None and can_build and entry.metadata.get("builder") != builder_fingerprint():
            cache.invalidate(entry)  # built by another compiler: stale here
            entry = None
        if entry is None and not can_build:
            raise TilecError(self._missing_specialization(infos, constexprs, target, num_warps,
                                                          cache))
        if entry is None:
            from tilec.driver import build_entry
            entry = build_entry(self, cache, key, [i.type for i in infos],
                                {n: EQUAL_TO_1 if i.one else 16 if i.divisible16 else 1
                                 for n, i in zip(self.runtime_names(), infos)}, constexprs,
                                target, num_warps)
        return entry

    def _missing_specialization(self, infos: Sequence[ArgInfo], constexprs: dict[str, Any],
                                target: str, num_warps: int, cache: DiskCache) -> str:
        sig = ",".join(i.spelling() for i in infos)
        cx = " ".join(f"--constexpr {k}={v!r}" for k, v in constexprs.items())
        file = inspect.getsourcefile(self.fn) or "KERNELS.py"
        return (f"kernel '{self.name}' has no compiled specialization for target {target} with "
                f"signature {sig} and constexprs {constexprs} in the cache {cache.root}, and the "
                "compiler (MLIR, llvmlite, lark) is not installed here. Where the compiler is, "
                f"either fill a cache with `TILEC_CACHE_DIR=DIR python -c '...{self.name}.warmup("
                f"<same arguments>, target=\"{target}\")'` and copy DIR here as "
                f"TILEC_CACHE_DIR, or run `tilec compile {file} --target {target} --kernel "
                f"{self.name} --signature '{sig}' {cx} --num-warps {num_warps} -o OUT` and "
                f"launch it here with tilec.load('OUT/{self.name}')")

    def _load_or_compile(self, infos: Sequence[ArgInfo], constexprs: dict[str, Any], target: str,
                         num_warps: int) -> Any:
        from tilec.runtime.loaded import load_entry
        return load_entry(self._cached_entry(infos, constexprs, target, num_warps))

    def runtime_names(self) -> list[str]:
        return [p.name for p in self.params if not p.constexpr]

    # ------------------------------------------------------------ inspection
    @_user_api
    def compile(self, target: str = "cpu", signature: Any = None,
                constexprs: Mapping[str, Any] | None = None, num_warps: int = 4) -> Any:
        """Compile one specialization without launching; returns a `CompiledKernel`."""
        from tilec.driver import compile_kernel
        return compile_kernel(self, target, signature, constexprs, num_warps)

    @_user_api
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

    @_user_api
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


def call_grid(grid: Callable[[dict[str, Any]], Any], meta: dict[str, Any]) -> Any:
    """The user's grid function applied to the launch's arguments (by name); what
    it raises is the user's mistake."""
    try:
        return grid(meta)
    except Exception as e:
        raise TilecError(f"the grid function raised {type(e).__name__}: {e} (it is called with "
                         f"a dict of the arguments by name: {', '.join(meta)})") from None


def _hashable(v: Any) -> Any:
    try:
        hash(v)
        return (type(v).__name__, v)
    except TypeError:
        return repr(v)


def _function_text(fn: Callable[..., Any]) -> str | None:
    """The lines of `fn` (decorators, header, indented body) read through
    linecache; `inspect.getsource` tokenizes the file and costs ~8 ms."""
    import linecache
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    lines = linecache.getlines(code.co_filename)
    start = code.co_firstlineno - 1
    if not 0 <= start < len(lines):
        return None
    first = lines[start]
    base = len(first) - len(first.lstrip())
    out = [first]
    header_done = first.lstrip().startswith("def ") and first.rstrip().endswith(":")
    for line in lines[start + 1:]:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if header_done and stripped and indent <= base and not stripped.startswith("#"):
            break
        if not header_done and line.lstrip().startswith("def ") and indent == base:
            header_done = line.rstrip().endswith(":")
        elif not header_done and stripped.endswith(":") and indent > base:
            header_done = True
        out.append(line)
    return "".join(out)


def kernel(fn: Callable[..., Any] | None = None, *,
           do_not_specialize: Sequence[str] = ()) -> Any:
    """Decorator: turn a Python function written in tilec's language into a kernel.

    `@tilec.kernel` or `@tilec.kernel(do_not_specialize=["n"])`: the named
    runtime parameters are compiled without facts about their values (an int's
    16-divisibility or being 1, a pointer's 16-byte alignment), so changing
    them never compiles another specialization (as Triton's option)."""
    def make(f: Callable[..., Any]) -> Kernel:
        try:
            return Kernel(f, do_not_specialize)
        except TilecError as e:  # e.g. an annotation tilec does not understand
            raise _for_user(e, sys._getframe(1)) from None
    if fn is None:
        return make
    try:
        return Kernel(fn, do_not_specialize)
    except TilecError as e:
        raise _for_user(e, sys._getframe(1)) from None
