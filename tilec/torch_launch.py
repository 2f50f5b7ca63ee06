"""Launches of tilec kernels that torch.compile and torch.export can trace.

Eagerly, `kernel[grid](*args)` runs tilec's launch path (tilec/launch.py).
While Dynamo traces (`torch.compiler.is_dynamo_compiling()`), or while a
non-strict `torch.export` / `make_fx` runs the function on fake tensors,
`kernel[grid]` returns `traced_launcher(kernel, grid)` instead: it records
one call of the generic operator `tilec::launch` registered here, the way
PyTorch records a user Triton kernel as its `triton_kernel_wrapper_mutation`
higher-order op, but through an ordinary `torch.library.custom_op`:

    tilec::launch(str key, SymInt[] grid, Tensor(a!)[] outputs, Tensor[] inputs,
                  SymInt[] ints, float[] floats) -> ()

* `key` (JSON) names the kernel (its id in tilec.launch's registry), where
  each runtime parameter's value comes from (`o0`: outputs[0], `i1`:
  inputs[1], `s0`: ints[0], `f0`: floats[0], `b0`: ints[0] as a bool) and
  the constexpr and launch option values; it is built once per trace by
  `launch_plan`, which Dynamo runs for real (it is marked as having a
  constant result), so nothing of it is traced.
* `outputs` are the tensors the kernel may write: the parameters its source
  stores or atomically updates through (`tilec.param_uses`, no compile
  needed), declared mutated, so functionalization and inductor treat the
  launch like any mutating op; `inputs` are the other tensors.  A tensor
  passed twice appears once.
* grid entries and ints may be symbolic (dynamic shapes).
* the fake implementation does nothing; the real one launches the kernel
  through the eager path (`kernel[grid](...)`, the C launcher of the grid).
"""
from __future__ import annotations

import json
from typing import Any, Callable

import torch

from tilec.errors import TilecError
from tilec.jit import call_grid
from tilec.kernel_ids import registered_kernel
from tilec.language import core as tl
from tilec.param_uses import pointer_uses

_PLANS: dict[str, tuple[Any, list[str], dict[str, Any]]] = {}  # key -> (kernel, layout, kwargs)


@torch.library.custom_op("tilec::launch", mutates_args=("outputs",))
def _launch_op(key: str, grid: list[int], outputs: list[torch.Tensor],
               inputs: list[torch.Tensor], ints: list[int], floats: list[float]) -> None:
    kernel, layout, kwargs = _decode(key)
    args: list[Any] = []
    for slot in layout:
        kind, i = slot[0], int(slot[1:])
        args.append(outputs[i] if kind == "o" else inputs[i] if kind == "i" else
                    ints[i] if kind == "s" else floats[i] if kind == "f" else bool(ints[i]))
    kernel[tuple(grid)](*args, **kwargs)


@_launch_op.register_fake
def _launch_fake(key: str, grid: list[int], outputs: list[torch.Tensor],
                 inputs: list[torch.Tensor], ints: list[int], floats: list[float]) -> None:
    return None


def _decode(key: str) -> tuple[Any, list[str], dict[str, Any]]:
    plan = _PLANS.get(key)
    if plan is None:
        d = json.loads(key)
        kernel = registered_kernel(d["k"])
        kwargs = {k: _from_json(v) for k, v in d["c"].items()}
        plan = _PLANS[key] = (kernel, list(d["a"]), kwargs)
    return plan


def _to_json(name: str, v: Any) -> Any:
    if isinstance(v, tuple) and len(v) == 2 and v[0] == "tl.dtype":
        return {"tl": v[1]}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise TilecError(f"constexpr '{name}' = {v!r} cannot be recorded in a traced launch; "
                     "torch.compile and torch.export take constexprs that are ints, floats, bools, "
                     "strings, None or tl dtypes")


def _from_json(v: Any) -> Any:
    if isinstance(v, dict):
        return tl.parse_type(v["tl"])
    return v


