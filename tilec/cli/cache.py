"""`tilec cache`: what the disk cache holds, or `--clear` to empty it."""
from __future__ import annotations

import argparse
from pathlib import Path


def cmd_cache(args: argparse.Namespace) -> int:
    """Print what the disk cache holds (compiled kernels, autotune results, the
    built C launcher); with --clear, remove all of it."""
    import shutil

    from tilec.cache import DiskCache, default_cache_dir
    root = default_cache_dir()
    if args.clear:
        DiskCache(root).clear()
        for sub in ("autotune", "native"):
            shutil.rmtree(root / sub, ignore_errors=True)
        print(f"cleared {root}")
        return 0
    kernels = [m.parent for m in root.glob("??/*/manifest.json")] if root.is_dir() else []

    def size(paths: list[Path]) -> int:
        return sum(f.stat().st_size for p in paths for f in p.rglob("*") if f.is_file())
    tuned = list((root / "autotune").glob("*.json"))
    native = list((root / "native").glob("*/_tilec_launch*"))
    print(f"cache: {root}")
    print(f"  compiled kernels: {len(kernels)} ({size(kernels) / 2**20:.1f} MiB)")
    print(f"  autotune results: {len(tuned)}")
    print(f"  C launcher builds: {len(native)}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    k = sub.add_parser("cache", help="show (or --clear) the disk cache")
    k.add_argument("--clear", action="store_true", help="remove everything tilec cached")
    return k
