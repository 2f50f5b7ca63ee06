"""The snippets of docs/pytorch.md and the README's quick start run (CPU blocks; blocks
marked `python gpu` are skipped without a GPU)."""
from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def blocks(path: pathlib.Path, tag: str = "python") -> list[str]:
    return re.findall(rf"^```{tag}\n(.*?)^```", path.read_text(), flags=re.S | re.M)


def run_file(tmp_path: pathlib.Path, name: str, code: str) -> None:
    f = tmp_path / name
    f.write_text(code)
    env_cache = tmp_path / "cache"
    proc = subprocess.run([sys.executable, str(f)], capture_output=True, text=True, timeout=900,
                          env={**__import__("os").environ, "TILEC_CACHE_DIR": str(env_cache)})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]


def test_pytorch_doc_snippets(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("torch")
    cpu = blocks(ROOT / "docs" / "pytorch.md")
    gpu = blocks(ROOT / "docs" / "pytorch.md", "python gpu")
    assert len(cpu) >= 7 and len(gpu) >= 2
    run_file(tmp_path, "pytorch_doc.py", "\n".join(cpu) + "\nprint('ok')\n")


def test_readme_quick_start(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("torch")
    text = (ROOT / "README.md").read_text()
    m = re.search(r"## Quick start with PyTorch.*?```python\n(.*?)```", text, flags=re.S)
    assert m is not None
    code = m.group(1)
    assert len(code.strip().splitlines()) <= 12
    run_file(tmp_path, "quick_start.py", code)
