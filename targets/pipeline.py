"""What a back end's stage list is made of.

A back end (targets/<vendor>/backend.py) declares its steps as an ordered
mapping `stages(target, options) -> {step name: Step}`; the one loop in
tilec/compiler.py runs the target-independent tile steps and then that
mapping, in order.  A `Step` is a callable on the `Compilation` (the module
being compiled and the artifacts so far) plus the names of the artifact stages
it leaves in `Compilation.asm` (`Target.stages` lists them, in order).  An IR
step changes `Compilation.module` in place; a translation step adds text or
bytes to `asm`.

The GPU back ends share their first two steps (`tile_to_gpu_steps`).
"""
from __future__ import annotations

import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

from mlir import ir

from tilec.errors import TilecError
from tilec.options import CompileOptions
from tilec.passes import registry
from tilec.targets import Target


@dataclass
class Compilation:
    """One specialization on its way through the steps.

    module: the IR (changed in place by IR steps; a step may replace it).
    asm: artifact stage -> text or bytes (`tile`, `gpu`, `llir`, `ptx`, ...).
    metadata: what the steps report (registers, timings, ...).
    scratch: values one step hands to a later one that are not artifacts
        (an object file before linking).
    want_text: whether text-only artifacts are wanted (a launch needs only the
        loadable binary, so the CPU back end skips its assembly text then).
    keep_module: whether anyone reads the module after the back end's native
        lowering (IR printing, a stop at that step); when not, the NVIDIA back
        end's child neither prints its lowered module nor sends it back to be
        parsed again (about 0.1 s of a matmul's cold compile).
    """

    module: ir.Module
    target: Target
    options: CompileOptions
    debug_info: bool = False
    want_text: bool = True
    keep_module: bool = True
    asm: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    scratch: dict[str, Any] = field(default_factory=dict)

    def text(self) -> str:
        """The module's text (with locations when `debug_info`)."""
        if not self.debug_info:
            return str(self.module)
        return str(self.module.operation.get_asm(enable_debug_info=True, use_local_scope=True))

    def times_ms(self) -> dict[str, float]:
        """The back end's per-stage times in milliseconds (`metadata["times_ms"]`)."""
        times: dict[str, float] = self.metadata.setdefault("times_ms", {})
        return times


@dataclass(frozen=True)
class Step:
    """run: does the step's work on a `Compilation`.
    produces: the artifact stages it leaves in `asm` (a tool that is absent may
        leave one out, e.g. no `cubin` without ptxas).
    pipeline: for an IR step, what `tilec opt --pass` takes to rerun it (the
        reproducer of a failure names it); None for translation steps.
    show: for a step that changes no MLIR and makes no artifact, what
        `--print-after-all` shows after it.
    isolated: the step's work runs in an isolated child and replaces the
        module only where the compilation keeps it (`Compilation.keep_module`);
        elsewhere the module stays as it was, so a failure's reproducer prints
        it then rather than before every compile."""

    run: Callable[[Compilation], None]
    produces: tuple[str, ...] = ()
    pipeline: str | None = None
    show: Callable[[Compilation], str] | None = None
    isolated: bool = False


Stages = dict[str, Step]


def pass_step(name: str, keep: str | None = None) -> Step:
    """The tilec pass `name` (passes/registry.py) as a step; `keep`: the artifact
    stage that records the module's text after it."""
    def run(c: Compilation) -> None:
        registry.run(name, c.module, c.target, c.options)
        if keep is not None:
            c.asm[keep] = c.text()
    return Step(run, (keep,) if keep else (), name)


def upstream_step(pipeline: str) -> Step:
    """An upstream MLIR pass pipeline (`builtin.module(...)`) as a step."""
    def run(c: Compilation) -> None:
        from mlir.passmanager import PassManager
        PassManager.parse(pipeline).run(c.module.operation)
    return Step(run, (), pipeline)


def check_num_warps(target: Target, options: CompileOptions) -> None:
    """A TilecError unless `options.num_warps` is a block size `target` can run."""
    nw = options.num_warps
    if nw not in (1, 2, 4, 8, 16) or nw * target.warp_size > target.max_threads:
        raise TilecError(f"num_warps={nw} is not valid for {target.name}: use 1, 2, 4, 8 "
                         f"or 16 with at most {target.max_threads} threads "
                         f"({target.warp_size} per warp)")


