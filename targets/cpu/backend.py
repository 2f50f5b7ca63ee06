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

Host features: the cpu record's features are an AVX-512 host's; `host_target`
drops those this host lacks (HOST_FEATURES).  Without MASKED_NARROW_MEMORY
convert-tile-to-cpu loops over masked narrow lanes; without
BF16_VECTOR_CONVERT lower-to-llvm first computes bf16 in f32 and keeps bf16
values as i16 (bf16.py), since LLVM would take wide bf16 vectors apart lane by
lane.

The native steps (lower-to-llvm through so) run in one forked child
(targets/isolate.py, as the GPU back ends do): LLVM reports some failures
by aborting (an assertion in instruction selection for a huge vector), which
then becomes a `ChildCrashError` with a reproducer directory instead of the
death of the user's process.  The first of those steps starts the child; the
later ones take its results, so `--print-after-all` still shows each step.
"""
from __future__ import annotations

import dataclasses
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
from tilec.passes import registry
from tilec.passes.cpu.context import ROLLED_LOOPS
from tilec.targets import Feature, Target, toolchain
from tilec.targets.cpu import bf16
from tilec.targets.pipeline import (
    Compilation, LazyFiles, Stages, Step, isolated, language_steps, module_text, replace_module,
)

LOWER_TO_LLVM = ("builtin.module(canonicalize,cse,convert-math-to-llvm,convert-vector-to-scf,"
                 "convert-scf-to-cf,convert-vector-to-llvm,convert-arith-to-llvm,"
                 "convert-func-to-llvm,convert-cf-to-llvm,convert-index-to-llvm,"
                 "reconcile-unrealized-casts)")


# Host features LLVM must not use.  `avx512vl` (the 128/256-bit forms of
# AVX-512): LLVM 22.1's x86 back end picks lane 0 for another lane when it
# extracts from a row broadcast ([R, 1] -> [R, C] shuffles of i64 offsets), so
# a 2-D tile addressed with int64 offsets loaded row 0 twice
# (tests/test_cpu_codegen_bugs.py).  512-bit AVX-512 stays on.  The features
# whose instructions need the VL forms go with it (with fp16 left on, LLVM
# aborted selecting a v8f16 max; bf16 stays, turning it off made bf16 row
# reductions take minutes to compile).
AVOID_FEATURES = ("avx512vl", "avx512fp16")

# The CPU record's features and the host features (LLVM's names) each needs.
HOST_FEATURES: dict[Feature, tuple[str, ...]] = {
    Feature.MASKED_NARROW_MEMORY: ("avx512bw",),
    Feature.BF16_VECTOR_CONVERT: ("avx512bf16",),
}


@functools.lru_cache(maxsize=1)
def host_cpu() -> tuple[str, str]:
    """(cpu name, feature string) of this machine, as LLVM names them."""
    import llvmlite.binding as llb
    llb.initialize_native_target()
    llb.initialize_native_asmprinter()
    features = llb.get_host_cpu_features()
    for name in AVOID_FEATURES:
        if features.get(name):
            features[name] = False
    return llb.get_host_cpu_name(), features.flatten()


def host_target(target: Target) -> Target:
    """`target` without the features this host lacks (HOST_FEATURES)."""
    _, flat = host_cpu()
    have = {f[1:] for f in flat.split(",") if f.startswith("+")}
    lacking = {f for f, needs in HOST_FEATURES.items() if not have.issuperset(needs)}
    if not lacking & target.features:
        return target
    return dataclasses.replace(target, features=target.features - lacking)


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


# f32 -> bf16 with round to nearest even (NaNs stay quiet NaNs).  Without
# AVX512-BF16 LLVM lowers the cast, and bf16 math it promotes to f32, to a call
# of this libgcc helper, which GCC before 13 does not have; each kernel that
# mentions bf16 carries its own (weak, hidden) copy.
BF16_TRUNC_HELPER = """
define weak hidden bfloat @__truncsfbf2(float %x) {
  %bits = bitcast float %x to i32
  %nan = fcmp uno float %x, 0.0
  %hi = lshr i32 %bits, 16
  %lsb = and i32 %hi, 1
  %bias = add i32 %lsb, 32767
  %rounded = add i32 %bits, %bias
  %r16 = lshr i32 %rounded, 16
  %quiet = or i32 %hi, 64
  %sel = select i1 %nan, i32 %quiet, i32 %r16
  %t = trunc i32 %sel to i16
  %b = bitcast i16 %t to bfloat
  ret bfloat %b
}
"""


def optimize(llir: str, opt_level: int = 3, unroll: bool = True) -> tuple[Any, Any]:
    """(target machine, optimized llvmlite module) of `llir` for the host
    (without LLVM's loop unrolling when not `unroll`)."""
    import llvmlite.binding as llb
    if "bfloat" in llir and "@__truncsfbf2" not in llir:
        llir = llir + BF16_TRUNC_HELPER
    cpu, features = host_cpu()
    target = llb.Target.from_default_triple()
    tm = target.create_target_machine(cpu=cpu, features=features, opt=opt_level, reloc="pic",
                                      codemodel="default")
    mod = llb.parse_assembly(llir)
    mod.triple = target.triple
    mod.data_layout = str(tm.target_data)
    mod.verify()
    pto = llb.PipelineTuningOptions(speed_level=opt_level)
    pto.loop_unrolling = unroll
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


def rolled_loops(module: ir.Module) -> bool:
    """Whether convert-tile-to-cpu asked for its loops to stay rolled (and
    drop the request, which no later step knows).  Kernels whose big tiles
    are loops over chunks (passes/cpu/tiled.py) ask: unrolling those short
    constant-trip loops measured no faster at run time but doubled code
    generation time (64 x 64 x 32 matmul: 2.5 s -> 1.2 s)."""
    attrs = module.operation.attributes
    if ROLLED_LOOPS not in attrs:
        return False
    del attrs[ROLLED_LOOPS]
    return True


def _child_chain(module: ir.Module, opt_level: int, want_text: bool,
                 unroll: bool = True, emulate_bf16: bool = False) -> dict[str, Any]:
    """In the isolated child: the CPU module (inherited through fork, its
    context single-threaded) -> lowered module (text, when `want_text`), LLVM
    IR, optimized LLVM IR, assembly (when `want_text`) and the shared object.
    `emulate_bf16`: bf16 arithmetic in f32 and bf16 values as i16 (bf16.py)."""
    import time
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    with module.context, ir.Location.unknown():
        if emulate_bf16:
            bf16.prepare(module)
        lower_to_llvm_dialect(module)
        out["lowered"] = str(module.operation.get_asm(enable_debug_info=True)) if want_text else None
        out["llir"] = translate(module)
        if emulate_bf16:
            out["llir"] = bf16.retype(out["llir"])
    t1 = time.perf_counter()
    tm, mod = optimize(out["llir"], opt_level, unroll)
    out["opt_llir"] = str(mod) if want_text else None
    t2 = time.perf_counter()
    out["asm"] = emit_asm(tm, mod) if want_text else None
    t3 = time.perf_counter()
    _, out["so"] = link(tm, mod)
    out["times_ms"] = {"mlir_lower": (t1 - t0) * 1e3, "llvm_opt": (t2 - t1) * 1e3,
                       "asm": (t3 - t2) * 1e3, "so": (time.perf_counter() - t3) * 1e3}
    return out


def _reproducer(c: Compilation, opt_level: int, emulate_bf16: bool) -> LazyFiles:
    """The reproducer files, printed only when the child crashed (printing a
    large module costs milliseconds on every compile otherwise)."""
    first = f"{bf16.EMULATE} (targets/cpu/bf16.py prepare)\n" if emulate_bf16 else ""
    return LazyFiles({"input.mlir": lambda: module_text(c),
                      "pipeline.txt": lambda: f"{first}{LOWER_TO_LLVM}\ntranslate_module_to_llvmir\n"
                                              f"llvmlite O{opt_level}, emit_object, cc -shared\n"})


def stages(target: Target, options: CompileOptions, *, opt_level: int = 3) -> Stages:
    """The CPU steps in order (see the module docstring)."""
    def convert(c: Compilation) -> None:
        registry.run("convert-tile-to-cpu", c.module, host_target(c.target), c.options)
        c.asm["cpu"] = c.text()

    def lower(c: Compilation) -> None:
        host_cpu()                      # llvmlite's target set up once, in this process
        find_cc()                       # a missing C compiler is the user's to fix: say so here
        unroll = not rolled_loops(c.module)
        emulate = Feature.BF16_VECTOR_CONVERT not in host_target(c.target).features
        out = isolated(c, _child_chain, c.module, opt_level, c.want_text, unroll, emulate,
                       what="CPU lowering, LLVM optimization and linking",
                       reproducer=_reproducer(c, opt_level, emulate), last=True)
        c.scratch["cpu"] = out
        c.times_ms().update(out["times_ms"])
        if out["lowered"] is not None:
            replace_module(c, out["lowered"])

    def lower_llir(c: Compilation) -> None:
        c.asm["llir"] = c.scratch["cpu"]["llir"]

    def asm(c: Compilation) -> None:
        if c.want_text:
            c.asm["asm"] = c.scratch["cpu"]["asm"]

    def so(c: Compilation) -> None:
        c.asm["so"] = c.scratch.pop("cpu")["so"]
        if "asm" in c.asm:  # manifests have always listed the artifacts as ..., so, asm
            c.asm["asm"] = c.asm.pop("asm")
        c.metadata["host_cpu"] = list(host_cpu())

    return {
        **language_steps(),
        "convert-tile-to-cpu": Step(convert, ("cpu",), "convert-tile-to-cpu"),
        "lower-to-llvm": Step(lower, (), LOWER_TO_LLVM),
        "llir": Step(lower_llir, ("llir",)),
        "llvm-opt": Step(lambda c: None,
                         show=lambda c: c.scratch["cpu"]["opt_llir"] or "// (not kept for a launch)"),
        "asm": Step(asm, ("asm",)),
        "so": Step(so, ("so",)),
    }
