"""From a `Kernel` and a specialization to compiled artifacts and cache entries.

This is the only place that joins the frontend, the compiler and the disk
cache; it is imported lazily, so launches served from the cache never import
MLIR.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from tilec.cache import CacheEntry, DiskCache
from tilec.errors import TilecError
from tilec.frontend.codegen import KernelSpec
from tilec.frontend.inline import function_names
from tilec.frontend.parser import get_source, parse_source
from tilec.language import core as tl
from tilec.options import CompileOptions
from tilec.runtime.args import EQUAL_TO_1
from tilec.specialization import NO_DEFAULT, ArgSpec, Param, Specialization
from tilec.targets import Feature, get_target
from tilec.version import __version__

if TYPE_CHECKING:
    from tilec.kernel import Kernel

# Artifact file names per stage (text stages are stored as UTF-8).
ARTIFACT_FILES = {
    "tile": "kernel.tile.mlir", "tile-opt": "kernel.tile-opt.mlir", "cpu": "kernel.cpu.mlir",
    "tiled": "kernel.tiled.mlir", "gpu": "kernel.gpu.mlir", "llir": "kernel.ll",
    "asm": "kernel.s", "so": "kernel.so", "ptx": "kernel.ptx", "cubin": "kernel.cubin",
    "amdgcn": "kernel.amdgcn", "hsaco": "kernel.hsaco",
}


@dataclass
class CompiledKernel:
    """One compiled specialization: `asm` maps stage names to text or bytes."""

    name: str
    spec: Specialization
    asm: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    ir_after: list[tuple[str, str]] = field(default_factory=list)

    @property
    def target(self) -> str:
        return self.spec.target

    @property
    def params(self) -> list[tuple[str, str]]:
        """Runtime parameters (name, type spelling)."""
        return [(a.name, a.type.short) for a in self.spec.args]

    @property
    def divisibility(self) -> dict[str, int]:
        return {a.name: a.divisibility for a in self.spec.args}

    @property
    def constexprs(self) -> dict[str, Any]:
        return dict(self.spec.constexprs)

    @property
    def options(self) -> CompileOptions:
        return self.spec.options

    @property
    def num_warps(self) -> int:
        return self.spec.options.num_warps

    def manifest(self, files: Mapping[str, str]) -> dict[str, Any]:
        return {
            "kernel": self.name, "target": self.target, **self.options.as_dict(),
            "shared": int(self.metadata.get("shared", 0) or 0),
            "params": self.spec.manifest_params(),
            "constexprs": {k: _jsonable(v) for k, v in self.spec.constexprs},
            "artifacts": dict(files), "metadata": _jsonable(self.metadata),
            "tilec_version": __version__,
        }


def _jsonable(v: Any) -> Any:
    try:
        json.dumps(v)
        return v
    except TypeError:
        if isinstance(v, dict):
            return {str(k): _jsonable(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [_jsonable(x) for x in v]
        return repr(v)


def signature_args(kernel: Kernel, signature: Any,
                   hidden: list[str] | None = None) -> tuple[ArgSpec, ...]:
    """The runtime parameters' specializations from a dict, a string or annotations
    (`hidden`: host descriptors' hidden parameters, tilec/tools/tensor_descriptor.py)."""
    hidden = hidden or []
    names = kernel.runtime_names() + hidden
    given: dict[str, str] = {}
    if isinstance(signature, str):
        parts = [s.strip() for s in signature.split(",") if s.strip()]
        if len(parts) != len(names):
            raise TilecError(f"the signature has {len(parts)} types but kernel '{kernel.name}' has "
                             f"{len(names)} runtime parameters ({', '.join(names)})")
        given = dict(zip(names, parts))
    elif isinstance(signature, Mapping):
        for k in signature:
            if k not in names:
                raise TilecError(f"signature names '{k}', which is not a runtime parameter of "
                                 f"kernel '{kernel.name}' ({', '.join(names)})")
        given = {k: str(v) for k, v in signature.items()}
    elif signature is not None:
        raise TilecError("signature must be a dict {name: type} or a string like '*fp32,i32'")
    out: list[ArgSpec] = []
    hidden_params = [Param(n, False, None, NO_DEFAULT) for n in hidden]
    for p in kernel.plan.runtime + hidden_params:
        spelling = given.get(p.name)
        if spelling is None:
            if p.annotation is None:
                raise TilecError(f"parameter '{p.name}' of kernel '{kernel.name}' needs a type: "
                                 f"annotate it or pass signature={{'{p.name}': '*fp32'}}")
            t = p.annotation
            div = 16 if isinstance(t, tl.pointer_type) else 1
        else:
            base, eq, value = spelling.partition("=")
            base, _, d = base.partition(":")
            try:
                t = tl.parse_type(base)
            except ValueError as e:
                raise TilecError(f"parameter '{p.name}': {e}") from None
            div = int(d) if d else (16 if isinstance(t, tl.pointer_type) else 1)
            if eq:
                if value.strip() != "1" or not (isinstance(t, tl.dtype) and t.kind == "int"):
                    raise TilecError(f"parameter '{p.name}': only a signed integer can be "
                                     f"specialized to a value, and only to 1 ('i32=1'), got "
                                     f"'{spelling}'")
                div = EQUAL_TO_1
        out.append(ArgSpec(p.name, t, div))
    return tuple(out)


def parse_signature(kernel: Kernel, signature: Any) -> dict[str, tuple[Any, int]]:
    """Runtime parameter -> (type, divisibility): `signature_args` for the CLI."""
    return {a.name: (a.type, a.divisibility) for a in signature_args(kernel, signature)}


def make_spec(kernel: Kernel, types: Mapping[str, Any], divisibility: Mapping[str, int],
              constexprs: Mapping[str, Any]) -> KernelSpec:
    if kernel._parsed is None:
        src = get_source(kernel.fn)
        kernel._parsed = (src, parse_source(src))
    src, tree = kernel._parsed
    values = dict(constexprs)
    named = {p.name for p in kernel.params}
    hidden = [n for n in types if n not in named]   # host descriptors' parts (specialization.py)
    for p in kernel.params:
        if p.constexpr and p.name not in values:
            if p.default is NO_DEFAULT:
                raise TilecError(f"constexpr parameter '{p.name}' of kernel '{kernel.name}' "
                                 "has no value; pass it (e.g. BLOCK=1024)")
            values[p.name] = p.default
    return KernelSpec(name=kernel.name, source=src, tree=tree,
                      params=[p.name for p in kernel.params] + hidden, runtime_types=dict(types),
                      constexprs=values, divisibility=dict(divisibility),
                      globals=function_names(kernel.fn))  # type: ignore[arg-type]


def compile_kernel(kernel: Kernel, target_name: str, signature: Any,
                   constexprs: Mapping[str, Any] | None,
                   options: CompileOptions = CompileOptions(),
                   stop_after: str | None = None, keep_ir: bool = False,
                   debug_info: bool = False, for_launch: bool = False) -> CompiledKernel:
    """Compile one specialization."""
    from tilec.compiler import compile_spec
    target = get_target(target_name)
    if options.num_ctas != 1 and not (options.num_ctas == 2 and target.has(Feature.CLUSTER)):
        raise TilecError(f"num_ctas={options.num_ctas}: target {target.name} compiles one program "
                         "per thread block" + (" or per cluster of 2 (num_ctas=2)"
                                               if target.has(Feature.CLUSTER) else
                                               "; thread-block clusters (num_ctas > 1) are not "
                                               "supported") + ", use num_ctas=1")
    args = signature_args(kernel, signature, kernel.plan.hidden_names(constexprs or {}))
    fe = make_spec(kernel, {a.name: a.type for a in args},
                   {a.name: a.divisibility for a in args}, constexprs or {})
    from tilec import dump, progress
    with progress.compiling(kernel.name, target.name):
        res = compile_spec(fe, target, options, keep_ir=keep_ir, stop_after=stop_after,
                           debug_info=debug_info, for_launch=for_launch and dump.dump_dir() is None)
    spec = Specialization(args, tuple(fe.constexprs.items()), target.name, options,
                          tuple(kernel.used_globals().items()))
    ck = CompiledKernel(kernel.name, spec, res.asm, res.metadata, res.ir_after)
    meta = ck.metadata
    # The frontend found which pointer parameters the kernel stores through.
    meta.update(name=kernel.name, target=target.name, num_warps=options.num_warps,
                shared=(meta.get("shared_bytes") or meta.get("lds_bytes") or 0)
                + int(meta.get("dynamic_shared", 0) or 0),
                registers=meta.get("registers", meta.get("vgpr_count")),
                stored_args=list(fe.stored_params or []))
    if stop_after is None:
        dump.dump(kernel.name, target.name, repr((spec.signature(), spec.constexprs, options)),
                  ck.asm, ARTIFACT_FILES, meta)
    return ck


def compile_cached(kernel: Kernel, target_name: str, signature: Any,
                   constexprs: Mapping[str, Any] | None, options: CompileOptions) -> CompiledKernel:
    """`Kernel.compile`: the disk cache's entry of this specialization when a full
    compile stored one (by the compiler installed here, or any when there is
    none), else a full compile, which is stored for later calls and launches."""
    from tilec.builder import builder_fingerprint, compiler_available
    target = get_target(target_name)
    args = signature_args(kernel, signature, kernel.plan.hidden_names(constexprs or {}))
    values = dict(constexprs or {})
    for p in kernel.params:
        if p.constexpr and p.name not in values and p.default is not NO_DEFAULT:
            values[p.name] = p.default
    # (a runtime parameter given a constexpr: None, a host descriptor's DescriptorType)
    order = [p.name for p in kernel.params if p.constexpr or p.name in values]
    spec = Specialization(args, tuple((k, values[k]) for k in order if k in values), target.name,
                          options, tuple(kernel.used_globals().items()))
    cache = DiskCache()
    key = kernel.cache_key(spec)
    entry = cache.get(key)
    can_build = compiler_available()
    if entry is not None and entry.metadata.get("full_compile") and \
            (not can_build or entry.metadata.get("builder") == builder_fingerprint()):
        asm = {}
        for stage, name in entry.metadata.get("artifacts", {}).items():
            data = entry.read(name)
            asm[stage] = data if stage in _BINARY_STAGES else data.decode()
        meta = dict(entry.metadata.get("metadata", {}))
        meta["from_cache"] = str(entry.path)
        return CompiledKernel(kernel.name, spec, asm, meta)
    ck = compile_kernel(kernel, target_name, signature, constexprs, options)
    if entry is None and kernel.cache_key(ck.spec) == key:
        _store(cache, key, ck, full=True)
    return ck


_BINARY_STAGES = frozenset({"so", "cubin", "hsaco"})


def _store(cache: DiskCache, key: str, ck: CompiledKernel, full: bool = False) -> CacheEntry:
    files = {stage: ARTIFACT_FILES[stage] for stage in ck.asm if stage in ARTIFACT_FILES}
    artifacts = {files[s]: (v.encode() if isinstance(v, str) else v)
                 for s, v in ck.asm.items() if s in files and v is not None}
    manifest = ck.manifest(files)
    from tilec.builder import builder_fingerprint
    manifest["builder"] = builder_fingerprint()
    if full:
        manifest["full_compile"] = True
    return cache.put(key, artifacts, manifest)


def build_entry(kernel: Kernel, cache: DiskCache, key: str, spec: Specialization) -> CacheEntry:
    """Compile a launch's specialization and store it in the disk cache."""
    ck = compile_kernel(kernel, spec.target, spec.signature_dict(), dict(spec.constexprs),
                        spec.options, for_launch=True)
    return _store(cache, key, ck)