# Tile-level rewrites of language features every back end runs first, in this
# order: flattened persistent loops (`tl.range(..., flatten=True)`: the tile loop
# and its K loop fused, so tile-pipeline keeps loads in flight across tiles;
# the CPU runs it; AMD's stage list leaves it out, its LDS pipeliner takes the
# nest's K loop only, and so does NVIDIA's, where it measured slower),
# a program's dot rows split over a cluster of two CTAs (`num_ctas=2`,
# targets with `Feature.CLUSTER`),
# tensor descriptors -> masked loads/stores, pointer-tile accesses that are
# tensor-map blocks tagged for TMA (tile-tma-pointers, TMA targets), tf32 operand rounding, fp8 ->
# integer bit operations on i8 storage.  A target-specific pass that wants the
# original ops (TMA for descriptor loads, tensor cores for tf32/fp8 dots) runs
# before them.
# tile-debug-checks (after the descriptors are pointer tiles) bounds-checks the
# accesses in debug mode and only drops `tile.assert` otherwise.
LANGUAGE_PASSES = ("tile-flatten-loops", "tile-split-ctas", "tile-tma-descriptors", "tile-lower-descriptors",
                   "tile-tma-pointers", "tile-debug-checks", "tile-dot-precision", "tile-expand-fp8")


def language_steps(flatten: bool = True) -> Stages:
    """The LANGUAGE_PASSES as steps (each leaves the IR unchanged where its
    feature is not used); without `flatten`, tile-flatten-loops is left out (a
    back end whose pipeliner takes the nest's K loop but not a fused loop)."""
    steps = {name: pass_step(name) for name in LANGUAGE_PASSES
             if flatten or name != "tile-flatten-loops"}
    steps["tile-debug-checks"] = Step(_debug_checks, (), "tile-debug-checks")
    steps["tile-split-ctas"] = Step(_split_ctas, (), "tile-split-ctas")
    return steps


def _split_ctas(c: Compilation) -> None:
    """tile-split-ctas; a split kernel's CTAs per program go into the metadata
    (the runtime launches that many per program along x)."""
    registry.run("tile-split-ctas", c.module, c.target, c.options)
    for op in c.module.body.operations:
        if "tile.num_ctas" in op.operation.attributes:
            c.metadata["cluster_ctas"] = int(
                ir.IntegerAttr(op.operation.attributes["tile.num_ctas"]).value)


def _debug_checks(c: Compilation) -> None:
    """tile-debug-checks; the sites it records move into the metadata (the
    launcher names them when a check fails)."""
    registry.run("tile-debug-checks", c.module, c.target, c.options)
    attrs = c.module.operation.attributes
    if "tile.debug_sites" in attrs:
        import json
        c.metadata["debug_sites"] = json.loads(ir.StringAttr(attrs["tile.debug_sites"]).value)
        del attrs["tile.debug_sites"]


