"""The API boundary: a user's mistake is reported at their line.

Every public entry point (`@tilec.kernel` and `tilec.kernel.Kernel` in
kernel.py, launches in launch.py, autotuning) reports a `TilecError` through
`user_launcher` / `_user_api` below, so the only tilec frame a user's traceback
shows is in this file.  It imports nothing else of tilec's but the errors.
"""
from __future__ import annotations

import functools
import linecache
import os
import sys
from types import FrameType
from typing import Any, Callable, Mapping, Sequence, TypeVar, cast

from tilec.errors import CompilerBugError, SourceLoc, TilecError
from tilec.version import __version__

_PACKAGE_DIR = os.path.realpath(os.path.dirname(__file__))
F = TypeVar("F", bound=Callable[..., Any])


def _call_site(frame: FrameType) -> tuple[SourceLoc, str] | None:
    """The location (line, column of the call expression) that `frame` is executing."""
    file = frame.f_code.co_filename
    if os.path.realpath(file).startswith(_PACKAGE_DIR + os.sep):
        return None  # called by tilec itself (e.g. the CLI): no user line to show
    line, col = frame.f_lineno, 1
    positions = getattr(frame.f_code, "co_positions", None)  # Python >= 3.11
    if positions is not None:
        pos = list(positions())[frame.f_lasti // 2]
        if pos[0] is not None and pos[2] is not None:
            line = pos[0]
            text = linecache.getline(file, line)
            col = len(text.encode()[:pos[2]].decode(errors="ignore")) + 1
    text = linecache.getline(file, line)
    if not text:
        return None
    return SourceLoc(file, line, col), text


def _for_user(e: TilecError, caller: FrameType) -> TilecError:
    """The error to raise at an API entry point, without tilec's own frames.

    A mistake in kernel code already names its line in the kernel; a launch
    mistake (wrong arguments, grid, ...) gets the user's line that launched.
    """
    if e.loc is None:
        site = _call_site(caller)
        if site is not None:
            return TilecError(e.message, site[0], site[1])
    return e.with_traceback(None)


# Triton launch keywords tilec accepts and ignores: `extern_libs=` names
# libdevice bitcode (tutorial 07); tilec's math functions need none.
IGNORED_LAUNCH_KEYWORDS = ("extern_libs",)


def user_launcher(run: Callable[[Any, Sequence[Any], Mapping[str, Any]], None],
                  grid: Any) -> Callable[..., None]:
    """`obj[grid]`: a function of the launch arguments calling `run(grid, args,
    kwargs)`, which reports a `TilecError` at the line that called it."""
    def launcher(*args: Any, **kwargs: Any) -> None:
        for k in IGNORED_LAUNCH_KEYWORDS:
            kwargs.pop(k, None)
        try:
            run(grid, args, kwargs)
        except CompilerBugError:
            raise
        except TilecError as e:
            raise _for_user(e, sys._getframe(1)) from None
    return launcher


def _user_api(fn: F) -> F:
    """Report a `TilecError` raised inside `fn` at its caller: `raise ... from None`,
    no internal frames or chained internal exceptions.  Compiler bugs keep
    their traceback."""
    @functools.wraps(fn)
    def api(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except CompilerBugError:
            raise
        except TilecError as e:
            raise _for_user(e, sys._getframe(1)) from None
    return cast(F, api)


def call_grid(grid: Callable[[dict[str, Any]], Any], meta: dict[str, Any]) -> Any:
    """The user's grid function applied to the launch's arguments (by name); what
    it raises is the user's mistake."""
    try:
        return grid(meta)
    except Exception as e:
        raise TilecError(f"the grid function raised {type(e).__name__}: {e} (it is called with "
                         f"a dict of the arguments by name: {', '.join(meta)})") from None


__all__ = ["__version__", "call_grid", "user_launcher"]
