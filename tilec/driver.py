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
from tilec.frontend.parser import get_source, parse_source
from tilec.language import core as tl
from tilec.runtime.args import EQUAL_TO_1
from tilec.options import CompileOptions
from tilec.targets import get_target
from tilec.version import __version__

if TYPE_CHECKING:
    from tilec.jit import Kernel

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
    target: str
    params: list[tuple[str, str]]            # runtime parameters (name, type spelling)
    divisibility: dict[str, int]
    constexprs: dict[str, Any]
    num_warps: int
    asm: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    ir_after: list[tuple[str, str]] = field(default_factory=list)

    def manifest(self, files: Mapping[str, str]) -> dict[str, Any]:
        return {
            "kernel": self.name, "target": self.target, "num_warps": self.num_warps,
            "shared": int(self.metadata.get("shared", 0) or 0),
            "params": [_param_entry(n, t, self.divisibility.get(n, 1)) for n, t in self.params],
            "constexprs": {k: _jsonable(v) for k, v in self.constexprs.items()},
            "artifacts": dict(files), "metadata": _jsonable(self.metadata),
            "tilec_version": __version__,
        }


def _param_entry(name: str, type_: str, div: int) -> dict[str, Any]:
    if div == EQUAL_TO_1:
        return {"name": name, "type": type_, "divisibility": 1, "equal_to_1": True}
    return {"name": name, "type": type_, "divisibility": div}


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


def parse_signature(kernel: Kernel, signature: Any) -> dict[str, tuple[Any, int]]:
    """Runtime parameter -> (type, divisibility) from a dict, a string or annotations."""
    names = kernel.runtime_names()
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
    out: dict[str, tuple[Any, int]] = {}
    for p in kernel.params:
        if p.constexpr:
            continue
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
        out[p.name] = (t, div)
    return out


def make_spec(kernel: Kernel, types: Mapping[str, Any], divisibility: Mapping[str, int],
              constexprs: Mapping[str, Any]) -> KernelSpec:
    if kernel._parsed is None:
        src = get_source(kernel.fn)
        kernel._parsed = (src, parse_source(src))
    src, tree = kernel._parsed
    values = dict(constexprs)
    for p in kernel.params:
        if p.constexpr and p.name not in values:
            if p.default is kernel_no_default():
                raise TilecError(f"constexpr parameter '{p.name}' of kernel '{kernel.name}' "
                                 "has no value; pass it (e.g. BLOCK=1024)")
            values[p.name] = p.default
    return KernelSpec(name=kernel.name, source=src, tree=tree,
                      params=[p.name for p in kernel.params], runtime_types=dict(types),
                      constexprs=values, divisibility=dict(divisibility),
                      globals=kernel.fn.__globals__)


def kernel_no_default() -> Any:
    from tilec.jit import _NO_DEFAULT
    return _NO_DEFAULT


def _stored_args(tile_text: str, runtime_names: list[str]) -> list[str]:
    """Runtime pointer parameters that the kernel may store through (conservative)."""
    # Cheap and conservative: a pointer parameter is 'stored' unless the IR
    # never stores at all.  (A precise use-def walk would be better.)
    return list(runtime_names) if "tile.store" in tile_text else []


def compile_kernel(kernel: Kernel, target_name: str, signature: Any,
                   constexprs: Mapping[str, Any] | None, num_warps: int = 4,
                   stop_after: str | None = None, keep_ir: bool = False,
                   debug_info: bool = False, for_launch: bool = False) -> CompiledKernel:
    from tilec.compiler import compile_spec
    target = get_target(target_name)
    sig = parse_signature(kernel, signature)
    spec = make_spec(kernel, {k: t for k, (t, _) in sig.items()},
                     {k: d for k, (_, d) in sig.items()}, constexprs or {})
    res = compile_spec(spec, target, CompileOptions(num_warps=num_warps), keep_ir=keep_ir, stop_after=stop_after,
                       debug_info=debug_info, for_launch=for_launch)
    ck = CompiledKernel(kernel.name, target.name, [(k, t.short) for k, (t, _) in sig.items()],
                        {k: d for k, (_, d) in sig.items()}, dict(spec.constexprs), num_warps, res.asm, res.metadata, res.ir_after)
    meta = ck.metadata
    meta.update(name=kernel.name, target=target.name, num_warps=num_warps,
                shared=(meta.get("shared_bytes") or meta.get("lds_bytes") or 0)
                + int(meta.get("dynamic_shared", 0) or 0),
                registers=meta.get("registers", meta.get("vgpr_count")),
                stored_args=spec.stored_params if spec.stored_params is not None
                else _stored_args(res.asm.get("tile", ""),
                                  [k for k, (t, _) in sig.items()
                                   if isinstance(t, tl.pointer_type)]))
    return ck


def build_entry(kernel: Kernel, cache: DiskCache, key: str, types: list[Any],
                divisibility: Mapping[str, int], constexprs: Mapping[str, Any], target: str,
                num_warps: int) -> CacheEntry:
    """Compile a launch's specialization and store it in the disk cache."""
    names = kernel.runtime_names()
    sig = {n: f"{t.short}=1" if divisibility.get(n, 1) == EQUAL_TO_1 else
           f"{t.short}:{divisibility.get(n, 1)}" for n, t in zip(names, types)}
    ck = compile_kernel(kernel, target, sig, constexprs, num_warps, for_launch=True)
    files = {stage: ARTIFACT_FILES[stage] for stage in ck.asm if stage in ARTIFACT_FILES}
    artifacts = {files[s]: (v.encode() if isinstance(v, str) else v)
                 for s, v in ck.asm.items() if s in files and v is not None}
    manifest = ck.manifest(files)
    from tilec.builder import builder_fingerprint
    manifest["builder"] = builder_fingerprint()
    return cache.put(key, artifacts, manifest)