def launch_plan(kernel_id: str, kinds: str, aliases: tuple[int, ...],
                constexprs: tuple[tuple[str, Any], ...], options: tuple[tuple[str, Any], ...]
                ) -> tuple[str, tuple[bool, ...]]:
    """(key, per tensor argument whether it goes to `outputs`) of one traced launch.

    `kinds` has a letter per runtime parameter (t tensor, s int, f float, b
    bool); `aliases[j]` is the index of the first tensor argument that is the
    same tensor as tensor argument j (j itself if none)."""
    kernel = registered_kernel(kernel_id)
    written, addressed = _uses(kernel)
    names = [p.name for p in kernel.plan.runtime]
    tensor_names = [n for n, k in zip(names, kinds) if k == "t"]
    for n, k in zip(names, kinds):
        if k == "t" and n not in addressed:
            raise TilecError(f"argument '{n}' of kernel '{kernel.name}' is a tensor, but the "
                             "kernel uses it as a scalar; pass a Python number (int(x), "
                             "float(x), or x.item())")
    # A tensor is an output if any parameter it is passed for is written.
    is_out = [False] * len(tensor_names)
    for j, n in enumerate(tensor_names):
        if n in written:
            is_out[aliases[j]] = True
    slots: dict[int, str] = {}
    counts = {"o": 0, "i": 0, "s": 0, "f": 0}
    layout: list[str] = []
    j = 0
    for k in kinds:
        if k == "t":
            first = aliases[j]
            if first not in slots:
                kind = "o" if is_out[first] else "i"
                slots[first] = f"{kind}{counts[kind]}"
                counts[kind] += 1
            layout.append(slots[first])
            j += 1
        else:
            kind = "s" if k in "sb" else "f"
            layout.append(f"{'b' if k == 'b' else kind}{counts[kind]}")
            counts[kind] += 1
    cx = {k: _to_json(k, v) for k, v in (*constexprs, *options)}
    key = json.dumps({"k": kernel_id, "a": layout, "c": cx}, sort_keys=True)
    return key, tuple(is_out[aliases[j]] and aliases[j] == j for j in range(len(tensor_names)))


# Dynamo calls a function so marked for real while tracing and records its
# result as a constant (what `torch._dynamo.assume_constant_result` sets; set
# here without importing torch._dynamo for eager users).
launch_plan._dynamo_marked_constant = True  # type: ignore[attr-defined]


def _uses(kernel: Any) -> tuple[frozenset[str], frozenset[str]]:
    uses = getattr(kernel, "_pointer_uses", None)
    if uses is None:
        uses = kernel._pointer_uses = pointer_uses(kernel.fn)
    return uses


def traced_launcher(kernel: Any, grid: Any) -> Callable[..., None]:
    """`kernel[grid]` while a launch is traced: records `tilec::launch` (see above)."""
    def launcher(*args: Any, **kwargs: Any) -> None:
        values, options = kernel.plan.bind(args, kwargs)
        kinds: list[str] = []
        tensors: list[Any] = []
        aliases: list[int] = []
        ints: list[Any] = []
        floats: list[Any] = []
        constexprs: list[tuple[str, Any]] = []
        for p, v in zip(kernel.plan.params, values):
            if p.constexpr:
                if isinstance(v, tl.constexpr):
                    v = v.value
                if isinstance(v, tl.dtype):
                    v = ("tl.dtype", v.short)
                constexprs.append((p.name, v))
            elif isinstance(v, torch.Tensor):
                first = len(tensors)
                for i, t in enumerate(tensors):
                    if t is v:
                        first = i
                        break
                aliases.append(first)
                tensors.append(v)
                kinds.append("t")
            elif isinstance(v, bool):
                kinds.append("b")
                ints.append(int(v))
            elif isinstance(v, (int, torch.SymInt)):
                kinds.append("s")
                ints.append(v)
            elif isinstance(v, (float, torch.SymFloat)):
                kinds.append("f")
                floats.append(v)
            else:
                raise TilecError(f"argument '{p.name}' of kernel '{kernel.name}': a "
                                 f"{type(v).__name__} cannot be passed to a traced launch; pass "
                                 "tensors, ints, floats or bools")
        key, to_outputs = launch_plan(kernel.torch_id, "".join(kinds), tuple(aliases),
                                      tuple(constexprs), tuple(sorted(options.items())))
        outputs = [t for t, o in zip(tensors, to_outputs) if o]
        inputs = [t for j, (t, o) in enumerate(zip(tensors, to_outputs))
                  if aliases[j] == j and not o]
        g = grid
        if callable(g):
            g = call_grid(g, {p.name: v for p, v in zip(kernel.plan.params, values)})
        if not isinstance(g, (tuple, list)):
            g = (g,)
        torch.ops.tilec.launch(key, list(g), outputs, inputs, ints, floats)
    return launcher

