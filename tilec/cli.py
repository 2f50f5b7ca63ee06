"""The `tilec` command line.

    tilec targets                      the target table
    tilec opt FILE.mlir --pass P[,P]   run passes on tile IR (for FileCheck tests)
"""
from __future__ import annotations

import argparse
import sys
from typing import Callable, Sequence

from tilec.errors import TilecError


def _pass_registry() -> dict[str, Callable[..., None]]:
    from tilec.passes import convert_tile_to_cpu, tile_dce, tile_verify
    return {m.NAME: m.run for m in (tile_verify, tile_dce, convert_tile_to_cpu)}


def cmd_targets(args: argparse.Namespace) -> int:
    from tilec.targets import TARGETS
    print(f"{'name':8} {'vendor':7} {'chip':8} {'warp':>4} {'vec B':>5} {'shared':>7} "
          f"{'mma':8} features")
    for t in TARGETS.values():
        print(f"{t.name:8} {t.vendor:7} {t.chip:8} {t.warp_size:>4} {t.vector_bytes:>5} "
              f"{t.shared_bytes:>7} {t.mma or '-':8} {','.join(sorted(t.features))}")
    return 0


def cmd_opt(args: argparse.Namespace) -> int:
    from mlir import ir
    from mlir.passmanager import PassManager

    from tilec.dialects import tile
    registry = _pass_registry()
    text = open(args.file).read() if args.file != "-" else sys.stdin.read()
    ctx = tile.new_context()
    with ctx, ir.Location.unknown():
        try:
            module = ir.Module.parse(text)
        except Exception as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        for name in [p for p in (args.passes or "").split(",") if p]:
            try:
                if name in registry:
                    registry[name](module)
                else:
                    PassManager.parse(f"builtin.module({name})").run(module.operation)
            except Exception as e:
                print(f"error: {e}", file=sys.stderr)
                return 1
        print(module.operation.get_asm(enable_debug_info=args.debug_info))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tilec", description="tilec: a portable tile-kernel compiler")
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("targets", help="print the target table")
    t.set_defaults(fn=cmd_targets)
    o = sub.add_parser("opt", help="run passes on an .mlir file and print the result")
    o.add_argument("file")
    o.add_argument("--pass", dest="passes", help="comma-separated pass names (tilec or upstream)")
    o.add_argument("--target", default="cpu")
    o.add_argument("--debug-info", action="store_true", help="print locations")
    o.set_defaults(fn=cmd_opt)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.fn(args))
    except TilecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
