"""What `tilec compile` and `tilec ir` share: loading a kernel file, reading the
specialization from the command line (`--signature`, `--constexpr`,
`--num-warps`, `--num-stages` into a `CompileOptions`), and compiling one kernel.
"""
from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import re
import sys
import traceback
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Sequence

from tilec.errors import SourceLoc, TilecError
from tilec.options import CompileOptions

if TYPE_CHECKING:
    from tilec.driver import CompiledKernel
    from tilec.kernel import Kernel
    from tilec.targets import Target


def add_kernel_options(p: argparse.ArgumentParser) -> None:
    """The arguments of `compile` and `ir` that name kernels and their specialization."""
    p.add_argument("file", metavar="FILE.py", help="a Python file defining @tilec.kernel functions")
    p.add_argument("--target", required=True, help="a target name (see `tilec targets`)")
    p.add_argument("--kernel", metavar="NAME", help="the kernel to use (default: all / the only one)")
    p.add_argument("--signature", metavar="TYPES",
                   help="runtime parameter types, e.g. '*fp32,*fp32,i32' or 'x=*fp32,n=i32'")
    p.add_argument("--constexpr", metavar="K=V", action="extend", nargs="+", default=[],
                   help="constexpr values (Python literals or dtype names)")
    p.add_argument("--num-warps", type=int, default=4, metavar="N", help="warps per program (GPU)")
    p.add_argument("--num-stages", type=int, default=3, metavar="S",
                   help="software-pipelining depth of tl.dot loops (the pipeliner, tile-pipeline: S "
                        "shared-memory slots per ring; 1 turns it off)")
    p.add_argument("--num-ctas", type=int, default=1, metavar="C",
                   help="CTAs per program: 2 runs each program on a cluster of two CTAs that "
                        "split its dot rows (sm90)")
    p.add_argument("--debug", action="store_true",
                   help="the debug mode: bounds-checked loads/stores/atomics, active "
                        "tl.device_assert (GPUs print and trap)")


def load_kernel_file(path: str) -> ModuleType:
    """Import FILE.py under a unique module name, its folder on sys.path meanwhile."""
    file = Path(path)
    if not file.is_file():
        raise TilecError(f"no such file: {path}")
    file = file.resolve()
    name = f"_tilec_cli_{re.sub(r'[^0-9A-Za-z_]', '_', file.stem)}_{uuid.uuid4().hex[:8]}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise TilecError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    folder, saved_bytecode = str(file.parent), sys.dont_write_bytecode
    sys.path.insert(0, folder)
    sys.dont_write_bytecode = True
    try:
        spec.loader.exec_module(module)
    except TilecError:
        sys.modules.pop(name, None)
        raise
    except SyntaxError as e:
        sys.modules.pop(name, None)
        loc = SourceLoc(e.filename or str(file), e.lineno or 1, e.offset or 1)
        raise TilecError(f"{path} is not valid Python: {e.msg}", loc) from None
    except KeyboardInterrupt:
        sys.modules.pop(name, None)
        raise
    except BaseException as e:      # SystemExit included: the file must not exit on import
        sys.modules.pop(name, None)
        raise TilecError(f"loading {path} raised {type(e).__name__}: {e}",
                         _innermost_loc(e, str(file))) from None
    finally:
        sys.dont_write_bytecode = saved_bytecode
        if folder in sys.path:
            sys.path.remove(folder)
    return module


def _innermost_loc(e: BaseException, file: str) -> SourceLoc | None:
    """The deepest traceback frame of `e` that lies in `file`."""
    loc = None
    for frame in traceback.extract_tb(e.__traceback__):
        if os.path.realpath(frame.filename) == os.path.realpath(file):
            col = getattr(frame, "colno", None) or 0     # Python >= 3.11
            loc = SourceLoc(frame.filename, frame.lineno or 1, col + 1)
    return loc


def find_kernels(module: ModuleType) -> list[Kernel]:
    """Kernels among the module's globals in definition order (defined there first)."""
    from tilec.kernel import Kernel
    found: list[Kernel] = []
    for value in vars(module).values():
        if isinstance(value, Kernel) and all(value is not k for k in found):
            found.append(value)
    own = [k for k in found if getattr(k.fn, "__module__", None) == module.__name__]
    return own or found


def select_kernels(kernels: list[Kernel], name: str | None, path: str,
                   need_one: bool) -> list[Kernel]:
    """The kernel named `name`, or all of them (exactly one when `need_one`)."""
    names = ", ".join(k.name for k in kernels)
    if not kernels:
        raise TilecError(f"{path} defines no @tilec.kernel functions")
    if name is not None:
        chosen = [k for k in kernels if k.name == name]
        if not chosen:
            raise TilecError(f"{path} has no kernel '{name}'; its kernels are: {names}")
        return chosen[:1]
    if need_one and len(kernels) > 1:
        raise TilecError(f"{path} defines {len(kernels)} kernels ({names}); "
                         "choose one with --kernel NAME")
    return kernels


