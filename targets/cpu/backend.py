"""CPU back end: tile IR -> CPU-level MLIR -> LLVM IR -> host object -> shared object.

`stages(target, options)` is the ordered step list (targets/pipeline.py):

  convert-tile-to-cpu  tilec pass: strip-mined vector code, upstream dialects only -> `cpu`
  lower-to-llvm        upstream: canonicalize, cse and the conversions to the LLVM dialect
  llir                 translate to LLVM IR text                                   -> `llir`
  llvm-opt             llvmlite O3 for the host CPU (its name and features enter the
                       cache key)
  asm                  host assembly of the optimized module (skipped for a launch) -> `asm`
  so                   object code, linked by the system C compiler into a shared object
                       exporting `tilec_<kernel>`                                   -> `so`

The shared object needs no MLIR at run time.
"""
from __future__ import annotations

import functools
import os
import subprocess
import tempfile
from typing import Any

from mlir import ir
from mlir.dialects import llvm as llvm_d
from mlir.passmanager import PassManager

from tilec.errors import TilecError
from tilec.options import CompileOptions
from tilec.targets import Target, toolchain
from tilec.targets.pipeline import (
    Compilation, Stages, Step, language_steps, pass_step, upstream_step,
)

LOWER_TO_LLVM = ("builtin.module(canonicalize,cse,convert-math-to-llvm,convert-vector-to-scf,"
                 "convert-scf-to-cf,convert-vector-to-llvm,convert-arith-to-llvm,"
                 "convert-func-to-llvm,convert-cf-to-llvm,convert-index-to-llvm,"
                 "reconcile-unrealized-casts)")


@functools.lru_cache(maxsize=1)
def host_cpu() -> tuple[str, str]:
    """(cpu name, feature string) of this machine, as LLVM names them."""
    import llvmlite.binding as llb
    llb.initialize_native_target()
    llb.initialize_native_asmprinter()
    return llb.get_host_cpu_name(), llb.get_host_cpu_features().flatten()


def lower_to_llvm_dialect(module: ir.Module) -> None:
    PassManager.parse(LOWER_TO_LLVM).run(module.operation)


def _unlowered(op: ir.Operation) -> str | None:
    """The first op under `op` that is not in the LLVM (or builtin) dialect."""
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                name = inner.operation.name
                if not name.startswith(("llvm.", "builtin.")):
                    return name
                found = _unlowered(inner.operation)
                if found is not None:
                    return found
    return None


def translate(module: ir.Module) -> str:
    """LLVM IR text of a module in the LLVM dialect.  An op left in another
    dialect is reported first: MLIR's translation of such a module fails in a
    way that can take the process down."""
    left = _unlowered(module.operation)
    if left is not None:
        raise ValueError(f"'{left}' was not lowered to the LLVM dialect")
    return str(llvm_d.translate_module_to_llvmir(module.operation))


def find_cc() -> str:
    """The C compiler that links the shared object (toolchain.find_cc), or a TilecError."""
    found = toolchain.find_cc()
    if found is not None:
        return found
    raise TilecError("no C compiler found to link the CPU kernel (tried $CC, cc, gcc, clang); "
                     "install one, e.g. `apt-get install gcc`")


def optimize(llir: str, opt_level: int = 3) -> tuple[Any, Any]:
    """(target machine, optimized llvmlite module) of `llir` for the host."""
    import llvmlite.binding as llb
    cpu, features = host_cpu()
    target = llb.Target.from_default_triple()
    tm = target.create_target_machine(cpu=cpu, features=features, opt=opt_level, reloc="pic",
                                      codemodel="default")
    mod = llb.parse_assembly(llir)
    mod.triple = target.triple
    mod.data_layout = str(tm.target_data)
    mod.verify()
    pto = llb.PipelineTuningOptions(speed_level=opt_level)
    pb = llb.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return tm, mod


def emit_asm(tm: Any, mod: Any) -> str:
    """Assembly text of an optimized module, from a re-parsed copy (a module may
    be emitted only once, and the object comes from `mod` itself)."""
    import llvmlite.binding as llb
    return str(tm.emit_assembly(llb.parse_assembly(str(mod))))


def link(tm: Any, mod: Any) -> tuple[bytes, bytes]:
    """(object code, shared object) of an optimized module."""
    obj = tm.emit_object(mod)
    with tempfile.TemporaryDirectory(prefix="tilec-cpu-") as d:
        o_path = os.path.join(d, "kernel.o")
        so_path = os.path.join(d, "kernel.so")
        with open(o_path, "wb") as f:
            f.write(obj)
        cmd = [find_cc(), "-shared", "-o", so_path, o_path, "-lm"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise TilecError(f"linking the CPU kernel failed: {' '.join(cmd)}\n{proc.stderr}")
        with open(so_path, "rb") as fin:
            so = fin.read()
    return bytes(obj), so


def codegen(llir: str, opt_level: int = 3, want_asm: bool = True) -> dict[str, bytes | str]:
    """LLVM IR -> {'asm': str (when asked), 'obj': bytes, 'so': bytes} for the host."""
    tm, mod = optimize(llir, opt_level)
    asm = emit_asm(tm, mod) if want_asm else ""
    obj, so = link(tm, mod)
    out: dict[str, bytes | str] = {"obj": obj, "so": so}
    if want_asm:
        out["asm"] = asm
    return out


def stages(target: Target, options: CompileOptions, *, opt_level: int = 3) -> Stages:
    """The CPU steps in order (see the module docstring)."""
    def lower_llir(c: Compilation) -> None:
        c.asm["llir"] = translate(c.module)

    def llvm_opt(c: Compilation) -> None:
        c.scratch["llvm"] = optimize(c.asm["llir"], opt_level)

    def asm(c: Compilation) -> None:
        if c.want_text:
            c.asm["asm"] = emit_asm(*c.scratch["llvm"])

    def so(c: Compilation) -> None:
        _, c.asm["so"] = link(*c.scratch["llvm"])
        if "asm" in c.asm:  # manifests have always listed the artifacts as ..., so, asm
            c.asm["asm"] = c.asm.pop("asm")
        c.metadata["host_cpu"] = list(host_cpu())

    return {
        **language_steps(),
        "convert-tile-to-cpu": pass_step("convert-tile-to-cpu", keep="cpu"),
        "lower-to-llvm": upstream_step(LOWER_TO_LLVM),
        "llir": Step(lower_llir, ("llir",)),
        "llvm-opt": Step(llvm_opt, show=lambda c: str(c.scratch["llvm"][1])),
        "asm": Step(asm, ("asm",)),
        "so": Step(so, ("so",)),
    }
