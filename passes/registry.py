"""The tilec passes by name: one written-out table shared by the compiler,
`tilec opt` and the lit tests.

Each entry maps a pass's kebab-case name to the module that implements it; the
module has `NAME` (the same name) and
`run(module: ir.Module, target: Target, options: CompileOptions) -> None`.
Modules are imported when a pass is first asked for, so listing the passes
(`names()`) imports no MLIR.  Nothing registers itself by being imported: a new
pass is a new line here (tests/test_cli.py checks that every pass module of
tilec.passes is listed).

Nearest analogue: xDSL's explicit pass list; MLIR's `registerPass` table.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

from tilec.errors import CompilerBugError

if TYPE_CHECKING:
    from mlir import ir

    from tilec.options import CompileOptions
    from tilec.targets import Target

PASSES: dict[str, str] = {
    "tile-verify": "tilec.passes.tile_verify",
    "tile-combine-dot": "tilec.passes.tile_combine_dot",
    "tile-dce": "tilec.passes.tile_dce",
    "tile-flatten-loops": "tilec.passes.tile_flatten_loops",
    "tile-split-ctas": "tilec.passes.tile_split_ctas",
    "tile-tma-descriptors": "tilec.passes.tile_tma_descriptors",
    "tile-lower-descriptors": "tilec.passes.tile_lower_descriptors",
    "tile-tma-pointers": "tilec.passes.tile_tma_pointers",
    "tile-debug-checks": "tilec.passes.tile_debug_checks",
    "tile-dot-precision": "tilec.passes.tile_dot_precision",
    "tile-expand-fp8": "tilec.passes.tile_expand_fp8",
    "tile-accelerate-dot": "tilec.passes.tile_accelerate_dot",
    "tile-layout": "tilec.passes.tile_layout",
    "tile-pipeline": "tilec.passes.tile_pipeline",
    "tile-pipeline-lds": "tilec.passes.tile_pipeline_lds",
    "tile-warp-specialize": "tilec.passes.tile_warp_specialize",
    "tile-pingpong": "tilec.passes.tile_pingpong",
    "tile-unroll": "tilec.passes.tile_unroll",
    "tile-prefetch": "tilec.passes.tile_prefetch",
    "tile-prefetch-vectors": "tilec.passes.tile_prefetch_vectors",
    "tile-loop-pointers": "tilec.passes.tile_loop_pointers",
    "convert-tile-to-gpu": "tilec.passes.gpu",
    "convert-tile-to-cpu": "tilec.passes.cpu",
}


def names() -> list[str]:
    """Every tilec pass name, in table order."""
    return list(PASSES)


def is_pass(name: str) -> bool:
    return name in PASSES


def get(name: str) -> ModuleType:
    """The module of pass `name` (imported now); KeyError for a name not in the table."""
    module = importlib.import_module(PASSES[name])
    if getattr(module, "NAME", None) != name or not callable(getattr(module, "run", None)):
        raise CompilerBugError(f"pass module {PASSES[name]} does not define NAME = {name!r} "
                               "and run(module, target, options)")
    return module


def run(name: str, module: ir.Module, target: Target, options: CompileOptions) -> None:
    """Run tilec pass `name` on `module` in place."""
    get(name).run(module, target, options)
