"""AMD back end: tile IR -> per-thread GPU IR -> ROCDL -> LLVM IR, AMDGCN and an HSA code object.

`stages(target, options)` is the ordered step list (targets/pipeline.py):

  tile-loop-pointers   tilec pass: loops carry scalar bases, not pointer tiles
  tile-layout          tilec pass: choose layouts
  tile-pipeline-lds    tilec pass: MFMA/WMMA K loops stream through LDS rings (num_stages >= 2)
  tile-pipeline        tilec pass (NVIDIA's families only: nothing on AMD) -> `tiled`
  convert-tile-to-gpu  tilec pass: distribute onto threads            -> `gpu`
  convert-gpu-to-rocdl upstream: gpu.module(convert-scf-to-cf, convert-amdgpu-to-rocdl,
                       convert-gpu-to-rocdl{chipset index-bitwidth runtime=OpenCL}),
                       reconcile-unrealized-casts (OpenCL: gpu.printf calls printf)
  llir                 translate the gpu.module to LLVM IR (before LLVM's optimisation) with
                       the amdgcn triple, data layout and the code-object-version flag;
                       the kernels get the function attributes of Triton's AMD options
                       `waves_per_eu` / `allow_flush_denorm` (`kernel_attributes`);
                       a module calling printf gets tilec's __printf_alloc
                       (targets/amd/printf.py)                                      -> `llir`
  amdgcn               llvmlite O<n> for the chip, then the assembly and the object code
                       (the same code; a module with inline asm: the assembly text
                       through llvm-mc, as llvmlite has no AMDGPU assembly parser);
                       kernel metadata parsed and checked                           -> `amdgcn`
  hsaco                ld.lld -shared --no-undefined (left out without ld.lld)     -> `hsaco`

Metadata: ``chip``, ``kernels`` (per kernel: ``vgpr_count``, ``sgpr_count``,
``agpr_count``, ``vgpr_spill_count``, ``sgpr_spill_count``, ``lds_bytes``,
``scratch_bytes``, ``wavefront_size``), ``code_object_version``,
``times_ms`` (per stage), the per-kernel numbers' maxima, and
``hsaco_error`` when no ld.lld was found.

MLIR's ROCDL serializer cannot be used (the MLIR wheel has no AMDGPU back
end): the gpu.module is translated to LLVM IR and compiled by llvmlite.  The
native steps each run in a forked child (`run_isolated`), because some
chip/op combinations abort LLVM.  The code object's wavefront size is checked
against ``target.warp_size``.  `compile_amd` runs the steps after
convert-tile-to-gpu on a per-thread module (tests/golden/*.mlir).
"""
from __future__ import annotations

import functools
import re
import time
from typing import Any

import llvmlite.binding as llvm_binding
from mlir import ir, passmanager
from mlir.dialects import gpu  # noqa: F401  (imported here, not lazily in each child)
from mlir.dialects import llvm as llvm_dialect

from tilec.errors import CompilerBugError
from tilec.options import CompileOptions
from tilec.targets import Target
from tilec.targets.amd.printf import link_printf_alloc
from tilec.targets.pipeline import (Compilation, Stages, Step, fresh_context, isolated,
                                    module_text, pass_step, replace_module, run_from,
                                    tile_to_gpu_steps)
from tilec.targets.toolchain import (LLD_HINT, LLVM_MC_HINT, ToolError, find_lld,
                                     find_llvm_mc, run_tool)

AMDGCN_TRIPLE = "amdgcn-amd-amdhsa"


@functools.lru_cache(maxsize=None)
def _init_llvm() -> None:
    """Register llvmlite's targets and asm printers once, in the parent."""
    llvm_binding.initialize_all_targets()
    llvm_binding.initialize_all_asmprinters()


