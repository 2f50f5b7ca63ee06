"""Frontend rule for printing from kernels: `tl.device_print(prefix, *args,
hex=False)` and Python's `print(...)` in kernel code (which Triton maps to
`device_print`: a first argument that is a string is the prefix).

The prefix is normalised as Triton does (it ends in ": " and a non-empty one
starts with a space when values follow); numbers and constexprs become
scalars; each operand gets the printf conversion of its dtype (`%i`/`%u`,
`%lli`/`%llu` for 64 bits, `%f` for floats (printed as doubles), `%p` for
pointers, or `0x%0Nx`-style zero-padded hex with `hex=True`).  One
`tile.print` (dialects/tile_print.py) per value (one without values for none).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tilec.dialects import tile_print
from tilec.frontend.builtins import Rule, rule_table
from tilec.frontend.semantic import TValue
from tilec.language import core as tl

if TYPE_CHECKING:
    from tilec.frontend.codegen import CodeGen

RULES: dict[str, Rule] = {}
rule = rule_table(RULES)


def _prefix(prefix: str, has_args: bool) -> str:
    if has_args and not prefix.endswith(" "):
        prefix += " "
    if has_args and not prefix.endswith(": "):
        prefix = prefix[:-1] + ": "
    if len(prefix) > 2 and not prefix.startswith(" "):
        prefix = " " + prefix
    return prefix


def conversion(v: TValue, hex_: bool) -> str:
    """The printf conversion that prints one element of `v`."""
    if v.is_ptr:
        return "%p"
    dt = v.dtype
    wide = dt.bits == 64
    if hex_:
        return f"0x%0{max(1, dt.bits // 4)}{'ll' if wide else ''}x"
    if dt.is_floating():
        return "%f"
    signed = dt.kind == "int"
    return ("%lli" if signed else "%llu") if wide else ("%i" if signed or dt.is_bool() else "%u")


@rule("device_print")
def device_print(cg: CodeGen, node: Any, prefix: Any, *args: Any, hex: Any = False) -> None:
    if isinstance(prefix, tl.constexpr):
        prefix = prefix.value
    if not isinstance(prefix, str):
        cg.err(node, f"tl.device_print's prefix must be a string, got {cg.describe(prefix)}")
    if isinstance(hex, tl.constexpr):
        hex = hex.value
    if not isinstance(hex, bool):
        cg.err(node, f"tl.device_print's hex must be True or False, got {cg.describe(hex)}")
    values = []
    for a in args:
        if isinstance(a, tl.constexpr):
            a = a.value
        if isinstance(a, str):
            cg.err(node, "tl.device_print prints numbers and tiles; put text in the prefix")
        values.append(cg.to_value(a, node))
    if any(len(v.shape) > 2 for v in values):
        cg.err(node, "tl.device_print prints scalars and 1-D / 2-D tiles")
    text = _prefix(prefix, bool(values))
    if not values:
        tile_print.print_([], text, [], loc=cg.loc, ip=cg.ip)
    for k, v in enumerate(values):
        tile_print.print_([v.handle], text, [conversion(v, hex)], k if len(values) > 1 else -1,
                          loc=cg.loc, ip=cg.ip)
    return None


def python_print(cg: Any, node: Any, args: list[Any], kwargs: dict[str, Any]) -> None:
    """`print(...)` in kernel code: tl.device_print with a leading string as the prefix."""
    extra = set(kwargs) - {"hex"}
    if extra:
        cg.err(node, f"print() in a kernel takes no keyword {sorted(extra)[0]!r} "
               "(it is tl.device_print)")
    first = args[0].value if args and isinstance(args[0], tl.constexpr) else \
        args[0] if args else ""
    if isinstance(first, str):
        return device_print(cg, node, first, *args[1:], **kwargs)
    return device_print(cg, node, "", *args, **kwargs)


__all__ = ["RULES", "python_print", "conversion"]
