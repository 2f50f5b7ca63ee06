"""`Kernel`: a `@tilec.kernel` function, compiled and inspected.

The launching half lives in tilec/launch.py; this half turns a
`Specialization` into a loaded kernel (the disk cache, the compiler on a miss)
and offers `compile`, `ir` and `warmup`.  The compiler itself (tilec.driver)
is imported only on a cache miss, so a launch served from the cache imports no
MLIR.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import linecache
from typing import Any, Callable, Mapping, Sequence

from tilec.cache import DiskCache
from tilec.errors import TilecError
from tilec.jit import _user_api
from tilec.language import core as tl
from tilec.launch import KernelLauncher, launching
from tilec.options import CompileOptions
from tilec.specialization import Params, Specialization


class Kernel(KernelLauncher):
    """A tile kernel; launch it with `kernel[grid](*args)`."""

    __tilec_kernel__ = True

    def __init__(self, fn: Callable[..., Any], do_not_specialize: Sequence[str] = (),
                 allow_overlap: Sequence[str] = (), debug: bool | None = None) -> None:
        self.fn = fn
        # The debug mode (bounds checks, active tl.device_assert): the
        # decorator's `debug=`, else TILEC_DEBUG when the kernel is defined.
        from tilec.runtime.debug import env_debug
        if debug is not None and not isinstance(debug, bool):
            raise TilecError(f"debug must be True or False, got {debug!r}")
        self.debug: bool = env_debug() if debug is None else debug
        self.name = fn.__name__
        functools.update_wrapper(self, fn)
        self.plan = Params(fn, do_not_specialize, allow_overlap)
        self.params = self.plan.params
        # Parameters compiled without value facts (16-divisibility, alignment, == 1).
        self.do_not_specialize = self.plan.do_not_specialize
        self._source_hash: str | None = None
        self._parsed: Any = None  # (source, parse tree), kept by the frontend
        # (target asked for, fast key) -> warmup's handle: a warmup seen before
        # returns its handle without the disk cache (tutorial 02 warms up per call).
        self._warm: dict[Any, Any] = {}
        self._init_launch()

    @_user_api
    def __call__(self, *args: Any, **kwargs: Any) -> None:
        raise TilecError(f"kernel '{self.name}' must be launched with a grid: "
                         f"{self.name}[grid](...)")

    @property
    def src(self) -> str:
        """The kernel's source text (Triton's `JITFunction.src`); assigning it
        replaces the text the kernel is compiled from (generated kernels)."""
        kept = getattr(self.fn, "__tilec_source__", None)
        return kept if isinstance(kept, str) else (_function_text(self.fn) or "")

    @src.setter
    def src(self, text: str) -> None:
        self.fn.__tilec_source__ = text  # type: ignore[attr-defined]
        self._parsed = None
        self._source_hash = None
        self._memory.clear()
        self._fast.clear()
        self._warm.clear()
        self._native.clear()
        self._launchers.clear()

    def runtime_names(self) -> list[str]:
        return [p.name for p in self.plan.runtime]

    # ------------------------------------------------------------ identity
    def own_source_hash(self) -> str:
        """Hash of the function's own source text from its `def` line on (the
        same on every Python version, so a cache filled on one machine serves
        another).  The decorators above it are left out: what they decide
        (autotune configs, heuristics, do_not_specialize, debug) enters the
        key through the specialization and options, and `tilec replay` may have
        to define the function again without a decorator that raises there
        (tilec/cli/replay.py), which must not change the key."""
        src = getattr(self.fn, "__tilec_source__", None) or _function_text(self.fn)
        if src is None:
            try:
                src = inspect.getsource(self.fn)
            except OSError:
                src = self.name
        return hashlib.sha256(_from_def_line(src).encode()).hexdigest()

    def source_hash(self) -> str:
        """Hash of the kernel's source and of its dependencies' (the helpers it
        calls, transitively, and its closure's constants: tilec.dependencies)."""
        if self._source_hash is None:
            from tilec.dependencies import dependency_text
            deps = dependency_text(self.fn)
            self._source_hash = hashlib.sha256(
                (self.own_source_hash() + deps).encode()).hexdigest()
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

    def cache_key(self, spec: Specialization) -> str:
        return spec.cache_key(f"{self.fn.__module__}.{self.fn.__qualname__}", self.source_hash())

    # ------------------------------------------------------------ compiling
    def _cached_entry(self, spec: Specialization) -> Any:
        """The disk-cache entry of a specialization, compiled first on a miss;
        None where the compiler is missing and record mode (TILEC_RECORD:
        tilec/runtime/record.py) noted the miss instead."""
        from tilec.builder import builder_fingerprint, compiler_available
        cache = DiskCache()
        key = self.cache_key(spec)
        entry = cache.get(key)
        can_build = compiler_available()
        if entry is not None and can_build and entry.metadata.get("builder") != builder_fingerprint():
            cache.invalidate(entry)  # built by another compiler: stale here
            entry = None
        if entry is None and not can_build:
            from tilec.runtime.record import record_file, record_missing
            path = record_file()
            if path is None:
                raise TilecError(self._missing_specialization(spec, cache))
            record_missing(self, spec, key, path)
            return None
        if entry is None:
            from tilec.driver import build_entry
            with cache.build_lock(key):  # another process may be compiling it right now
                entry = cache.get(key)
                if entry is None:
                    entry = build_entry(self, cache, key, spec)
        return entry

    def _missing_specialization(self, spec: Specialization, cache: DiskCache) -> str:
        sig, target, constexprs = spec.signature(), spec.target, dict(spec.constexprs)
        cx = " ".join(f"--constexpr {k}={v!r}" for k, v in constexprs.items())
        file = inspect.getsourcefile(self.fn) or "KERNELS.py"
        return (f"kernel '{self.name}' has no compiled specialization for target {target} with "
                f"signature {sig} and constexprs {constexprs} in the cache {cache.root}, and the "
                "compiler (MLIR, llvmlite, lark) is not installed here. Where the compiler is, "
                f"either fill a cache with `TILEC_CACHE_DIR=DIR python -c '...{self.name}.warmup("
                f"<same arguments>, target=\"{target}\")'` and copy DIR here as "
                f"TILEC_CACHE_DIR, or run `tilec compile {file} --target {target} --kernel "
                f"{self.name} --signature '{sig}' {cx} --num-warps {spec.options.num_warps} "
                f"-o OUT` and launch it here with tilec.load('OUT/{self.name}')")

    def _load_or_compile(self, spec: Specialization) -> Any:
        from tilec.runtime.loaded import load_entry
        entry = self._cached_entry(spec)
        if entry is None:   # recorded: the launch is skipped
            from tilec.runtime.record import SkippedKernel
            return SkippedKernel(spec)
        return load_entry(entry)

    # ------------------------------------------------------------ inspection
    @_user_api
    def compile(self, target: str = "cpu", signature: Any = None,
                constexprs: Mapping[str, Any] | None = None, num_warps: int = 4,
                num_stages: int = 3, *, waves_per_eu: int = 0,
                allow_flush_denorm: bool = False, num_ctas: int = 1) -> Any:
        """Compile one specialization without launching; returns a `CompiledKernel`
        (served from the disk cache when an earlier compile() stored it there:
        `.metadata["from_cache"]` names the entry).  `waves_per_eu`,
        `allow_flush_denorm`: Triton's AMD launch options; `num_ctas`: CTAs per
        program (tilec/options.py)."""
        from tilec.driver import compile_cached
        return compile_cached(self, target, signature, constexprs,
                              CompileOptions(num_warps=num_warps, num_stages=num_stages,
                                             num_ctas=num_ctas, debug=self.debug,
                                             waves_per_eu=waves_per_eu,
                                             allow_flush_denorm=allow_flush_denorm))

    @_user_api
    def ir(self, target: str = "cpu", signature: Any = None,
           constexprs: Mapping[str, Any] | None = None, stage: str = "tile",
           num_warps: int = 4, num_stages: int = 3, *, waves_per_eu: int = 0,
           allow_flush_denorm: bool = False) -> str:
        """The IR (or assembly text) of one stage of one specialization."""
        from tilec.driver import compile_kernel
        ck = compile_kernel(self, target, signature, constexprs,
                            CompileOptions(num_warps=num_warps, num_stages=num_stages,
                                           debug=self.debug, waves_per_eu=waves_per_eu,
                                           allow_flush_denorm=allow_flush_denorm),
                            stop_after=stage)
        if stage not in ck.asm:
            raise TilecError(f"unknown stage '{stage}' for target '{target}'; stages: "
                             f"{', '.join(k for k in ck.asm)}")
        text = ck.asm[stage]
        return text if isinstance(text, str) else f"<{len(text)} bytes of binary>"

    @_user_api
    def warmup(self, *args: Any, target: str | None = None, grid: Any = None,
               **kwargs: Any) -> Any:
        """Fill the caches for the specialization these arguments would launch
        (on `target`; by default where the arrays live) and return its compiled
        kernel's facts (`n_regs`, `n_spills`, `metadata.shared`, as Triton's
        `warmup(..., grid=)` handle).  `grid` is accepted and not used.
        A warmup whose arguments have the launch fast path's key of an earlier
        one returns that handle from memory (~the cost of a launch's key; the
        disk cache's manifest and artifact checks cost ~1 ms, and tutorial 02
        warms up before every launch).
        In record mode (TILEC_RECORD, no compiler here) a miss is recorded and
        the facts are placeholders (32 registers, 0 spills, 16 KiB shared),
        plausible non-zero values that keep occupancy formulas going, not
        measurements."""
        fast = self._fast_key(args, kwargs)
        if fast is not None:
            try:
                handle = self._warm.get((target, fast))
            except TypeError:  # an unhashable constexpr
                fast, handle = None, None
            if handle is not None and launching():
                return handle
        values, options = self.plan.bind(args, kwargs)
        infos, constexprs = self.plan.classify(values)
        asked = target
        target = target or self._target_for(infos)
        from tilec.targets import get_target
        get_target(target)
        compile_options = self.compile_options(options)
        entry = None
        if launching():   # (off while `tilec replay` loads a program)
            entry = self._cached_entry(Specialization.of(self.plan, infos, constexprs, target,
                                                         compile_options, self.used_globals()))
        from tilec.compiled import CompiledHandle
        launch = self._handle_launcher(options)
        if entry is None:   # record mode (or launches off): placeholder facts for host code
            from tilec.runtime.record import PLACEHOLDER_METADATA, PLACEHOLDER_SHARED
            facts = {"metadata": dict(PLACEHOLDER_METADATA), "shared": PLACEHOLDER_SHARED,
                     "num_warps": compile_options.num_warps,
                     "num_stages": compile_options.num_stages}
            return CompiledHandle(self.name, target, facts, launch=launch)
        handle = CompiledHandle(self.name, target, dict(entry.metadata), launch=launch)
        if fast is not None:
            self._warm[(asked, fast)] = handle
        return handle

    def _handle_launcher(self, options: Mapping[str, Any]) -> Callable[[Any, Sequence[Any]], None]:
        """`handle[grid](*args)` of a warmup: every argument positional, the
        warmup's launch options added.  A parameter named like an option
        (tutorial 02's `num_stages`) is passed by keyword, which binds the
        option too, so the launch is the specialization the warmup compiled."""
        params = self.plan.params
        opts = {k: v for k, v in options.items() if k not in self.plan._index}

        def launch(grid: Any, args: Sequence[Any]) -> None:
            if len(args) > len(params) or not any(p.name in options for p in params):
                self[grid](*args, **opts)
                return
            self[grid](**{p.name: v for p, v in zip(params, args)}, **opts)
        return launch


def _from_def_line(text: str) -> str:
    """`text` from its first `def` line at the indentation of its first line
    on: a function's source without the decorators above it."""
    lines = text.splitlines(keepends=True)
    base = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    for i, line in enumerate(lines):
        body = line.lstrip()
        if body.startswith(("def ", "async def ")) and len(line) - len(body) == base:
            return "".join(lines[i:])
    return text


def _function_text(fn: Callable[..., Any]) -> str | None:
    """The lines of `fn` (decorators, header, indented body) read through
    linecache; `inspect.getsource` tokenizes the file and costs ~8 ms."""
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


@_user_api
def kernel(fn: Callable[..., Any] | None = None, *,
           do_not_specialize: Sequence[str] = (), allow_overlap: Sequence[str] = (),
           debug: bool | None = None) -> Any:
    """Decorator: turn a Python function written in tilec's language into a kernel.

    `@tilec.kernel` or `@tilec.kernel(do_not_specialize=["n"])`: the named
    runtime parameters are compiled without facts about their values (an int's
    16-divisibility or being 1, a pointer's 16-byte alignment), so changing
    them never compiles another specialization (as Triton's option).
    `allow_overlap=["x"]`: tensor parameters that may get tensors whose
    elements share memory (an `expand`ed tensor, stride 0); others refuse them.
    `debug=True` (or `TILEC_DEBUG=1` when the kernel is defined): every load,
    store and atomic is checked against the array its pointer came from and
    `tl.device_assert` is active; a failure raises a TilecError at the
    kernel's line naming the program id and the offset (CPU), or prints and
    traps (GPUs).  Part of the cache key; `debug=False` overrides TILEC_DEBUG."""
    if fn is None:
        return _user_api(lambda f: Kernel(f, do_not_specialize, allow_overlap, debug))
    return Kernel(fn, do_not_specialize, allow_overlap, debug)
