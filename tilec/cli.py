"""The `tilec` command line.

    tilec targets
        print the target table
    tilec compile FILE.py --target T [--kernel NAME] [--signature "*fp32,*fp32,i32"]
                  [--constexpr K=V ...] [--num-warps N] [-o DIR]
        compile every kernel in FILE.py (or the one named); write each stage's
        artifact and a manifest.json into DIR/<kernel>/ (DIR: ./tilec-out)
    tilec ir FILE.py --target T [--kernel NAME] [--stage S | --print-after-all]
             [--signature ...] [--constexpr K=V ...] [--num-warps N] [--debug-info]
        print the frontend's `tile` IR (default), the text of one stage, or the
        IR after every pass with MLIR-style headers naming the pass
    tilec opt FILE.mlir --pass P[,P...] [--split-input-file] [--target T]
             [--num-warps N] [--debug-info]
        run tilec passes (every passes/*.py with NAME and run(module)) and
        upstream MLIR pipelines on an .mlir file (`-` reads stdin) and print it

Runtime parameters annotated with a type (`x_ptr: "*fp32"`) need no
`--signature`; `--signature` is a comma-separated list of types in parameter
order (`*fp32,i32`, a `:16` suffix declares divisibility) or `name=type` pairs.
`--constexpr` values are Python literals (`256`, `1.5`, `True`) or dtype
names (`tl.float16`); constexprs with defaults need not be given.

Exit status: 0 on success; 1 for a user error (a `TilecError`: bad command
line values, an unknown target, a mistake in the kernel, shown at its file and
line); 2 for an internal error (a tilec bug) and for argparse usage errors.
"""
from __future__ import annotations

import argparse
import ast
import importlib.util
import inspect
import json
import os
import pkgutil
import re
import sys
import traceback
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Sequence

from tilec.errors import CompilerBugError, SourceLoc, TilecError

if TYPE_CHECKING:
    from mlir import ir

    from tilec.driver import CompiledKernel
    from tilec.jit import Kernel
    from tilec.targets import Target

DEFAULT_OUT = "tilec-out"
# Parameters (after the module) that `opt` can supply to a pass's run().
_PASS_EXTRA_ARGS = ("target", "num_warps", "options")


# ====================================================================== kernel files

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
    from tilec.jit import Kernel
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


# ====================================================================== option values

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


def check_num_warps(n: int) -> int:
    if n < 1 or n & (n - 1):
        raise TilecError(f"--num-warps must be a power of two >= 1, got {n}")
    return n


# ====================================================================== compiling

def print_module(module: ir.Module, debug_info: bool) -> str:
    """The module's text; with `debug_info`, each op's location inline after it."""
    return str(module.operation.get_asm(enable_debug_info=debug_info,
                                        use_local_scope=debug_info))


@dataclass
class Request:
    """What `compile` and `ir` share: the kernels and their specialization."""

    path: str
    kernels: list[Kernel]
    target: Target
    signature: str | dict[str, str] | None
    constexprs: dict[str, Any]
    num_warps: int


def make_request(args: argparse.Namespace, need_one: bool) -> Request:
    from tilec.targets import get_target
    target = get_target(args.target)     # an unknown target fails before any work
    signature = parse_signature(args.signature)
    constexprs = parse_constexprs(args.constexpr)
    num_warps = check_num_warps(args.num_warps)
    kernels = select_kernels(find_kernels(load_kernel_file(args.file)), args.kernel,
                             args.file, need_one)
    check_constexprs(kernels, constexprs)
    check_signature(kernels, signature)
    return Request(args.file, kernels, target, signature, constexprs, num_warps)


def compile_one(req: Request, kernel: Kernel, stop_after: str | None = None,
                keep_ir: bool = False, debug_info: bool = False) -> CompiledKernel:
    from tilec.driver import compile_kernel
    extra: dict[str, Any] = {"debug_info": True} if debug_info else {}
    return compile_kernel(kernel, req.target.name, req.signature,
                          constexprs_for(kernel, req.constexprs), req.num_warps,
                          stop_after=stop_after, keep_ir=keep_ir, **extra)


def driver_keeps_locations() -> bool:
    """Whether `compile_kernel` can keep located IR (a `debug_info` parameter)."""
    from tilec.driver import compile_kernel
    return "debug_info" in inspect.signature(compile_kernel).parameters


def artifact_name(stage: str) -> str:
    from tilec.driver import ARTIFACT_FILES
    return ARTIFACT_FILES.get(stage, f"kernel.{re.sub(r'[^0-9A-Za-z_.-]', '_', stage)}")


