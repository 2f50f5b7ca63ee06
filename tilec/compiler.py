"""The compiler: one kernel specialization -> artifacts of every stage.

`compile_spec` runs the frontend, then one loop over the steps: the
target-independent tile steps (`tile_steps`), then the back end's ordered
stage list (`targets/<vendor>/backend.py: stages(target, options)`; the vendor
picks the back end from `BACKENDS` and nothing else).  The loop gives, for
every step alike: the IR or text after it (`tilec ir --print-after-all`), its
time (`metadata["step_seconds"]`), stopping after a stage (`stop_after`), and
a `CompilerBugError` with a reproducer (the IR before the step and the step's
pipeline) when a step fails in a way that is not the user's mistake.
"""
from __future__ import annotations

import importlib
import os
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from mlir import ir

from tilec.dialects import tile
from tilec.errors import CompilerBugError, TilecError
from tilec.frontend.codegen import KernelSpec, generate
from tilec.options import CompileOptions
from tilec.targets import Target
from tilec.targets.pipeline import Compilation, Stages, Step, pass_step, upstream_step

# The back end of each vendor: a module with `stages(target, options) -> Stages`.
BACKENDS: dict[str, str] = {
    "nvidia": "tilec.targets.nvidia.backend",
    "amd": "tilec.targets.amd.backend",
    "cpu": "tilec.targets.cpu.backend",
}


@dataclass
class CompileResult:
    asm: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    ir_after: list[tuple[str, str]] = field(default_factory=list)


def tile_steps() -> Stages:
    """The target-independent steps on tile-level IR; the last one leaves `tile-opt`."""
    return {
        "tile-verify": pass_step("tile-verify"),
        "canonicalize,cse": upstream_step("builtin.module(canonicalize,cse)"),
        "tile-combine-dot": pass_step("tile-combine-dot"),
        "tile-dce": pass_step("tile-dce", keep="tile-opt"),
    }


def backend_stages(target: Target, options: CompileOptions) -> Stages:
    """The ordered steps of `target`'s back end."""
    backend = importlib.import_module(BACKENDS[target.vendor])
    stages: Stages = backend.stages(target, options)
    return stages


def all_steps(target: Target, options: CompileOptions) -> Stages:
    """Every step after the frontend, in order."""
    return {**tile_steps(), **backend_stages(target, options)}


def _reproducer(module_text: str, step: str, pipeline: str | None, target: Target) -> str:
    fd, path = tempfile.mkstemp(prefix="tilec-repro-", suffix=".mlir")
    rerun = pipeline or step
    with os.fdopen(fd, "w") as f:
        f.write(f"// tilec reproducer: step '{step}' failed for target {target.name}\n")
        f.write(f"// run: tilec opt {os.path.basename(path)} --pass '{rerun}' "
                f"--target {target.name}\n")
        f.write(module_text)
    return path


def _shown(c: Compilation, step: Step) -> str:
    """What --print-after-all shows after a step: the module after an IR step,
    the artifact after a translation step (a note for a binary one)."""
    if step.pipeline is not None:
        return c.text()
    if step.show is not None:
        return step.show(c)
    if not step.produces:
        return "// (this step changes no IR and makes no artifact)"
    value = c.asm.get(step.produces[0])
    if value is None:
        return f"// no '{step.produces[0]}' was made (see the metadata)"
    if isinstance(value, (bytes, bytearray)):
        return f"// stage '{step.produces[0]}' is binary ({len(value)} bytes)"
    return str(value)


def run_steps(c: Compilation, steps: Stages, result: CompileResult, keep_ir: bool,
              stop_after: str | None = None) -> bool:
    """Run `steps` in order on `c`; True when `stop_after` was reached."""
    for name, step in steps.items():
        # The IR before the step, for its reproducer.  Only IR steps (those with
        # a pipeline) change the module; printing a large module before every
        # translation step cost up to 0.3 s per CPU compile.  An isolated step
        # whose module is not kept leaves it untouched: printed on failure.
        # The others keep a copy, printed only when the step fails (printing
        # before every step took ~35 ms of a matmul's compile, copying ~2 ms).
        untouched = step.isolated and not c.keep_module
        before = c.module.operation.clone() if step.pipeline is not None and not untouched \
            else None
        t0 = time.perf_counter()
        try:
            step.run(c)
            # Catch a step that produced invalid IR here, with its reproducer,
            # rather than in a later step that cannot say who broke it
            # (translation steps, and isolated ones whose module is not kept,
            # leave the module as it was).
            if step.pipeline is not None and not untouched:
                c.module.operation.verify()
        except TilecError:
            raise
        except Exception as e:
            if os.environ.get("TILEC_DEBUG_TRACEBACK"):
                raise
            path = _reproducer(str(before if before is not None else c.module), name,
                               step.pipeline, c.target)
            raise CompilerBugError(f"step '{name}' failed: {e}", path) from None
        finally:
            if before is not None:
                before.erase()
        c.metadata.setdefault("step_seconds", {})[name] = time.perf_counter() - t0
        if keep_ir:
            result.ir_after.append((name, _shown(c, step)))
        if stop_after is not None and (name == stop_after or stop_after in step.produces):
            return True
    return False


def compile_spec(spec: KernelSpec, target: Target, options: CompileOptions,
                 keep_ir: bool = False, stop_after: str | None = None,
                 debug_info: bool = False, for_launch: bool = False) -> CompileResult:
    """Compile one specialization for `target` with `options`; return its artifacts.

    `stop_after`: a step or artifact stage name after which to stop.
    `for_launch`: only what a launch loads is wanted (no assembly text)."""
    ctx = tile.new_context()
    ctx.enable_multithreading(False)   # the back ends' isolated children fork with it
    with ctx, ir.Location.unknown():
        t0 = time.perf_counter()
        module = generate(spec)
        c = Compilation(module, target, options, debug_info=debug_info,
                        want_text=not for_launch,
                        keep_module=keep_ir or stop_after is not None)
        result = CompileResult(c.asm, c.metadata)
        c.metadata["frontend_seconds"] = time.perf_counter() - t0
        c.asm["tile"] = c.text()
        if keep_ir:
            result.ir_after.append(("frontend", c.asm["tile"]))
        if stop_after != "tile":
            try:
                run_steps(c, all_steps(target, options), result, keep_ir, stop_after)
            except CompilerBugError as e:
                raise _naming_kernel(e, spec.name, target) from None
    return result


def _naming_kernel(e: CompilerBugError, kernel: str, target: Target) -> CompilerBugError:
    """`e` with the kernel and target named after the 'internal compiler error'
    banner (a crash in an isolated back-end child knows neither)."""
    head = f"kernel '{kernel}' for {target.name}: "
    text = str(e)
    if head not in text:
        banner = "(this is a tilec bug): "
        text = text.replace(banner, banner + head, 1) if banner in text else head + text
        e.message = text
        e.args = (text,)
    e.kernel = kernel  # type: ignore[attr-defined]
    return e