def lowering_pipeline(target: Target, index_bitwidth: int) -> str:
    """The MLIR pipeline from per-thread IR to the LLVM dialect for ``target.chip``."""
    chip = target.chip
    if not re.fullmatch(r"gfx[0-9a-f]+", chip):
        raise CompilerBugError(f"malformed AMD chip name in target {target.name}: {chip!r}")
    return ("builtin.module(gpu.module(convert-scf-to-cf,"
            f"convert-amdgpu-to-rocdl{{chipset={chip}}},"
            f"convert-gpu-to-rocdl{{chipset={chip} index-bitwidth={index_bitwidth}"
            " runtime=OpenCL}),"
            "reconcile-unrealized-casts)")


def _lower(module: ir.Module, lower: str) -> float:
    """Lower `module` to the LLVM dialect in place; the ms taken."""
    t0 = time.perf_counter()
    try:
        passmanager.PassManager.parse(lower).run(module.operation)
    except ir.MLIRError as exc:
        raise CompilerBugError(f"AMD lowering failed ({lower}):\n{exc}") from None
    return (time.perf_counter() - t0) * 1e3


def _target_machine(chip: str, opt_level: int) -> Any:
    # No features: every chip gets its default wave size (gfx9: 64, gfx10+: 32).
    return llvm_binding.Target.from_triple(AMDGCN_TRIPLE).create_target_machine(
        cpu=chip, features="", opt=opt_level, reloc="pic")


def kernel_attributes(options: CompileOptions) -> tuple[tuple[str, str], ...]:
    """The LLVM function attributes Triton's AMD options put on each kernel (its
    HIP back end adds the same): "amdgpu-waves-per-eu" (the minimum waves per
    execution unit to aim at) when `waves_per_eu` > 0; f32 denormals flushed
    ("denormal-fp-math-f32"="preserve-sign") when `allow_flush_denorm`.
    Without them LLVM's defaults hold (no occupancy goal, IEEE f32
    denormals), so default options add nothing."""
    attrs: list[tuple[str, str]] = []
    if options.waves_per_eu:
        attrs.append(("amdgpu-waves-per-eu", str(options.waves_per_eu)))
    if options.allow_flush_denorm:
        attrs.append(("denormal-fp-math-f32", "preserve-sign,preserve-sign"))
    return tuple(attrs)


def _add_kernel_attributes(gpu_module: Any, attrs: tuple[tuple[str, str], ...]) -> None:
    """`attrs` on every kernel (`rocdl.kernel`) llvm.func of the gpu.module, as
    string function attributes (the llvm.func's `passthrough` list)."""
    found = 0
    for op in gpu_module.regions[0].blocks[0].operations:
        fn = op.operation
        if fn.name != "llvm.func" or "rocdl.kernel" not in fn.attributes:
            continue
        found += 1
        old = list(fn.attributes["passthrough"]) if "passthrough" in fn.attributes else []
        fn.attributes["passthrough"] = ir.ArrayAttr.get(
            old + [ir.ArrayAttr.get([ir.StringAttr.get(k), ir.StringAttr.get(v)])
                   for k, v in attrs])
    if not found:
        raise CompilerBugError("no rocdl.kernel function to put the AMD options on")


def _translate(module: ir.Module, chip: str, opt_level: int,
               code_object_version: int | None,
               attrs: tuple[tuple[str, str], ...] = ()) -> tuple[Any, float]:
    """Verified LLVM IR (an llvmlite module) of the gpu.module for `chip`, and ms
    taken; `attrs`: function attributes for the kernels (`kernel_attributes`)."""
    t0 = time.perf_counter()
    gpu_modules = [op for op in module.body.operations if op.operation.name == "gpu.module"]
    if len(gpu_modules) != 1:
        raise CompilerBugError(f"expected one gpu.module, found {len(gpu_modules)}")
    gpu_module = gpu_modules[0]
    if attrs:
        _add_kernel_attributes(gpu_module, attrs)
    if code_object_version is not None:
        flag = ir.Attribute.parse(
            '#llvm.mlir.module_flag<error, '
            f'"amdhsa_code_object_version", {code_object_version * 100} : i32>')
        with ir.InsertionPoint.at_block_begin(gpu_module.regions[0].blocks[0]):
            llvm_dialect.ModuleFlagsOp(ir.ArrayAttr.get([flag]))
    translated = str(llvm_dialect.translate_module_to_llvmir(gpu_module.operation))
    ms = (time.perf_counter() - t0) * 1e3
    tm = _target_machine(chip, opt_level)
    mod = llvm_binding.parse_assembly(translated)
    mod.triple = AMDGCN_TRIPLE
    mod.data_layout = str(tm.target_data)
    mod.verify()
    link_printf_alloc(mod, code_object_version)    # tl.device_print: printf.py
    return mod, ms


