"""lit configuration for tilec's FileCheck tests.

The folders mirror the passes (passes/registry.py names them): tile-verify/,
tile-dce/, tile-layout/, tile-prefetch/, convert-tile-to-gpu/ (one file per
rule family: memory, math, reduce, atomic, dot, invalid), convert-tile-to-cpu/;
then frontend/ (tilec ir on kernels), opt/ (the tilec opt driver itself) and
backend/ (each back end's stage list).  File names are kebab-case; invalid-IR
files use --split-input-file and check each chunk's error.

Tests are `.mlir` files and `.py` files with RUN lines (a `.py` file without
one is a helper and is skipped, so kernels can live next to tests).  Folders
named `Inputs` are not searched.  Substitutions:

    %tilec-opt   python -m tilec.cli opt      (run passes on an .mlir file)
    %tilec       python -m tilec.cli          (any tilec command; every RUN line
                                              goes through %tilec-opt or %tilec, or
                                              FileChecks a file one of them wrote:
                                              one compile, several prefixes)
    %python      this Python
    %FileCheck   FileCheck from the LLVM tools wheel

Outputs and lit's timing file go to tests/lit/Output/ (ignored by git).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from tilec_lit import ShTestWithRunLines  # noqa: E402  (a test format lit can pickle)

config.name = "tilec"
config.test_format = ShTestWithRunLines(execute_external=False)
config.suffixes = [".mlir", ".py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "Output")
config.excludes = ["lit.cfg.py", "lit.local.cfg", "tilec_lit.py", "Inputs", "Output", "__pycache__"]

import llvm  # the tools wheel: FileCheck lives in its bin/

filecheck = os.path.join(os.path.dirname(llvm.__file__), "bin", "FileCheck")
config.substitutions.append(("%FileCheck", filecheck))
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%tilec-opt", f"{sys.executable} -m tilec.cli opt"))
config.substitutions.append(("%tilec", f"{sys.executable} -m tilec.cli"))
config.environment["PYTHONPATH"] = os.pathsep.join(sys.path)
config.environment["PYTHONDONTWRITEBYTECODE"] = "1"
for name in ("TILEC_CACHE_DIR", "HOME", "PATH", "CC"):
    if name in os.environ:
        config.environment[name] = os.environ[name]
