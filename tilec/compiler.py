"""The compiler driver: one kernel specialization -> artifacts of every stage.

`compile_spec` runs the frontend, then the named steps of the target's
pipeline, keeping the IR after each step when asked (`tilec ir
--print-after-all`).  A failure inside a step that is not the user's mistake
becomes a `CompilerBugError` with a reproducer (the IR before the step and the
step's name) written to disk.
"""
from __future__ import annotations

import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from mlir import ir

from tilec.dialects import tile
from tilec.errors import CompilerBugError, TilecError
from tilec.frontend.codegen import KernelSpec, generate
from tilec.options import CompileOptions
from tilec.targets import Target


@dataclass
class Step:
    name: str
    run: Callable[[ir.Module], None]


@dataclass
class CompileResult:
    asm: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    ir_after: list[tuple[str, str]] = field(default_factory=list)
    debug_info: bool = False   # print IR stages with their source locations

    def text(self, module: ir.Module) -> str:
        if not self.debug_info:
            return str(module)
        return str(module.operation.get_asm(enable_debug_info=True, use_local_scope=True))


def _upstream(pipeline: str) -> Callable[[ir.Module], None]:
    from mlir.passmanager import PassManager

    def run(module: ir.Module) -> None:
        PassManager.parse(pipeline).run(module.operation)
    return run


def tile_steps(target: Target, options: CompileOptions) -> list[Step]:
    """The target-independent steps on tile-level IR."""
    from tilec.passes import tile_dce, tile_verify
    return [
        Step(tile_verify.NAME, lambda m: tile_verify.run(m, target, options)),
        Step("canonicalize,cse", _upstream("builtin.module(canonicalize,cse)")),
        Step(tile_dce.NAME, lambda m: tile_dce.run(m, target, options)),
    ]


def cpu_steps(target: Target, options: CompileOptions) -> list[Step]:
    from tilec.passes import cpu as convert_tile_to_cpu
    from tilec.targets.cpu import backend as cpu
    return [Step(convert_tile_to_cpu.NAME, lambda m: convert_tile_to_cpu.run(m, target, options)),
            Step("lower-to-llvm", cpu.lower_to_llvm_dialect)]


def _reproducer(module_text: str, step: str, target: Target) -> str:
    fd, path = tempfile.mkstemp(prefix="tilec-repro-", suffix=".mlir")
    with os.fdopen(fd, "w") as f:
        f.write(f"// tilec reproducer: step '{step}' failed for target {target.name}\n")
        f.write(f"// run: tilec opt {os.path.basename(path)} --pass {step} --target {target.name}\n")
        f.write(module_text)
    return path


def run_steps(module: ir.Module, steps: list[Step], target: Target, result: CompileResult,
              keep_ir: bool) -> None:
    for step in steps:
        before = str(module)
        t0 = time.perf_counter()
        try:
            step.run(module)
            # Catch a pass that produced invalid IR here, with its reproducer,
            # rather than in a later step that cannot say who broke it.
            module.operation.verify()
        except TilecError:
            raise
        except Exception as e:
            path = _reproducer(before, step.name, target)
            raise CompilerBugError(f"step '{step.name}' failed: {e}", path) from None
        result.metadata.setdefault("step_seconds", {})[step.name] = time.perf_counter() - t0
        if keep_ir:
            result.ir_after.append((step.name, result.text(module)))


