"""Errors that tilec shows to kernel authors.

A `TilecError` is a mistake in the user's kernel or launch: it names the
user's file, line and column, quotes the source line with a caret under the
column and says in one plain sentence what is wrong.  A `CompilerBugError` is
tilec's own failure: it says so and points at a reproducer on disk.
"""
from __future__ import annotations

import linecache
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLoc:
    """A position in the user's source: 1-based line and column."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


def source_loc(loc: object) -> SourceLoc | None:
    """The user's file:line:col that an MLIR location (or its text) names, if any."""
    m = re.search(r'loc\("([^"]*)":(\d+):(\d+)', str(loc))
    return SourceLoc(m.group(1), int(m.group(2)), int(m.group(3))) if m else None


def format_source(loc: SourceLoc, source_line: str | None = None) -> str:
    """Return 'file:line:col' followed by the source line and a caret."""
    if source_line is None:
        source_line = linecache.getline(loc.file, loc.line)
    source_line = source_line.rstrip("\n")
    if not source_line:
        return str(loc)
    caret = " " * max(loc.col - 1, 0) + "^"
    return f"{loc}\n    {source_line}\n    {caret}"


class TilecError(Exception):
    """A mistake in kernel code or in a launch, reported at the user's source."""

    def __init__(self, message: str, loc: SourceLoc | None = None,
                 source_line: str | None = None) -> None:
        self.message = message
        self.loc = loc
        self.source_line = source_line
        super().__init__(self._render())

    def _render(self) -> str:
        if self.loc is None:
            return self.message
        return f"{format_source(self.loc, self.source_line)}\nerror: {self.message}"


class CompilerBugError(TilecError):
    """An internal failure of tilec (not the user's mistake)."""

    def __init__(self, message: str, reproducer: str | None = None) -> None:
        text = f"internal compiler error (this is a tilec bug): {message}"
        if reproducer:
            text += f"\nA reproducer (IR and pipeline) was written to: {reproducer}"
        self.reproducer = reproducer
        super().__init__(text)
