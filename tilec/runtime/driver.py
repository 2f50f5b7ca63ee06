"""`tilec.runtime.driver.active`: Triton's `triton.runtime.driver.active`, enough
for ported code that asks which device and target it runs on (no MLIR).

The active driver is CUDA where a CUDA device and driver are present, else
the CPU: `get_active_torch_device()` is then `torch.device("cpu")` and
`get_current_target()` says backend "cpu"; on CUDA they are
`torch.device("cuda", current)` and `GPUTarget("cuda", 90, 32)` on an H200.
`utils.get_device_properties` gives the keys Triton's tutorials read (from
the CUDA driver's device attributes); on the CPU they are nominal values
(programs run one after another on the host, there are no registers or
shared memory to share), chosen so that occupancy arithmetic stays finite.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GPUTarget:
    """Triton's `GPUTarget(backend, arch, warp_size)`."""

    backend: str
    arch: Any
    warp_size: int


# Triton's property names and the CUDA driver attributes they are read from.
_CUDA_PROPERTIES = {
    "multiprocessor_count": "MULTIPROCESSOR_COUNT",
    "max_shared_mem": "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
    "max_num_regs": "MAX_REGISTERS_PER_BLOCK",
    "warpSize": "WARP_SIZE",
    "max_threads_per_sm": "MAX_THREADS_PER_MULTIPROCESSOR",
    "sm_clock_rate": "CLOCK_RATE",
    "mem_clock_rate": "MEMORY_CLOCK_RATE",
    "mem_bus_width": "GLOBAL_MEMORY_BUS_WIDTH",
}


class _Utils:
    def __init__(self, driver: _Driver) -> None:
        self._driver = driver

    def get_device_properties(self, device: Any = 0) -> dict[str, int]:
        """Triton's keys (`multiprocessor_count`, `max_shared_mem` (the opt-in
        per-block limit), `max_num_regs` (per block), `warpSize`, ...): on
        CUDA read from the driver for device `device` (None: 0), else nominal."""
        if self._driver.is_cuda():
            from tilec.runtime.cuda import device_attributes
            try:
                got = device_attributes(list(_CUDA_PROPERTIES.values()), int(device or 0))
                return {k: got[v] for k, v in _CUDA_PROPERTIES.items()}
            except Exception:  # an old driver without one of the attributes
                from tilec.targets import get_target
                t = get_target(self._driver.tilec_target())
                return {"multiprocessor_count": 132,
                        "max_num_regs": 65536, "max_shared_mem": int(t.shared_bytes),
                        "warpSize": int(t.warp_size), "max_threads_per_sm": 2048}
        return {"multiprocessor_count": os.cpu_count() or 1, "max_num_regs": 65536,
                "max_shared_mem": 1 << 20, "warpSize": 1, "max_threads_per_sm": 1}


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
            from tilec.runtime.cuda import device_capability
            from tilec.targets import get_target
            t = get_target(self.tilec_target())
            major, minor = device_capability()
            return GPUTarget("cuda", major * 10 + minor, t.warp_size)   # Triton's arch: 90
        return GPUTarget("cpu", "cpu", 1)

    def get_active_torch_device(self) -> Any:
        """`torch.device("cuda", <current device>)` (so `x.device == DEVICE` holds for
        tensors made with `device=DEVICE`), else `torch.device("cpu")`."""
        import torch
        if self.is_cuda():
            return torch.device("cuda", self.get_current_device())
        return torch.device("cpu")

    def get_current_device(self) -> int:
        torch = sys.modules.get("torch")
        if self.is_cuda() and torch is not None and torch.cuda.is_available():
            return int(torch.cuda.current_device())
        return 0

    def get_device_interface(self) -> Any:
        import torch
        return torch.cuda if self.is_cuda() else torch.cpu


active = _Driver()
