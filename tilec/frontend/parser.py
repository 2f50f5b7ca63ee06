"""Kernel source -> lark parse tree, with positions in the user's file.

`parse_function(fn)` reads the decorated function's source, parses it with the
grammar in grammar.lark and returns the `funcdef` tree.  Lines and columns on
every node are shifted back to the user's file, so code generation can report
errors at the user's own line and column.  Parse failures become `TilecError`.
"""
from __future__ import annotations

import ast
import functools
import inspect
import linecache
import os
import tokenize
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


def _source_lines(fn: Callable[..., Any]) -> tuple[list[str], int, str]:
    """(lines, first line number, file) of `fn`'s definition.

    The text comes from the file (through inspect), or from a source kept with
    the function (`fn.__tilec_source__`, set by `@tilec.jit(src=...)` or by
    assigning `kernel.src`) for functions made by `exec` or in a notebook."""
    code = getattr(fn, "__code__", None)
    file = code.co_filename if code is not None else "<unknown>"
    kept = getattr(fn, "__tilec_source__", None)
    if isinstance(kept, str):
        return kept.splitlines(keepends=True), 1, file
    try:
        lines, first = inspect.getsourcelines(fn)
        return lines, first, inspect.getsourcefile(fn) or file
    except (OSError, TypeError) as e:
        raise TilecError(f"cannot read the source of kernel '{fn.__name__}': {e}. A kernel made "
                         "by exec() or typed at a prompt needs its source text: "
                         "@tilec.jit(src=TEXT) or kernel.src = TEXT") from None
    except (tokenize.TokenError, SyntaxError) as e:
        line = code.co_firstlineno if code is not None else 1
        raise TilecError(f"cannot read the source of kernel '{fn.__name__}': its file no longer "
                         f"parses ({e}); was it edited after it was imported? Re-import it",
                         SourceLoc(file, line, 1), linecache.getline(file, line)) from None


def _def_line(text: str) -> int:
    """The 1-based line of the `def` in a function's dedented text (after its
    decorators), 1 if Python cannot parse it."""
    try:
        mod = ast.parse(text)
    except SyntaxError:
        return 1
    for node in mod.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node.lineno
    return 1


def get_source(fn: Callable[..., Any]) -> KernelSource:
    lines, first, file = _source_lines(fn)
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
    # The decorators are Python run at import (autotune configs built by a
    # comprehension, ...), not kernel code: blank them out, keeping line numbers.
    for i in range(_def_line("".join(out)) - 1):
        out[i] = "\n"
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
