"""What `kernel.warmup(...)` returns: one compiled specialization's facts under
the names of Triton's `CompiledKernel` (`n_regs`, `n_spills`, `metadata.shared`),
read from its cache manifest (no MLIR)."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any


class CompiledHandle:
    """Facts about one compiled specialization (Triton's `CompiledKernel` fields)."""

    def __init__(self, name: str, target: str, manifest: dict[str, Any],
                 launch: Any = None) -> None:
        self._launch = launch  # (grid, args) -> None: the kernel with the warmup's options
        meta = dict(manifest.get("metadata") or {})
        self.name = name
        self.target = target
        # A CPU build has no register or shared-memory count: nominal 1s, so that
        # occupancy formulas (tutorial 02's) divide by them and give a grid.
        self.n_regs = int(meta.get("registers") or meta.get("vgpr_count") or 1)
        # Triton's n_spills: the local memory per thread in 4-byte words (CUDA's
        # LOCAL_SIZE_BYTES / 4: ptxas's stack frame; AMD's scratch).
        local = meta.get("stack_bytes", meta.get("scratch_bytes"))
        self.n_spills = int(local or 0) // 4 if local is not None else \
            (int(meta.get("spill_stores") or 0) + int(meta.get("spill_loads") or 0)) // 4
        self.metadata = SimpleNamespace(shared=int(manifest.get("shared", 0) or 1),
                                        num_warps=manifest.get("num_warps", 4),
                                        num_stages=manifest.get("num_stages", 3),
                                        target=target, name=name)
        self.asm = {k: v for k, v in (manifest.get("artifacts") or {}).items()}

    def _init_handles(self) -> None:
        """Triton loads the module here; tilec loads it at the first launch."""

    def __getitem__(self, grid: Any) -> Any:
        """`handle[grid](*args)`: launch this kernel with every argument positional
        (constexprs included) and the options given to warmup."""
        if self._launch is None:
            raise RuntimeError(f"the compiled handle of '{self.name}' cannot launch")
        return lambda *args: self._launch(grid, args)

    def __repr__(self) -> str:
        return f"<compiled {self.name} for {self.target}: {self.n_regs} registers, " \
               f"{self.n_spills} spills, {self.metadata.shared} bytes shared>"