def compile_spec(spec: KernelSpec, target: Target, options: CompileOptions,
                 keep_ir: bool = False, stop_after: str | None = None,
                 debug_info: bool = False, for_launch: bool = False) -> CompileResult:
    """Compile one specialization for `target`; return its artifacts."""
    result = CompileResult(debug_info=debug_info)
    ctx = tile.new_context()
    ctx.enable_multithreading(False)
    with ctx, ir.Location.unknown():
        t0 = time.perf_counter()
        module = generate(spec)
        result.metadata["frontend_seconds"] = time.perf_counter() - t0
        result.asm["tile"] = result.text(module)
        if keep_ir:
            result.ir_after.append(("frontend", result.asm["tile"]))
        run_steps(module, tile_steps(target, options), target, result, keep_ir)
        result.asm["tile-opt"] = result.text(module)
        if stop_after in ("tile", "tile-opt"):
            return result
        if target.vendor == "cpu":
            # A launch needs only the shared object; skip the assembly text.
            _compile_cpu(module, target, options, result, keep_ir, stop_after,
                         want_asm=not for_launch)
        else:
            _compile_gpu(module, target, options, result, keep_ir, stop_after)
    return result


def _compile_cpu(module: ir.Module, target: Target, options: CompileOptions,
                 result: CompileResult, keep_ir: bool,
                 stop_after: str | None, want_asm: bool = True) -> None:
    from tilec.targets.cpu import backend as cpu
    steps = cpu_steps(target, options)
    run_steps(module, steps[:1], target, result, keep_ir)
    result.asm["cpu"] = result.text(module)
    if stop_after == "cpu":
        return
    run_steps(module, steps[1:], target, result, keep_ir)
    try:
        result.asm["llir"] = cpu.translate(module)
    except Exception as e:
        raise CompilerBugError(f"LLVM IR translation failed: {e}",
                               _reproducer(str(module), "translate", target)) from None
    if stop_after == "llir":
        return
    t0 = time.perf_counter()
    out = cpu.codegen(result.asm["llir"], want_asm=want_asm)
    result.metadata["step_seconds"]["llvm-codegen"] = time.perf_counter() - t0
    result.asm["so"] = out["so"]
    if "asm" in out:
        result.asm["asm"] = out["asm"]
    result.metadata["host_cpu"] = list(cpu.host_cpu())


def gpu_steps(target: Target, options: CompileOptions) -> list[Step]:
    """Tiling (layouts) and distribution onto threads, for a GPU target."""
    from tilec.passes import gpu as convert_tile_to_gpu, tile_layout
    return [
        Step(tile_layout.NAME, lambda m: tile_layout.run(m, target, options)),
        Step(convert_tile_to_gpu.NAME, lambda m: convert_tile_to_gpu.run(m, target, options)),
    ]


# Back-end stage functions by vendor: the only place a vendor selects code;
# everything inside them reads the target record.
def _backend(target: Target) -> Callable[[ir.Module, Target], dict[str, Any]]:
    if target.vendor == "nvidia":
        from tilec.targets.nvidia.backend import compile_nvidia
        return compile_nvidia
    from tilec.targets.amd.backend import compile_amd
    return compile_amd


def _compile_gpu(module: ir.Module, target: Target, options: CompileOptions,
                 result: CompileResult,
                 keep_ir: bool, stop_after: str | None) -> None:
    nw = options.num_warps
    if nw not in (1, 2, 4, 8, 16) or nw * target.warp_size > target.max_threads:
        raise TilecError(f"num_warps={options.num_warps} is not valid for {target.name}: use 1, 2, 4, 8 "
                         f"or 16 with at most {target.max_threads} threads "
                         f"({target.warp_size} per warp)")
    layout_step, distribute_step = gpu_steps(target, options)
    run_steps(module, [layout_step], target, result, keep_ir)
    result.asm["tiled"] = result.text(module)
    if stop_after == "tiled":
        return
    run_steps(module, [distribute_step], target, result, keep_ir)
    result.asm["gpu"] = result.text(module)
    for m in re.finditer(r"tilec.dynamic_shared = (\d+)", result.asm["gpu"]):
        result.metadata["dynamic_shared"] = int(m.group(1))
    if stop_after == "gpu":
        return
    t0 = time.perf_counter()
    out = _backend(target)(module, target)
    result.metadata["step_seconds"]["backend"] = time.perf_counter() - t0
    meta = out.pop("metadata", {})
    result.asm.update({k: v for k, v in out.items() if v is not None})
    result.metadata.update(meta)
