"""NVIDIA back end: per-thread GPU IR -> LLVM IR, PTX and cubin.

Input: an ``mlir.ir.Module`` (builtin.module) holding ``gpu.module @tilec``
with ``gpu.func ... kernel`` functions at the per-thread level (see
tests/golden/*.mlir), and an NVIDIA `Target`.

Output of `compile_nvidia`: a dict
  ``llir``     str: LLVM IR of the device module as MLIR translates it (before
               LLVM's optimisation), with the NVPTX triple and data layout;
  ``ptx``      str: PTX from MLIR's ``gpu-module-to-binary{format=isa}``;
  ``cubin``    bytes from ``ptxas -arch=<chip> -v -O<n>``, or None without ptxas;
  ``metadata`` dict: ``registers``, ``spill_stores``, ``spill_loads``,
               ``stack_bytes``, ``shared_bytes`` (maximum over kernels; None
               without ptxas), ``kernels`` (the same per kernel), ``ptxas_log``,
               ``ptx_version``, ``chip``, ``times_ms`` (per stage) and
               ``cubin_error`` when no ptxas was found.

The MLIR lowering and PTX generation run in a forked child (`run_isolated`):
LLVM aborts (e.g. an unsupported PTX version) become `CompilerBugError`s.
"""
from __future__ import annotations

import functools
import re
import time
from typing import Any

import llvmlite.binding as llvm_binding
from mlir import ir, passmanager
from mlir.dialects import gpu
from mlir.dialects import llvm as llvm_dialect

from tilec.errors import CompilerBugError
from tilec.targets import Target
from tilec.targets.isolate import run_isolated
from tilec.targets.toolchain import PTXAS_HINT, find_ptxas, run_tool

NVPTX_TRIPLE = "nvptx64-nvidia-cuda"


@functools.lru_cache(maxsize=None)
def _init_llvm() -> None:
    """Register llvmlite's targets once, in the parent, so children inherit it."""
    llvm_binding.initialize_all_targets()


def lowering_pipeline(target: Target, opt_level: int, index_bitwidth: int) -> str:
    """The MLIR pipeline from per-thread IR to the LLVM dialect (with an NVVM target attr)."""
    if not re.fullmatch(r"[A-Za-z0-9_]+", target.chip):
        raise CompilerBugError(f"malformed chip name in target {target.name}: {target.chip!r}")
    return ("builtin.module("
            f"nvvm-attach-target{{chip={target.chip} O={opt_level}}},"
            "gpu.module(convert-nvgpu-to-nvvm,expand-strided-metadata,convert-scf-to-cf,"
            f"convert-gpu-to-nvvm{{index-bitwidth={index_bitwidth}}}),"
            "convert-nvvm-to-llvm,reconcile-unrealized-casts)")


ISA_PIPELINE = "builtin.module(gpu-module-to-binary{format=isa})"


def _child_compile(text: str, lower: str) -> dict[str, Any]:
    """In the isolated child: parse ``text``, lower it, return llir, ptx and times (ms)."""
    times: dict[str, float] = {}
    ctx = ir.Context()
    ctx.enable_multithreading(False)
    with ctx, ir.Location.unknown():
        try:
            module = ir.Module.parse(text)
            t0 = time.perf_counter()
            passmanager.PassManager.parse(lower).run(module.operation)
            times["mlir_lower"] = (time.perf_counter() - t0) * 1e3
        except ir.MLIRError as exc:
            raise CompilerBugError(f"NVIDIA lowering failed ({lower}):\n{exc}") from None

        t0 = time.perf_counter()
        gpu_modules = [op for op in module.body.operations
                       if op.operation.name == "gpu.module"]
        if len(gpu_modules) != 1:
            raise CompilerBugError(f"expected one gpu.module, found {len(gpu_modules)}")
        llir_parts = [str(llvm_dialect.translate_module_to_llvmir(op.operation))
                      for op in gpu_modules]
        times["translate"] = (time.perf_counter() - t0) * 1e3

        t0 = time.perf_counter()
        try:
            passmanager.PassManager.parse(ISA_PIPELINE).run(module.operation)
        except ir.MLIRError as exc:
            raise CompilerBugError(f"PTX generation failed ({ISA_PIPELINE}):\n{exc}") from None
        ptx_parts: list[str] = []
        for op in module.body.operations:
            if op.operation.name != "gpu.binary":
                continue
            for obj in op.operation.attributes["objects"]:
                data = gpu.ObjectAttr(obj).object
                ptx_parts.append(data.decode() if isinstance(data, bytes) else str(data))
        times["ptx"] = (time.perf_counter() - t0) * 1e3

    # Give the LLVM IR its triple and data layout (MLIR leaves both empty).
    t0 = time.perf_counter()
    tm = llvm_binding.Target.from_triple(NVPTX_TRIPLE).create_target_machine()
    llir: list[str] = []
    for part in llir_parts:
        mod = llvm_binding.parse_assembly(part)
        mod.triple = NVPTX_TRIPLE
        mod.data_layout = str(tm.target_data)
        llir.append(str(mod))
    times["llir_text"] = (time.perf_counter() - t0) * 1e3
    return {"llir": "\n".join(llir), "ptx": "\n".join(ptx_parts), "times_ms": times}


