"""Turn a cache entry or a manifest directory into a launchable kernel.

Reads the manifest and the binary for the entry's target; imports no MLIR.
"""
from __future__ import annotations

from typing import Any, Sequence

from tilec.cache import CacheEntry
from tilec.errors import TilecError
from tilec.language import core as tl


class LoadedKernel:
    def __init__(self, manifest: dict[str, Any], launcher: Any) -> None:
        self.manifest = manifest
        self.name: str = manifest["kernel"]
        self.target: str = manifest["target"]
        self.params = [(p["name"], tl.parse_type(p["type"])) for p in manifest["params"]]
        self.stored_args = set(manifest.get("metadata", {}).get("stored_args", []))
        self._launcher = launcher

    def launch(self, grid: tuple[int, int, int], raw_args: Sequence[Any]) -> None:
        self._launcher.launch(grid, raw_args)


def load_entry(entry: CacheEntry) -> LoadedKernel:
    manifest = entry.metadata
    target = manifest["target"]
    if target == "cpu":
        from tilec.runtime.cpu import CpuKernel
        types = [tl.parse_type(p["type"]) for p in manifest["params"]]
        launcher = CpuKernel(str(entry.artifact_path("kernel.so")), manifest["kernel"], types)
        return LoadedKernel(manifest, launcher)
    raise TilecError(f"launching kernels compiled for '{target}' is not supported by this "
                     "runtime yet")
