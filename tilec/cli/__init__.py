"""The `tilec` command line.

    tilec targets
        print the target table
    tilec compile FILE.py --target T [--kernel NAME] [--signature "*fp32,*fp32,i32"]
                  [--constexpr K=V ...] [--num-warps N] [--num-stages S] [--num-ctas C]
                  [-o DIR]
        compile every kernel in FILE.py (or the one named); write each stage's
        artifact and a manifest.json into DIR/<kernel>/ (DIR: ./tilec-out)
    tilec ir FILE.py --target T [--kernel NAME] [--stage S | --print-after-all]
             [--signature ...] [--constexpr K=V ...] [--num-warps N] [--num-stages S]
             [--num-ctas C] [--debug-info]
        print the frontend's `tile` IR (default), the text of one stage, or the
        IR (or text) after every step with MLIR-style headers naming the step
    tilec opt FILE.mlir --pass P[,P...] [--split-input-file] [--target T]
             [--num-warps N] [--num-stages S] [--num-ctas C] [--debug-info]
        run tilec passes (tile-verify, tile-combine-dot, tile-dce, tile-lower-descriptors,
        tile-dot-precision, tile-expand-fp8, tile-layout, tile-prefetch,
        convert-tile-to-gpu, convert-tile-to-cpu) and upstream MLIR pipelines on
        an .mlir file (`-` reads stdin) and print it
    tilec cache [--clear]
        show (or remove) what the disk cache holds
    tilec replay FILE [--cache DIR] [--sources DIR] [--json OUT]
        compile every specialization a TILEC_RECORD file (written where the
        compiler is missing) lists into the disk cache (DIR); report each as
        compiled, cached or failed
    tilec --version
        print the version (`python -m tilec` is the same command)

Runtime parameters annotated with a type (`x_ptr: "*fp32"`) need no
`--signature`; `--signature` is a comma-separated list of types in parameter
order (`*fp32,i32`, a `:16` suffix declares divisibility) or `name=type` pairs.
`--constexpr` values are Python literals (`256`, `1.5`, `True`) or dtype
names (`tl.float16`); constexprs with defaults need not be given.
`--num-warps`, `--num-stages` and `--num-ctas` form the compile options:
`--num-stages` is the software-pipelining depth of tl.dot loops (tile-pipeline),
`--num-ctas 2` runs each program on a cluster of two CTAs (tile-split-ctas).

Exit status: 0 on success; 1 for a user error (a `TilecError`: bad command
line values, an unknown target, a mistake in the kernel, shown at its file and
line); 2 for an internal error (a tilec bug) and for argparse usage errors.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import traceback
from typing import NoReturn, Sequence

from tilec.cli import cache, ir, opt, replay
from tilec.cli import compile as compile_cmd
from tilec.cli.cache import cmd_cache
from tilec.cli.compile import cmd_compile
from tilec.cli.ir import cmd_ir
from tilec.cli.messages import error_text
from tilec.cli.opt import cmd_opt
from tilec.cli.replay import cmd_replay
from tilec.cli.targets import cmd_targets
from tilec.errors import CompilerBugError, TilecError


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tilec", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    from tilec.version import __version__
    p.add_argument("--version", action="version", version=f"tilec {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("targets", help="print the target table").set_defaults(fn=cmd_targets)
    compile_cmd.add_parser(sub).set_defaults(fn=cmd_compile)
    ir.add_parser(sub).set_defaults(fn=cmd_ir)
    cache.add_parser(sub).set_defaults(fn=cmd_cache)
    opt.add_parser(sub).set_defaults(fn=cmd_opt)
    replay.add_parser(sub).set_defaults(fn=cmd_replay)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.fn(args))
    except CompilerBugError as e:
        print(f"tilec: {e}", file=sys.stderr)
        return 2
    except TilecError as e:
        print(error_text(e), file=sys.stderr)
        return 1
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as e:
        if os.environ.get("TILEC_DEBUG"):
            traceback.print_exc()
        print(f"tilec: internal error (this is a tilec bug): {type(e).__name__}: {e}",
              file=sys.stderr)
        return 2


def run() -> NoReturn:
    """The `tilec` process (the `tilec` script, `python -m tilec.cli`, `python -m
    tilec`): `main()` on the command line, then exit with its status.

    The garbage collector is tuned for a short process that builds many
    long-lived objects (MLIR's generated op classes, the parser's tables, the
    IR): a young generation of 200,000 objects instead of 700 (as mypy does),
    so a one-kernel compile runs no collection (the default ran ~200, 35-45
    ms in all, each walking the same survivors again), and a long run still
    collects; at the end the survivors are frozen out of the collections the
    interpreter runs at exit, which would walk every one of them only to free
    memory the process is about to give back (~0.15 s after an NVIDIA
    compile).  Exit handlers (atexit, weakref.finalize) still run.  Tests call
    `main()`, which leaves the collector alone."""
    gc.set_threshold(200_000, 30, 30)
    code = main()
    gc.freeze()
    sys.exit(code)
