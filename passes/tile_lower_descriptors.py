"""`tile-lower-descriptors` (placeholder)."""
from __future__ import annotations

from mlir import ir

from tilec.options import CompileOptions
from tilec.targets import Target

NAME = "tile-lower-descriptors"


def run(module: ir.Module, target: Target, options: CompileOptions) -> None:
    return None
