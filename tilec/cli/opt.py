"""`tilec opt`: run tilec passes (passes/registry.py) and upstream MLIR pass
pipelines on an .mlir file and print the result, as mlir-opt does.

Every tilec pass is called as `run(module, target, options)` with the
`--target` record and a `CompileOptions` of `--num-warps`/`--num-stages`.
A name that is not a tilec pass is handed to MLIR's pipeline parser;
consecutive upstream names run as one pipeline.  With `--split-input-file`,
`// -----` lines separate independent inputs, and each chunk's error is
printed (as FILE:LINE:COL: error: ...) without stopping the others.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from tilec.cli.kernels import make_options
from tilec.cli.messages import error_text
from tilec.errors import TilecError
from tilec.passes import registry

if TYPE_CHECKING:
    from mlir import ir

    from tilec.options import CompileOptions
    from tilec.targets import Target

Runner = Callable[["ir.Module"], None]


def split_pipeline(text: str) -> list[str]:
    """Split 'a,b{x=1,y=2},func.func(c,d)' at top-level commas."""
    items, depth, cur = [], 0, ""
    for ch in text:
        if ch in "({[<":
            depth += 1
        elif ch in ")}]>":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
        else:
            cur += ch
    items.append(cur.strip())
    return [i for i in items if i]


def _upstream_pm(names: list[str]) -> Any:
    """A PassManager for consecutive upstream passes (or a full builtin.module pipeline)."""
    from mlir.passmanager import PassManager
    text = ",".join(names)
    pipeline = text if len(names) == 1 and text.startswith("builtin.module(") \
        else f"builtin.module({text})"
    try:
        return PassManager.parse(pipeline)
    except Exception as e:
        raise TilecError(f"unknown pass or bad pipeline '{text}': {str(e).strip()}\n"
                         f"tilec passes: {', '.join(sorted(registry.names()))}; anything else "
                         "must be an upstream MLIR pass pipeline") from None


def _upstream_runner(pm: Any) -> Runner:
    def run(module: ir.Module) -> None:
        pm.run(module.operation)
    return run


def _tilec_runner(name: str, target: Target, options: CompileOptions) -> Runner:
    def run(module: ir.Module) -> None:
        registry.run(name, module, target, options)
    return run


def plan_passes(names: list[str], target: Target,
                options: CompileOptions) -> list[tuple[str, Runner]]:
    """(name, runner) per tilec pass and per run of consecutive upstream passes.

    Every upstream pipeline is parsed and every tilec pass imported here,
    before any pass runs, so a typo in the last pass fails at once.  Needs the
    MLIR context."""
    plan: list[tuple[str, Runner]] = []
    upstream: list[str] = []
    for name in names + [""]:
        if name and not registry.is_pass(name):
            upstream.append(name)
            continue
        if upstream:
            plan.append((",".join(upstream), _upstream_runner(_upstream_pm(upstream))))
            upstream = []
        if name:
            registry.get(name)
            plan.append((name, _tilec_runner(name, target, options)))
    return plan


def split_input(text: str, split: bool) -> list[tuple[str, int]]:
    """(text, line offset) of each input; '// -----' lines separate them when `split`."""
    if not split:
        return [(text, 0)]
    chunks, offset = [], 0
    for chunk in re.split(r"^// -----[ \t]*$", text, flags=re.MULTILINE):
        chunks.append((chunk, offset))
        offset += chunk.count("\n")
    return chunks


_LOC_PREFIX = re.compile(r'^loc\("(?P<file>[^"]*)":(?P<line>\d+):(?P<col>\d+)\):\s*')


def _parse_error(e: Exception, file: str, line_offset: int) -> TilecError:
    """MLIR's parse diagnostics as 'FILE:line:col: error: message' lines."""
    from mlir import ir
    if not isinstance(e, ir.MLIRError) or not e.error_diagnostics:
        return TilecError(f"cannot parse the input: {e}")
    lines = []
    for d in e.error_diagnostics:
        m = _LOC_PREFIX.match(f"{d.location}: ")
        where = f"{file}:{int(m['line']) + line_offset}:{m['col']}" if m else str(d.location)
        lines.append(f"{where}: error: cannot parse the input: {d.message}")
    return TilecError("\n".join(lines))


