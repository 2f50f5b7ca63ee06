"""Type-check the package as it is installed: tilec/ with dialects/, passes/ and
targets/ inside it as tilec.dialects, tilec.passes, tilec.targets.

mypy resolves modules by folder, not through setuptools' package-dir mapping, so
this copies the sources into that shape in a temporary folder, runs mypy there
with the project's configuration, and prints the findings with repository paths.
Its incremental cache is a folder of its own (.mypy_cache/installed-view): a
plain `mypy` run from the repository root caches `tilec.dialects` as the
folder tilec/ has (no dialect modules), and sharing that cache made this check
report 20 false "has no attribute" errors.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAPPED = ("dialects", "passes", "targets")


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="tilec-typecheck-") as tmp:
        view = Path(tmp) / "tilec"
        ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.o")
        shutil.copytree(ROOT / "tilec", view, ignore=ignore)
        for name in MAPPED:
            shutil.copytree(ROOT / name, view / name, ignore=ignore)
        proc = subprocess.run([sys.executable, "-m", "mypy", "--config-file",
                               str(ROOT / "pyproject.toml"), "--cache-dir",
                               str(ROOT / ".mypy_cache" / "installed-view")], cwd=tmp,
                              capture_output=True, text=True)
        out = proc.stdout + proc.stderr
        for name in MAPPED:
            out = out.replace(f"tilec/{name}/", f"{name}/")
        print(out, end="")
        return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