def write_artifacts(ck: CompiledKernel, folder: Path) -> dict[str, str]:
    """Write each stage of `ck` and its manifest.json; return {stage: file name}."""
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    for stage, value in ck.asm.items():
        if value is None:
            continue
        files[stage] = artifact_name(stage)
        data = value if isinstance(value, (bytes, bytearray)) else str(value).encode()
        (folder / files[stage]).write_bytes(bytes(data))
    manifest = ck.manifest(files)
    manifest.setdefault("shared", ck.metadata.get("shared", 0))
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n")
    return files


def cmd_compile(args: argparse.Namespace) -> int:
    req = make_request(args, need_one=False)
    out = Path(args.output)
    for kernel in req.kernels:
        ck = compile_one(req, kernel)
        folder = out / kernel.name
        files = write_artifacts(ck, folder)
        print(f"{kernel.name}: wrote {folder}/ ({', '.join(files.values())}, manifest.json)")
    return 0


# ====================================================================== ir

def _dump_header(pass_name: str) -> str:
    return f"// -----// IR Dump After {pass_name} //----- //"


def stage_text(stage: str, value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        return (f"// stage '{stage}' is binary ({len(value)} bytes); "
                "`tilec compile` writes it to a file")
    return str(value).rstrip("\n")


def known_stages(target: Target) -> list[str]:
    stages = ["tile", "tile-opt"]
    return stages + [s for s in target.stages if s not in stages]


def located_frontend_ir(req: Request, kernel: Kernel) -> str:
    """The frontend's tile IR with locations (the frontend run directly)."""
    from mlir import ir

    from tilec import driver
    from tilec.dialects import tile
    from tilec.frontend.codegen import generate
    sig = driver.parse_signature(kernel, req.signature)
    spec = driver.make_spec(kernel, {k: t for k, (t, _) in sig.items()},
                            {k: d for k, (_, d) in sig.items()},
                            constexprs_for(kernel, req.constexprs))
    with tile.new_context(), ir.Location.unknown():
        module = generate(spec)
        return print_module(module, debug_info=True)


def ir_print_after_all(req: Request, kernel: Kernel, debug_info: bool) -> str:
    if debug_info and not driver_keeps_locations():
        raise TilecError("--debug-info with --print-after-all needs located IR from the "
                         "compiler, which this build does not keep yet; --debug-info "
                         "without --stage prints the frontend IR with locations")
    stop = "llir" if "llir" in req.target.stages else None
    ck = compile_one(req, kernel, stop_after=stop, keep_ir=True, debug_info=debug_info)
    return "\n\n".join(f"{_dump_header(name)}\n{text.rstrip()}" for name, text in ck.ir_after)


def ir_stage(req: Request, kernel: Kernel, stage: str, debug_info: bool) -> str:
    known = known_stages(req.target)
    if stage not in known:
        raise TilecError(f"unknown stage '{stage}' for target '{req.target.name}'; "
                         f"stages: {', '.join(known)}")
    if debug_info and not driver_keeps_locations():
        if stage == "tile":
            return located_frontend_ir(req, kernel)
        raise TilecError(f"--debug-info with --stage {stage} needs located IR from the "
                         "compiler, which this build does not keep yet; --debug-info "
                         "works for the frontend IR (no --stage, or --stage tile)")
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


# ====================================================================== targets

def cmd_targets(args: argparse.Namespace) -> int:
    from tilec.targets import TARGETS
    print(f"{'name':8} {'vendor':7} {'chip':8} {'warp':>4} {'vec B':>5} {'shared':>7} "
          "features")
    for t in TARGETS.values():
        print(f"{t.name:8} {t.vendor:7} {t.chip:8} {t.warp_size:>4} {t.vector_bytes:>5} "
              f"{t.shared_bytes:>7} {','.join(sorted(f.value for f in t.features))}")
    return 0


# ====================================================================== opt

PassFn = Callable[["ir.Module", "Target", int], None]


def _pass_adapter(run: Callable[..., None]) -> PassFn | None:
    """`run` called as run(module[, target][, num_warps]); None if it needs more."""
    try:
        params = list(inspect.signature(run).parameters.values())
    except (TypeError, ValueError):
        return None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if not params or params[0].kind not in positional:
        return None
    wanted: list[str] = []
    for p in params[1:]:
        if p.name in _PASS_EXTRA_ARGS and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                     inspect.Parameter.KEYWORD_ONLY):
            wanted.append(p.name)
        elif p.default is inspect.Parameter.empty and p.kind not in (
                inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            return None

    def call(module: ir.Module, target: Target, num_warps: int) -> None:
        from tilec.options import CompileOptions
        values = {"target": target, "num_warps": num_warps,
                  "options": CompileOptions(num_warps=num_warps)}
        run(module, **{name: values[name] for name in wanted})
    return call


def pass_registry() -> dict[str, PassFn]:
    """Every module in tilec.passes with a string NAME and a usable run().

    A module that fails to import is left out (and named by the unknown-pass
    error), so one broken pass does not take `opt` down for the others."""
    import tilec.passes as passes_pkg
    found: dict[str, PassFn] = {}
    _IMPORT_FAILURES.clear()
    for info in sorted(pkgutil.iter_modules(passes_pkg.__path__), key=lambda i: i.name):
        qualified = f"{passes_pkg.__name__}.{info.name}"
        try:
            module = importlib.import_module(qualified)
        except Exception as e:
            _IMPORT_FAILURES[qualified] = f"{type(e).__name__}: {e}"
            continue
        name, run = getattr(module, "NAME", None), getattr(module, "run", None)
        if isinstance(name, str) and callable(run):
            adapter = _pass_adapter(run)
            if adapter is not None:
                found[name] = adapter
    return found


_IMPORT_FAILURES: dict[str, str] = {}


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


def _upstream_pm(names: list[str], registry: dict[str, PassFn]) -> Any:
    """A PassManager for consecutive upstream passes (or a full builtin.module pipeline)."""
    from mlir.passmanager import PassManager
    text = ",".join(names)
    pipeline = text if len(names) == 1 and text.startswith("builtin.module(") \
        else f"builtin.module({text})"
    try:
        return PassManager.parse(pipeline)
    except Exception as e:
        broken = "".join(f"\n(not loaded: {m}: {why})" for m, why in _IMPORT_FAILURES.items())
        raise TilecError(f"unknown pass or bad pipeline '{text}': {str(e).strip()}\n"
                         f"tilec passes: {', '.join(sorted(registry))}; anything else must "
                         f"be an upstream MLIR pass pipeline{broken}") from None


Step = Callable[["ir.Module"], None]


def _upstream_step(pm: Any) -> Step:
    def run(module: ir.Module) -> None:
        pm.run(module.operation)
    return run


def _tilec_step(fn: PassFn, target: Target, num_warps: int) -> Step:
    def run(module: ir.Module) -> None:
        fn(module, target, num_warps)
    return run


def plan_passes(names: list[str], registry: dict[str, PassFn], target: Target,
                num_warps: int) -> list[tuple[str, Step]]:
    """(name, runner) per tilec pass and per run of consecutive upstream passes.

    Every upstream pipeline is parsed here, before any pass runs, so a typo in
    the last pass fails at once.  Needs the MLIR context."""
    plan: list[tuple[str, Step]] = []
    upstream: list[str] = []
    for name in names + [""]:
        if name and name not in registry:
            upstream.append(name)
            continue
        if upstream:
            pm = _upstream_pm(upstream, registry)
            plan.append((",".join(upstream), _upstream_step(pm)))
            upstream = []
        if name:
            plan.append((name, _tilec_step(registry[name], target, num_warps)))
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


def opt_chunk(text: str, line_offset: int, names: list[str], registry: dict[str, PassFn],
              target: Target, args: argparse.Namespace) -> str:
    """Parse one input, run the passes, return the printed module (errors: TilecError)."""
    from mlir import ir

    from tilec.dialects import tile
    with tile.new_context(), ir.Location.unknown():
        plan = plan_passes(names, registry, target, args.num_warps)
        try:
            module = ir.Module.parse(text)
        except Exception as e:
            raise _parse_error(e, args.file, line_offset) from None
        for name, step in plan:
            try:
                step(module)
            except TilecError:
                raise
            except Exception as e:
                raise TilecError(mlir_style(str(e).strip() or f"pass '{name}' failed")) from None
        return print_module(module, args.debug_info)


_LOC_PREFIX = re.compile(r'^loc\("(?P<file>[^"]*)":(?P<line>\d+):(?P<col>\d+)\):\s*')


def mlir_style(message: str) -> str:
    """'loc("k.py":3:5): msg' -> 'k.py:3:5: error: msg' (as mlir-opt reports)."""
    m = _LOC_PREFIX.match(message)
    if m is None:
        return message
    return f"{m['file']}:{m['line']}:{m['col']}: error: {message[m.end():]}"


def cmd_cache(args: argparse.Namespace) -> int:
    """Print what the disk cache holds (compiled kernels, autotune results, the
    built C launcher); with --clear, remove all of it."""
    import shutil

    from tilec.cache import DiskCache, default_cache_dir
    root = default_cache_dir()
    if args.clear:
        DiskCache(root).clear()
        for sub in ("autotune", "native"):
            shutil.rmtree(root / sub, ignore_errors=True)
        print(f"cleared {root}")
        return 0
    kernels = [m.parent for m in root.glob("??/*/manifest.json")] if root.is_dir() else []

    def size(paths: list[Path]) -> int:
        return sum(f.stat().st_size for p in paths for f in p.rglob("*") if f.is_file())
    tuned = list((root / "autotune").glob("*.json"))
    native = list((root / "native").glob("*/_tilec_launch*"))
    print(f"cache: {root}")
    print(f"  compiled kernels: {len(kernels)} ({size(kernels) / 2**20:.1f} MiB)")
    print(f"  autotune results: {len(tuned)}")
    print(f"  C launcher builds: {len(native)}")
    return 0


def cmd_opt(args: argparse.Namespace) -> int:
    from tilec.targets import get_target
    target = get_target(args.target)
    registry = pass_registry()
    names = [n for spec in (args.passes or []) for n in split_pipeline(spec)]
    text = sys.stdin.read() if args.file == "-" else _read_text(args.file)
    outputs, failed = [], False
    for chunk, offset in split_input(text, args.split_input_file):
        try:
            outputs.append(opt_chunk(chunk, offset, names, registry, target, args).rstrip("\n"))
        except TilecError as e:
            if not args.split_input_file:
                raise
            print(_error_text(e), file=sys.stderr)
            failed = True
    if outputs:
        print("\n// -----\n".join(outputs))
    return 1 if failed else 0


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as e:
        raise TilecError(f"cannot read {path}: {e.strerror}") from None


# ====================================================================== main

def _add_kernel_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE.py", help="a Python file defining @tilec.kernel functions")
    p.add_argument("--target", required=True, help="a target name (see `tilec targets`)")
    p.add_argument("--kernel", metavar="NAME", help="the kernel to use (default: all / the only one)")
    p.add_argument("--signature", metavar="TYPES",
                   help="runtime parameter types, e.g. '*fp32,*fp32,i32' or 'x=*fp32,n=i32'")
    p.add_argument("--constexpr", metavar="K=V", action="extend", nargs="+", default=[],
                   help="constexpr values (Python literals or dtype names)")
    p.add_argument("--num-warps", type=int, default=4, metavar="N")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tilec", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    t = sub.add_parser("targets", help="print the target table")
    t.set_defaults(fn=cmd_targets)

    c = sub.add_parser("compile", help="compile kernels and write their artifacts and manifest")
    _add_kernel_options(c)
    c.add_argument("-o", "--output", default=DEFAULT_OUT, metavar="DIR",
                   help=f"output folder (default ./{DEFAULT_OUT}); one subfolder per kernel")
    c.set_defaults(fn=cmd_compile)

    i = sub.add_parser("ir", help="print a kernel's IR (frontend, one stage, or after every pass)")
    _add_kernel_options(i)
    which = i.add_mutually_exclusive_group()
    which.add_argument("--stage", metavar="S", help="print this stage (e.g. tile-opt, cpu, llir)")
    which.add_argument("--print-after-all", action="store_true",
                       help="print the IR after every pass, with the pass names")
    i.add_argument("--debug-info", action="store_true", help="print locations")
    i.set_defaults(fn=cmd_ir)

    k = sub.add_parser("cache", help="show (or --clear) the disk cache")
    k.add_argument("--clear", action="store_true", help="remove everything tilec cached")
    k.set_defaults(fn=cmd_cache)

    o = sub.add_parser("opt", help="run passes on an .mlir file and print the result")
    o.add_argument("file", metavar="FILE.mlir", help="input IR ('-' for stdin)")
    o.add_argument("--pass", dest="passes", action="append", metavar="P[,P...]",
                   help="tilec pass names or upstream MLIR passes, in order (repeatable)")
    o.add_argument("--split-input-file", action="store_true",
                   help="treat '// -----' lines as separators between independent inputs")
    o.add_argument("--target", default="cpu", help="target for passes that take one")
    o.add_argument("--num-warps", type=int, default=4, metavar="N")
    o.add_argument("--debug-info", action="store_true", help="print locations")
    o.set_defaults(fn=cmd_opt)
    return p


def _error_text(e: TilecError) -> str:
    """The message as shown: located messages as they are, others after 'error: '."""
    text = str(e)
    if e.loc is not None or text.startswith("error:") or re.match(r"\S+:\d+:\d+: error: ", text):
        return text
    return f"error: {text}"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.fn(args))
    except CompilerBugError as e:
        print(f"tilec: {e}", file=sys.stderr)
        return 2
    except TilecError as e:
        print(_error_text(e), file=sys.stderr)
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


if __name__ == "__main__":
    sys.exit(main())