def _codegen(mod: Any, chip: str, opt_level: int) -> dict[str, Any]:
    """llvmlite O<n> on the llvmlite module `mod`, then its assembly and object code."""
    times: dict[str, float] = {}
    tm = _target_machine(chip, opt_level)
    t0 = time.perf_counter()
    if opt_level > 0:
        pb = llvm_binding.create_pass_builder(
            tm, llvm_binding.PipelineTuningOptions(speed_level=opt_level))
        pb.getModulePassManager().run(mod, pb)
    times["llvm_opt"] = (time.perf_counter() - t0) * 1e3
    # A module may be emitted only once (a second emit aborts): clone for each.
    t0 = time.perf_counter()
    asm = tm.emit_assembly(mod.clone())
    times["emit_asm"] = (time.perf_counter() - t0) * 1e3
    if _has_inline_asm(str(mod)):
        # No AMDGPU assembly parser in llvmlite: emit_object would abort the
        # child; the parent assembles the text with llvm-mc (the `amdgcn` step).
        return {"amdgcn": asm, "object": None, "times_ms": times}
    t0 = time.perf_counter()
    obj = tm.emit_object(mod.clone())
    times["emit_obj"] = (time.perf_counter() - t0) * 1e3
    return {"amdgcn": asm, "object": bytes(obj), "times_ms": times}


def _has_inline_asm(llir: str) -> bool:
    """Whether LLVM IR text calls inline assembly (`call ... asm [sideeffect] "..."`)."""
    return re.search(r"\bcall\b[^\n]*\basm\b(?: \w+)* \"", llir) is not None


def _assemble(mc: str, asm: str, chip: str) -> tuple[bytes, float]:
    """`mc` on AMDGCN text: the object code and the seconds taken."""
    run = run_tool([mc, f"-triple={AMDGCN_TRIPLE}", f"-mcpu={chip}", "-filetype=obj",
                    "kernel.s", "-o", "kernel.o"], {"kernel.s": asm}, outputs=["kernel.o"],
                   what="llvm-mc")
    return run.outputs["kernel.o"], run.seconds


_KERNEL_KEYS = {
    ".vgpr_count": "vgpr_count", ".sgpr_count": "sgpr_count", ".agpr_count": "agpr_count",
    ".vgpr_spill_count": "vgpr_spill_count", ".sgpr_spill_count": "sgpr_spill_count",
    ".group_segment_fixed_size": "lds_bytes",
    ".private_segment_fixed_size": "scratch_bytes", ".wavefront_size": "wavefront_size",
}


def parse_amdgpu_metadata(asm: str) -> dict[str, dict[str, int]]:
    """Per-kernel numbers from the ``.amdgpu_metadata`` block of AMDGCN assembly.

    Returns {kernel: {vgpr_count, sgpr_count, agpr_count, vgpr_spill_count,
    sgpr_spill_count, lds_bytes, scratch_bytes, wavefront_size}} (keys that
    the block lacks are left out).
    """
    m = re.search(r"^\s*\.amdgpu_metadata\s*$(.*?)^\s*\.end_amdgpu_metadata", asm, re.M | re.S)
    if not m:
        return {}
    kernels: dict[str, dict[str, int]] = {}
    entries: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in m.group(1).splitlines():
        # A kernel record starts with "  - .name: ..." at the first list level.
        item = re.match(r"^  - (\.[\w]+):\s*(.*)$", line)
        field = re.match(r"^    (\.[\w]+):\s*(.*)$", line)
        if item:
            current = {}
            entries.append(current)
            key, value = item.groups()
        elif field and current is not None:
            key, value = field.groups()
        else:
            continue
        current[key] = value.strip()
    for e in entries:
        name = e.get(".name")
        if not name:
            continue
        kernels[name] = {short: int(e[key]) for key, short in _KERNEL_KEYS.items()
                         if key in e and re.fullmatch(r"\d+", e[key])}
    return kernels


