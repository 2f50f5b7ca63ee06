"""Slim a compile cache for the GPU machine: drop every artifact a launch does
not read (the IR texts of the stages: `kernel.*.mlir`, `kernel.ll`) and
rewrite each manifest's artifact table to match, so that the entries stay
valid (a manifest listing a missing file is a corrupt entry, which the cache
deletes on lookup).  A prepared attention cache goes from ~120 MB to ~8 MB,
under the device tool's 64 MiB carry.

    .venv/bin/python scripts/slim_cache.py .carry/tilec-cache [...]
"""
from __future__ import annotations

import json
import pathlib
import sys

KEEP = ("kernel.cubin", "kernel.ptx", "kernel.hsaco", "kernel.so")


def slim(root: pathlib.Path) -> tuple[int, int]:
    """(entries rewritten, bytes removed) under cache directory `root`."""
    entries = removed = 0
    for manifest in root.glob("*/*/manifest.json"):
        doc = json.loads(manifest.read_text())
        listed: dict[str, object] = doc.get("artifacts", {})
        drop = [name for name in listed if name not in KEEP]
        if not drop:
            continue
        for name in drop:
            path = manifest.parent / name
            if path.exists():
                removed += path.stat().st_size
                path.unlink()
            del listed[name]
        stages = doc.get("metadata", {}).get("artifacts", {})
        for stage in [s for s, name in stages.items() if name in drop]:
            del stages[stage]
        manifest.write_text(json.dumps(doc, indent=1, sort_keys=True))
        entries += 1
    return entries, removed


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        n, b = slim(pathlib.Path(arg))
        print(f"{arg}: {n} entries slimmed, {b / 1e6:.1f} MB removed")
