"""`tilec ir`: a kernel's IR: the frontend's (default), one stage's, or the IR
after every step (`--print-after-all`, MLIR-style headers naming the step)."""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from tilec.cli.kernels import Request, add_kernel_options, compile_one, make_request
from tilec.errors import TilecError

if TYPE_CHECKING:
    from tilec.kernel import Kernel
    from tilec.targets import Target


def dump_header(step: str) -> str:
    return f"// -----// IR Dump After {step} //----- //"


def stage_text(stage: str, value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        return (f"// stage '{stage}' is binary ({len(value)} bytes); "
                "`tilec compile` writes it to a file")
    return str(value).rstrip("\n")


def known_stages(target: Target) -> list[str]:
    stages = ["tile", "tile-opt"]
    return stages + [s for s in target.stages if s not in stages]


def ir_print_after_all(req: Request, kernel: Kernel, debug_info: bool) -> str:
    """The text after the frontend and after every step of the target's pipeline
    (the back end's lowering and translations included; binaries as a note)."""
    ck = compile_one(req, kernel, keep_ir=True, debug_info=debug_info)
    return "\n\n".join(f"{dump_header(name)}\n{text.rstrip()}" for name, text in ck.ir_after)


def ir_stage(req: Request, kernel: Kernel, stage: str, debug_info: bool) -> str:
    known = known_stages(req.target)
    if stage not in known:
        raise TilecError(f"unknown stage '{stage}' for target '{req.target.name}'; "
                         f"stages: {', '.join(known)}")
    ck = compile_one(req, kernel, stop_after=stage, debug_info=debug_info)
    if stage not in ck.asm:
        raise TilecError(f"target '{req.target.name}' produced no stage '{stage}'; "
                         f"stages: {', '.join(ck.asm)}")
    return stage_text(stage, ck.asm[stage])


def cmd_ir(args: argparse.Namespace) -> int:
    req = make_request(args, need_one=True)
    kernel = req.kernels[0]
    if args.print_after_all:
        text = ir_print_after_all(req, kernel, args.debug_info)
    else:
        text = ir_stage(req, kernel, args.stage or "tile", args.debug_info)
    print(text)
    return 0


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    i = sub.add_parser("ir", help="print a kernel's IR (frontend, one stage, or after every step)")
    add_kernel_options(i)
    which = i.add_mutually_exclusive_group()
    which.add_argument("--stage", metavar="S", help="print this stage (e.g. tile-opt, cpu, llir)")
    which.add_argument("--print-after-all", action="store_true",
                       help="print the IR (or text) after every step, with the step names")
    i.add_argument("--debug-info", action="store_true", help="print locations")
    return i
