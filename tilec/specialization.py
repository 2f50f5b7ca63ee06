"""What one compiled kernel is specialized on, written down once (no MLIR import).

A kernel's `Params` are its static plan: per parameter, whether it is a
constexpr, its declared type, its default and whether its value is specialized
on (`do_not_specialize` turns that off).  A launch's arguments, classified
(`tilec.runtime.args.classify`), become a `Specialization`: per runtime
parameter an `ArgSpec` (pointer, int, float or bool; dtype; 16-byte alignment
of pointers; int32 or int64; divisibility by 16; being 1), the constexpr
values, the globals the kernel reads, the target and the `CompileOptions`.

Everything launch time keys or checks on is derived from these two:
* the in-memory key: the `Specialization` itself (hashable);
* the Python fast key: the key function `Params.keyfn` generates;
* the C launcher's table (`tilec.runtime.launch_entries.entry_for`);
* the disk-cache key (`Specialization.cache_key`);
* the signature string (`*fp32:16,i32=1`) and the manifest's params;
* the ahead-of-time argument check (`Specialization.admit`), from a manifest
  read back with `Specialization.from_manifest`.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import platform
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from tilec.errors import TilecError
from tilec.language import core as tl
from tilec.options import CompileOptions
from tilec.runtime.args import (
    ABSENT, EQUAL_TO_1, ArgInfo, TensorWithoutStorage, check_declared, classify, fast_arg, fast_arg_plain,
)
from tilec.tools.tensor_descriptor import DescriptorType, TensorDescriptor, describe
from tilec.version import __version__

LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "waves_per_eu",
                  "allow_flush_denorm")


class _NoDefault:
    def __repr__(self) -> str:
        return "<no default>"


NO_DEFAULT: Any = _NoDefault()
"""The default of a parameter that has none."""


@dataclass(frozen=True)
class Param:
    name: str
    constexpr: bool
    annotation: tl.dtype | tl.pointer_type | None
    default: Any
    specialized: bool = True   # False: named by do_not_specialize (no value facts)


def _parse_annotation(fn: Callable[..., Any], name: str, ann: Any) -> tuple[bool, Any]:
    """(is_constexpr, declared type or None)."""
    if ann is inspect.Parameter.empty or ann in (int, float, bool, "int", "float", "bool"):
        return False, None  # plain Python annotations (`n: int`) declare nothing (as Triton)
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


class FakeTensorArgument(TilecError):
    """A launch got a meta/fake tensor (torch tracing it, or a mistake)."""


def argument_error(kernel: str, name: str, e: TypeError) -> TilecError:
    """The TilecError of an argument `classify` refused."""
    if isinstance(e, TensorWithoutStorage):
        return FakeTensorArgument(
            f"argument '{name}' of kernel '{kernel}' is {e}, which has no memory to launch on. "
            "Launch on real tensors; to trace the launch (torch.compile, torch.export, "
            "torch.library.opcheck, make_fx), call the kernel inside a tilec.torch.custom_op, or "
            "under torch.compile, where kernel[grid](...) records the tilec::launch operator")
    return TilecError(f"argument '{name}' of kernel '{kernel}': {e}")


def _no_fast_key(args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
    """The key function of a calling shape the fast path does not take."""
    return None


class Params:
    """A kernel's parameters: how a launch binds and specializes them."""

    def __init__(self, fn: Callable[..., Any], do_not_specialize: Sequence[str] = (),
                 allow_overlap: Sequence[str] = ()) -> None:
        self.kernel = fn.__name__
        self.fn = fn
        params = []
        for p in inspect.signature(fn).parameters.values():
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                raise TilecError(f"kernel '{self.kernel}': *args, **kwargs and keyword-only "
                                 "parameters are not supported")
            is_c, ann = _parse_annotation(fn, p.name, p.annotation)
            default = p.default if p.default is not inspect.Parameter.empty else NO_DEFAULT
            params.append(Param(p.name, is_c, ann, default, p.name not in do_not_specialize))
        runtime = {p.name for p in params if not p.constexpr}
        for n in do_not_specialize:
            if n not in runtime:
                raise TilecError(f"kernel '{self.kernel}': do_not_specialize names '{n}', which is "
                                 f"not a runtime parameter ({', '.join(sorted(runtime))})")
        if isinstance(allow_overlap, str):
            allow_overlap = (allow_overlap,)
        for n in allow_overlap:
            if n not in runtime:
                raise TilecError(f"kernel '{self.kernel}': allow_overlap names '{n}', which is "
                                 f"not a runtime parameter ({', '.join(sorted(runtime))})")
        self.params = params
        self.runtime = [p for p in params if not p.constexpr]
        self.do_not_specialize = frozenset(do_not_specialize)
        # Tensor parameters that may get overlapping memory (a stride 0): refused elsewhere.
        self.allow_overlap = frozenset(allow_overlap)
        self._index = {p.name: i for i, p in enumerate(params)}

    # ------------------------------------------------------------ general path
    def bind(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """(values in parameter order, launch options)."""
        options = {k: kwargs[k] for k in LAUNCH_OPTIONS if k in kwargs}
        if len(args) > len(self.params):
            raise TilecError(self._arity_message(len(args) + len(kwargs) - len(options)))
        values = list(args) + [NO_DEFAULT] * (len(self.params) - len(args))
        for k, v in kwargs.items():
            if k in LAUNCH_OPTIONS and k not in self._index:  # a parameter's name binds it too
                continue
            i = self._index.get(k)
            if i is None:
                raise TilecError(f"kernel '{self.kernel}' has no parameter '{k}'; its parameters "
                                 f"are: {', '.join(p.name for p in self.params)}")
            if values[i] is not NO_DEFAULT:
                raise TilecError(f"kernel '{self.kernel}' got two values for parameter '{k}'")
            values[i] = v
        missing = []
        for i, p in enumerate(self.params):
            if values[i] is NO_DEFAULT:
                if p.default is NO_DEFAULT:
                    missing.append(p.name)
                else:
                    values[i] = p.default
        if missing:
            raise TilecError(self._arity_message(len(args) + len(kwargs) - len(options))
                             + f"; missing: {', '.join(missing)}")
        return values, options

    def _arity_message(self, given: int) -> str:
        names = ", ".join(p.name for p in self.params)
        return f"kernel '{self.kernel}' takes {len(self.params)} arguments ({names}) but {given} " \
               "were given"

    def classify(self, values: Sequence[Any]) -> tuple[list[ArgInfo], dict[str, Any]]:
        """The runtime arguments' infos (value facts cleared where not specialized)
        and the constexpr values, of bound `values`."""
        infos: list[ArgInfo] = []
        hidden: list[ArgInfo] = []   # host descriptors' parts, after the user's parameters
        constexprs: dict[str, Any] = {}
        for p, v in zip(self.params, values):
            if p.constexpr:
                constexprs[p.name] = v.value if isinstance(v, tl.constexpr) else v
                continue
            if type(v) is TensorDescriptor:
                # tilec/tools/tensor_descriptor.py: specialized on its type, its
                # parts passed as hidden parameters; its own slot an unused i64.
                try:
                    constexprs[p.name], parts = describe(v)
                except TypeError as e:
                    raise argument_error(self.kernel, p.name, e) from None
                hidden += parts
                infos.append(ABSENT)
                continue
            if v is None:
                # Triton: None for a runtime parameter (an optional pointer) is a
                # constexpr None.  The kernel keeps the parameter (an unused i64,
                # passed 0) so the launchers' argument lists do not change; the
                # constexpr, which enters the specialization, shadows it in code.
                constexprs[p.name] = None
                infos.append(ABSENT)
                continue
            try:
                info = classify(v)
            except TypeError as e:
                raise argument_error(self.kernel, p.name, e) from None
            if info.overlapping and p.name not in self.allow_overlap:
                raise TilecError(overlap_message(self.kernel, p.name, v))
            if info.zero_dim and not self._addressed(p.name):
                raise TilecError(f"argument '{p.name}' of kernel '{self.kernel}' is a 0-d tensor, "
                                 f"but the kernel uses '{p.name}' as a scalar; pass "
                                 f"{'float' if v.is_floating_point() else 'int'}({p.name}) "
                                 f"(or {p.name}.item())")
            if p.annotation is not None:
                info = check_declared(p.name, p.annotation, info)
            if not p.specialized:
                info = ArgInfo(info.type, False, info.raw, info.device, info.writable, False)
            infos.append(info)
        return infos + hidden, constexprs

    def hidden_names(self, constexprs: Mapping[str, Any]) -> list[str]:
        """The names of the hidden parameters `classify` appended (host descriptors)."""
        out: list[str] = []
        for p in self.runtime:
            d = constexprs.get(p.name)
            if isinstance(d, DescriptorType):
                out += d.hidden_names(p.name)
        return out

    def _addressed(self, name: str) -> bool:
        """Whether the kernel's source uses parameter `name` as a pointer."""
        uses = getattr(self, "_uses", None)
        if uses is None:
            from tilec.param_uses import pointer_uses
            uses = self._uses = pointer_uses(self.fn)
        return name in uses[1]

    # ------------------------------------------------------------ fast path
    def keyfn(self, nargs: int, kwnames: tuple[str, ...],
              global_names: Sequence[str], module_globals: Mapping[str, Any]
              ) -> Callable[[Sequence[Any], Mapping[str, Any]], Any]:
        """The fast key function of one calling shape (how many positional
        arguments, which keywords): straight-line code returning (key, raw
        arguments), or None for the general path.  Equal keys bind to equal
        Specializations: per runtime parameter the facts `classify` specializes
        on (`fast_arg`; `fast_arg_plain` where not specialized), the constexpr
        and launch option values, and the values of the globals the kernel reads."""
        names = [p.name for p in self.params]
        if nargs > len(names) or any(k not in names and k not in LAUNCH_OPTIONS for k in kwnames) \
                or set(kwnames) & set(names[:nargs]):
            return _no_fast_key
        lines = ["def keyfn(args, kwargs):"]
        parts: list[str] = []
        raws: list[str] = []
        for i, p in enumerate(self.params):
            if i < nargs:
                src = f"args[{i}]"
            elif p.name in kwnames:
                src = f"kwargs[{p.name!r}]"
            elif p.default is not NO_DEFAULT:
                src = f"DEFAULTS[{i}]"
            else:
                return _no_fast_key
            if p.constexpr:
                parts.append(src)
                continue
            if p.annotation is not None:
                return _no_fast_key  # annotated parameters are checked on the general path
            layout = p.name not in self.allow_overlap  # check a tensor's memory layout
            lines.append(f"    a{i} = {'fast_arg' if p.specialized else 'fast_arg_plain'}"
                         f"({src}, {layout})")
            lines.append(f"    if a{i} is None: return None")
            parts.append(f"a{i}[0]")
            raws.append(f"a{i}[1]")
        parts += [f"({o!r}, kwargs[{o!r}])" for o in LAUNCH_OPTIONS if o in kwnames]
        lines.append("    g = GET")
        lines.append(f"    return ({', '.join(parts)}, tuple([g(n) for n in NAMES])), "
                     f"[{', '.join(raws)}]")
        env: dict[str, Any] = {"fast_arg": fast_arg, "fast_arg_plain": fast_arg_plain,
                               "DEFAULTS": [p.default for p in self.params],
                               "GET": module_globals.get, "NAMES": list(global_names)}
        exec("\n".join(lines), env)  # noqa: S102 - generated from parameter names only
        keyfn: Callable[..., Any] = env["keyfn"]
        return keyfn


@dataclass(frozen=True)
class ArgSpec:
    """What one runtime parameter is compiled for: its type and divisibility
    (16: a pointer 16-byte aligned or an int divisible by 16; 1: nothing known;
    EQUAL_TO_1: an int equal to 1, compiled in as the constant 1; `tilec
    compile` signatures may give other divisibilities)."""

    name: str
    type: tl.dtype | tl.pointer_type
    divisibility: int = 1

    @classmethod
    def of_info(cls, name: str, info: ArgInfo) -> ArgSpec:
        return cls(name, info.type, EQUAL_TO_1 if info.one else 16 if info.divisible16 else 1)

    @property
    def one(self) -> bool:
        return self.divisibility == EQUAL_TO_1

    def spelling(self) -> str:
        """This parameter in signature syntax: `*fp32:16`, `i32:1`, `i32=1`."""
        if self.one:
            return f"{self.type.short}=1"
        return f"{self.type.short}:{self.divisibility}"

    def manifest(self) -> dict[str, Any]:
        if self.one:
            return {"name": self.name, "type": self.type.short, "divisibility": 1,
                    "equal_to_1": True}
        return {"name": self.name, "type": self.type.short, "divisibility": self.divisibility}

    def admit(self, kernel: str, info: ArgInfo, device: str, target: str) -> Any:
        """The raw value of an argument to a kernel compiled ahead of time for
        this parameter (TilecError when the kernel cannot take it)."""
        name, declared = self.name, self.type
        if isinstance(declared, tl.pointer_type):
            if not isinstance(info.type, tl.pointer_type) or \
                    info.type.element_ty is not declared.element_ty:
                raise TilecError(f"argument '{name}' of '{kernel}' must be an array of "
                                 f"{declared.element_ty.name}, got {info.type.short}")
            if info.device != device:
                raise TilecError(f"argument '{name}' of '{kernel}' is on '{info.device}' but the "
                                 f"kernel was compiled for {target} ('{device}')")
            div = self.divisibility
            if div > 1 and int(info.raw) % div:
                raise TilecError(f"argument '{name}' of '{kernel}' must be {div}-byte aligned (the "
                                 f"kernel was specialized for it); its address is {int(info.raw):#x}")
            return info.raw
        if isinstance(info.type, tl.pointer_type):
            raise TilecError(f"argument '{name}' of '{kernel}' must be a {declared.short} scalar")
        if declared.is_floating():
            return float(info.raw)
        v = int(info.raw)
        if self.one and v != 1:
            raise TilecError(f"argument '{name}' of '{kernel}' must be 1 (the kernel was "
                             f"specialized for it, i32=1), got {v}")
        if self.divisibility > 1 and v % self.divisibility:
            raise TilecError(f"argument '{name}' of '{kernel}' must be divisible by "
                             f"{self.divisibility} (the kernel "
                             f"was specialized for it), got {v}")
        return v


def _hashable(v: Any) -> Any:
    try:
        hash(v)
        return (type(v).__name__, v)
    except TypeError:
        return repr(v)


@dataclass(frozen=True, eq=False)
class Specialization:
    """One compiled kernel's specialization (see the module docstring).

    `specialized` is False where a parameter's value facts were not looked at
    (do_not_specialize; every parameter of a kernel loaded ahead of time, which
    takes any value its facts admit): the C launcher then does not check them.
    Equality and hashing go through the constexprs' values (their repr where
    unhashable), as the in-memory cache needs."""

    args: tuple[ArgSpec, ...]
    constexprs: tuple[tuple[str, Any], ...]
    target: str
    options: CompileOptions = field(default_factory=CompileOptions)
    globals: tuple[tuple[str, str], ...] = ()
    specialized: tuple[bool, ...] = ()
    _key: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_key", (self.args, tuple((k, _hashable(v)) for k, v in self.constexprs),
                                          self.target, self.options, self.globals))

    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Specialization) and self._key == other._key

    @classmethod
    def of(cls, params: Params, infos: Sequence[ArgInfo], constexprs: Mapping[str, Any],
           target: str, options: CompileOptions, used_globals: Mapping[str, str]) -> Specialization:
        """A launch's specialization, from its classified runtime arguments."""
        names = [p.name for p in params.runtime]
        specialized = [p.specialized for p in params.runtime]
        if len(infos) > len(names):   # host descriptors' hidden parameters
            hidden = params.hidden_names(constexprs)
            names += hidden
            specialized += [True] * len(hidden)
        return cls(tuple(ArgSpec.of_info(n, i) for n, i in zip(names, infos)),
                   tuple(constexprs.items()), target, options, tuple(used_globals.items()),
                   tuple(specialized))

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any]) -> Specialization:
        """The specialization a manifest (a cache entry's, or `tilec compile`'s) records."""
        args = tuple(ArgSpec(p["name"], tl.parse_type(p["type"]),
                             EQUAL_TO_1 if p.get("equal_to_1") else int(p.get("divisibility", 1)))
                     for p in manifest["params"])
        given: dict[str, Any] = {k: bool(manifest[k]) if k == "allow_flush_denorm"
                                 else int(manifest[k]) for k in LAUNCH_OPTIONS if k in manifest}
        options = CompileOptions(**given, debug=bool(manifest.get("debug", False)))
        return cls(args, tuple(dict(manifest.get("constexprs", {})).items()), manifest["target"],
                   options, (), (False,) * len(args))

    # ------------------------------------------------------------ derived
    @property
    def names(self) -> list[str]:
        return [a.name for a in self.args]

    @property
    def device(self) -> str:
        return "cpu" if self.target == "cpu" else "cuda"

    def signature(self) -> str:
        """`*fp32:16,*fp32:16,i32=1`: what `tilec compile --signature` takes."""
        return ",".join(a.spelling() for a in self.args)

    def signature_dict(self) -> dict[str, str]:
        return {a.name: a.spelling() for a in self.args}

    def manifest_params(self) -> list[dict[str, Any]]:
        return [a.manifest() for a in self.args]

    def cache_key(self, kernel: str, source_hash: str) -> str:
        """The disk-cache key: what is asked for, the same on a machine without
        the compiler (who built an entry is its manifest's `builder`)."""
        from tilec.cache import make_key
        return make_key({
            "kernel": kernel,
            "source": source_hash,
            "globals": dict(self.globals),
            "args": [[a.type.short, a.divisibility] for a in self.args],
            "constexprs": {k: repr(v) for k, v in self.constexprs},
            "target": self.target,
            "host": host_fingerprint() if self.target == "cpu" else "",
            "options": self.options.hash(),
            "tilec": __version__,
        })

    def check_launch(self, kernel: str, infos: Sequence[ArgInfo], stored: Any) -> None:
        """A just-in-time launch's arrays are on this target's device, and those
        the kernel stores through are writable."""
        device = self.device
        for a, info in zip(self.args, infos):
            if isinstance(info.type, tl.pointer_type):
                if info.device != device:
                    raise TilecError(f"argument '{a.name}' is on device '{info.device}', but this "
                                     f"launch runs on {self.target} ('{device}')")
                if not info.writable and a.name in stored:
                    raise TilecError(f"argument '{a.name}' is a read-only array but kernel "
                                     f"'{kernel}' stores through it")

    def admit(self, kernel: str, values: Sequence[Any]) -> list[Any]:
        """The raw arguments of a launch of the kernel compiled ahead of time
        for this specialization (TilecError for arguments it cannot take)."""
        if len(values) != len(self.args):
            raise TilecError(f"kernel '{kernel}' takes {len(self.args)} arguments "
                             f"({', '.join(self.names)}) but {len(values)} were given")
        raw = []
        for a, v in zip(self.args, values):
            try:
                info = classify(v)
            except TypeError as e:
                raise argument_error(kernel, a.name, e) from None
            if info.overlapping:
                raise TilecError(overlap_message(kernel, a.name, v))
            raw.append(a.admit(kernel, info, self.device, self.target))
        return raw


def overlap_message(kernel: str, name: str, v: Any) -> str:
    shape = tuple(getattr(v, "shape", ()))
    stride = v.stride() if callable(getattr(v, "stride", None)) else "?"
    return (f"argument '{name}' of kernel '{kernel}' is a tensor whose elements share memory "
            f"(shape {shape}, strides {tuple(stride)}: an expand()ed or broadcast tensor); the "
            f"kernel would read or write one element through several indices. Pass "
            f"{name}.contiguous(), or declare the parameter with "
            f"@tilec.kernel(allow_overlap=[\"{name}\"]) if the kernel indexes it with its strides")


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
