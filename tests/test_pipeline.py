"""Tests of the compile pipeline: the pass registry (passes/registry.py), the
back ends' stage lists (targets/<vendor>/backend.py) and the one loop that
runs them (tilec/compiler.py), and the tool versions for the cache key
(targets/toolchain.py)."""
from __future__ import annotations

import pathlib
from pathlib import Path
from typing import Any

import pytest

from tilec import cli
from tilec.errors import CompilerBugError
from tilec.passes import registry
from tilec.targets import TARGETS, toolchain

ROOT = Path(__file__).resolve().parent.parent


def test_registry_lists_every_pass_module() -> None:
    """The written-out table names every pass module of tilec.passes, under its NAME."""
    import importlib
    import pkgutil

    import tilec.passes as passes_pkg
    found = {}
    for info in pkgutil.walk_packages(passes_pkg.__path__, prefix="tilec.passes."):
        module = importlib.import_module(info.name)
        if isinstance(getattr(module, "NAME", None), str) and callable(getattr(module, "run", None)):
            found[module.NAME] = info.name
    assert found == registry.PASSES
    assert registry.names() == ["tile-verify", "tile-combine-dot", "tile-dce", "tile-flatten-loops",
                                "tile-split-ctas", "tile-tma-descriptors",
                                "tile-lower-descriptors", "tile-tma-pointers",
                                "tile-debug-checks", "tile-dot-precision", "tile-expand-fp8", "tile-accelerate-dot",
                                "tile-layout", "tile-pipeline", "tile-pipeline-lds", "tile-warp-specialize",
                                "tile-pingpong", "tile-unroll", "tile-prefetch",
                                "tile-prefetch-vectors", "tile-loop-pointers", "convert-tile-to-gpu",
                                "convert-tile-to-cpu"]
    for name in registry.names():
        assert registry.get(name).NAME == name


def test_registry_passes_target_and_options(monkeypatch: pytest.MonkeyPatch) -> None:
    """`tilec opt` calls every pass as run(module, target, options) with the
    --target record and a CompileOptions of --num-warps/--num-stages."""
    from tilec.options import CompileOptions
    from tilec.passes import tile_dce
    seen: list[Any] = []
    monkeypatch.setattr(tile_dce, "run", lambda m, t, o: seen.append((t.name, o)))
    assert cli.main(["opt", str(ROOT / "tests/lit/tile-dce/unused-pure-ops.mlir"), "--pass",
                     "tile-dce", "--target", "gfx942", "--num-warps", "8",
                     "--num-stages", "2"]) == 0
    assert seen == [("gfx942", CompileOptions(num_warps=8, num_stages=2))]
    with pytest.raises(KeyError):
        registry.get("no-such-pass")

def test_stage_lists_match_target_stages() -> None:
    """Each back end's ordered steps leave exactly the artifact stages its
    targets list (Target.stages), in that order, after the tile steps."""
    from tilec.compiler import all_steps, backend_stages, tile_steps
    from tilec.options import CompileOptions
    for target in TARGETS.values():
        steps = all_steps(target, CompileOptions())
        produced = [s for step in steps.values() for s in step.produces]
        assert ["tile"] + [s for s in produced if s != "tile-opt"] == list(target.stages)
        assert list(steps)[:4] == list(tile_steps())
        from tilec.targets.pipeline import LANGUAGE_PASSES
        # On GPUs the dot selection runs before the fp8 expansion (fp8 tensor cores).
        gpu = ["tile-split-ctas", "tile-tma-descriptors", "tile-lower-descriptors", "tile-tma-pointers",
               "tile-debug-checks", "tile-dot-precision",
               "tile-accelerate-dot",
               "tile-expand-fp8", "tile-prefetch-vectors", "tile-loop-pointers", "tile-layout",
               "tile-pipeline", "tile-warp-specialize", "tile-pingpong", "tile-unroll",
               "convert-tile-to-gpu"]
        # AMD's stage list leaves tile-flatten-loops out (its LDS pipeliner takes the
        # nest's K loop only); NVIDIA runs it first (targets/nvidia/backend.py).
        assert list(backend_stages(target, CompileOptions())) == {
            "nvidia": ["tile-flatten-loops"] + gpu + ["convert-gpu-to-nvvm", "llir", "ptx",
                                                      "cubin"],
            "amd": gpu[:11] + ["tile-pipeline-lds"] + gpu[11:]
            + ["convert-gpu-to-rocdl", "llir", "amdgcn", "hsaco"],
            "cpu": list(LANGUAGE_PASSES) + ["convert-tile-to-cpu", "lower-to-llvm", "llir",
                                            "llvm-opt", "asm", "so"],
        }[target.vendor]


SCALE_SIG = "*fp32,*fp32,fp32,i32"


@pytest.mark.parametrize("name", ["sm90", "gfx942", "cpu"])
def test_one_loop_times_every_step_and_stops_after_a_stage(name: str) -> None:
    from kernels_for_tests import scale_add

    from tilec.compiler import all_steps
    from tilec.driver import compile_kernel
    from tilec.options import CompileOptions
    ck = compile_kernel(scale_add, name, SCALE_SIG, {"BLOCK": 256})
    assert list(ck.metadata["step_seconds"]) == list(all_steps(TARGETS[name], CompileOptions()))
    stopped = compile_kernel(scale_add, name, SCALE_SIG, {"BLOCK": 256}, stop_after="llir")
    assert "llir" in stopped.asm
    assert not {"ptx", "cubin", "amdgcn", "hsaco", "asm", "so"} & set(stopped.asm)
    assert list(stopped.metadata["step_seconds"])[-1] == "llir"


def test_failing_step_leaves_a_reproducer(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernels_for_tests import scale_add

    from tilec.driver import compile_kernel
    from tilec.passes import tile_layout

    def broken(module: Any, target: Any, options: Any) -> None:
        raise RuntimeError("layout exploded")
    monkeypatch.setattr(tile_layout, "run", broken)
    with pytest.raises(CompilerBugError, match="step 'tile-layout' failed: layout exploded") as e:
        compile_kernel(scale_add, "sm90", SCALE_SIG, {"BLOCK": 256})
    repro = pathlib.Path(e.value.reproducer or "")
    text = repro.read_text()
    assert "--pass 'tile-layout' --target sm90" in text and "tile.load" in text
    repro.unlink()


def test_tool_versions_cover_the_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    toolchain.tool_versions.cache_clear()
    try:
        v = toolchain.tool_versions()
        assert set(v) == {"ptxas", "ld.lld", "llvm-mc", "cc", "mlir", "llvm-tools", "llvmlite"}
        assert toolchain.tool_versions() is v          # cached per process
        if toolchain.find_cc():
            assert v["cc"] and v["cc"].startswith(toolchain.find_cc() or "")
        toolchain.tool_versions.cache_clear()
        monkeypatch.setattr(toolchain, "find_ptxas", lambda: None)
        monkeypatch.setattr(toolchain, "find_lld", lambda: None)
        monkeypatch.setattr(toolchain, "find_cc", lambda: None)
        absent = toolchain.tool_versions()
        assert absent["ptxas"] is None and absent["ld.lld"] is None and absent["cc"] is None
    finally:
        toolchain.tool_versions.cache_clear()
