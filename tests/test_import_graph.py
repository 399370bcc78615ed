"""No import cycle among the modules of one package: each package's modules import one another
one way only, so each can be read (and loaded) after the modules it imports.

The imports are read with ``ast`` from the source, importing nothing (the adapters import
their engines, which the core's tier does not have): every ``import`` and ``from ... import``
anywhere in a module, at its top or inside a function, relative ones resolved from the
module's path. A function-level import breaks no cycle for the reader, so it counts.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sglang_ext", "vllm_ext", "harmony_plugins")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(name: str, is_package: bool, tree: ast.AST, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that the module ``name`` imports."""
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = parts[:len(parts) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            # ``from package import module`` imports the module; else the module itself.
            targets = [f"{module}.{alias.name}" for alias in node.names] + [module]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # a name in a module: that module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph(package: str) -> dict[str, set[str]]:
    paths = sorted((ROOT / package).rglob("*.py"))
    modules = {module_name(path) for path in paths}
    return {module_name(path): imported(module_name(path), path.name == "__init__.py",
                                        ast.parse(path.read_text()), modules)
            for path in paths}


def cycles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The import cycles of ``edges``: each strongly connected group of two or more modules
    (Tarjan's algorithm), sorted. A package's ``__init__`` importing its own modules, which
    import names of the package, is no cycle here: only module to module counts."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def without_package_inits(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The edges into a package's ``__init__`` from its own modules dropped (``from . import
    x`` names the module ``x``, resolved above; a module reading the package's public names
    is the package's own door)."""
    return {name: {target for target in targets if not name.startswith(target + ".")}
            for name, targets in edges.items()}


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle_in(package):
    edges = without_package_inits(graph(package))
    assert sum(len(targets) for targets in edges.values()) > len(edges) / 2  # it sees imports
    assert cycles(edges) == []


def test_the_cycle_check_can_fail():
    """The pair the review found (sglang_ext.content imported the tool detector inside a hook,
    the detector imported content's slot), written as sources: a cycle, found."""
    modules = {"p", "p.content", "p.detectors", "p.names"}
    content = ast.parse("from .names import NAME\n"
                        "def hook():\n    from .detectors import HarmonyExtDetector\n")
    detectors = ast.parse("from . import names\nfrom .content import CONTENT\n")
    edges = without_package_inits({
        "p.content": imported("p.content", False, content, modules),
        "p.detectors": imported("p.detectors", False, detectors, modules)})
    assert edges == {"p.content": {"p.names", "p.detectors"},
                     "p.detectors": {"p.names", "p.content"}}
    assert cycles(edges) == [["p.content", "p.detectors"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
