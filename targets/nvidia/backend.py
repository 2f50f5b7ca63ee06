"""NVIDIA back end: tile IR -> per-thread GPU IR -> NVVM -> LLVM IR, PTX and cubin.

`stages(target, options)` is the ordered step list (targets/pipeline.py):

  tile-layout          tilec pass: choose layouts                     -> `tiled`
  convert-tile-to-gpu  tilec pass: distribute onto threads            -> `gpu`
  convert-gpu-to-nvvm  upstream: nvvm-attach-target, gpu.module(convert-nvgpu-to-nvvm,
                       expand-strided-metadata, convert-scf-to-cf, convert-gpu-to-nvvm),
                       convert-nvvm-to-llvm, reconcile-unrealized-casts
  llir                 translate the gpu.module to LLVM IR (before LLVM's optimisation)
                       with the NVPTX triple and data layout                      -> `llir`
  ptx                  MLIR's gpu-module-to-binary{format=isa}; the header is checked
                       against the target (`check_ptx`)                           -> `ptx`
  cubin                ptxas -arch=<chip> -v -O<n> (left out without ptxas)       -> `cubin`

Metadata: ``chip``, ``ptx_version``, ``times_ms`` (per stage), ``registers``,
``spill_stores``, ``spill_loads``, ``stack_bytes``, ``shared_bytes``
(maximum over kernels; None without ptxas), ``kernels`` (the same per kernel),
``ptxas_log``, and ``cubin_error`` when no ptxas was found.

The native steps (lowering, translation, PTX generation) each run in a forked
child (`run_isolated`): LLVM aborts (e.g. an unsupported PTX version) become
`CompilerBugError`s with a reproducer directory.  `compile_nvidia` runs the
steps after convert-tile-to-gpu on a per-thread module (tests/golden/*.mlir).
"""
from __future__ import annotations

import functools
import re
import time
from typing import Any

from mlir import ir, passmanager
from mlir.dialects import gpu
from mlir.dialects import llvm as llvm_dialect

from tilec.errors import CompilerBugError
from tilec.options import CompileOptions
from tilec.targets import Target
from tilec.targets.pipeline import (Compilation, LazyFiles, Stages, Step, fresh_context, isolated,
                                    module_text, replace_module, run_from, tile_to_gpu_steps)
from tilec.targets.nvidia import tma
from tilec.targets.toolchain import PTXAS_HINT, find_ptxas, run_tool

NVPTX_TRIPLE = "nvptx64-nvidia-cuda"
ISA_PIPELINE = "builtin.module(gpu-module-to-binary{format=isa})"
_STAT_KEYS = ("registers", "spill_stores", "spill_loads", "stack_bytes", "shared_bytes")


# The NVPTX data layout of the LLVM llvmlite carries, by llvmlite version (the
# `llir` artifact's `target datalayout`).  Asking llvmlite (importing its
# binding, registering its targets, making a target machine) took 30-60 ms of
# every cold compile; a version not listed is still asked
# (tests/test_backends.py checks the installed version's entry against it).
NVPTX_DATA_LAYOUTS = {
    "0.50.0": "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64",
}


def lowering_pipeline(target: Target, opt_level: int, index_bitwidth: int) -> str:
    """The MLIR pipeline from per-thread IR to the LLVM dialect (with an NVVM target attr)."""
    if not re.fullmatch(r"[A-Za-z0-9_]+", target.chip):
        raise CompilerBugError(f"malformed chip name in target {target.name}: {target.chip!r}")
    return ("builtin.module("
            f"nvvm-attach-target{{chip={target.chip} O={opt_level}}},"
            "gpu.module(convert-nvgpu-to-nvvm,expand-strided-metadata,convert-scf-to-cf,"
            f"convert-gpu-to-nvvm{{index-bitwidth={index_bitwidth}}}),"
            "convert-nvvm-to-llvm,reconcile-unrealized-casts)")


def _gpu_module(module: ir.Module) -> ir.Operation:
    found = [op.operation for op in module.body.operations if op.operation.name == "gpu.module"]
    if len(found) != 1:
        raise CompilerBugError(f"expected one gpu.module, found {len(found)}")
    return found[0]


