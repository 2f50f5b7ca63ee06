"""The C launch fast path (`_launch.c`): built on first use, then loaded.

The extension is compiled with the system C compiler against this Python's
headers into the tilec cache folder (`<cache>/native/<hash>/`), once per
source version and Python ABI, atomically (concurrent processes each build into
a private folder and the first rename wins).  Where there is no C compiler or
no Python headers, `launch_module()` returns None and tilec launches through
the equivalent Python path; `status()` says why.  `TILEC_NATIVE_LAUNCH=0`
turns the C path off (the extension's crash handler, `running_slot()`, stays).
"""
from __future__ import annotations

import ctypes
import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType

_SOURCE = Path(__file__).with_name("_launch.c")
_STATE: dict[str, object] = {}


def _build_dir() -> Path:
    from tilec.cache import default_cache_dir
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    tag = hashlib.sha256(_SOURCE.read_bytes() + sys.version.encode() + suffix.encode())
    return default_cache_dir() / "native" / tag.hexdigest()[:24]


def _compiler() -> list[str] | None:
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    parts = cc.split()
    if parts and shutil.which(parts[0]):
        return parts
    for name in ("cc", "gcc", "clang"):
        if shutil.which(name):
            return [name]
    return None


def _build(target: Path) -> str | None:
    """Compile the extension to `target`; None on success, else the reason."""
    cc = _compiler()
    if cc is None:
        return "no C compiler found (cc, gcc, clang)"
    include = sysconfig.get_paths().get("include", "")
    if not (Path(include) / "Python.h").exists():
        return f"no Python headers (Python.h) in {include}"
    target.parent.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent.parent))
    try:
        out = work / target.name
        cmd = [*cc, "-O2", "-shared", "-fPIC", "-std=c11", f"-I{include}", str(_SOURCE),
               "-o", str(out)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"the C compiler failed to run: {e}"
        if proc.returncode != 0:
            return f"the C compiler failed: {proc.stderr.strip()[-2000:]}"
        try:
            os.rename(work, target.parent)  # atomic; loses to a concurrent build harmlessly
        except OSError:
            if not target.exists():
                return f"cannot place the built extension in {target.parent}"
        return None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _load(path: Path) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader("_tilec_launch", str(path))
    spec = importlib.util.spec_from_file_location("_tilec_launch", str(path), loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _extension() -> tuple[ModuleType | None, str]:
    """The built extension (or None) and 'built' or why not, made once."""
    if "extension" in _STATE:
        return _STATE["extension"]  # type: ignore[return-value]
    module: ModuleType | None = None
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    try:
        target = _build_dir() / f"_tilec_launch{suffix}"
        reason = None if target.exists() else _build(target)
        if reason is None:
            module = _load(target)
            if getattr(module, "ABI", None) != 1:
                module, reason = None, "the built extension has another ABI"
    except (OSError, ImportError) as e:
        module, reason = None, f"cannot build or load the extension: {e}"
    _STATE["extension"] = (module, reason or "built")
    return module, reason or "built"


def launch_module() -> ModuleType | None:
    """The built `_tilec_launch` module, or None (see `status()`)."""
    if "module" in _STATE:
        return _STATE["module"]  # type: ignore[return-value]
    module: ModuleType | None = None
    if os.environ.get("TILEC_NATIVE_LAUNCH", "1") == "0":
        _STATE["reason"] = "turned off by TILEC_NATIVE_LAUNCH=0"
    else:
        module, _STATE["reason"] = _extension()
    _STATE["module"] = module
    return module


def running_slot() -> ctypes.c_void_p | None:
    """The C global naming the CPU kernel that runs now, read by the extension's
    fatal-signal handler (installed by the first call): a crash inside a kernel
    prints the kernel's name before the previous handler (faulthandler's or the
    default) runs.  None where the extension cannot be built."""
    if "slot" not in _STATE:
        module, _ = _extension()
        hook = getattr(module, "install_crash_hook", None)
        _STATE["slot"] = ctypes.c_void_p.from_address(hook()) if hook is not None else None
    return _STATE["slot"]  # type: ignore[return-value]


def status() -> str:
    """'built', or why the C launch path is not used."""
    launch_module()
    return str(_STATE.get("reason"))