def tile_to_gpu_steps(flatten: bool = True) -> Stages:
    """The language steps, tile-accelerate-dot, tile-loop-pointers,
    tile-layout, tile-pipeline (-> `tiled`) and convert-tile-to-gpu (-> `gpu`):
    the first steps of every GPU back end.

    tile-loop-pointers (K loops carry a scalar base, not a pointer tile) is
    in every GPU list and acts where the record has
    `Feature.LOOP_SCALAR_BASES`."""
    accelerate = pass_step("tile-accelerate-dot")
    prefetch = pass_step("tile-prefetch-vectors")
    layout = pass_step("tile-layout")
    pipeline = pass_step("tile-pipeline")
    distribute = pass_step("convert-tile-to-gpu", keep="gpu")

    def run_layout(c: Compilation) -> None:
        check_num_warps(c.target, c.options)
        layout.run(c)


    def run_distribute(c: Compilation) -> None:
        distribute.run(c)
        for m in re.finditer(r"tilec.dynamic_shared = (\d+)", c.asm["gpu"]):
            c.metadata["dynamic_shared"] = int(m.group(1))
        for m in re.finditer(r"tilec.block_threads = (\d+)", c.asm["gpu"]):
            c.metadata["block_threads"] = int(m.group(1))   # a producer warpgroup's too
        maps = _tensormaps(c.module)
        if maps:
            c.metadata["tensormaps"] = maps
    # The dot selection runs before the fp8 expansion, which leaves the fp8
    # operands of a dot chosen for wgmma as raw bytes (fp8 tensor cores).
    lang = language_steps(flatten)
    expand = lang.pop("tile-expand-fp8")
    return {**lang,
            "tile-accelerate-dot": accelerate,
            "tile-expand-fp8": expand,
            "tile-prefetch-vectors": prefetch,
            "tile-loop-pointers": pass_step("tile-loop-pointers"),
            "tile-layout": Step(run_layout, layout.produces, layout.pipeline),
            # tile-warp-specialize gives a pipelined loop's copies to a producer
            # warpgroup; tile-pingpong orders the products of loops it left
            # (warpgroup turns); tile-unroll unrolls loops by their
            # `loop_unroll_factor`; the `tiled` stage is the IR after them.
            "tile-pipeline": pipeline,
            "tile-warp-specialize": pass_step("tile-warp-specialize"),
            "tile-pingpong": pass_step("tile-pingpong"),
            "tile-unroll": pass_step("tile-unroll", keep="tiled"),
            "convert-tile-to-gpu": Step(run_distribute, distribute.produces,
                                        distribute.pipeline)}


def _tensormaps(module: ir.Module) -> list[Any]:
    """The tensor-map recipes of the module's kernel (targets/nvidia/tma.py):
    what the runtime encodes at launch for its grid-constant parameters."""
    import json
    found: list[Any] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "gpu.func" and "tilec.tensormaps" in op.attributes:
            found.extend(json.loads(ir.StringAttr(op.attributes["tilec.tensormaps"]).value))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def run_from(module: ir.Module, target: Target, steps: Stages, first: str) -> Compilation:
    """Run `steps` from the one named `first` to the end on `module` (a back end
    applied to already distributed IR, as its tests do)."""
    c = Compilation(module, target, CompileOptions())
    names = list(steps)
    with module.context, ir.Location.unknown():
        for name in names[names.index(first):]:
            steps[name].run(c)
    return c


def module_text(c: Compilation) -> str:
    """The module with locations, as a back end sends it to an isolated child."""
    return str(c.module.operation.get_asm(enable_debug_info=True))


def replace_module(c: Compilation, text: str) -> None:
    """Make `text` (an isolated child's result) the compilation's module."""
    c.module = ir.Module.parse(text)


@contextmanager
def fresh_context() -> Iterator[None]:
    """A new single-threaded MLIR context (for the forked children: threads do
    not survive fork)."""
    ctx = ir.Context()
    ctx.enable_multithreading(False)
    with ctx, ir.Location.unknown():
        yield


class LazyFiles(Mapping[str, str]):
    """A reproducer's files, each made by its function only when read (a
    crashed child's reproducer is written; a healthy compile prints nothing)."""

    def __init__(self, makers: dict[str, Callable[[], str]]) -> None:
        self._makers = makers
        self._made: dict[str, str] = {}

    def __getitem__(self, name: str) -> str:
        if name not in self._made:
            self._made[name] = self._makers[name]()
        return self._made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._makers)

    def __len__(self) -> int:
        return len(self._makers)


def isolated(c: Compilation, fn: Callable[..., Any], *args: Any, what: str,
             reproducer: Mapping[str, str], last: bool = False) -> Any:
    """`fn(*args)` in a forked child (targets/isolate.py); on a crash the error
    names a directory holding `reproducer`.  The children's wall time adds up;
    the back end's last isolated step (`last`) reports it as
    times_ms["isolated_total"]."""
    from tilec.targets.isolate import run_isolated
    t0 = time.perf_counter()
    out = run_isolated(fn, *args, what=f"{what} for {c.target.name}", reproducer=reproducer)
    c.scratch["isolated_ms"] = c.scratch.get("isolated_ms", 0.0) + (time.perf_counter() - t0) * 1e3
    if last:
        c.times_ms()["isolated_total"] = c.scratch["isolated_ms"]
    return out
