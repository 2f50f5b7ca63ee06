"""Tests of the GPU back ends (targets/nvidia/backend.py, targets/amd/backend.py) and their helpers.

Inputs are hand-written per-thread kernels in tests/golden/: a vector add
(vadd.mlir) and a block sum reduction (block_sum.mlir.in, a template that gets
the target's warp size formatted in).  Every GPU target in TARGETS compiles
both; the artifacts are checked with FileCheck, llvm-readelf and the ptxas /
code-object register reports.
"""
from __future__ import annotations

import functools
import math
import os
import pathlib
import shutil
import struct
import sys
from typing import Any

import pytest
from mlir import ir

from tilec.errors import CompilerBugError, TilecError
from tilec.targets import TARGETS, Target
from tilec.targets import toolchain
from tilec.targets.amd.backend import compile_amd, parse_amdgpu_metadata
from tilec.targets.isolate import ChildCrashError, run_isolated
from tilec.targets.nvidia.backend import (NVPTX_DATA_LAYOUTS, check_ptx, compile_nvidia,
                                          llvm_data_layout, parse_ptxas_log)
from toolcheck import filecheck, readelf

GOLDEN = pathlib.Path(__file__).parent / "golden"
GPU_TARGETS = [name for name, t in TARGETS.items() if t.vendor in ("nvidia", "amd")]
NV_TARGETS = [n for n in GPU_TARGETS if TARGETS[n].vendor == "nvidia"]
AMD_TARGETS = [n for n in GPU_TARGETS if TARGETS[n].vendor == "amd"]
BLOCK_SUM_THREADS = 256


# ------------------------------------------------------------------ golden inputs

def _butterfly(src: str, dst: str, prefix: str, warp: int, indent: str) -> str:
    """`gpu.shuffle xor` butterfly over offsets warp/2 .. 1, summing %src into %dst."""
    lines, cur, off, k = [], src, warp // 2, 0
    while off >= 1:
        lines.append(f"{indent}%{prefix}o{k} = arith.constant {off} : i32")
        lines.append(f"{indent}%{prefix}sh{k}, %{prefix}ok{k} = "
                     f"gpu.shuffle xor %{cur}, %{prefix}o{k}, %cW : f32")
        nxt = dst if off == 1 else f"{prefix}acc{k}"
        lines.append(f"{indent}%{nxt} = arith.addf %{cur}, %{prefix}sh{k} : f32")
        cur, off, k = nxt, off // 2, k + 1
    return "\n".join(lines)


def render_block_sum(warp: int, threads: int = BLOCK_SUM_THREADS) -> str:
    """The block sum kernel for a target whose warp has `warp` lanes."""
    template = (GOLDEN / "block_sum.mlir.in").read_text()
    return template.format(warp=warp, threads=threads, nwarps=threads // warp,
                           butterfly1=_butterfly("v", "s1", "a", warp, " " * 6),
                           butterfly2=_butterfly("w", "s2", "b", warp, " " * 8))


def golden_text(kernel: str, target: Target) -> str:
    if kernel == "vadd":
        return (GOLDEN / "vadd.mlir").read_text()
    return render_block_sum(target.warp_size)


def parse(text: str) -> ir.Module:
    ctx = ir.Context()
    ctx.enable_multithreading(False)  # this process forks (run_isolated)
    with ctx:
        return ir.Module.parse(text)


@functools.lru_cache(maxsize=None)
def compiled(target_name: str, kernel: str) -> dict[str, Any]:
    """Artifacts of one golden kernel for one target (compiled once per session)."""
    target = TARGETS[target_name]
    backend = {"nvidia": compile_nvidia, "amd": compile_amd}[target.vendor]
    return backend(parse(golden_text(kernel, target)), target)


# ------------------------------------------------------------------ helpers





