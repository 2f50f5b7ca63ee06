"""The run-time half of the debug mode (no MLIR imported).

A kernel compiled with `CompileOptions.debug` (passes/tile_debug_checks.py)
takes hidden arguments after its own: for every pointer argument the byte
addresses [lo, hi) of the storage the pointer came from, then the address of
an 8-word int64 error record.  `launch_checked` passes them and, after the
launch, raises the `TilecError` the record describes: the kernel's line of the
failed access or assertion (with its caret), the program id and the element
offset.  The record's words are [0] the failed site's index + 1 (0: no
failure), [1..3] the program id, [4] the offset; the sites (file, line, col,
what, argument, message) come from the compiled kernel's metadata.

Extents: a NumPy array's are those of the array that owns its memory (a view
`a[10:]` may reach back to `a[0]`); a torch tensor's are its untyped storage's.
"""
from __future__ import annotations

import linecache
import os
from typing import Any, Callable, Sequence

from tilec.errors import SourceLoc, TilecError
from tilec.language import core as tl

ERROR_WORDS = 8


def env_debug() -> bool:
    """Whether `TILEC_DEBUG` asks for the debug mode (1, true, yes, on)."""
    return os.environ.get("TILEC_DEBUG", "").strip().lower() in ("1", "true", "yes", "on")


def hidden_types(types: Sequence[tl.dtype | tl.pointer_type]) -> list[tl.dtype | tl.pointer_type]:
    """The hidden parameters a debug-mode kernel with parameters `types` takes."""
    out: list[tl.dtype | tl.pointer_type] = []
    for t in types:
        if isinstance(t, tl.pointer_type):
            out += [tl.int64, tl.int64]
    out.append(tl.pointer_type(tl.int64))
    return out


def extent(v: Any) -> tuple[int, int]:
    """The byte addresses [lo, hi) of the memory that array `v` may address."""
    if hasattr(v, "untyped_storage"):
        s = v.untyped_storage()
        lo = int(s.data_ptr())
        return lo, lo + int(s.nbytes())
    owner = v
    while getattr(owner, "base", None) is not None and hasattr(owner.base, "__array_interface__"):
        owner = owner.base
    try:
        import numpy as np
        lo, hi = np.lib.array_utils.byte_bounds(np.asarray(owner))
        return int(lo), int(hi)
    except (AttributeError, ImportError, TypeError, ValueError):
        ai = getattr(v, "__array_interface__", None) or getattr(v, "__cuda_array_interface__", {})
        lo = int(ai.get("data", (0,))[0])
        return lo, lo + int(getattr(v, "nbytes", 0))


class ErrorRecord:
    """The error record of one launch, in host or device memory."""

    def __init__(self, device: str) -> None:
        self.device = device
        if device == "cuda":
            import torch
            self.buf: Any = torch.zeros(ERROR_WORDS, dtype=torch.int64, device="cuda")
            self.address = int(self.buf.data_ptr())
        else:
            import numpy as np
            self.buf = np.zeros(ERROR_WORDS, dtype=np.int64)
            self.address = int(self.buf.ctypes.data)

    def words(self) -> list[int]:
        if self.device == "cuda":
            return [int(x) for x in self.buf.cpu().tolist()]
        return [int(x) for x in self.buf]


def launch_checked(kernel: str, launch: Callable[[tuple[int, int, int], Sequence[Any]], None],
                   grid: tuple[int, int, int], raw: Sequence[Any], arrays: Sequence[Any],
                   sites: Sequence[dict[str, Any]], device: str) -> None:
    """Launch a debug-mode kernel: `raw` are its own arguments' values,
    `arrays` the objects its pointer arguments came from (in order)."""
    record = ErrorRecord(device)
    extra: list[int] = []
    for a in arrays:
        extra += list(extent(a))
    launch(grid, [*raw, *extra, record.address])
    try:
        words = record.words()
    except Exception as e:  # noqa: BLE001 - a trapped GPU kernel ends its CUDA context
        raise TilecError(f"kernel '{kernel}' stopped at a failed debug-mode check (the GPU "
                         f"trapped: {str(e).splitlines()[0] if str(e) else type(e).__name__}); "
                         "the kernel printed which check failed above") from None
    if words[0] != 0:
        raise failure(kernel, words, sites, arrays)


def failure(kernel: str, words: Sequence[int], sites: Sequence[dict[str, Any]],
            arrays: Sequence[Any] = ()) -> TilecError:
    """The TilecError an error record describes."""
    index = words[0] - 1
    pid = (words[1], words[2], words[3])
    off = words[4]
    if not 0 <= index < len(sites):
        return TilecError(f"kernel '{kernel}' failed a debug check in program {pid} "
                          f"(site {index} is not recorded)")
    site = sites[index]
    if site["what"] == "assert":
        msg = site["message"] or "(no message)"
        text = (f"tl.device_assert failed in kernel '{kernel}', program {pid}: {msg} "
                f"(element {off} of the condition is false)")
    else:
        text = (f"{site['message']} in kernel '{kernel}', program {pid}: element offset {off} "
                f"from '{site['arg']}' is outside the array passed for it"
                f"{_valid_range(site, arrays)}")
    loc = SourceLoc(site["file"], int(site["line"]), int(site["col"])) if site["line"] else None
    line = linecache.getline(site["file"], int(site["line"])) if loc else None
    return TilecError(text, loc, line or None)


def _valid_range(site: dict[str, Any], arrays: Sequence[Any]) -> str:
    """' (valid offsets: a..b)' for the site's argument, or ''."""
    k, size = site.get("pointer"), int(site.get("elem_bytes", 0))
    if not isinstance(k, int) or not 0 <= k < len(arrays) or size <= 0:
        return ""
    lo, hi = extent(arrays[k])
    base = _address(arrays[k])
    if base is None:
        return ""
    first, last = -((base - lo) // size), (hi - base) // size - 1
    return f" (valid offsets: {first}..{last})" if last >= first else " (it is empty)"


def _address(v: Any) -> int | None:
    if hasattr(v, "data_ptr"):
        return int(v.data_ptr())
    ai = getattr(v, "__array_interface__", None)
    return int(ai["data"][0]) if isinstance(ai, dict) else None
