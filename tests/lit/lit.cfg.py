import os
import sys

import lit.formats

config.name = "tilec"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".py"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["lit.cfg.py", "Inputs"]

import llvm  # the tools wheel: FileCheck lives in its bin/

filecheck = os.path.join(os.path.dirname(llvm.__file__), "bin", "FileCheck")
config.substitutions.append(("%FileCheck", filecheck))
config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%tilec-opt", f"{sys.executable} -m tilec.cli opt"))
config.environment["PYTHONPATH"] = os.pathsep.join(sys.path)
