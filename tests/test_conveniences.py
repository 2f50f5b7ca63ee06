"""tilec --version, python -m tilec, TILEC_DUMP_DIR, kernel.compile() from the disk cache,
progress lines on stderr."""
from __future__ import annotations

import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tilec
import tilec.language as tl
from tilec import progress


@tilec.kernel
def twice(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


@pytest.fixture
def cache_dir(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_version_and_python_m_tilec() -> None:
    for cmd in ([sys.executable, "-m", "tilec", "--version"],
                [sys.executable, "-m", "tilec.cli", "--version"]):
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and out.stdout.strip() == f"tilec {tilec.__version__}"
    out = subprocess.run([sys.executable, "-m", "tilec", "targets"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and "sm90" in out.stdout


def test_dump_dir_has_every_stage(cache_dir: pathlib.Path, tmp_path: pathlib.Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TILEC_DUMP_DIR", str(tmp_path / "dump"))
    k = tilec.kernel(twice.fn)
    x, o = np.arange(100, dtype=np.float32), np.zeros(100, np.float32)
    k[(1,)](x, o, 100, BLOCK=128)
    np.testing.assert_array_equal(o, x * 2)
    k.compile(target="sm90", signature="*fp32,*fp32,i32", constexprs={"BLOCK": 128})
    folders = sorted(p.name for p in (tmp_path / "dump").iterdir())
    assert len(folders) == 2 and folders[0].startswith("twice-cpu-") and \
        folders[1].startswith("twice-sm90-")
    cpu = {p.name for p in (tmp_path / "dump" / folders[0]).iterdir()}
    assert {"kernel.tile.mlir", "kernel.tile-opt.mlir", "kernel.cpu.mlir", "kernel.ll",
            "kernel.s", "kernel.so", "metadata.json"} <= cpu
    gpu = {p.name for p in (tmp_path / "dump" / folders[1]).iterdir()}
    assert {"kernel.tiled.mlir", "kernel.gpu.mlir", "kernel.ptx", "kernel.cubin"} <= gpu


def test_compile_is_served_from_the_disk_cache(cache_dir: pathlib.Path,
                                               compiles: list[str]) -> None:
    args = dict(target="sm90", signature="*fp32,*fp32,i32", constexprs={"BLOCK": 256})
    first = tilec.kernel(twice.fn).compile(**args)
    again = tilec.kernel(twice.fn).compile(**args)   # a fresh Kernel: only the disk cache
    assert compiles == ["twice"]
    assert "from_cache" not in first.metadata and again.metadata["from_cache"]
    assert again.asm["ptx"] == first.asm["ptx"] and again.asm["cubin"] == first.asm["cubin"]
    assert set(again.asm) == set(first.asm)
    # A launch of the same specialization finds that entry too.
    x, o = np.arange(10, dtype=np.float32), np.zeros(10, np.float32)
    c = dict(args, target="cpu")
    tilec.kernel(twice.fn).compile(**c)
    tilec.kernel(twice.fn)[(1,)](x, o, 10, BLOCK=256)
    assert compiles == ["twice", "twice"]


def test_progress_lines(cache_dir: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TILEC_PROGRESS", "1")
    monkeypatch.setattr(progress, "_SLOW_COMPILE_S", 0.0)
    tuned = tilec.autotune(configs=[tilec.Config({"BLOCK": 64}), tilec.Config({"BLOCK": 128})],
                           key=["n"])(tilec.kernel(twice.fn))
    x, o = np.arange(300, dtype=np.float32), np.zeros(300, np.float32)
    tuned[lambda m: (tilec.cdiv(300, m["BLOCK"]),)](x, o, 300)
    err = capsys.readouterr().err
    assert "tilec: autotuning 'twice': config 1/2" in err and "config 2/2" in err
    assert "tilec: compiled 'twice' for cpu in" in err
    monkeypatch.setenv("TILEC_PROGRESS", "0")
    assert not progress.enabled()
    monkeypatch.delenv("TILEC_PROGRESS")
    assert progress.enabled() == sys.stderr.isatty()
