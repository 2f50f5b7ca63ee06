"""Run native-code work (MLIR passes, LLVM code generation) in a forked child.

LLVM reports some errors by aborting the process (``LLVM ERROR: ...`` then
SIGABRT) instead of raising; MLIR and LLVM are built with assertions, which do
the same.  `run_isolated(fn, *args)` runs ``fn(*args)`` in a child made with
``os.fork`` so that such a death becomes a `ChildCrashError` (a
`CompilerBugError`) carrying the child's stderr, and the user's process lives.

Input: a callable and its arguments (they are inherited through fork, so they
need not be picklable).  Output: ``fn``'s return value, which must be picklable
(it crosses a pipe).  An exception raised by ``fn`` is re-raised in the parent
with its type, message and attributes; when it cannot be pickled a
`RuntimeError` with the child's traceback text is raised instead.

Forking a process that holds MLIR state: an ``mlir.ir.Context`` owns a thread
pool, and threads do not survive ``fork``.  Contexts used before or inside a
child must have multithreading disabled (``ctx.enable_multithreading(False)``,
as `compile_spec` and `tilec opt` make theirs).  The CPU back end, and the
NVIDIA one where the module's context is single-threaded, hand their child the
module it inherits (no printing and parsing on the way in); otherwise the IR
goes as text, parsed in the child in a fresh context with multithreading off
(the AMD back end always).  Only POSIX systems (Linux, macOS) are supported.
"""
from __future__ import annotations

import faulthandler
import gc
import os
import pickle
import select
import signal
import sys
import tempfile
import time
import traceback
from typing import Any, Callable, Mapping, TypeVar

from tilec.errors import CompilerBugError

T = TypeVar("T")

DEFAULT_TIMEOUT = 300.0
_MAX_STDERR = 20000


class ChildCrashError(CompilerBugError):
    """The isolated child died (signal, ``os._exit`` without a result, timeout).

    ``signal``: the signal number that killed it, or None; ``exit_code``: its
    exit status when it exited; ``stderr``: what it wrote to fd 2.
    """

    def __init__(self, message: str, *, stderr: str = "", sig: int | None = None,
                 exit_code: int | None = None, reproducer: str | None = None) -> None:
        self.stderr = stderr
        self.signal = sig
        self.exit_code = exit_code
        self.detail = message
        super().__init__(message, reproducer=reproducer)


def _encode_exception(exc: BaseException) -> bytes:
    """Pickle ``exc`` as (module, qualname, args, __dict__, traceback text)."""
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    cls = type(exc)
    try:
        state = dict(getattr(exc, "__dict__", {}))
        data = pickle.dumps(("exc", cls.__module__, cls.__qualname__, exc.args, state, tb))
        _decode_exception(pickle.loads(data))  # the parent must be able to rebuild it
        return data
    except Exception:
        return pickle.dumps(("exc", None, None, None, None, tb))


def _decode_exception(payload: tuple[Any, ...]) -> BaseException:
    """Rebuild an exception without calling its ``__init__`` (it may take other args)."""
    _, module, qualname, args, state, tb = payload
    if module is None:
        return RuntimeError(f"exception in isolated child (not picklable):\n{tb}")
    obj: Any = sys.modules.get(module) or __import__(module, fromlist=["_"])
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not (isinstance(obj, type) and issubclass(obj, BaseException)):
        raise TypeError(f"{module}.{qualname} is not an exception type")
    exc = obj.__new__(obj)
    exc.args = tuple(args)
    exc.__dict__.update(state)
    if hasattr(exc, "add_note"):
        exc.add_note(f"(raised in an isolated child process)\n{tb}")
    return exc