def kernel_descriptor(elf: bytes, symbol: str) -> bytes:
    """The 64 bytes of an AMDHSA kernel descriptor `<kernel>.kd` in an ELF64 file."""
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", elf, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize)
                for i in range(shnum)]
    for sh in sections:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sh[6]]
        for off in range(sh[4], sh[4] + sh[5], 24):
            name_off, _info, _other, shndx, value, _size = struct.unpack_from("<IBBHQQ", elf, off)
            start = strtab[4] + name_off
            name = elf[start:elf.index(b"\0", start)].decode()
            if name == symbol:
                sec = sections[shndx]
                pos = sec[4] + (value - sec[3])
                return elf[pos:pos + 64]
    raise AssertionError(f"symbol {symbol} not in the code object")


# ------------------------------------------------------------------ isolate.py

def _boom() -> None:
    os.write(2, b"about to abort\n")
    os.abort()


def _raise_value_error() -> None:
    raise ValueError("bad value 42")


def _raise_tilec_error() -> None:
    raise CompilerBugError("pass X failed", reproducer="/tmp/somewhere")


class _Unpicklable(Exception):
    def __init__(self) -> None:
        super().__init__("cannot cross")
        self.handle = lambda: None  # lambdas do not pickle


def _raise_unpicklable() -> None:
    raise _Unpicklable()


def _sleep() -> None:
    import time
    time.sleep(30)


def test_isolate_returns_result() -> None:
    assert run_isolated(sum, [1, 2, 3]) == 6
    big = run_isolated(bytes, 10_000_000)  # far more than a pipe buffer
    assert big == bytes(10_000_000)


def test_isolate_abort_becomes_error() -> None:
    parent = os.getpid()
    with pytest.raises(ChildCrashError) as info:
        run_isolated(_boom, what="the test child")
    assert os.getpid() == parent
    err = info.value
    assert isinstance(err, CompilerBugError) and isinstance(err, TilecError)
    assert err.signal == 6
    assert "SIGABRT" in str(err) and "about to abort" in str(err)
    assert "about to abort" in err.stderr


def test_isolate_reproducer_written_on_crash() -> None:
    with pytest.raises(ChildCrashError) as info:
        run_isolated(_boom, reproducer={"input.mlir": "module {}"})
    repro = info.value.reproducer
    assert repro and (pathlib.Path(repro) / "input.mlir").read_text() == "module {}"
    assert repro in str(info.value)
    shutil.rmtree(repro)


def test_isolate_exit_without_result() -> None:
    with pytest.raises(ChildCrashError, match="status 3"):
        run_isolated(os._exit, 3)


def test_isolate_exceptions_propagate() -> None:
    with pytest.raises(ValueError, match="bad value 42"):
        run_isolated(_raise_value_error)
    with pytest.raises(CompilerBugError) as info:
        run_isolated(_raise_tilec_error)
    assert str(info.value).count("internal compiler error") == 1
    assert info.value.reproducer == "/tmp/somewhere"
    with pytest.raises(RuntimeError, match="_Unpicklable"):
        run_isolated(_raise_unpicklable)


def test_isolate_timeout() -> None:
    with pytest.raises(ChildCrashError, match="did not finish"):
        run_isolated(_sleep, timeout=0.5)


# ------------------------------------------------------------------ toolchain.py

def test_run_tool_failure_keeps_inputs_and_shows_command() -> None:
    with pytest.raises(toolchain.ToolError) as info:
        toolchain.run_tool(["sh", "-c", "cat in.txt; exit 3", "in.txt"], {"in.txt": "hello"})
    err = info.value
    assert err.workdir and (pathlib.Path(err.workdir) / "in.txt").read_text() == "hello"
    assert "exit status 3" in str(err) and "hello" in str(err) and "cat in.txt" in str(err)
    shutil.rmtree(err.workdir)
    ok = toolchain.run_tool(["sh", "-c", "cp a b"], {"a": b"x"}, outputs=["b"])
    assert ok.outputs["b"] == b"x"


