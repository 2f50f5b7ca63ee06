"""`TILEC_DUMP_DIR`: every stage of every kernel this process compiles, in a folder.

Each compile writes `<dir>/<kernel>-<target>-<hash>/` with one file per stage
(`kernel.tile.mlir`, `kernel.tiled.mlir`, `kernel.gpu.mlir`, `kernel.ll`,
`kernel.ptx`, `kernel.cubin`, ...: the artifact names of the cache) and
`metadata.json`; `<hash>` identifies the specialization (signature,
constexprs, options).  Kernels served from the cache are not compiled and not
dumped (their cache entry holds the same files).
"""
from __future__ import annotations

import hashlib
import json
import os
import pathlib
from typing import Any, Mapping


def dump_dir() -> pathlib.Path | None:
    d = os.environ.get("TILEC_DUMP_DIR")
    return pathlib.Path(d).expanduser() if d else None


def dump(name: str, target: str, describe: str, asm: Mapping[str, Any],
         files: Mapping[str, str], metadata: Mapping[str, Any]) -> pathlib.Path | None:
    """Write the stages `asm` (stage -> text or bytes) under their file names."""
    root = dump_dir()
    if root is None:
        return None
    tag = hashlib.sha256(describe.encode()).hexdigest()[:10]
    folder = root / f"{name}-{target}-{tag}"
    folder.mkdir(parents=True, exist_ok=True)
    for stage, value in asm.items():
        if value is None:
            continue
        fname = files.get(stage, f"kernel.{stage}")
        data = value.encode() if isinstance(value, str) else bytes(value)
        (folder / fname).write_bytes(data)
    (folder / "metadata.json").write_text(json.dumps({"kernel": name, "target": target,
                                                      "specialization": describe,
                                                      "metadata": metadata},
                                                     indent=1, default=repr))
    return folder
