"""Turn a cache entry or a `tilec compile` output folder into a launchable kernel.

Reads the manifest and the binary for the entry's target; imports no MLIR, so
deployments need neither the compiler nor the kernel's Python source:
`tilec.load("out/add/manifest.json")[grid](x, y, out, n)`.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Sequence

from tilec.cache import CacheEntry
from tilec.errors import TilecError
from tilec.language import core as tl
from tilec.specialization import Specialization
from tilec.targets import get_target


class LoadedKernel:
    """A compiled kernel and its launcher."""

    def __init__(self, manifest: dict[str, Any], launcher: Any) -> None:
        self.manifest = manifest
        self.name: str = manifest["kernel"]
        self.target: str = manifest["target"]
        self.spec = Specialization.from_manifest(manifest)
        self.stored_args = set(manifest.get("metadata", {}).get("stored_args", []))
        self.debug_sites: list[Any] | None = (manifest.get("metadata", {}).get("debug_sites", [])
                                              if manifest.get("debug") else None)
        self.device = "cpu" if self.target == "cpu" else "cuda"
        self._launcher = launcher
        # TMA kernels: each C launch entry holds the tensor maps of its tensors.
        self.has_tensormaps = getattr(launcher, "_maps", None) is not None
        self.launch = launcher.launch  # type: ignore[method-assign]  # one call less per launch

    def launch(self, grid: tuple[int, int, int], raw_args: Sequence[Any]) -> None:
        self._launcher.launch(grid, raw_args)


def _load(manifest: dict[str, Any], path_of: Callable[[str], Path]) -> LoadedKernel:
    target = get_target(manifest["target"])
    types = [tl.parse_type(p["type"]) for p in manifest["params"]]  # also what the C path fills
    if manifest.get("debug"):  # the debug mode's extents and error record (runtime/debug.py)
        from tilec.runtime.debug import hidden_types
        types += hidden_types(types)
    files: dict[str, str] = manifest.get("artifacts", {})
    # CTAs (program instances) per program of a kernel split by tile-split-ctas
    cluster = int(manifest.get("metadata", {}).get("cluster_ctas") or 1)
    if target.vendor == "cpu":
        from tilec.runtime.cpu import CpuKernel
        return LoadedKernel(manifest, CpuKernel(str(path_of(files.get("so", "kernel.so"))),
                                                manifest["kernel"], types, cluster))
    if target.vendor == "nvidia":
        from tilec.runtime.cuda import CudaKernel
        stage = "cubin" if "cubin" in files else "ptx"
        if stage not in files:
            raise TilecError(f"the compiled kernel '{manifest['kernel']}' has neither a cubin nor "
                             "PTX to load")
        image = path_of(files[stage]).read_bytes()
        if stage == "ptx":
            image += b"\0"
        shared = int(manifest.get("metadata", {}).get("dynamic_shared", 0) or 0)
        # num_warps, plus a producer warpgroup where tile-warp-specialize split the kernel
        threads = int(manifest.get("metadata", {}).get("block_threads") or
                      int(manifest["num_warps"]) * target.warp_size)
        maps = manifest.get("metadata", {}).get("tensormaps") or ()
        return LoadedKernel(manifest, CudaKernel(image, manifest["kernel"], types, threads, shared,
                                                 maps, cluster))
    raise TilecError(f"launching kernels compiled for '{target.name}' ({target.vendor}) is not "
                     "supported by this runtime yet; the code objects are in the artifacts")


def load_entry(entry: CacheEntry) -> LoadedKernel:
    return _load(entry.metadata, entry.artifact_path)


class AotKernel:
    """A kernel loaded from `tilec compile` output; launch with `k[grid](*args)`."""

    def __init__(self, manifest_path: str | Path) -> None:
        path = Path(manifest_path)
        if path.is_dir():
            path = path / "manifest.json"
        try:
            manifest = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise TilecError(f"cannot read the kernel manifest {path}: {e}") from None
        self.loaded = _load(manifest, lambda name: path.parent / name)
        self.name = self.loaded.name
        self._native: dict[Any, Any] = {}  # static grid -> C launcher (NVIDIA)

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        if type(grid) is tuple:
            try:
                c = self._native.get(grid)
            except TypeError:  # unhashable: the general path reports it
                c = None
            if c is not None:
                return c
        return self._python_launcher(grid)

    def _add_native_entry(self, grid: Any, args: Sequence[Any]) -> None:
        """Teach the grid's C launcher (made on first use) this checked launch."""
        from tilec.runtime.cuda import raise_driver_error
        from tilec.runtime.launch_entries import (
            entry_for, make_launcher, native_target, static_grid,
        )
        target = native_target(self.loaded._launcher)
        dims = static_grid(grid)
        if dims is None or target is None:
            return
        c = self._native.get(grid)
        if c is None:
            if len(self._native) >= 64:
                return
            c = make_launcher(dims, self._python_launcher(grid), raise_driver_error, {})
            if c is None:
                return
            self._native[grid] = c
        spec = self.loaded.spec
        entry = entry_for(spec, spec.names, args, {}, target, [])
        if entry is not None:
            c.add(entry)

    def _python_launcher(self, grid: Any) -> Callable[..., None]:
        def launcher(*args: Any) -> None:
            self.run(grid, args)
        return launcher

    def run(self, grid: Any, args: Sequence[Any]) -> None:
        lk = self.loaded
        raw = lk.spec.admit(self.name, args)
        g = tuple(grid(dict(zip(lk.spec.names, args)))) if callable(grid) else \
            (tuple(grid) if isinstance(grid, (tuple, list)) else (grid,))
        dims = [int(d) for d in g] + [1] * (3 - len(g))
        get_target(lk.target).check_grid((dims[0], dims[1], dims[2]))
        if lk.debug_sites is not None:  # compiled with --debug: extents and an error record
            from tilec.runtime.debug import launch_checked
            arrays = [a for a, p in zip(args, lk.spec.args) if isinstance(p.type, tl.pointer_type)]
            launch_checked(self.name, lk.launch, (dims[0], dims[1], dims[2]), raw, arrays,
                           lk.debug_sites, lk.device)
            return
        lk.launch((dims[0], dims[1], dims[2]), raw)
        if type(grid) is tuple:
            self._add_native_entry(grid, args)


def load(manifest_path: str | Path) -> AotKernel:
    """Load a kernel compiled by `tilec compile` (its manifest.json or its folder)."""
    return AotKernel(manifest_path)
