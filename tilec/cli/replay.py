"""`tilec replay FILE [--cache DIR]`: compile the specializations record mode noted.

A program run with `TILEC_RECORD=FILE` where the compiler is missing (the GPU
machine, tilec/runtime/record.py) leaves one JSON line per cache miss.  Here,
where the compiler is, each record is rebuilt into the disk cache (DIR, else
TILEC_CACHE_DIR's), so that the same launch over there, with DIR as its
TILEC_CACHE_DIR, is a hit.

The kernels come from the recorded source files, loaded without running the
program (`load_program`): the top-level statements run one at a time in a
fresh module named as recorded (`__main__` for a script), skipping
`if __name__ == "__main__":` blocks and bare expression statements (a
`benchmark.run(...)` call), carrying on past a statement that raises (each is
reported; a decorated `def` whose outer decorators raise, such as an autotune
config list asking the GPU for its capability, is defined again without
them, so that the kernel inside is still there: the source hash covers a
function from its `def` line on, so that keeps the recorded key), with every kernel launch
and warmup a no-op meanwhile (`tilec.launch.launches_off`).  The Kernel is found by qualname (through
autotune / heuristics wrappers); a used global whose recorded value differs
from the one loaded here (a capability probe's bool) is set to the recorded
value, and said so; the cache key recomputed from the record must equal the
recorded one, or the record fails with the reason.  Each record is reported
as `compiled`, `cached` (already there, same builder) or `failed` (with the
TilecError text: a specialization tilec cannot compile is a finding).

`--sources DIR`: a record made on another machine names that machine's
paths; a file missing here is looked for by name in DIR.

Exit status: 0 when no record failed, 1 otherwise.
"""
from __future__ import annotations

import argparse
import ast
import builtins
import contextlib
import importlib
import importlib.util
import io
import json
import os
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tilec.errors import CompilerBugError, TilecError


@dataclass
class Loaded:
    """A program's namespace and what went wrong while loading it."""

    namespace: dict[str, Any]
    problems: list[str] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)  # line numbers of skipped statements
    printed: str = ""                                  # its stdout while loading


