"""`tilec compile`: every stage's artifact of each kernel and a manifest.json."""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from tilec.cli.kernels import add_kernel_options, compile_one, make_request

if TYPE_CHECKING:
    from tilec.driver import CompiledKernel

DEFAULT_OUT = "tilec-out"


def artifact_name(stage: str) -> str:
    from tilec.driver import ARTIFACT_FILES
    return ARTIFACT_FILES.get(stage, f"kernel.{re.sub(r'[^0-9A-Za-z_.-]', '_', stage)}")


def write_artifacts(ck: CompiledKernel, folder: Path) -> dict[str, str]:
    """Write each stage of `ck` and its manifest.json; return {stage: file name}."""
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    for stage, value in ck.asm.items():
        if value is None:
            continue
        files[stage] = artifact_name(stage)
        data = value if isinstance(value, (bytes, bytearray)) else str(value).encode()
        (folder / files[stage]).write_bytes(bytes(data))
    manifest = ck.manifest(files)
    manifest.setdefault("shared", ck.metadata.get("shared", 0))
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n")
    return files


def cmd_compile(args: argparse.Namespace) -> int:
    req = make_request(args, need_one=False)
    out = Path(args.output)
    for kernel in req.kernels:
        ck = compile_one(req, kernel)
        folder = out / kernel.name
        files = write_artifacts(ck, folder)
        print(f"{kernel.name}: wrote {folder}/ ({', '.join(files.values())}, manifest.json)")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    c = sub.add_parser("compile", help="compile kernels and write their artifacts and manifest")
    add_kernel_options(c)
    c.add_argument("-o", "--output", default=DEFAULT_OUT, metavar="DIR",
                   help=f"output folder (default ./{DEFAULT_OUT}); one subfolder per kernel")
    return c
