"""The structure the project promises: an acyclic import graph, small modules,
and a new target that is one record.

* The import graph of the project's modules (every `import`, also those inside
  functions, except under `if TYPE_CHECKING:`) has no cycle.
* No module is longer than the budget (STYLE.md: split a file along a seam a
  reader recognises when it passes ~500 lines).
* A toy NVIDIA record and a toy AMD record, added to a temporary registry,
  compile an example end to end with no other change (docs/ARCHITECTURE.md,
  "Adding a target").
"""
from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from tilec.targets import TARGETS, Feature, Target

ROOT = Path(__file__).resolve().parent.parent
# Folder in the repository -> the package it installs as.
PACKAGES = {"tilec": "tilec", "dialects": "tilec.dialects", "passes": "tilec.passes",
            "targets": "tilec.targets"}
LINE_BUDGET = 520


def project_modules() -> dict[str, Path]:
    mods = {}
    for folder, package in PACKAGES.items():
        base = ROOT / folder
        for path in base.rglob("*.py"):
            rel = path.relative_to(base).with_suffix("")
            parts = [package, *(p for p in rel.parts if p != "__init__")]
            mods[".".join(parts)] = path
    return mods


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> list[str]:
    """Absolute names imported anywhere in `tree` (not under `if TYPE_CHECKING`)."""
    out: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.extend(f"{node.module}.{a.name}" for a in node.names)
            out.append(node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)
    visit(tree)
    return out


def import_graph() -> dict[str, set[str]]:
    mods = project_modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, path in mods.items():
        for name in _imports(ast.parse(path.read_text())):
            target = resolve(name)
            # `from pkg import name` names pkg as well; a package importing its own
            # submodule is not a cycle through the package.
            if target and target != m and not target.startswith(m + "."):
                graph[m].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def strongconnect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return found


def test_import_graph_is_acyclic() -> None:
    assert cycles(import_graph()) == []


def test_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_over_the_line_budget() -> None:
    long = {str(p.relative_to(ROOT)): n for p in project_modules().values()
            if (n := len(p.read_text().splitlines())) > LINE_BUDGET}
    assert long == {}


# ---------------------------------------------------------------- a new target is one record

TOY_NVIDIA = Target("toy-sm89", "nvidia", "sm_89", 32, 16, 101376, 1024,
                    frozenset({Feature.WARP_SYNC_INSTR, Feature.DEVICE_LIBM, Feature.FAST_EXP2,
                               Feature.FP_CONTRACT, Feature.PTX_PREDICATED_MEM}),
                    static_shared_bytes=48 * 1024, ptx_version="7.8", atomic_scope="device")
# An RDNA2 record (wave32) with 8-byte accesses and half the threads of gfx1100.
TOY_AMD = dataclasses.replace(TARGETS["gfx1100"], name="toy-gfx1030", chip="gfx1030",
                              vector_bytes=8, max_threads=512)


@pytest.fixture
def toy_targets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(TARGETS, TOY_NVIDIA.name, TOY_NVIDIA)
    monkeypatch.setitem(TARGETS, TOY_AMD.name, TOY_AMD)


def _vector_add():  # type: ignore[no-untyped-def]
    from toolcheck import EXAMPLES_DIR, load_example
    return load_example(EXAMPLES_DIR / "vector_add.py").SPECS[0]


@pytest.mark.usefixtures("toy_targets")
def test_a_toy_nvidia_record_compiles_an_example() -> None:
    kernel, sig, cx = _vector_add()
    ck = kernel.compile(target=TOY_NVIDIA.name, signature=sig, constexprs=cx)
    ptx = ck.asm["ptx"]
    assert ".target sm_89" in ptx and ".entry add(" in ptx
    assert "ld.global.v4.b32" in ptx          # 16-byte accesses, predicated
    assert "cubin" in ck.asm or ck.metadata.get("cubin_error") is not None


@pytest.mark.usefixtures("toy_targets")
def test_a_toy_amd_record_compiles_an_example() -> None:
    kernel, sig, cx = _vector_add()
    ck = kernel.compile(target=TOY_AMD.name, signature=sig, constexprs=cx)
    asm = ck.asm["amdgcn"]
    assert '"amdgcn-amd-amdhsa--gfx1030"' in asm
    assert "global_load_dwordx2" in asm and "global_load_dwordx4" not in asm   # vector_bytes=8
    assert ck.asm.get("hsaco") or ck.metadata.get("hsaco_error")
