"""Lowering rules keyed by (op, target feature), shared by the GPU and CPU lowerings.

A rule module declares its rules in a module-local `RuleSet`:

    RULES = RuleSet("gpu.memory")

    @RULES.rule("tile.load")                                  # generic fallback
    def load(L, op): ...

    @RULES.rule("tile.load", feature=Feature.PTX_PREDICATED_MEM)   # wins where the target has it
    def load_predicated(L, op): ...

and the pass combines rule sets explicitly (`RuleTable([memory.RULES, math.RULES, ...])`):
nothing registers itself by being imported.  A key is an op name (`tile.load`)
or the name of a target hook that a generic rule asks for (`hook.warp-sync`).

Lookup (`RuleTable.find(key, target)`): among the rules for `key` whose feature
the target has, a feature rule beats the generic one; two feature rules that
both apply are an ambiguity, reported as a `CompilerBugError` (so a second rule
never silently replaces the first by import order).  No rule at all is a
`CompilerBugError` naming the op, the target and the user's line.

Nearest analogues: JAX Pallas' `lowering_rules[(semantics, ...)][primitive]`;
Triton's `TargetInfo` hooks with a generic fallback.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Generic, Iterable, TypeVar

from tilec.errors import CompilerBugError
from tilec.targets import Feature, Target

Fn = TypeVar("Fn", bound=Callable[..., object])


@dataclass(frozen=True)
class Rule(Generic[Fn]):
    key: str
    feature: Feature | None
    fn: Fn
    origin: str           # "<rule set>.<function>", for messages


class RuleSet(Generic[Fn]):
    """The rules of one rule module, in declaration order."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.rules: list[Rule[Fn]] = []

    def rule(self, *keys: str, feature: Feature | None = None) -> Callable[[Fn], Fn]:
        """Declare `fn` as the lowering of `keys` (where the target has `feature`)."""
        if feature is not None and not isinstance(feature, Feature):
            raise TypeError(f"rule feature must be a Feature, not {feature!r}")

        def declare(fn: Fn) -> Fn:
            for key in keys:
                self.rules.append(Rule(key, feature, fn, f"{self.name}.{fn.__name__}"))
            return fn
        return declare


class RuleTable(Generic[Fn]):
    """The rules of a pass: several rule sets, combined in the order given."""

    def __init__(self, sets: Iterable[RuleSet[Fn]]) -> None:
        self.by_key: dict[str, list[Rule[Fn]]] = {}
        for s in sets:
            for r in s.rules:
                same = [o for o in self.by_key.get(r.key, []) if o.feature == r.feature]
                if same:
                    raise CompilerBugError(f"two lowering rules for ({r.key}, "
                                           f"{r.feature.value if r.feature else 'generic'}): "
                                           f"{same[0].origin} and {r.origin}")
                self.by_key.setdefault(r.key, []).append(r)

    def keys(self) -> list[str]:
        return sorted(self.by_key)

    def find(self, key: str, target: Target) -> Fn | None:
        """The most specific rule for `key` on `target`, or None."""
        rules = self.by_key.get(key, [])
        specific = [r for r in rules if r.feature is not None and target.has(r.feature)]
        if len(specific) > 1:
            raise CompilerBugError(f"ambiguous lowering of {key} for {target.name}: "
                                   + ", ".join(r.origin for r in specific))
        if specific:
            return specific[0].fn
        generic = [r for r in rules if r.feature is None]
        return generic[0].fn if generic else None

    def get(self, key: str, target: Target, where: str = "") -> Fn:
        """`find`, or a CompilerBugError naming the op, the target and `where` (the user's line)."""
        fn = self.find(key, target)
        if fn is None:
            at = f" at {where}" if where else ""
            raise CompilerBugError(f"no lowering rule for {key} on target {target.name}{at}")
        return fn
