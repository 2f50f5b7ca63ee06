"""`tilec.runtime.driver.active`: Triton's `triton.runtime.driver.active`, enough
for ported code that asks which device and target it runs on (no MLIR).

The active driver is CUDA where a CUDA device and driver are present, else
the CPU: `get_active_torch_device()` is then `torch.device("cpu")` and
`get_current_target()` says backend "cpu".  `utils.get_device_properties`
gives the keys Triton's tutorials read; on the CPU they are nominal values
(programs run one after another on the host, there are no registers or
shared memory to share), chosen so that occupancy arithmetic stays finite.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GPUTarget:
    """Triton's `GPUTarget(backend, arch, warp_size)`."""

    backend: str
    arch: Any
    warp_size: int


class _Utils:
    def __init__(self, driver: _Driver) -> None:
        self._driver = driver

    def get_device_properties(self, device: Any = 0) -> dict[str, int]:
        if self._driver.is_cuda():
            from tilec.targets import get_target
            t = get_target(self._driver.tilec_target())
            return {"multiprocessor_count": 132,
                    "max_num_regs": 65536, "max_shared_mem": int(t.shared_bytes),
                    "warpSize": int(t.warp_size)}
        return {"multiprocessor_count": os.cpu_count() or 1, "max_num_regs": 65536,
                "max_shared_mem": 1 << 20, "warpSize": 1}


class _Driver:
    def __init__(self) -> None:
        self.utils = _Utils(self)
        self._cuda: bool | None = None

    def is_cuda(self) -> bool:
        if self._cuda is None:
            try:
                from tilec.runtime.cuda import target_for_device
                target_for_device()
                self._cuda = True
            except Exception:  # no driver, no device: the CPU is the active one
                self._cuda = False
        return self._cuda

    def tilec_target(self) -> str:
        if self.is_cuda():
            from tilec.runtime.cuda import target_for_device
            return str(target_for_device())
        return "cpu"

    def get_current_target(self) -> GPUTarget:
        if self.is_cuda():
            from tilec.targets import get_target
            t = get_target(self.tilec_target())
            cc = getattr(t, "compute_capability", None)
            return GPUTarget("cuda", cc or t.chip, t.warp_size)
        return GPUTarget("cpu", "cpu", 1)

    def get_active_torch_device(self) -> Any:
        import torch
        return torch.device("cuda" if self.is_cuda() else "cpu")

    def get_current_device(self) -> int:
        return 0

    def get_device_interface(self) -> Any:
        import torch
        return torch.cuda if self.is_cuda() else torch.cpu


active = _Driver()