def parse_value(text: str) -> Any:
    """A `--constexpr` value: a Python literal or a dtype name (`tl.float16`, `fp16`)."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        pass
    from tilec.language import core as tl
    name = text.split(".", 1)[1] if text.startswith(("tl.", "tilec.language.")) else text
    name = name.rsplit(".", 1)[-1]
    value = getattr(tl, name, None)
    if isinstance(value, tl.dtype):
        return value
    try:
        parsed = tl.parse_type(name)
        if isinstance(parsed, tl.dtype):
            return parsed
    except ValueError:
        pass
    raise TilecError(f"cannot read constexpr value '{text}': use a Python literal "
                     "(256, 1.5, True) or a dtype name (tl.float16)")


def parse_constexprs(items: Sequence[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items or ():
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key.isidentifier():
            raise TilecError(f"--constexpr expects NAME=VALUE, got '{item}'")
        out[key] = parse_value(value.strip())
    return out


def parse_signature(text: str | None) -> str | dict[str, str] | None:
    """'*fp32,i32' stays a string (types in order); 'x=*fp32,n=i32' becomes a dict."""
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",") if p.strip()]

    def named(part: str) -> bool:  # 'n=i32' (or 'n=i32=1'), not a value spelling 'i32=1'
        _, eq, rest = part.partition("=")
        return bool(eq) and not rest.strip().lstrip("-").isdigit()
    if parts and all(named(p) for p in parts):
        return {k.strip(): v.strip() for k, _, v in (p.partition("=") for p in parts)}
    if any(named(p) for p in parts):
        raise TilecError(f"--signature mixes 'name=type' and plain types: '{text}'")
    return text


def constexprs_for(kernel: Kernel, given: dict[str, Any]) -> dict[str, Any]:
    """The given constexprs that are `kernel`'s constexpr parameters."""
    return {k: v for k, v in given.items()
            if any(p.name == k and p.constexpr for p in kernel.params)}


def check_constexprs(kernels: list[Kernel], given: dict[str, Any]) -> None:
    """Every given constexpr must be a constexpr parameter of some selected kernel."""
    for key in given:
        if any(constexprs_for(k, {key: None}) for k in kernels):
            continue
        k = kernels[0]
        if len(kernels) == 1 and key in k.runtime_names():
            raise TilecError(f"'{key}' is a runtime parameter of kernel '{k.name}', not a "
                             "constexpr; give its type with --signature")
        known = sorted({p.name for kk in kernels for p in kk.params if p.constexpr})
        which = f"kernel '{k.name}'" if len(kernels) == 1 else "the selected kernels"
        raise TilecError(f"--constexpr {key}: {which} has no constexpr parameter '{key}'"
                         f" (constexpr parameters: {', '.join(known) or 'none'})")


def check_signature(kernels: list[Kernel], signature: str | dict[str, str] | None) -> None:
    """Unannotated runtime parameters need a type from --signature."""
    for k in kernels:
        if isinstance(signature, str):
            continue                       # the driver checks the count
        given = signature or {}
        missing = [p.name for p in k.params
                   if not p.constexpr and p.annotation is None and p.name not in given]
        if missing:
            names = k.runtime_names()
            raise TilecError(
                f"kernel '{k.name}': parameter{'s' if len(missing) > 1 else ''} "
                f"{', '.join(missing)} {'have' if len(missing) > 1 else 'has'} no type; "
                f"annotate {'them' if len(missing) > 1 else 'it'} (x_ptr: \"*fp32\") or pass "
                f"--signature with one type per runtime parameter in order ({', '.join(names)}), "
                "e.g. --signature '*fp32,fp32,i32'")


def make_options(num_warps: int, num_stages: int, debug: bool = False,
                 num_ctas: int = 1) -> CompileOptions:
    """The `CompileOptions` of `--num-warps`, `--num-stages`, `--debug` and `--num-ctas`."""
    if num_warps < 1 or num_warps & (num_warps - 1):
        raise TilecError(f"--num-warps must be a power of two >= 1, got {num_warps}")
    if num_stages < 1:
        raise TilecError(f"--num-stages must be >= 1, got {num_stages}")
    return CompileOptions(num_warps=num_warps, num_stages=num_stages, debug=debug,
                          num_ctas=num_ctas)


@dataclass
class Request:
    """What `compile` and `ir` share: the kernels and their specialization."""

    path: str
    kernels: list[Kernel]
    target: Target
    signature: str | dict[str, str] | None
    constexprs: dict[str, Any]
    options: CompileOptions


def make_request(args: argparse.Namespace, need_one: bool) -> Request:
    from tilec.targets import get_target
    target = get_target(args.target)     # an unknown target fails before any work
    signature = parse_signature(args.signature)
    constexprs = parse_constexprs(args.constexpr)
    options = make_options(args.num_warps, args.num_stages, getattr(args, "debug", False),
                           args.num_ctas)
    kernels = select_kernels(find_kernels(load_kernel_file(args.file)), args.kernel,
                             args.file, need_one)
    check_constexprs(kernels, constexprs)
    check_signature(kernels, signature)
    return Request(args.file, kernels, target, signature, constexprs, options)


def compile_one(req: Request, kernel: Kernel, stop_after: str | None = None,
                keep_ir: bool = False, debug_info: bool = False) -> CompiledKernel:
    from tilec.driver import compile_kernel
    return compile_kernel(kernel, req.target.name, req.signature,
                          constexprs_for(kernel, req.constexprs), req.options,
                          stop_after=stop_after, keep_ir=keep_ir, debug_info=debug_info)