def _is_main_guard(stmt: ast.stmt) -> bool:
    """`if __name__ == "__main__":` (either operand order)."""
    if not isinstance(stmt, ast.If) or not isinstance(stmt.test, ast.Compare):
        return False
    t = stmt.test
    if len(t.ops) != 1 or not isinstance(t.ops[0], ast.Eq):
        return False
    sides = [t.left, t.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    consts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(consts) == 1


def load_program(path: str | os.PathLike[str], module_name: str = "__main__") -> Loaded:
    """Run `path`'s top-level statements as module `module_name` (see the module
    docstring: main guards and bare expressions skipped, launches off, a raising
    statement reported and passed)."""
    from tilec.launch import launches_off
    file = Path(path).resolve()
    source = file.read_text(encoding="utf-8")
    tree = ast.parse(source, str(file))
    module = types.ModuleType(module_name)
    module.__file__ = str(file)
    ns = module.__dict__
    ns["__builtins__"] = builtins
    out = Loaded(ns)
    saved_module = sys.modules.get(module_name)
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.modules[module_name] = module
    sys.argv = [str(file)]
    sys.path.insert(0, str(file.parent))
    printed = io.StringIO()   # what the program prints while loading (not the replay's output)
    try:
        with launches_off(), contextlib.redirect_stdout(printed):
            for stmt in tree.body:
                if _is_main_guard(stmt) or isinstance(stmt, ast.Expr):
                    out.skipped.append(stmt.lineno)
                    continue
                try:
                    _run(stmt, file, ns)
                except (Exception, SystemExit) as e:
                    out.problems.append(f"{file}:{stmt.lineno}: {type(e).__name__}: {_short(e)}")
                    kept = _define_without_outer_decorators(stmt, file, ns)
                    if kept is not None:
                        out.problems.append(f"{file}:{stmt.lineno}: defined {kept} without its "
                                            "outer decorator(s) that raised")
    finally:
        out.printed = printed.getvalue()
        sys.argv, sys.path[:] = saved_argv, saved_path
        if saved_module is not None:
            sys.modules[module_name] = saved_module
        else:
            sys.modules.pop(module_name, None)
    return out


def _short(e: BaseException, limit: int = 200) -> str:
    """An exception's text on one line, cut (an assert's message may hold whole tensors)."""
    text = " ".join(str(e).split())
    return text if len(text) <= limit else text[:limit] + "..."


def _run(stmt: ast.stmt, file: Path, ns: dict[str, Any]) -> None:
    exec(compile(ast.Module([stmt], type_ignores=[]), str(file), "exec"), ns)


def _define_without_outer_decorators(stmt: ast.stmt, file: Path, ns: dict[str, Any]
                                     ) -> str | None:
    """A decorated `def` whose decorators raised (an autotune config list that
    asks the GPU for its capability): define it again with the outermost
    decorators dropped one by one, so the kernel inside is still found."""
    if not isinstance(stmt, ast.FunctionDef) or len(stmt.decorator_list) < 2:
        return None
    for drop in range(1, len(stmt.decorator_list)):
        trimmed = ast.FunctionDef(stmt.name, stmt.args, stmt.body, stmt.decorator_list[drop:],
                                  stmt.returns, stmt.type_comment, **_type_params(stmt))
        ast.copy_location(trimmed, stmt)
        try:
            _run(trimmed, file, ns)
            return stmt.name
        except (Exception, SystemExit):
            continue
    return None


def _type_params(stmt: ast.FunctionDef) -> dict[str, Any]:
    return {"type_params": stmt.type_params} if hasattr(stmt, "type_params") else {}


def find_kernel(ns: dict[str, Any], qualname: str) -> Any:
    """The Kernel whose function has `qualname` in a loaded namespace (looked up
    by name, unwrapping autotune / heuristics objects; else any Kernel there)."""
    from tilec.kernel import Kernel

    def unwrap(obj: Any) -> Any:
        for _ in range(16):
            if isinstance(obj, Kernel):
                return obj
            obj = getattr(obj, "kernel", None) or getattr(obj, "fn", None)
            if obj is None:
                return None
        return None
    obj: Any = ns
    for part in qualname.split("."):
        obj = obj.get(part) if isinstance(obj, dict) else getattr(obj, part, None)
        if obj is None:
            break
    k = unwrap(obj) if obj is not None else None
    if k is not None and k.fn.__qualname__ == qualname:
        return k
    for v in list(ns.values()):
        k = unwrap(v)
        if k is not None and k.fn.__qualname__ == qualname:
            return k
    return None


def _constexpr_value(text: str) -> Any:
    """A recorded constexpr repr back to its value (literals, `tl.<dtype>`, a host
    descriptor's `DescriptorType(...)`)."""
    from tilec import language as tl
    from tilec.tools.tensor_descriptor import DescriptorType
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        pass
    env = {"tl": tl, "DescriptorType": DescriptorType, "__builtins__": {}}
    return eval(text, env)  # noqa: S307 - reprs this machine's record mode wrote


def specialization_of(rec: dict[str, Any]) -> Any:
    """The Specialization a record describes."""
    from tilec import language as tl
    from tilec.options import CompileOptions
    from tilec.specialization import EQUAL_TO_1, ArgSpec, Specialization
    args = tuple(ArgSpec(p["name"], tl.parse_type(p["type"]),
                         EQUAL_TO_1 if p.get("equal_to_1") else int(p.get("divisibility", 1)))
                 for p in rec["params"])
    constexprs = tuple((k, _constexpr_value(v)) for k, v in rec["constexprs"].items())
    return Specialization(args, constexprs, rec["target"], CompileOptions(**rec["options"]),
                          tuple(rec["globals"].items()), tuple(rec["specialized"]))


def _set_recorded_globals(kernel: Any, recorded: dict[str, str]) -> list[str]:
    """Give the kernel's globals the recorded values where they differ; notes."""
    from tilec import language as tl
    here = kernel.used_globals()
    notes = []
    for name, want in recorded.items():
        if here.get(name) == want:
            continue
        try:
            value = ast.literal_eval(want)
        except (ValueError, SyntaxError):
            notes.append(f"global {name} is {here.get(name)} here but {want} where recorded "
                         "(cannot be set)")
            continue
        g = kernel.fn.__globals__
        g[name] = tl.constexpr(value) if isinstance(g.get(name), tl.constexpr) else value
        notes.append(f"set global {name} = {want} (as recorded; {here.get(name)} here)")
    if notes:
        kernel._source_hash = None
    return notes


@dataclass
class Outcome:
    status: str   # compiled, cached, failed
    kernel: str
    target: str
    signature: str
    constexprs: dict[str, str]
    message: str = ""


def source_file(recorded: str, sources: str | None) -> str:
    """The recorded file, or (where it is missing here) the file of that name in
    `sources`: records made on another machine name its paths.  The source
    hash check catches a different file."""
    if Path(recorded).is_file() or sources is None:
        return recorded
    alt = Path(sources) / Path(recorded).name
    return str(alt.resolve()) if alt.is_file() else recorded


def replay_record(rec: dict[str, Any], programs: dict[tuple[str, str], Loaded], cache: Any,
                  sources: str | None = None) -> Outcome:
    """Compile one record into `cache` (programs: loaded files, filled as needed)."""
    from tilec.builder import builder_fingerprint
    sig = ",".join(p["type"] + ("=1" if p.get("equal_to_1") else f":{p['divisibility']}")
                   for p in rec["params"])
    out = Outcome("failed", rec["kernel"], rec["target"], sig, rec["constexprs"])
    rec = {**rec, "file": source_file(rec["file"], sources)}
    where = (rec["file"], rec["module"])
    if where not in programs:
        mod = rec["module"]
        if mod != "__main__" and importlib.util.find_spec(mod.split(".")[0]) is not None:
            try:
                programs[where] = Loaded(vars(importlib.import_module(mod)))
            except Exception as e:
                programs[where] = Loaded({}, [f"import {mod}: {type(e).__name__}: {e}"])
        elif not Path(rec["file"]).is_file():
            programs[where] = Loaded({}, [f"no such file: {rec['file']}"])
        else:
            programs[where] = load_program(rec["file"], mod)
    kernel = find_kernel(programs[where].namespace, rec["qualname"])
    if kernel is None:
        out.message = f"no kernel {rec['qualname']} in {rec['file']}"
        return out
    notes = _set_recorded_globals(kernel, rec["globals"])
    try:
        spec = specialization_of(rec)
    except Exception as e:
        out.message = f"cannot rebuild the specialization: {type(e).__name__}: {e}"
        return out
    key = kernel.cache_key(spec)
    if key != rec["key"]:
        why = ("the kernel's source hash differs (file changed?)"
               if kernel.source_hash() != rec["source_hash"] else
               "another tilec version or host fingerprint")
        out.message = "; ".join(notes + [f"cache key {key[:12]} is not the recorded "
                                         f"{rec['key'][:12]}: {why}"])
        return out
    entry = cache.get(key)
    if entry is not None and entry.metadata.get("builder") == builder_fingerprint():
        out.status, out.message = "cached", "; ".join(notes)
        return out
    if entry is not None:
        cache.invalidate(entry)
    from tilec.driver import build_entry
    try:
        with cache.build_lock(key):
            build_entry(kernel, cache, key, spec)
    except CompilerBugError as e:
        out.message = "; ".join(notes + [f"internal error: {e}"])
        return out
    except TilecError as e:
        from tilec.cli.messages import error_text
        out.message = "; ".join(notes + [error_text(e)])
        return out
    except Exception as e:
        out.message = "; ".join(notes + [f"internal error: {type(e).__name__}: {e}"])
        return out
    out.status, out.message = "compiled", "; ".join(notes)
    return out


def replay(path: str, cache_dir: str | None = None, quiet: bool = False,
           sources: str | None = None) -> tuple[list[Outcome], dict[tuple[str, str], Loaded]]:
    """Replay every record of `path` into the cache (`cache_dir` or the default)."""
    from tilec.cache import DiskCache, default_cache_dir
    from tilec.runtime.record import read_records
    if cache_dir is not None:
        os.environ["TILEC_CACHE_DIR"] = str(Path(cache_dir).resolve())
    cache = DiskCache(default_cache_dir())
    programs: dict[tuple[str, str], Loaded] = {}
    outcomes = []
    for rec in read_records(path):
        o = replay_record(rec, programs, cache, sources)
        outcomes.append(o)
        if not quiet:
            cx = " ".join(f"{k}={v}" for k, v in o.constexprs.items())
            line = (f"{o.status:8} {o.kernel} {o.target} [{o.signature}] {cx} "
                    f"(options: num_warps {rec['options']['num_warps']}, num_stages {rec['options']['num_stages']})")
            print(line + (f": {o.message}" if o.message else ""), flush=True)
    return outcomes, programs


def cmd_replay(args: argparse.Namespace) -> int:
    if not Path(args.file).is_file():
        raise TilecError(f"no such file: {args.file}")
    outcomes, programs = replay(args.file, args.cache, sources=args.sources)
    for (file, _), loaded in programs.items():
        for p in loaded.problems:
            print(f"note: while loading {file}: {p}", file=sys.stderr)
    counts = {s: sum(o.status == s for o in outcomes) for s in ("compiled", "cached", "failed")}
    from tilec.cache import default_cache_dir
    print(f"{len(outcomes)} records: {counts['compiled']} compiled, {counts['cached']} already "
          f"cached, {counts['failed']} failed (cache {default_cache_dir()})")
    if args.json:
        Path(args.json).write_text(json.dumps([o.__dict__ for o in outcomes], indent=1) + "\n")
    return 1 if counts["failed"] else 0


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    r = sub.add_parser("replay", help="compile the specializations a TILEC_RECORD file lists")
    r.add_argument("file", metavar="FILE", help="a record file (JSON lines, from TILEC_RECORD)")
    r.add_argument("--cache", metavar="DIR",
                   help="the cache to fill (default: TILEC_CACHE_DIR's, else ~/.cache/tilec)")
    r.add_argument("--sources", metavar="DIR",
                   help="where a recorded source file is missing here, use DIR/<its name>")
    r.add_argument("--json", metavar="OUT", help="also write the per-record outcomes as JSON")
    return r
