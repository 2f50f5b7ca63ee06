"""`tilec.device_info()`: what a launch grid is sized by (no MLIR import).

Persistent kernels launch one program per streaming multiprocessor (Triton's
`NUM_SMS = torch.cuda.get_device_properties(0).multi_processor_count`);
`device_info()` gives that number for the device tilec would launch on:

* a CUDA device when one is usable: through torch if torch is imported and
  sees CUDA, else through `cuda-bindings` (`cuDeviceGetAttribute`);
* otherwise the CPU, whose "multiprocessors" are the worker threads the CPU
  launcher runs programs on (`TILEC_NUM_THREADS`, default the core count).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class DeviceInfo:
    """kind: "cuda" or "cpu"; name: the device's name; num_sms: streaming
    multiprocessors (CPU: worker threads); capability: (major, minor) on CUDA."""

    kind: str
    name: str
    num_sms: int
    capability: tuple[int, int] | None = None


def _cuda_via_torch(device: int) -> DeviceInfo | None:
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    p = torch.cuda.get_device_properties(device)
    return DeviceInfo("cuda", str(p.name), int(p.multi_processor_count), (p.major, p.minor))


def _cuda_via_driver(device: int) -> DeviceInfo | None:
    try:
        from tilec.runtime import cuda
        cu = cuda.driver()
        cuda.check(cu.cuInit(0))
        if cuda.check(cu.cuDeviceGetCount()) <= device:
            return None
        dev = cuda.check(cu.cuDeviceGet(device))
        attr = cu.CUdevice_attribute
        sms = cuda.check(cu.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                                 dev))
        major = cuda.check(cu.cuDeviceGetAttribute(
            attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
        minor = cuda.check(cu.cuDeviceGetAttribute(
            attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
        raw = cuda.check(cu.cuDeviceGetName(256, dev))
        name = raw.split(b"\0", 1)[0].decode() if isinstance(raw, bytes) else str(raw)
        return DeviceInfo("cuda", name, int(sms), (int(major), int(minor)))
    except Exception:  # no driver, no bindings or no device: not a CUDA machine
        return None


def cpu_info() -> DeviceInfo:
    import platform

    from tilec.runtime.cpu import num_threads
    return DeviceInfo("cpu", platform.processor() or platform.machine() or "cpu", num_threads())


def device_info(device: int = 0) -> DeviceInfo:
    """The CUDA device `device` if one is usable, else the CPU (see the module doc)."""
    return _cuda_via_torch(device) or _cuda_via_driver(device) or cpu_info()
