"""Kernel source -> lark parse tree, with positions in the user's file.

`parse_function(fn)` reads the decorated function's source, parses it with the
grammar in grammar.lark and returns the `funcdef` tree.  Lines and columns on
every node are shifted back to the user's file, so code generation can report
errors at the user's own line and column.  Parse failures become `TilecError`.
"""
from __future__ import annotations

import functools
import inspect
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from lark.indenter import Indenter

from tilec.errors import SourceLoc, TilecError


class _PythonIndenter(Indenter):
    NL_type = "_NEWLINE"
    OPEN_PAREN_types = ["LPAR", "LSQB", "LBRACE"]
    CLOSE_PAREN_types = ["RPAR", "RSQB", "RBRACE"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8


@functools.lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = (Path(__file__).parent / "grammar.lark").read_text()
    options: dict[str, Any] = dict(parser="lalr", start="file_input", postlex=_PythonIndenter(),
                                   propagate_positions=True, maybe_placeholders=True)
    # Building the LALR tables takes ~0.3 s; lark caches them in a file keyed by
    # the grammar and lark's version.  Like Python's bytecode, the cache belongs
    # to the installation: next to this module in __pycache__ when writable,
    # else in the user's tilec cache directory (trusted like compiled kernels).
    import hashlib
    tag = hashlib.sha256(grammar.encode()).hexdigest()[:16]
    name = f"lark-grammar-{tag}.cache"
    from tilec.cache import default_cache_dir
    for folder in (Path(__file__).parent / "__pycache__", default_cache_dir()):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            if os.access(folder, os.W_OK) or (folder / name).exists():
                return Lark(grammar, cache=str(folder / name), **options)
        except OSError:
            continue
    return Lark(grammar, **options)


@dataclass
class KernelSource:
    """A kernel's source text and where it lives in the user's file."""

    file: str
    first_line: int        # line of the source's first line in the file (1-based)
    indent: int            # columns removed by dedenting
    lines: list[str]       # original (not dedented) lines
    text: str              # dedented text that was parsed

    def loc(self, line: int, col: int) -> SourceLoc:
        """Translate a (line, col) of the parsed text into the user's file."""
        return SourceLoc(self.file, self.first_line + line - 1, col + self.indent)

    def line_text(self, line: int) -> str:
        idx = line - 1
        return self.lines[idx] if 0 <= idx < len(self.lines) else ""


def get_source(fn: Callable[..., Any]) -> KernelSource:
    try:
        lines, first = inspect.getsourcelines(fn)
        file = inspect.getsourcefile(fn) or "<unknown>"
    except (OSError, TypeError) as e:
        raise TilecError(f"cannot read the source of kernel '{fn.__name__}': {e}. "
                         "tilec kernels must be defined in a file, not typed at a prompt") from None
    # Remove the indentation of the first line (the decorator or `def`) from
    # every line.  Unlike textwrap.dedent, a blank or comment-only line that is
    # less indented (Python allows a comment at column 0 inside a nested
    # function) neither stops the dedent nor reaches the parser.
    first_nonblank = next((ln for ln in lines if ln.strip()), "")
    prefix = first_nonblank[:len(first_nonblank) - len(first_nonblank.lstrip())]
    out = []
    for ln in lines:
        if ln.startswith(prefix):
            out.append(ln[len(prefix):])
        elif not ln.strip() or ln.lstrip().startswith("#"):
            out.append("\n")
        else:  # a less indented continuation line (inside brackets or a string)
            out.append(ln[min(len(prefix), len(ln) - len(ln.lstrip(" \t"))):])
    text = "".join(out)
    indent = len(prefix)
    if not text.endswith("\n"):
        text += "\n"
    return KernelSource(file=file, first_line=first, indent=indent, lines=lines, text=text)


def parse_source(src: KernelSource) -> Tree:
    """Parse a kernel's source; return its `funcdef` tree."""
    try:
        tree = _parser().parse(src.text)
    except UnexpectedInput as e:
        line = getattr(e, "line", 1) or 1
        col = getattr(e, "column", 1) or 1
        if isinstance(e, UnexpectedToken) and e.token.type == "$END":
            what = "unexpected end of the kernel source"
        elif isinstance(e, UnexpectedToken):
            what = f"unexpected '{e.token}'"
        elif isinstance(e, UnexpectedCharacters):
            what = f"unexpected character '{src.text.splitlines()[line - 1][col - 1:col]}'"
        else:
            what = "invalid syntax"
        raise TilecError(f"{what}: this is not Python syntax that tilec kernels support",
                         src.loc(line, col), src.line_text(line)) from None
    for node in tree.children:
        if isinstance(node, Tree) and node.data == "decorated":
            node = node.children[-1]
        if isinstance(node, Tree) and node.data == "funcdef":
            return node
    raise TilecError("no function definition found in the kernel source")


def token_pos(node: Tree | Token) -> tuple[int, int]:
    """(line, column) of a tree or token in the parsed text."""
    if isinstance(node, Token):
        return (node.line or 1, node.column or 1)
    meta = node.meta
    if getattr(meta, "empty", True):
        for child in node.children:
            if isinstance(child, (Tree, Token)):
                return token_pos(child)
        return (1, 1)
    return (meta.line, meta.column)
