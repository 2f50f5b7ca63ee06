"""AMD back end: per-thread GPU IR -> LLVM IR, AMDGCN assembly and an HSA code object.

Input: an ``mlir.ir.Module`` (builtin.module) holding ``gpu.module @tilec``
with ``gpu.func ... kernel`` functions at the per-thread level (see
tests/golden/*.mlir), and an AMD `Target`.

Output of `compile_amd`: a dict
  ``llir``     str: LLVM IR of the device module as MLIR translates it (before
               LLVM's optimisation) with the amdgcn triple, data layout and the
               code-object-version module flag;
  ``amdgcn``   str: assembly (llvmlite, the same object code as ``hsaco``);
  ``hsaco``    bytes: the code object linked by ``ld.lld -shared --no-undefined``,
               or None when no ld.lld was found (then ``metadata["hsaco_error"]``);
  ``metadata`` dict: ``vgpr_count``, ``sgpr_count``, ``agpr_count``,
               ``vgpr_spill_count``, ``sgpr_spill_count``, ``lds_bytes``,
               ``scratch_bytes``, ``wavefront_size`` (maximum over kernels),
               ``kernels`` (the same per kernel), ``code_object_version``,
               ``chip`` and ``times_ms`` (per stage).

MLIR's ROCDL serializer cannot be used (the MLIR wheel has no AMDGPU back
end): the gpu.module is translated to LLVM IR and compiled by llvmlite, in a
forked child (`run_isolated`), because some chip/op combinations abort LLVM.
The code object's wavefront size is checked against ``target.warp_size``.
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
from tilec.targets import Target
from tilec.targets.isolate import run_isolated
from tilec.targets.toolchain import LLD_HINT, ToolError, find_lld, run_tool

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
            f"convert-gpu-to-rocdl{{chipset={chip} index-bitwidth={index_bitwidth}}}),"
            "reconcile-unrealized-casts)")


def _child_compile(text: str, lower: str, chip: str, opt_level: int,
                   code_object_version: int | None) -> dict[str, Any]:
    """In the isolated child: MLIR lowering, translation, llvmlite O<n>, asm and object."""
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
            raise CompilerBugError(f"AMD lowering failed ({lower}):\n{exc}") from None
        t0 = time.perf_counter()
        gpu_modules = [op for op in module.body.operations
                       if op.operation.name == "gpu.module"]
        if len(gpu_modules) != 1:
            raise CompilerBugError(f"expected one gpu.module, found {len(gpu_modules)}")
        gpu_module = gpu_modules[0]
        if code_object_version is not None:
            flag = ir.Attribute.parse(
                '#llvm.mlir.module_flag<error, '
                f'"amdhsa_code_object_version", {code_object_version * 100} : i32>')
            with ir.InsertionPoint.at_block_begin(gpu_module.regions[0].blocks[0]):
                llvm_dialect.ModuleFlagsOp(ir.ArrayAttr.get([flag]))
        translated = str(llvm_dialect.translate_module_to_llvmir(gpu_module.operation))
        times["translate"] = (time.perf_counter() - t0) * 1e3

    # No features: every chip gets its default wave size (gfx9: 64, gfx10+: 32).
    tm = llvm_binding.Target.from_triple(AMDGCN_TRIPLE).create_target_machine(
        cpu=chip, features="", opt=opt_level, reloc="pic")
    mod = llvm_binding.parse_assembly(translated)
    mod.triple = AMDGCN_TRIPLE
    mod.data_layout = str(tm.target_data)
    mod.verify()
    llir = str(mod)
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
    t0 = time.perf_counter()
    obj = tm.emit_object(mod.clone())
    times["emit_obj"] = (time.perf_counter() - t0) * 1e3
    return {"llir": llir, "amdgcn": asm, "object": bytes(obj), "times_ms": times}


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


def compile_amd(module: ir.Module, target: Target, opt_level: int = 3, *,
                index_bitwidth: int = 32) -> dict[str, Any]:
    """Compile a per-thread GPU module for an AMD ``target``; see the module docstring.

    ``opt_level`` (0-3): llvmlite's pass pipeline and code generator level.
    ``index_bitwidth``: width of ``index`` after lowering (32: fewer VGPRs).
    """
    text = module.operation.get_asm(enable_debug_info=True)
    lower = lowering_pipeline(target, index_bitwidth)
    level = max(0, min(opt_level, 3))
    _init_llvm()
    t0 = time.perf_counter()
    out = run_isolated(_child_compile, text, lower, target.chip, level,
                       target.code_object_version,
                       what=f"AMD compilation for {target.name}",
                       reproducer={"input.mlir": text,
                                   "pipeline.txt": f"{lower}\nllvmlite cpu={target.chip} "
                                                   f"O{level} code_object_version="
                                                   f"{target.code_object_version}\n"})
    times: dict[str, float] = out["times_ms"]
    times["isolated_total"] = (time.perf_counter() - t0) * 1e3
    asm: str = out["amdgcn"]

    kernels = parse_amdgpu_metadata(asm)
    if not kernels:
        raise CompilerBugError(f"no kernel metadata in the AMDGCN assembly for {target.chip}")
    for name, k in kernels.items():
        if k.get("wavefront_size") != target.warp_size:
            raise CompilerBugError(
                f"kernel {name} was compiled for wavefront size {k.get('wavefront_size')}, "
                f"but target {target.name} says warp_size={target.warp_size}")
    cov = re.search(r"^\s*\.amdhsa_code_object_version\s+(\d+)", asm, re.M)
    code_object_version = int(cov.group(1)) if cov else None
    if target.code_object_version is not None and code_object_version != target.code_object_version:
        raise CompilerBugError(f"code object version {code_object_version} was emitted, "
                               f"target {target.name} asks for {target.code_object_version}")
    metadata: dict[str, Any] = {"chip": target.chip, "kernels": kernels,
                                "code_object_version": code_object_version, "times_ms": times}
    for key in _KERNEL_KEYS.values():
        metadata[key] = max((k.get(key, 0) for k in kernels.values()), default=0)

    hsaco: bytes | None = None
    lld = find_lld()
    if lld is None:
        metadata["hsaco_error"] = f"no ld.lld found, so no .hsaco was linked: {LLD_HINT}"
    else:
        try:
            run = run_tool([lld, "-shared", "--no-undefined", "kernel.o", "-o", "kernel.hsaco"],
                           {"kernel.o": out["object"]}, outputs=["kernel.hsaco"], what="ld.lld")
        except ToolError as exc:
            if "undefined symbol" in exc.log:
                raise ToolError(f"{exc}\nThe kernel calls a device-library function that "
                                f"tilec does not link (e.g. gpu.block_dim lowers to "
                                f"__ockl_get_local_size: use a compile-time block size).",
                                exc.cmd, exc.log, exc.workdir) from None
            raise
        times["ld.lld"] = run.seconds * 1e3
        hsaco = run.outputs["kernel.hsaco"]
    return {"llir": out["llir"], "amdgcn": asm, "hsaco": hsaco, "metadata": metadata}