def _lower(module: ir.Module, lower: str) -> float:
    """Lower `module` to the LLVM dialect in place; the ms taken."""
    t0 = time.perf_counter()
    try:
        passmanager.PassManager.parse(lower).run(module.operation)
    except ir.MLIRError as exc:
        raise CompilerBugError(f"NVIDIA lowering failed ({lower}):\n{exc}") from None
    tma.mark_parameters(module)
    return (time.perf_counter() - t0) * 1e3


def _translate(module: ir.Module) -> tuple[str, dict[str, float]]:
    """LLVM IR of the gpu.module with the NVPTX triple and layout."""
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    part = str(llvm_dialect.translate_module_to_llvmir(_gpu_module(module)))
    times["translate"] = (time.perf_counter() - t0) * 1e3
    # MLIR leaves the triple and the data layout empty: they go in as text
    # after the module's header lines (re-parsing the module with llvmlite to
    # set them took 30-50 ms of a matmul's compile).
    t0 = time.perf_counter()
    lines = [ln for ln in part.split("\n")
             if not ln.startswith(("target datalayout = ", "target triple = "))]
    head = next((i + 1 for i, ln in enumerate(lines) if ln.startswith("source_filename")), 0)
    lines[head:head] = [f'target datalayout = "{_data_layout()}"',
                        f'target triple = "{NVPTX_TRIPLE}"']
    times["llir_text"] = (time.perf_counter() - t0) * 1e3
    return "\n".join(lines), times


@functools.lru_cache(maxsize=1)
def _data_layout() -> str:
    """The NVPTX data layout; called in the parent first, so children inherit it."""
    import llvmlite
    known = NVPTX_DATA_LAYOUTS.get(llvmlite.__version__)
    return known if known is not None else llvm_data_layout()


def llvm_data_layout() -> str:
    """The NVPTX data layout as llvmlite's LLVM gives it."""
    import llvmlite.binding as llvm_binding
    llvm_binding.initialize_all_targets()
    return str(llvm_binding.Target.from_triple(NVPTX_TRIPLE).create_target_machine().target_data)


def _ptx(module: ir.Module) -> tuple[str, float]:
    """The PTX of every object gpu-module-to-binary makes (changes `module`)."""
    t0 = time.perf_counter()
    try:
        passmanager.PassManager.parse(ISA_PIPELINE).run(module.operation)
    except ir.MLIRError as exc:
        raise CompilerBugError(f"PTX generation failed ({ISA_PIPELINE}):\n{exc}") from None
    parts: list[str] = []
    for op in module.body.operations:
        if op.operation.name != "gpu.binary":
            continue
        for obj in op.operation.attributes["objects"]:
            data = gpu.ObjectAttr(obj).object
            parts.append(data.decode() if isinstance(data, bytes) else str(data))
    return "\n".join(parts), (time.perf_counter() - t0) * 1e3


def _child_chain(module: ir.Module, lower: str, keep_module: bool) -> dict[str, Any]:
    """In one isolated child (one fork per compile instead of one per step;
    each step's result comes back): lowering, LLVM IR translation and PTX
    generation of the module the child inherited through the fork, where its
    context is single-threaded (no printing and parsing of the module on the
    way in); the lowered module's text only where `keep_module`."""
    with module.context, ir.Location.unknown():
        lower_ms = _lower(module, lower)
        lowered = str(module.operation.get_asm(enable_debug_info=True)) if keep_module else None
        llir, times = _translate(module)
        ptx, ptx_ms = _ptx(module)
    return {"lowered": lowered, "mlir_lower": lower_ms, "llir": llir, "llir_times": times,
            "ptx": ptx, "ptx_ms": ptx_ms}


def _child_chain_text(text: str, lower: str, keep_module: bool) -> dict[str, Any]:
    """`_child_chain` on `text` parsed in a fresh single-threaded context: for
    a module whose context runs a thread pool, whose threads the forked child
    would not have (its passes would wait on them forever)."""
    with fresh_context():
        return _child_chain(ir.Module.parse(text), lower, keep_module)


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
            current = kernels.setdefault(m.group(1), {k: 0 for k in _STAT_KEYS})
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


