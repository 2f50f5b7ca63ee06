"""Launching a kernel: `kernel[grid](*args)` (no MLIR import).

A launch binds its arguments, classifies them into a `Specialization`
(tilec/specialization.py), looks that up in memory and only asks the compile
side (`Kernel._load_or_compile`: the disk cache, then the compiler) on a miss.
Two fast paths skip the general path for a launch seen before:
* the Python one: the fast key (`Params.keyfn`) of the arguments names the
  loaded kernel directly, for any grid (a grid function, tutorial 05's lambda
  made anew per call, is called on the bound arguments; the general path costs
  ~10x more);
* the C one (tilec/runtime/_launch.c), for a static grid: `kernel[grid]`
  returns a C `Launcher` whose entries (`launch_entries.entry_for`) are made
  from each Specialization launched through it.
"""
from __future__ import annotations

import abc
import sys
from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence

from tilec.errors import TilecError
from tilec.jit import call_grid, user_launcher
from tilec.kernel_ids import register as _register
from tilec.language import core as tl
from tilec.options import CompileOptions
from tilec.runtime.args import ArgInfo
from tilec.specialization import FakeTensorArgument, Params, Specialization

# `kernel[grid]` asks this first.  `bool()` is False; once torch is imported it
# is `torch.compiler.is_dynamo_compiling`, False eagerly (one call, ~20 ns) and
# a constant True while Dynamo traces, so a traced launch records the
# `tilec::launch` operator (tilec/torch_launch.py) instead of launching.
_dynamo_compiling: Callable[[], bool] = bool

# True while `tilec replay` loads a recorded program's source (tilec/cli/replay.py):
# every launch is then a no-op (the kernels are wanted, not their results).
_launches_off = False


class launches_off:
    """`with launches_off():` kernel launches (and warmups) do nothing meanwhile."""

    def __enter__(self) -> None:
        global _launches_off
        self._saved = _launches_off
        _launches_off = True

    def __exit__(self, *exc: Any) -> None:
        global _launches_off
        _launches_off = self._saved


def launching() -> bool:
    """False inside `launches_off()`."""
    return not _launches_off

def watch_torch() -> None:
    """Bind `_dynamo_compiling` to torch's once torch is imported (called where a
    launch is slow anyway: kernel definition, the general path, a new grid)."""
    global _dynamo_compiling
    if _dynamo_compiling is bool:
        torch = sys.modules.get("torch")
        check = getattr(getattr(torch, "compiler", None), "is_dynamo_compiling", None)
        if check is not None:
            _dynamo_compiling = check


def _torch_tracing() -> bool:
    """Whether torch traces this call (Dynamo, or torch.export / make_fx on fake tensors)."""
    torch = sys.modules.get("torch")
    compiler = getattr(torch, "compiler", None)
    return compiler is not None and bool(compiler.is_compiling())


def _target_record(name: str) -> Any:
    from tilec.targets import get_target
    return get_target(name)


