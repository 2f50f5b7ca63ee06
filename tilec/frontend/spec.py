"""`KernelSpec`: the input of code generation, one kernel specialization."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lark import Tree

from tilec.frontend.parser import KernelSource
from tilec.frontend.semantic import ElemType


@dataclass
class KernelSpec:
    """Everything code generation needs for one specialization."""

    name: str
    source: KernelSource
    tree: Tree
    params: list[str]                       # all parameter names, in order
    runtime_types: dict[str, ElemType]      # non-constexpr parameters
    constexprs: dict[str, Any]              # constexpr parameters -> values
    divisibility: dict[str, int]            # runtime param -> 16 (aligned/divisible)
    globals: dict[str, Any]
    used_globals: dict[str, Any] = field(default_factory=dict)
    # Set by code generation: the runtime pointer parameters some tl.store may
    # write through (the launch refuses read-only arrays for those only).
    stored_params: list[str] | None = None