def _check_code_object(asm: str, target: Target) -> tuple[dict[str, dict[str, int]], int | None]:
    """The kernels' metadata and the code object version, checked against `target`."""
    kernels = parse_amdgpu_metadata(asm)
    if not kernels:
        raise CompilerBugError(f"no kernel metadata in the AMDGCN assembly for {target.chip}")
    for name, k in kernels.items():
        if k.get("wavefront_size") != target.warp_size:
            raise CompilerBugError(
                f"kernel {name} was compiled for wavefront size {k.get('wavefront_size')}, "
                f"but target {target.name} says warp_size={target.warp_size}")
    cov = re.search(r"^\s*\.amdhsa_code_object_version\s+(\d+)", asm, re.M)
    version = int(cov.group(1)) if cov else None
    if target.code_object_version is not None and version != target.code_object_version:
        raise CompilerBugError(f"code object version {version} was emitted, "
                               f"target {target.name} asks for {target.code_object_version}")
    return kernels, version


def _link(lld: str, obj: bytes) -> tuple[bytes, float]:
    """`lld` -shared --no-undefined: the .hsaco and the seconds taken."""
    try:
        run = run_tool([lld, "-shared", "--no-undefined", "kernel.o", "-o", "kernel.hsaco"],
                       {"kernel.o": obj}, outputs=["kernel.hsaco"], what="ld.lld")
    except ToolError as exc:
        if "undefined symbol" in exc.log:
            raise ToolError(f"{exc}\nThe kernel calls a device-library function that "
                            f"tilec does not link (e.g. gpu.block_dim lowers to "
                            f"__ockl_get_local_size: use a compile-time block size).",
                            exc.cmd, exc.log, exc.workdir) from None
        raise
    return run.outputs["kernel.hsaco"], run.seconds


def _child_chain(text: str, lower: str, chip: str, opt_level: int,
                 cov: int | None, attrs: tuple[tuple[str, str], ...] = ()) -> dict[str, Any]:
    """In one isolated child: lowering, LLVM IR translation and code generation
    (one fork per compile instead of one per step; each step's result comes back)."""
    with fresh_context():
        module = ir.Module.parse(text)
        lower_ms = _lower(module, lower)
        lowered = str(module.operation.get_asm(enable_debug_info=True))
        mod, translate_ms = _translate(module, chip, opt_level, cov, attrs)
    llir = str(mod)
    return {"lowered": lowered, "mlir_lower": lower_ms, "llir": llir,
            "translate": translate_ms, "codegen": _codegen(mod, chip, opt_level)}


