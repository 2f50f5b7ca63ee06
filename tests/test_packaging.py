"""Installation layout, internal-error reproducers and ahead-of-time loading."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tilec

ROOT = Path(__file__).resolve().parent.parent


def test_subpackages_live_under_tilec_only(tmp_path: Path) -> None:
    """dialects/, passes/, targets/ install as tilec.* and not as top-level packages."""
    code = ("import importlib.util as u, tilec.passes, tilec.dialects, tilec.targets; "
            "print([u.find_spec(n) is None for n in ('passes', 'dialects', 'targets')])")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "[True, True, True]"


def test_no_symlinks_in_the_tree() -> None:
    """Every file has one path: the subpackages are mapped by setuptools, not linked."""
    tracked = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.splitlines()
    links = [line.split("\t", 1)[1] for line in tracked if line.startswith("120000")]
    assert links == []


def test_every_package_is_listed_in_pyproject() -> None:
    """A folder of Python modules under tilec/, dialects/, passes/ or targets/ that
    pyproject.toml does not list would be missing from a wheel."""
    try:
        import tomllib
    except ImportError:   # Python 3.10
        pytest.skip("tomllib needs Python 3.11")
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    roots = {v: k for k, v in cfg["package-dir"].items()}
    found = set()
    for folder, package in roots.items():
        for d in [ROOT / folder, *(p for p in (ROOT / folder).rglob("*") if p.is_dir())]:
            if "__pycache__" in d.parts or not any(d.glob("*.py")):
                continue
            rel = d.relative_to(ROOT / folder).parts
            found.add(".".join((package, *rel)))
    assert sorted(found - set(cfg["packages"])) == []


def test_runtime_imports_no_mlir(tmp_path: Path) -> None:
    """Importing tilec and its runtime must not import MLIR (the GPU machine has none)."""
    code = ("import sys, tilec, tilec.runtime.loaded, tilec.runtime.cuda, tilec.jit, "
            "tilec.kernel, tilec.launch, tilec.specialization, tilec.builder, "
            "tilec.runtime.launch_entries, tilec.runtime.native; "
            "print(any(m == 'mlir' or m.startswith('mlir.') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "False"


def test_internal_failure_writes_a_reproducer(monkeypatch: pytest.MonkeyPatch) -> None:
    from tilec import compiler
    from tilec.passes import tile_dce

    def broken(*args: object) -> None:
        raise RuntimeError("simulated pass crash")

    monkeypatch.setattr(tile_dce, "run", broken)
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import saxpy
    finally:
        sys.path.pop(0)
    with pytest.raises(tilec.CompilerBugError) as info:
        saxpy.saxpy.compile(target="cpu", signature="*fp32,*fp32,*fp32,fp32,i32",
                            constexprs={"BLOCK": 64})
    e = info.value
    assert "tilec bug" in str(e) and "simulated pass crash" in str(e)
    assert e.reproducer is not None and Path(e.reproducer).exists()
    text = Path(e.reproducer).read_text()
    assert "tile-dce" in text and "tile.load" in text  # the IR before the failing step
    assert compiler is not None


def test_aot_compile_and_load(tmp_path: Path) -> None:
    """`tilec compile` output loads with tilec.load and checks its arguments."""
    from tilec.cli import main
    out = tmp_path / "out"
    rc = main(["compile", str(ROOT / "examples" / "saxpy.py"), "--target", "cpu",
               "--signature", "*fp32,*fp32,*fp32,fp32,i32:16", "--constexpr", "BLOCK=128",
               "-o", str(out)])
    assert rc == 0
    manifest = json.loads((out / "saxpy" / "manifest.json").read_text())
    assert manifest["kernel"] == "saxpy" and manifest["target"] == "cpu"
    k = tilec.load(out / "saxpy")
    n = 1024
    x = np.random.rand(n).astype(np.float32)
    y = np.random.rand(n).astype(np.float32)
    o = np.zeros_like(x)
    k[(n // 128,)](x, y, o, 2.0, n)
    np.testing.assert_allclose(o, 2.0 * x + y, rtol=1e-6)
    with pytest.raises(tilec.TilecError, match="divisible by 16"):
        k[(1,)](x, y, o, 2.0, 1000)
    with pytest.raises(tilec.TilecError, match="array of float32"):
        k[(1,)](x.astype(np.float64), y, o, 2.0, n)
    with pytest.raises(tilec.TilecError, match="takes 5 arguments"):
        k[(1,)](x, y, o, 2.0)


class _OnlyDLPack:
    """An array that offers nothing but the DLPack protocol."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a

    def __dlpack__(self, stream: object = None) -> object:
        return self.a.__dlpack__()

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.a.__dlpack_device__()


def test_dlpack_arguments() -> None:
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import saxpy
    finally:
        sys.path.pop(0)
    n = 1000
    x = np.random.rand(n).astype(np.float32)
    y = np.random.rand(n).astype(np.float32)
    o = np.zeros(n, np.float32)
    saxpy.saxpy[(tilec.cdiv(n, 256),)](_OnlyDLPack(x), _OnlyDLPack(y), _OnlyDLPack(o), 2.0, n,
                                      BLOCK=256)
    np.testing.assert_allclose(o, 2.0 * x + y, rtol=1e-6)


def test_missing_specialization_without_compiler(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    """Where MLIR is not installed, a cache miss names the specialization and the fix."""
    from tilec import builder
    monkeypatch.setattr(builder, "compiler_available", lambda: False)
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "empty"))
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import saxpy
    finally:
        sys.path.pop(0)
    k = tilec.Kernel(saxpy.saxpy.fn)  # a fresh kernel: nothing in memory either
    x = np.zeros(64, np.float32)
    with pytest.raises(tilec.TilecError) as info:
        k[(1,)](x, x, x, 1.0, 64, BLOCK=64)
    msg = str(info.value)
    assert "no compiled specialization" in msg and "*fp32:16" in msg and "BLOCK" in msg
    assert "tilec compile" in msg and "warmup" in msg and "tilec.load" in msg
