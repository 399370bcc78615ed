"""List every test function that cannot fail: no ``assert`` reachable from it.

A test counts as able to fail when its body (nested functions included) holds an ``assert``
statement, a ``pytest.raises``, ``pytest.fail`` or ``pytest.xfail(strict...)``-free failure
call (``pytest.raises``/``pytest.fail``), or a call to a helper that itself reaches one of
those: a function of the same module (``helper(...)``, ``self.helper(...)``,
``cls.helper(...)``) or of a test-support module it imports (``from tests.x import f``,
``from sglang_cases import f``, ``import tests.x as x; x.f(...)``). Test-support modules are
the Python files under ``tests/`` and ``harmony_ext_testing/``. The check is static (``ast``):
nothing is imported or run, so it reads the engine tiers' tests without their engines.

Tests are every ``def test_*`` (and ``async def``) at a module's top level or in a class named
``Test*``, in every ``tests/**/test_*.py`` and ``tests/**/*_test.py``.

    python scripts/check_test_asserts.py            # prints the offenders, exit 1 if any
    python scripts/check_test_asserts.py ROOT       # another checkout's tests

``tests/test_every_test_can_fail.py`` runs it on the test tree (the list must be empty) and
on a source string with an assert-less test (the check itself can fail).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

HELPER_ROOTS = ("tests", "harmony_ext_testing")
FAILING_PYTEST_CALLS = {"raises", "fail", "warns", "deprecated_call"}
"""``pytest.<name>(...)``: each fails the test when its condition is not met."""


@dataclass
class Module:
    """One parsed file: its functions (``name`` or ``Class.name``) and what it imported."""

    name: str
    path: Path
    tree: ast.Module
    functions: dict[str, ast.AST] = field(default_factory=dict)
    imported_names: dict[str, tuple[str, str]] = field(default_factory=dict)
    """local name -> (module, function name) for ``from M import f [as g]``."""
    imported_modules: dict[str, str] = field(default_factory=dict)
    """local name -> module for ``import M [as m]`` and ``from P import M``."""
    pytest_names: set[str] = field(default_factory=set)
    """local names bound to pytest itself (``import pytest``)."""
    pytest_failers: set[str] = field(default_factory=set)
    """local names bound to ``pytest.raises``/``fail`` (``from pytest import raises``)."""


def _index(module: Module) -> None:
    for node in module.tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            module.functions[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    module.functions[f"{node.name}.{item.name}"] = item
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "pytest":
                    module.pytest_names.add(alias.asname or "pytest")
                else:
                    module.imported_modules[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = _absolute(module, node)
            for alias in node.names:
                local = alias.asname or alias.name
                if base == "pytest" and alias.name in FAILING_PYTEST_CALLS:
                    module.pytest_failers.add(local)
                module.imported_names[local] = (base, alias.name)
                module.imported_modules[local] = f"{base}.{alias.name}"


def _absolute(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.name.split(".")[: -node.level]
    return ".".join([*package, node.module] if node.module else package)


def _dotted(path: Path, root: Path) -> str:
    return ".".join(path.relative_to(root).with_suffix("").parts)


def _is_test_file(path: Path) -> bool:
    return path.name.startswith("test_") or path.name.endswith("_test.py")


@dataclass
class Checker:
    """Reads the support modules once; answers which tests reach a failure."""

    modules: dict[str, Module]
    """dotted name from the root (``tests.sglang.sglang_process``) -> module."""
    by_stem: dict[str, list[str]] = field(default_factory=dict)
    _memo: dict[tuple[str, str], bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in self.modules:
            self.by_stem.setdefault(name.rsplit(".", 1)[-1], []).append(name)

    def resolve(self, importer: Module, name: str) -> Module | None:
        """A module named as its importer wrote it: dotted from the root, or a bare name
        found beside the importer (pytest's rootdir-relative imports, ``tests/sglang``)."""
        if name in self.modules:
            return self.modules[name]
        sibling = ".".join([*importer.name.split(".")[:-1], name])
        if sibling in self.modules:
            return self.modules[sibling]
        candidates = self.by_stem.get(name, [])
        return self.modules[candidates[0]] if len(candidates) == 1 else None

    def reaches_failure(self, module: Module, function: str) -> bool:
        key = (module.name, function)
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = False  # a cycle reaches nothing new
        node = module.functions.get(function)
        result = node is not None and self._body_fails(module, node, function)
        self._memo[key] = result
        return result

    def _body_fails(self, module: Module, node: ast.AST, function: str) -> bool:
        cls = function.split(".")[0] if "." in function else None
        for child in ast.walk(node):
            if isinstance(child, ast.Assert):
                return True
            if isinstance(child, ast.Call) and self._call_fails(module, child.func, cls):
                return True
        return False

    def _call_fails(self, module: Module, func: ast.expr, cls: str | None) -> bool:
        if isinstance(func, ast.Name):
            if func.id in module.pytest_failers:
                return True
            if func.id in module.functions:
                return self.reaches_failure(module, func.id)
            if func.id in module.imported_names:
                source, name = module.imported_names[func.id]
                target = self.resolve(module, source)
                return target is not None and self.reaches_failure(target, name)
            return False
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            owner, attr = func.value.id, func.attr
            if owner in module.pytest_names:
                return attr in FAILING_PYTEST_CALLS
            if owner in ("self", "cls") and cls is not None:
                return self.reaches_failure(module, f"{cls}.{attr}")
            if f"{owner}.{attr}" in module.functions:  # Class.method(...)
                return self.reaches_failure(module, f"{owner}.{attr}")
            if owner in module.imported_modules:
                target = self.resolve(module, module.imported_modules[owner])
                return target is not None and self.reaches_failure(target, attr)
        return False

    def tests(self) -> Iterator[tuple[Module, str]]:
        for module in self.modules.values():
            if not _is_test_file(module.path) or not module.name.startswith("tests."):
                continue
            for name in module.functions:
                short = name.rsplit(".", 1)[-1]
                owner = name.split(".")[0] if "." in name else None
                if short.startswith("test") and (owner is None or owner.startswith("Test")):
                    yield module, name

    def offenders(self) -> list[str]:
        return sorted(f"{m.path}::{name.replace('.', '::')}" for m, name in self.tests()
                      if not self.reaches_failure(m, name))


def load(root: Path) -> Checker:
    modules: dict[str, Module] = {}
    for top in HELPER_ROOTS:
        for path in sorted((root / top).rglob("*.py")):
            if any(part.startswith(".") or part == "__pycache__" for part in path.parts):
                continue
            name = _dotted(path, root)
            module = Module(name, path.relative_to(root), ast.parse(path.read_text(), str(path)))
            _index(module)
            modules[name] = module
    return Checker(modules)


def check_source(source: str, name: str = "tests.test_probe",
                 support: Iterable[tuple[str, str]] = ()) -> list[str]:
    """The offenders in one test module given as source (and optional support modules, as
    ``(dotted name, source)``): the check's own tests feed it here."""
    modules = {}
    for dotted, text in [(name, source), *support]:
        module = Module(dotted, Path(*dotted.split(".")).with_suffix(".py"), ast.parse(text))
        _index(module)
        modules[dotted] = module
    return Checker(modules).offenders()


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1]
    checker = load(root)
    found = checker.offenders()
    count = sum(1 for _ in checker.tests())
    for line in found:
        print(line)
    print(f"{len(found)} of {count} test functions reach no assert, pytest.raises or "
          "pytest.fail", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