def stages(target: Target, options: CompileOptions, *, opt_level: int = 3,
           index_bitwidth: int = 32) -> Stages:
    """The AMD steps in order (see the module docstring).

    ``opt_level`` (0-3): llvmlite's pass pipeline and code generator level.
    ``index_bitwidth``: width of ``index`` after lowering (32: fewer VGPRs).
    """
    lower = lowering_pipeline(target, index_bitwidth)
    level = max(0, min(opt_level, 3))
    chip, cov = target.chip, target.code_object_version
    attrs = kernel_attributes(options)
    attrs_note = "".join(f' "{k}"="{v}"' for k, v in attrs)

    # The three LLVM-backed steps run in one isolated child (LLVM aborts the
    # process on some inputs); the first step starts it, the next two take
    # their results, so --print-after-all still shows each step.
    def convert_gpu_to_rocdl(c: Compilation) -> None:
        _init_llvm()
        # The metadata keys in the order the manifest has always shown them.
        c.metadata.update(chip=chip, kernels={}, code_object_version=None, times_ms={})
        text = module_text(c)
        chain = isolated(c, _child_chain, text, lower, chip, level, cov, attrs,
                         what="AMD lowering, LLVM IR translation and code generation",
                         reproducer={"input.mlir": text,
                                     "pipeline.txt": f"{lower}\ntranslate_module_to_llvmir "
                                                     f"code_object_version={cov}"
                                                     f"{' kernel attributes' if attrs else ''}"
                                                     f"{attrs_note}\n"
                                                     f"llvmlite cpu={chip} O{level}\n"},
                         last=True)
        c.scratch["amd"] = chain
        c.times_ms()["mlir_lower"] = chain["mlir_lower"]
        replace_module(c, chain["lowered"])

    def llir(c: Compilation) -> None:
        chain = c.scratch["amd"]
        c.asm["llir"] = chain["llir"]
        c.times_ms()["translate"] = chain["translate"]

    def amdgcn(c: Compilation) -> None:
        out = c.scratch.pop("amd")["codegen"]
        c.times_ms().update(out["times_ms"])
        c.times_ms()["isolated_total"] = c.times_ms().pop("isolated_total")
        c.asm["amdgcn"] = out["amdgcn"]
        if out["object"] is None:      # inline asm: convert-tile-to-gpu checked for llvm-mc
            mc = find_llvm_mc()
            if mc is None:
                raise CompilerBugError(f"inline AMDGCN without an llvm-mc: {LLVM_MC_HINT}")
            out["object"], seconds = _assemble(mc, out["amdgcn"], chip)
            c.times_ms()["llvm-mc"] = seconds * 1e3
        c.scratch["object"] = out["object"]
        kernels, version = _check_code_object(out["amdgcn"], target)
        c.metadata.update(kernels=kernels, code_object_version=version)
        for key in _KERNEL_KEYS.values():
            c.metadata[key] = max((k.get(key, 0) for k in kernels.values()), default=0)

    def hsaco(c: Compilation) -> None:
        lld = find_lld()
        if lld is None:
            c.metadata["hsaco_error"] = f"no ld.lld found, so no .hsaco was linked: {LLD_HINT}"
            return
        c.asm["hsaco"], seconds = _link(lld, c.scratch["object"])
        c.times_ms()["ld.lld"] = seconds * 1e3

    # tile-loop-pointers (in tile_to_gpu_steps) makes loop-carried pointer
    # tiles carried scalar bases before the layouts are chosen (SGPR base +
    # 32-bit offsets in the K loops).
    gpu_steps = tile_to_gpu_steps(flatten=False)   # tile-pipeline-lds takes the nest
    names = list(gpu_steps)
    cut = names.index("tile-layout")
    first = {k: gpu_steps[k] for k in names[:cut]}
    rest = {k: gpu_steps[k] for k in names[cut + 1:]}
    return {
        **first,
        "tile-layout": gpu_steps["tile-layout"],
        "tile-pipeline-lds": pass_step("tile-pipeline-lds"),
        **rest,
        "convert-gpu-to-rocdl": Step(convert_gpu_to_rocdl, (), lower),
        "llir": Step(llir, ("llir",)),
        "amdgcn": Step(amdgcn, ("amdgcn",)),
        "hsaco": Step(hsaco, ("hsaco",)),
    }


def compile_amd(module: ir.Module, target: Target, opt_level: int = 3, *,
                index_bitwidth: int = 32) -> dict[str, Any]:
    """The steps after convert-tile-to-gpu on a per-thread GPU module.

    Returns {"llir": str, "amdgcn": str, "hsaco": bytes or None, "metadata": dict}."""
    steps = stages(target, CompileOptions(), opt_level=opt_level, index_bitwidth=index_bitwidth)
    c = run_from(module, target, steps, "convert-gpu-to-rocdl")
    return {"llir": c.asm["llir"], "amdgcn": c.asm["amdgcn"], "hsaco": c.asm.get("hsaco"),
            "metadata": c.metadata}
