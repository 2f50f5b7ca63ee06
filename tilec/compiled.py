"""What `kernel.warmup(...)` returns: one compiled specialization's facts under
the names of Triton's `CompiledKernel` (`n_regs`, `n_spills`, `metadata.shared`),
read from its cache manifest (no MLIR)."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any


class CompiledHandle:
    """Facts about one compiled specialization (Triton's `CompiledKernel` fields)."""

    def __init__(self, name: str, target: str, manifest: dict[str, Any]) -> None:
        meta = dict(manifest.get("metadata") or {})
        self.name = name
        self.target = target
        self.n_regs = int(meta.get("registers") or meta.get("vgpr_count") or 0)
        self.n_spills = int(meta.get("spill_stores") or 0) + int(meta.get("spill_loads") or 0)
        self.metadata = SimpleNamespace(shared=int(manifest.get("shared", 0) or 0),
                                        num_warps=manifest.get("num_warps", 4),
                                        num_stages=manifest.get("num_stages", 3),
                                        target=target, name=name)
        self.asm = {k: v for k, v in (manifest.get("artifacts") or {}).items()}

    def __repr__(self) -> str:
        return f"<compiled {self.name} for {self.target}: {self.n_regs} registers, " \
               f"{self.n_spills} spills, {self.metadata.shared} bytes shared>"