_ENTRY_RE = re.compile(r"Compiling entry function '([^']+)'")
_PROPS_RE = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED_RE = re.compile(r"Used (\d+) registers(.*)")
_SMEM_RE = re.compile(r"(\d+) bytes smem")


def parse_ptxas_log(log: str) -> dict[str, dict[str, int]]:
    """Per-kernel numbers from ``ptxas -v`` output.

    Returns {kernel: {registers, spill_stores, spill_loads, stack_bytes, shared_bytes}}.
    """
    kernels: dict[str, dict[str, int]] = {}
    current: dict[str, int] | None = None
    for line in log.splitlines():
        m = _ENTRY_RE.search(line)
        if m:
            current = kernels.setdefault(m.group(1), {
                "registers": 0, "spill_stores": 0, "spill_loads": 0,
                "stack_bytes": 0, "shared_bytes": 0})
            continue
        if current is None:
            continue
        m = _PROPS_RE.search(line)
        if m:
            current["stack_bytes"] = int(m.group(1))
            current["spill_stores"] = int(m.group(2))
            current["spill_loads"] = int(m.group(3))
            continue
        m = _USED_RE.search(line)
        if m:
            current["registers"] = int(m.group(1))
            s = _SMEM_RE.search(m.group(2))
            current["shared_bytes"] = int(s.group(1)) if s else 0
    return kernels


def _version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def check_ptx(ptx: str, target: Target) -> str:
    """Check the PTX header against ``target``; return its ``.version``.

    Raises `CompilerBugError` when the version is below ``target.ptx_version``
    (the chip's minimum) or the ``.target`` line names another chip.
    """
    versions = re.findall(r"^\.version\s+(\d+\.\d+)", ptx, re.M)
    if not versions:
        raise CompilerBugError("the generated PTX has no .version line")
    lowest = min(versions, key=_version_tuple)
    if target.ptx_version and _version_tuple(lowest) < _version_tuple(target.ptx_version):
        raise CompilerBugError(f"generated PTX version {lowest} is below {target.ptx_version}, "
                               f"the minimum for {target.chip}")
    chips = set(re.findall(r"^\.target\s+([A-Za-z0-9_]+)", ptx, re.M))
    if chips != {target.chip}:
        raise CompilerBugError(f"generated PTX targets {sorted(chips)}, expected {target.chip}")
    return lowest


def compile_nvidia(module: ir.Module, target: Target, opt_level: int = 3, *,
                   index_bitwidth: int = 32) -> dict[str, Any]:
    """Compile a per-thread GPU module for an NVIDIA ``target``; see the module docstring.

    ``opt_level`` (0-3) goes to the NVVM target and to ptxas.  ``index_bitwidth``:
    width of ``index`` after lowering (32: the contract uses i32 offsets).
    """
    text = module.operation.get_asm(enable_debug_info=True)
    lower = lowering_pipeline(target, opt_level, index_bitwidth)
    _init_llvm()
    t0 = time.perf_counter()
    out = run_isolated(_child_compile, text, lower, what=f"NVIDIA compilation for {target.name}",
                       reproducer={"input.mlir": text,
                                   "pipeline.txt": f"{lower}\n{ISA_PIPELINE}\n"})
    times: dict[str, float] = out["times_ms"]
    times["isolated_total"] = (time.perf_counter() - t0) * 1e3
    ptx: str = out["ptx"]
    metadata: dict[str, Any] = {
        "chip": target.chip, "ptx_version": check_ptx(ptx, target), "times_ms": times,
        "registers": None, "spill_stores": None, "spill_loads": None,
        "stack_bytes": None, "shared_bytes": None, "kernels": {}, "ptxas_log": None,
    }
    cubin: bytes | None = None
    ptxas = find_ptxas()
    if ptxas is None:
        metadata["cubin_error"] = f"no ptxas found, so no cubin was made: {PTXAS_HINT}"
    else:
        run = run_tool([ptxas, f"-arch={target.chip}", "-v", f"-O{max(0, min(opt_level, 3))}",
                        "kernel.ptx", "-o", "kernel.cubin"],
                       {"kernel.ptx": ptx}, outputs=["kernel.cubin"], what="ptxas")
        times["ptxas"] = run.seconds * 1e3
        cubin = run.outputs["kernel.cubin"]
        kernels = parse_ptxas_log(run.log)
        metadata["ptxas_log"] = run.log
        metadata["kernels"] = kernels
        for key in ("registers", "spill_stores", "spill_loads", "stack_bytes", "shared_bytes"):
            metadata[key] = max((k[key] for k in kernels.values()), default=0)
    return {"llir": out["llir"], "ptx": ptx, "cubin": cubin, "metadata": metadata}