class KernelLauncher(abc.ABC):
    """The launching half of a `Kernel`: grids, argument checks, fast paths."""

    fn: Callable[..., Any]
    name: str
    plan: Params

    def _init_launch(self) -> None:
        self._memory: dict[Specialization, Any] = {}   # specialization -> loaded kernel
        self._fast: dict[Any, Any] = {}                # fast key -> loaded kernel
        self._keyfns: dict[Any, Callable[..., Any]] = {}   # calling shape -> key function
        self._launchers: dict[Any, Callable[..., None]] = {}
        self._native: dict[Any, Any] = {}  # static grid -> C launcher
        self._global_names: list[str] | None = None
        self.torch_id = _register(self)
        watch_torch()

    @abc.abstractmethod
    def used_globals(self) -> dict[str, str]:
        """The globals the kernel reads, described (part of the Specialization)."""

    @abc.abstractmethod
    def _load_or_compile(self, spec: Specialization) -> Any:
        """The loaded kernel of `spec` (from the disk cache, compiled on a miss)."""

    def globals_read(self) -> list[str]:
        """The module globals the kernel's code names (found once)."""
        if self._global_names is None:
            g = self.fn.__globals__
            self._global_names = [n for n in self.fn.__code__.co_names if n in g]
        return self._global_names

    # ------------------------------------------------------------ launchers
    def __getitem__(self, grid: Any) -> Callable[..., None]:
        if _dynamo_compiling():
            return self._traced_launcher(grid)
        if type(grid) is tuple:  # reuse the launcher of a grid seen before
            try:
                cached = self._launchers.get(grid)
            except TypeError:  # an unhashable grid entry: the general path reports it
                cached = None
            if cached is not None:
                return cached
        watch_torch()
        if _dynamo_compiling():
            return self._traced_launcher(grid)
        launcher = self._python_launcher(grid)
        if type(grid) is tuple and len(self._launchers) < 64:
            try:
                self._launchers[grid] = launcher
            except TypeError:
                pass
        return launcher

    def _traced_launcher(self, grid: Any) -> Callable[..., None]:
        """`kernel[grid]` while torch traces: records the `tilec::launch` operator."""
        from tilec.torch_launch import traced_launcher
        return traced_launcher(self, grid)

    def _python_launcher(self, grid: Any) -> Callable[..., None]:
        """`kernel[grid]` in Python: `run`, with a mistake reported at the caller's line."""
        return user_launcher(self.run, grid)

    def _native_launcher(self, grid: tuple[int, ...]) -> Any:
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
                          spec: Specialization, loaded: Any) -> None:
        """Teach the grid's C launcher this launch's specialization."""
        from tilec.runtime.launch_entries import entry_for, native_target
        target = native_target(loaded._launcher) if type(grid) is tuple else None
        if target is None:
            return
        c = self._native_launcher(grid)
        if c is None:
            return
        get = self.fn.__globals__.get
        entry = entry_for(spec, [p.name for p in self.plan.params], args, kwargs, target,
                          [(n, get(n)) for n in self.globals_read()], self.plan.allow_overlap)
        if entry is not None:
            c.add(entry)

    # ------------------------------------------------------------ launching
    def compile_options(self, options: Mapping[str, Any]) -> CompileOptions:
        """The CompileOptions of a launch's keyword options (and the kernel's debug mode)."""
        opts = CompileOptions.from_launch(options)
        return replace(opts, debug=True) if getattr(self, "debug", False) else opts

    def _fast_args(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        """(fast key, raw arguments) of a call (`Params.keyfn`), or None."""
        shape = (len(args), tuple(kwargs))
        keyfn = self._keyfns.get(shape)
        if keyfn is None:
            keyfn = self._keyfns[shape] = self.plan.keyfn(
                len(args), tuple(kwargs), self.globals_read(), self.fn.__globals__)
        return keyfn(args, kwargs)

    def _fast_key(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        """The fast key alone (equal keys: equal Specializations), or None."""
        fast = self._fast_args(args, kwargs)
        return None if fast is None else fast[0]

    def run(self, grid: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        if _launches_off:
            return
        if getattr(self, "debug", False):
            self._run_checked(grid, args, kwargs)
            return
        fast = self._fast_args(args, kwargs)
        if fast is not None:
            try:
                loaded = self._fast.get(fast[0])
            except TypeError:  # an unhashable constexpr
                fast, loaded = None, None
            if loaded is not None and fast is not None:
                if type(grid) is tuple and len(grid) == 1 and type(grid[0]) is int and \
                        0 <= grid[0] < 2 ** 31:
                    g = (grid[0], 1, 1)
                else:  # a grid function (tutorial 05's lambda, new per call) or 2-3 dims
                    g = self._grid(grid, self.plan.bind(args, kwargs)[0] if callable(grid)
                                   else ())
                    _target_record(loaded.spec.target).check_grid(g)
                loaded.launch(g, fast[1])
                if loaded.has_tensormaps:   # new tensors get a C entry of their own
                    self._add_native_entry(grid, args, kwargs, loaded.spec, loaded)
                return
        values, options = self.plan.bind(args, kwargs)
        try:
            infos, constexprs = self.plan.classify(values)
        except FakeTensorArgument:
            watch_torch()
            if not _torch_tracing():
                raise
            # torch.export / make_fx running the function on fake tensors
            self._traced_launcher(grid)(*args, **kwargs)
            return
        target = self._target_for(infos)
        # The globals the kernel reads are compiled in (like constexprs): a changed
        # global value is another specialization.
        spec = Specialization.of(self.plan, infos, constexprs, target,
                                 self.compile_options(options), self.used_globals())
        g = self._grid(grid, values)
        from tilec.targets import get_target
        get_target(target).check_grid(g)
        loaded = self._memory.get(spec)
        if loaded is None:
            loaded = self._memory[spec] = self._load_or_compile(spec)
        spec.check_launch(self.name, infos, loaded.stored_args)
        loaded.launch(g, [i.raw for i in infos])
        if fast is not None:
            self._fast[fast[0]] = loaded  # this key's devices and access were checked above
            self._add_native_entry(grid, args, kwargs, spec, loaded)

    def _run_checked(self, grid: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
        """A debug-mode launch (tilec/runtime/debug.py): the general path, every
        time, with the arrays' extents and an error record passed to the kernel."""
        values, options = self.plan.bind(args, kwargs)
        infos, constexprs = self.plan.classify(values)
        target = self._target_for(infos)
        spec = Specialization.of(self.plan, infos, constexprs, target,
                                 self.compile_options(options), self.used_globals())
        g = self._grid(grid, values)
        from tilec.targets import get_target
        get_target(target).check_grid(g)
        loaded = self._memory.get(spec)
        if loaded is None:
            loaded = self._memory[spec] = self._load_or_compile(spec)
        spec.check_launch(self.name, infos, loaded.stored_args)
        runtime = [v for p, v in zip(self.plan.params, values) if not p.constexpr]
        arrays = [v for v, i in zip(runtime, infos) if isinstance(i.type, tl.pointer_type)]
        # host descriptors' bases: hidden pointer parameters after the user's
        arrays += [v.base for p, v in zip(self.plan.params, values)
                   if not p.constexpr and p.name in constexprs and v is not None]
        from tilec.runtime.debug import launch_checked
        launch_checked(self.name, loaded.launch, g, [i.raw for i in infos], arrays,
                       loaded.debug_sites or [], loaded.device)

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

    def _grid(self, grid: Any, values: Sequence[Any]) -> tuple[int, int, int]:
        if callable(grid):
            grid = call_grid(grid, {p.name: v for p, v in zip(self.plan.params, values)})
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