def _child(fn: Callable[..., Any], args: tuple[Any, ...], wfd: int, err_path: str) -> None:
    """Body of the forked child; never returns."""
    code = 1
    # The child is short-lived: a garbage collection would touch (and so copy)
    # every page of the parent's heap (copy-on-write) for nothing.
    gc.disable()
    # Python's fault handler (pytest enables it) would print to the parent's
    # stderr; LLVM prints its own message and stack to the captured fd 2.
    faulthandler.disable()
    try:
        fd = os.open(err_path, os.O_WRONLY | os.O_TRUNC)
        os.dup2(fd, 2)
        os.close(fd)
        try:
            data = pickle.dumps(("ok", fn(*args)))
        except BaseException as exc:  # noqa: BLE001 - everything goes to the parent
            data = _encode_exception(exc)
        view = memoryview(data)
        while view:
            n = os.write(wfd, view)
            view = view[n:]
        os.close(wfd)
        code = 0
    except BaseException:  # noqa: BLE001
        try:
            traceback.print_exc()
        except BaseException:  # noqa: BLE001
            pass
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:  # noqa: BLE001
            pass
        os._exit(code)


def _read_text(path: str) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return ""
    text = data.decode("utf-8", "replace")
    if len(text) > _MAX_STDERR:  # keep the first lines (LLVM ERROR) and the last
        half = _MAX_STDERR // 2
        text = text[:half] + "\n...\n" + text[-half:]
    return text


def save_reproducer(files: Mapping[str, str | bytes], prefix: str = "tilec-repro-") -> str:
    """Write ``files`` (plain name -> content) into a new temporary directory; return it."""
    d = tempfile.mkdtemp(prefix=prefix)
    for name, content in files.items():
        with open(os.path.join(d, os.path.basename(name)), "wb") as f:
            f.write(content.encode() if isinstance(content, str) else content)
    return d


def run_isolated(fn: Callable[..., T], *args: Any, timeout: float = DEFAULT_TIMEOUT,
                 what: str = "native compilation",
                 reproducer: Mapping[str, str | bytes] | None = None) -> T:
    """Return ``fn(*args)`` computed in a forked child process.

    ``timeout``: seconds before the child is killed (SIGKILL) and a
    `ChildCrashError` is raised.  ``what``: words for error messages.
    ``reproducer``: files (name -> content, e.g. the input IR and the pipeline)
    written to a kept temporary directory only when the child crashes; the
    error names that directory.  The child is always reaped.  A child that
    dies from a signal or exits without a result raises `ChildCrashError` with
    its stderr; an exception raised by ``fn`` is re-raised here.
    """
    fd, err_path = tempfile.mkstemp(prefix="tilec-child-", suffix=".stderr")
    os.close(fd)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:  # child
            os.close(rfd)
            _child(fn, args, wfd, err_path)
        os.close(wfd)
        chunks: list[bytes] = []
        deadline = time.monotonic() + timeout
        timed_out = False
        complete = False
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                ready, _, _ = select.select([rfd], [], [], left)
                if not ready:
                    continue
                chunk = os.read(rfd, 1 << 20)
                if not chunk:
                    complete = True
                    break
                chunks.append(chunk)
        finally:
            os.close(rfd)
            if not complete:  # timeout, or an exception (e.g. KeyboardInterrupt) here
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            _, status = os.waitpid(pid, 0)
        stderr = _read_text(err_path)
    finally:
        try:
            os.unlink(err_path)
        except OSError:
            pass

    if timed_out:
        raise ChildCrashError(f"{what} did not finish within {timeout:g} s"
                              + (f"; its stderr:\n{stderr}" if stderr else ""),
                              stderr=stderr, sig=signal.SIGKILL,
                              reproducer=save_reproducer(reproducer) if reproducer else None)
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    data = b"".join(chunks)
    if sig is not None or code != 0 or not data:
        how = (f"was killed by signal {sig} ({signal.Signals(sig).name})" if sig is not None
               else f"exited with status {code} without a result")
        raise ChildCrashError(f"{what} {how}" + (f"; its stderr:\n{stderr}" if stderr
                                                 else " (no stderr output)"),
                              stderr=stderr, sig=sig, exit_code=code,
                              reproducer=save_reproducer(reproducer) if reproducer else None)
    payload = pickle.loads(data)
    if payload[0] == "ok":
        result: T = payload[1]
        return result
    raise _decode_exception(payload)
