"""CPU back end: CPU-level MLIR -> LLVM IR -> host object -> shared object.

Input: a module produced by `convert-tile-to-cpu` (upstream dialects only).
Output: artifacts `llir` (LLVM IR text), `asm` (host assembly), `so` (a shared
object exporting `tilec_<kernel>`), built with llvmlite for the host CPU (its
name and features enter the cache key) and linked with the system C compiler.
The shared object needs no MLIR at run time.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile

from mlir import ir
from mlir.dialects import llvm as llvm_d
from mlir.passmanager import PassManager

from tilec.errors import TilecError

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
    for name in (os.environ.get("CC", ""), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return name
    raise TilecError("no C compiler found to link the CPU kernel (tried $CC, cc, gcc, clang); "
                     "install one, e.g. `apt-get install gcc`")


def codegen(llir: str, opt_level: int = 3, want_asm: bool = True) -> dict[str, bytes | str]:
    """LLVM IR -> {'asm': str (when asked), 'obj': bytes, 'so': bytes} for the host.

    The module is optimized once; the assembly text, when wanted, is emitted
    from a re-parsed copy of the optimized IR (one emission per module)."""
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
    asm = tm.emit_assembly(llb.parse_assembly(str(mod))) if want_asm else ""
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
    out: dict[str, bytes | str] = {"obj": obj, "so": so}
    if want_asm:
        out["asm"] = asm
    return out
