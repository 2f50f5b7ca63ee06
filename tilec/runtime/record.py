"""Record mode: where the compiler is missing, note cache misses instead of failing.

`TILEC_RECORD=FILE` on a machine without the compiler (MLIR, llvmlite, lark)
turns a disk-cache miss into one JSON line appended to FILE and a skipped
launch.  The line holds what `tilec replay FILE` (tilec/cli/replay.py), run
where the compiler is, needs to rebuild exactly that cache entry: the
kernel's source file, module name and qualname, its source hash, the used
globals' reprs, and the specialization (parameters with types and
divisibility, constexpr reprs, target, compile options) with the cache key
the launch computed.  Copying the replayed cache back makes the same launch a
hit.  One warning per process goes to stderr at exit ("tilec: recording N
missing specializations in FILE; their launches are skipped"); a specialization is written
once per process and not again when FILE already holds its key.

`skipped()` counts the launches skipped so far: tilec.autotune keeps the
(meaningless) timings of a tuning round that skipped launches out of its disk
cache.  No MLIR is imported here.
"""
from __future__ import annotations

import atexit
import dataclasses
import inspect
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tilec.kernel import Kernel
    from tilec.specialization import Specialization

ENV = "TILEC_RECORD"

_written: set[str] = set()       # keys written (or found in the file) by this process
_loaded_from: str | None = None  # the file whose keys `_written` holds
_new: list[str] = []            # keys this process appended
_skipped = 0


def record_file() -> str | None:
    """The record file named by TILEC_RECORD, or None (record mode off)."""
    return os.environ.get(ENV) or None


def skipped() -> int:
    """A count that grows with every miss recorded and every launch skipped in
    this process (compare two readings: did anything get skipped between?)."""
    return _skipped


def record_line(kernel: Kernel, spec: Specialization, key: str) -> dict[str, Any]:
    """The JSON record of one missing specialization."""
    fn = kernel.fn
    try:
        file = inspect.getsourcefile(fn) or fn.__code__.co_filename
    except TypeError:
        file = fn.__code__.co_filename
    return {
        "key": key,
        "kernel": kernel.name,
        "file": os.path.abspath(file),
        "module": fn.__module__,
        "qualname": fn.__qualname__,
        "source_hash": kernel.source_hash(),
        "globals": dict(spec.globals),
        "params": spec.manifest_params(),
        "specialized": list(spec.specialized),
        "constexprs": {k: repr(v) for k, v in spec.constexprs},
        "target": spec.target,
        "options": dataclasses.asdict(spec.options),
    }


def record_missing(kernel: Kernel, spec: Specialization, key: str, path: str) -> None:
    """Append `spec`'s record to `path` (once per key) and count a skipped launch."""
    global _skipped, _loaded_from
    _skipped += 1
    if _loaded_from != path:
        _loaded_from = path
        _written.clear()
        _written.update(_keys_in(path))
    if key in _written:
        return
    _written.add(key)
    line = json.dumps(record_line(kernel, spec, key), sort_keys=True)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")
    if not _new:
        atexit.register(_warn, path)
    _new.append(key)


def _warn(path: str) -> None:
    print(f"tilec: recording {len(_new)} missing specialization{'s' if len(_new) != 1 else ''} "
          f"in {path}; their launches are skipped", file=sys.stderr)


def _keys_in(path: str) -> set[str]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError:
        return set()
    keys = set()
    for line in text.splitlines():
        try:
            keys.add(json.loads(line)["key"])
        except (ValueError, KeyError, TypeError):
            continue
    return keys


def read_records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of a file, duplicates (same key) dropped, in file order."""
    out: dict[str, dict[str, Any]] = {}
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError as e:
            raise ValueError(f"{path}:{n}: not a JSON line: {e}") from None
        out.setdefault(rec["key"], rec)
    return list(out.values())


class SkippedKernel:
    """Stands in for the loaded kernel of a recorded specialization: launching
    it does nothing (its record is in the file)."""

    stored_args: frozenset[str] = frozenset()
    has_tensormaps = False
    debug_sites: list[Any] = []
    _launcher = None

    def __init__(self, spec: Specialization) -> None:
        self.spec = spec
        self.device = spec.device

    def launch(self, grid: Any, args: Any) -> None:
        global _skipped
        _skipped += 1


# The facts a recorded warmup returns: placeholders, not measurements.
PLACEHOLDER_METADATA = {"registers": 32, "spill_stores": 0, "spill_loads": 0}
PLACEHOLDER_SHARED = 16384