def mlir_style(message: str) -> str:
    """'loc("k.py":3:5): msg' -> 'k.py:3:5: error: msg' (as mlir-opt reports)."""
    m = _LOC_PREFIX.match(message)
    if m is None:
        return message
    return f"{m['file']}:{m['line']}:{m['col']}: error: {message[m.end():]}"


def opt_chunk(text: str, line_offset: int, names: list[str], target: Target,
              options: CompileOptions, args: argparse.Namespace) -> str:
    """Parse one input, run the passes, return the printed module (errors: TilecError)."""
    from mlir import ir

    from tilec.dialects import tile
    ctx = tile.new_context()
    ctx.enable_multithreading(False)   # the back ends' isolated children fork with it
    with ctx, ir.Location.unknown():
        plan = plan_passes(names, target, options)
        try:
            module = ir.Module.parse(text)
        except Exception as e:
            raise _parse_error(e, args.file, line_offset) from None
        for name, run in plan:
            try:
                run(module)
            except TilecError:
                raise
            except Exception as e:
                raise TilecError(mlir_style(str(e).strip() or f"pass '{name}' failed")) from None
        return str(module.operation.get_asm(enable_debug_info=args.debug_info,
                                            use_local_scope=args.debug_info))


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as e:
        raise TilecError(f"cannot read {path}: {e.strerror}") from None


def without_features(target: Target, names: list[str]) -> Target:
    """`target` without the features `names` (a TilecError for a name that is none)."""
    import dataclasses

    from tilec.targets import Feature
    drop = set()
    for name in names:
        try:
            drop.add(Feature(name))
        except ValueError:
            raise TilecError(f"unknown feature '{name}': the features are "
                             + ", ".join(sorted(f.value for f in Feature))) from None
    return dataclasses.replace(target, features=target.features - drop) if drop else target


def cmd_opt(args: argparse.Namespace) -> int:
    from tilec.targets import get_target
    target = without_features(get_target(args.target), args.without_feature or [])
    options = make_options(args.num_warps, args.num_stages, args.debug, args.num_ctas)
    names = [n for spec in (args.passes or []) for n in split_pipeline(spec)]
    text = sys.stdin.read() if args.file == "-" else _read_text(args.file)
    outputs, failed = [], False
    for chunk, offset in split_input(text, args.split_input_file):
        try:
            outputs.append(opt_chunk(chunk, offset, names, target, options, args).rstrip("\n"))
        except TilecError as e:
            if not args.split_input_file:
                raise
            print(error_text(e), file=sys.stderr)
            failed = True
    if outputs:
        print("\n// -----\n".join(outputs))
    return 1 if failed else 0


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    o = sub.add_parser("opt", help="run passes on an .mlir file and print the result")
    o.add_argument("file", metavar="FILE.mlir", help="input IR ('-' for stdin)")
    o.add_argument("--pass", dest="passes", action="append", metavar="P[,P...]",
                   help="tilec pass names (" + ", ".join(registry.names()) + ") or upstream "
                        "MLIR passes, in order (repeatable)")
    o.add_argument("--split-input-file", action="store_true",
                   help="treat '// -----' lines as separators between independent inputs")
    o.add_argument("--target", default="cpu", help="target for passes that take one")
    o.add_argument("--without-feature", action="append", metavar="FEATURE",
                   help="drop a feature from the target record (a rule's fallback; repeatable)")
    o.add_argument("--num-warps", type=int, default=4, metavar="N")
    o.add_argument("--num-stages", type=int, default=3, metavar="S",
                   help="the compile options' num_stages (tile-pipeline reads it)")
    o.add_argument("--num-ctas", type=int, default=1, metavar="C",
                   help="the compile options' num_ctas (tile-split-ctas reads it)")
    o.add_argument("--debug-info", action="store_true", help="print locations")
    o.add_argument("--debug", action="store_true",
                   help="the debug mode's compile options (tile-debug-checks adds its checks)")
    return o
