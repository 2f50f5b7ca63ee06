"""What a kernel's compiled code depends on besides its own text (no MLIR).

`dependency_text(fn)` describes the `@jit` helpers the kernel may call (named
as module globals, closure cells or attributes of modules it names, followed
transitively) by their source hashes, and the simple values of its closure
cells (a kernel defined inside a function sees them as constants).  The
kernel's source hash covers this text, so editing a helper recompiles every
kernel that calls it (as Triton's dependency finder does).
"""
from __future__ import annotations

import inspect
from typing import Any, Callable


def _closure(fn: Callable[..., Any]) -> dict[str, Any]:
    code = getattr(fn, "__code__", None)
    out: dict[str, Any] = {}
    if code is None:
        return out
    for name, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or ()):
        try:
            out[name] = cell.cell_contents
        except ValueError:
            continue
    return out


def referenced(fn: Callable[..., Any]) -> list[tuple[str, Any]]:
    """(name, value) of what the code of `fn` names: closure cells, globals,
    and attributes (named in the code) of the modules among them."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return []
    g = getattr(fn, "__globals__", {})
    names = set(code.co_names)
    out = list(_closure(fn).items())
    for n in code.co_names:
        if n in g:
            out.append((n, g[n]))
    for name, v in list(out):
        if inspect.ismodule(v):
            for attr in sorted(names):
                sub = getattr(v, attr, None)
                if getattr(sub, "__tilec_kernel__", False):
                    out.append((f"{name}.{attr}", sub))
    return out


def dependency_text(fn: Callable[..., Any], seen: set[int] | None = None) -> str:
    seen = set() if seen is None else seen
    seen.add(id(fn))
    parts: list[str] = []
    for name, v in referenced(fn):
        if getattr(v, "__tilec_kernel__", False):
            inner = getattr(v, "fn", None)
            if inner is None or id(inner) in seen:
                continue
            parts.append(f"{name}=helper:{v.own_source_hash()}")
            parts.append(dependency_text(inner, seen))
    for name, v in _closure(fn).items():
        if isinstance(v, (bool, int, float, str)) or v is None or type(v).__name__ in (
                "dtype", "constexpr", "pointer_type"):
            parts.append(f"{name}={v!r}")
    return ";".join(p for p in parts if p)