def stages(target: Target, options: CompileOptions, *, opt_level: int = 3,
           index_bitwidth: int = 32) -> Stages:
    """The NVIDIA steps in order (see the module docstring).

    ``opt_level`` (0-3) goes to the NVVM target and to ptxas.  ``index_bitwidth``:
    width of ``index`` after lowering (32: the contract uses i32 offsets).
    """
    lower = lowering_pipeline(target, opt_level, index_bitwidth)

    # The three LLVM-backed steps run in one isolated child (LLVM aborts the
    # process on some inputs); the first step starts it, the next two take
    # their results, so --print-after-all still shows each step.
    def convert_gpu_to_nvvm(c: Compilation) -> None:
        _data_layout()   # (the child inherits it)
        # The metadata keys in the order the manifest has always shown them.
        c.metadata.update(chip=target.chip, ptx_version=None, times_ms={})
        repro = LazyFiles({"input.mlir": lambda: module_text(c),
                           "pipeline.txt": lambda: f"{lower}\ntranslate_module_to_llvmir\n"
                                                   f"{ISA_PIPELINE}\n"})
        what = "NVIDIA lowering, LLVM IR translation and PTX generation"
        if c.module.context.get_num_threads() == 1:
            out = isolated(c, _child_chain, c.module, lower, c.keep_module, what=what,
                           reproducer=repro, last=True)
        else:
            out = isolated(c, _child_chain_text, module_text(c), lower, c.keep_module,
                           what=what, reproducer=repro, last=True)
        c.scratch["nvidia"] = out
        c.times_ms()["mlir_lower"] = out["mlir_lower"]
        if out["lowered"] is not None:   # else the module stays the gpu-level one
            replace_module(c, out["lowered"])

    def llir(c: Compilation) -> None:
        out = c.scratch["nvidia"]
        c.asm["llir"] = out["llir"]
        c.times_ms().update(out["llir_times"])

    def ptx(c: Compilation) -> None:
        out = c.scratch.pop("nvidia")
        c.asm["ptx"] = out["ptx"]
        c.times_ms()["ptx"] = out["ptx_ms"]
        c.times_ms()["isolated_total"] = c.times_ms().pop("isolated_total")
        c.metadata["ptx_version"] = check_ptx(c.asm["ptx"], target)
        c.metadata.update({k: None for k in _STAT_KEYS}, kernels={}, ptxas_log=None)

    def cubin(c: Compilation) -> None:
        ptxas = find_ptxas()
        if ptxas is None:
            c.metadata["cubin_error"] = f"no ptxas found, so no cubin was made: {PTXAS_HINT}"
            return
        maxnreg = [f"-maxrregcount={options.maxnreg}"] if options.maxnreg else []
        run = run_tool([ptxas, f"-arch={target.chip}", "-v", f"-O{max(0, min(opt_level, 3))}",
                        *maxnreg, "kernel.ptx", "-o", "kernel.cubin"],
                       {"kernel.ptx": c.asm["ptx"]}, outputs=["kernel.cubin"], what="ptxas")
        c.times_ms()["ptxas"] = run.seconds * 1e3
        c.asm["cubin"] = run.outputs["kernel.cubin"]
        kernels = parse_ptxas_log(run.log)
        c.metadata["ptxas_log"] = run.log
        c.metadata["kernels"] = kernels
        for key in _STAT_KEYS:
            c.metadata[key] = max((k[key] for k in kernels.values()), default=0)

    # tile-flatten-loops runs (a persistent kernel's tile loop and its K loop
    # fused): measured on the H200 against the nest, each config alternated
    # with Triton's twin (benchmarks/probe/persistent_probe.py --triton),
    # fp8 128x256x128 1284 vs 1240 TFLOP/s, 128x128x128 1208 vs 1161, fp16
    # 128x256x64 646 vs 640, 128x128x64 600 vs 595 (results README).
    return {
        **tile_to_gpu_steps(),
        "convert-gpu-to-nvvm": Step(convert_gpu_to_nvvm, (), lower, isolated=True),
        "llir": Step(llir, ("llir",)),
        "ptx": Step(ptx, ("ptx",)),
        "cubin": Step(cubin, ("cubin",)),
    }


def compile_nvidia(module: ir.Module, target: Target, opt_level: int = 3, *,
                   index_bitwidth: int = 32) -> dict[str, Any]:
    """The steps after convert-tile-to-gpu on a per-thread GPU module.

    Returns {"llir": str, "ptx": str, "cubin": bytes or None, "metadata": dict}."""
    steps = stages(target, CompileOptions(), opt_level=opt_level, index_bitwidth=index_bitwidth)
    c = run_from(module, target, steps, "convert-gpu-to-nvvm")
    return {"llir": c.asm["llir"], "ptx": c.asm["ptx"], "cubin": c.asm.get("cubin"),
            "metadata": c.metadata}