def test_tool_env_override_must_exist(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TILEC_LLD", "/nonexistent/ld.lld")
    with pytest.raises(TilecError, match="TILEC_LLD"):
        toolchain.find_lld()
    monkeypatch.setenv("TILEC_PTXAS", sys.executable)
    assert toolchain.find_ptxas() == os.path.abspath(sys.executable)


def test_tool_versions() -> None:
    v = toolchain.tool_versions()
    assert v["mlir"] and v["llvmlite"]


# ------------------------------------------------------------------ coverage

def test_every_gpu_target_is_tested() -> None:
    assert set(GPU_TARGETS) == {"sm80", "sm90", "sm100", "gfx90a", "gfx942", "gfx950",
                                "gfx1100"}


# ------------------------------------------------------------------ NVIDIA

@pytest.mark.parametrize("name", NV_TARGETS)
def test_nvidia_vadd(name: str) -> None:
    target = TARGETS[name]
    out = compiled(name, "vadd")
    # One 16-byte access per operand: ld.global.v4.b32 (sm_80, sm_90a), or on sm_100a
    # ld.global.v2.b64 feeding packed add.rn.f32x2.
    assert "nvptx64-nvidia-cuda" in out["llir"] and "<4 x float>" in out["llir"]
    filecheck(out["ptx"], f"""
CHECK: .version {target.ptx_version}
CHECK: .target {target.chip}
CHECK: .entry vadd(
CHECK: .maxntid 128, 1, 1
CHECK: ld.global.{{{{v4.(b|f|u)32|v2.(b|f|u)64}}}}
CHECK: ld.global.{{{{v4.(b|f|u)32|v2.(b|f|u)64}}}}
CHECK: st.global.{{{{v4.(b|f|u)32|v2.(b|f|u)64}}}}
""")
    _check_cubin(out, kernel="vadd", shared=0)


@pytest.mark.parametrize("name", NV_TARGETS)
def test_nvidia_block_sum(name: str) -> None:
    target = TARGETS[name]
    out = compiled(name, "block_sum")
    steps = int(math.log2(target.warp_size))
    filecheck(out["ptx"], f"""
CHECK: .entry block_sum(
CHECK: .shared .align 4 .b8 {{{{.*}}}}[{BLOCK_SUM_THREADS // target.warp_size * 4}]
CHECK-COUNT-{steps}: shfl.sync.bfly.b32
CHECK: st.shared
CHECK: bar.sync
CHECK: ld.shared
CHECK-COUNT-{steps}: shfl.sync.bfly.b32
CHECK: st.global
""")
    _check_cubin(out, kernel="block_sum", shared=BLOCK_SUM_THREADS // target.warp_size * 4)


def _check_cubin(out: dict[str, Any], kernel: str, shared: int) -> None:
    md = out["metadata"]
    if toolchain.find_ptxas() is None:
        assert out["cubin"] is None and "ptxas" in md["cubin_error"]
        pytest.skip("ptxas not found")
    assert out["cubin"][:4] == b"\x7fELF"
    assert set(md["kernels"]) == {kernel}
    assert 0 < md["registers"] <= 64
    assert md["spill_stores"] == 0 and md["spill_loads"] == 0 and md["stack_bytes"] == 0
    assert md["shared_bytes"] == shared
    assert "Used" in md["ptxas_log"]


def test_nvptx_data_layout_of_installed_llvmlite() -> None:
    """The layout written for the installed llvmlite is the one its LLVM gives."""
    import llvmlite
    assert NVPTX_DATA_LAYOUTS[llvmlite.__version__] == llvm_data_layout()


def test_ptx_version_below_minimum_is_rejected() -> None:
    ptx = ".version 7.8\n.target sm_90a\n.address_size 64\n"
    with pytest.raises(CompilerBugError, match="below 8.0"):
        check_ptx(ptx, TARGETS["sm90"])
    assert check_ptx(ptx.replace("7.8", "8.0"), TARGETS["sm90"]) == "8.0"
    with pytest.raises(CompilerBugError, match="expected sm_90a"):
        check_ptx(".version 8.0\n.target sm_80\n", TARGETS["sm90"])


def test_parse_ptxas_log() -> None:
    log = ("ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
           "ptxas info    : Function properties for k\n"
           "    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
           "ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, "
           "368 bytes cmem[0]\n")
    assert parse_ptxas_log(log) == {"k": {"registers": 40, "spill_stores": 4,
                                          "spill_loads": 12, "stack_bytes": 8,
                                          "shared_bytes": 2048}}


# ------------------------------------------------------------------ AMD

_AMD_VECTOR = {  # chip -> (16-byte global load, 16-byte global store)
    "gfx90a": ("global_load_dwordx4", "global_store_dwordx4"),
    "gfx942": ("global_load_dwordx4", "global_store_dwordx4"),
    "gfx950": ("global_load_dwordx4", "global_store_dwordx4"),
    "gfx1100": ("global_load_b128", "global_store_b128"),
}


@pytest.mark.parametrize("name", AMD_TARGETS)
def test_amd_vadd(name: str) -> None:
    target = TARGETS[name]
    out = compiled(name, "vadd")
    load, store = _AMD_VECTOR[target.chip]
    assert "amdgcn-amd-amdhsa" in out["llir"] and "amdhsa_code_object_version" in out["llir"]
    filecheck(out["amdgcn"], f"""
CHECK: .amdgcn_target "amdgcn-amd-amdhsa--{target.chip}"
CHECK: .amdhsa_code_object_version {target.code_object_version}
CHECK: vadd:
CHECK: {load}
CHECK: {load}
CHECK: {store}
CHECK: s_endpgm
""")
    _check_amd(out, target, "vadd", lds=0)


@pytest.mark.parametrize("name", AMD_TARGETS)
def test_amd_block_sum(name: str) -> None:
    target = TARGETS[name]
    out = compiled(name, "block_sum")
    steps = int(math.log2(target.warp_size))
    lanes = "{{ds_swizzle_b32|ds_bpermute_b32|v_permlane(16|32)_swap_b32}}"
    filecheck(out["amdgcn"], f"""
CHECK: block_sum:
CHECK-COUNT-{steps}: {lanes}
CHECK: {{{{ds_write_b32|ds_store_b32}}}}
CHECK: s_barrier
CHECK: {{{{ds_read_b32|ds_load_b32}}}}
CHECK-COUNT-{steps}: {lanes}
CHECK: global_store
CHECK: .amdhsa_group_segment_fixed_size {BLOCK_SUM_THREADS // target.warp_size * 4}
""")
    _check_amd(out, target, "block_sum", lds=BLOCK_SUM_THREADS // target.warp_size * 4)


def _check_amd(out: dict[str, Any], target: Target, kernel: str, lds: int) -> None:
    md = out["metadata"]
    assert md["wavefront_size"] == target.warp_size
    assert md["code_object_version"] == target.code_object_version
    assert md["vgpr_spill_count"] == 0 and md["sgpr_spill_count"] == 0
    assert md["scratch_bytes"] == 0 and md["lds_bytes"] == lds
    assert 0 < md["vgpr_count"] <= 32 and 0 < md["sgpr_count"]
    if toolchain.find_lld() is None:
        assert out["hsaco"] is None and "lld-19" in md["hsaco_error"]
        pytest.skip("ld.lld not found")
    hsaco = out["hsaco"]
    elf = readelf(hsaco)
    filecheck(elf, f"""
CHECK: OS/ABI: AMDGPU - HSA
CHECK: Machine: EM_AMDGPU
CHECK: Flags: {{{{.*}}}}{target.chip}
CHECK-DAG: OBJECT GLOBAL DEFAULT {{{{.*}}}} {kernel}.kd
CHECK-DAG: FUNC GLOBAL PROTECTED {{{{.*}}}} {kernel}
CHECK: .name: {kernel}
CHECK: .sgpr_spill_count: 0
CHECK: .symbol: {kernel}.kd
CHECK: .vgpr_spill_count: 0
CHECK: .wavefront_size: {target.warp_size}
CHECK: amdhsa.target: amdgcn-amd-amdhsa--{target.chip}
""")
    # What the hardware reads: kernel_code_properties bit 10, ENABLE_WAVEFRONT_SIZE32.
    kd = kernel_descriptor(hsaco, f"{kernel}.kd")
    properties, = struct.unpack_from("<H", kd, 56)
    assert bool(properties & (1 << 10)) == (target.warp_size == 32)


def test_parse_amdgpu_metadata() -> None:
    asm = """
\t.amdgpu_metadata
---
amdhsa.kernels:
  - .agpr_count:     0
    .args:
      - .offset:         0
        .size:           8
    .group_segment_fixed_size: 64
    .name:           k
    .private_segment_fixed_size: 16
    .sgpr_count:     14
    .sgpr_spill_count: 1
    .vgpr_count:     40
    .vgpr_spill_count: 2
    .wavefront_size: 64
amdhsa.target:   amdgcn-amd-amdhsa--gfx942
...
\t.end_amdgpu_metadata
"""
    assert parse_amdgpu_metadata(asm) == {"k": {
        "agpr_count": 0, "lds_bytes": 64, "scratch_bytes": 16, "sgpr_count": 14,
        "sgpr_spill_count": 1, "vgpr_count": 40, "vgpr_spill_count": 2, "wavefront_size": 64}}


def test_llvm_abort_in_backend_is_reported() -> None:
    # A width-64 shuffle on wave32 gfx1100 selects a gfx950-only permlane: LLVM aborts.
    target = TARGETS["gfx1100"]
    with pytest.raises(ChildCrashError) as info:
        compile_amd(parse(render_block_sum(64)), target)
    assert "LLVM ERROR" in info.value.stderr
    assert info.value.reproducer and os.path.exists(
        os.path.join(info.value.reproducer, "input.mlir"))
    shutil.rmtree(info.value.reproducer)


def test_missing_lld_gives_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    import tilec.targets.amd.backend as amd
    monkeypatch.setattr(amd, "find_lld", lambda: None)
    out = compile_amd(parse(golden_text("vadd", TARGETS["gfx942"])), TARGETS["gfx942"])
    assert out["hsaco"] is None and out["amdgcn"]
    assert "apt-get install -y lld-19" in out["metadata"]["hsaco_error"]


def test_missing_ptxas_still_gives_ptx(monkeypatch: pytest.MonkeyPatch) -> None:
    import tilec.targets.nvidia.backend as nvidia
    monkeypatch.setattr(nvidia, "find_ptxas", lambda: None)
    out = compile_nvidia(parse(golden_text("vadd", TARGETS["sm80"])), TARGETS["sm80"])
    assert out["cubin"] is None and ".entry vadd" in out["ptx"]
    assert out["metadata"]["registers"] is None and "ptxas" in out["metadata"]["cubin_error"]


def test_cpu_translation_refuses_unlowered_ops_instead_of_crashing() -> None:
    """An op outside the LLVM dialect is reported before MLIR's translation,
    whose own failure on such a module can kill the process."""
    from tilec.dialects import tile
    from tilec.targets.cpu import backend as cpu
    with tile.new_context(), ir.Location.unknown():
        m = ir.Module.parse("""
          llvm.func @f(%x: f32) -> f32 {
            %y = math.erf %x : f32
            llvm.return %y : f32
          }""")
        with pytest.raises(ValueError, match="'math.erf' was not lowered"):
            cpu.translate(m)
        ok = ir.Module.parse("llvm.func @g(%x: f32) -> f32 { llvm.return %x : f32 }")
        assert "define float @g" in cpu.translate(ok)

