"""Harmony is decided in one place: rules over the product's source, checked by reading it.

Four rules (docs/architecture.md, "Rules the code keeps"):

1. **One spelling.** A string constant in the product (docstrings aside) that spells a control
   token, a channel name, ``functions.`` or ``to=`` is in the facts table
   (``harmony_plugins/harmony.py``) or the demo's sample outputs (``harmony_plugins/_demo.py``).
2. **Adapters only translate.** ``vllm_ext`` and ``sglang_ext`` import from the core only the
   public names (``harmony_plugins.__all__``) and the engine glue
   (``harmony_plugins.adapter_support``), never another core module.
3. **Sans-I/O.** The core's modules import no ``os``, ``tempfile``, ``logging``, ``pathlib`` or
   ``shutil`` and call no ``open``; the I/O is done at the edges: the command line
   (``cli.py``), the shipped data's reader (``data/``), the vocabulary written for
   openai-harmony (``vocabulary_files.py``) and the engine glue (``adapter_support/``).
4. **The glue sits on the core.** No core module imports the engine glue
   (``harmony_plugins.adapter_support``), or names it: the glue depends on the core, never
   the other way round.

Each rule's check is shown to fail on a sample that breaks it, so an empty list means something.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import harmony_plugins

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("harmony_plugins", "vllm_ext", "sglang_ext")
ADAPTERS = ("vllm_ext", "sglang_ext")
FACTS = {"harmony_plugins/harmony.py", "harmony_plugins/_demo.py"}
EDGES = ("harmony_plugins/cli.py", "harmony_plugins/data/", "harmony_plugins/vocabulary_files.py",
         "harmony_plugins/adapter_support/")
IO_MODULES = {"os", "tempfile", "logging", "pathlib", "shutil", "io", "subprocess", "socket"}

HARMONY_STRING = re.compile(
    r"<\|[a-z_0-9]+\|>|\bfunctions\.|\bto=|\b(?:analysis|commentary|final)\b")


def sources(*packages: str) -> Iterator[tuple[str, ast.Module]]:
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text())


def docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (a bare string statement anywhere:
    module, class and function docstrings, and the ones documenting an attribute)."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)}


def harmony_strings(name: str, tree: ast.Module) -> list[str]:
    skip = docstrings(tree)
    return [f"{name}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in skip and HARMONY_STRING.search(node.value)]


def test_harmony_is_spelled_in_the_facts_table_only():
    found = [line for name, tree in sources(*PRODUCT) if name not in FACTS
             for line in harmony_strings(name, tree)]
    assert found == []


def test_the_spelling_check_can_fail():
    sample = ast.parse('"""Docs may say <|call|>."""\nX = "<|call|>"\nY = f"{a} to={b}"\n'
                       'Z = ("a", "final")\nW = "channel"\n')
    assert [line.split(": ", 1)[1] for line in harmony_strings("m", sample)] == [
        "'<|call|>'", "' to='", "'final'"]
    assert harmony_strings("harmony_plugins/harmony.py", ast.parse(
        (ROOT / "harmony_plugins/harmony.py").read_text()))  # the table itself is seen


def core_imports(name: str, tree: ast.Module) -> list[str]:
    """What a module imports from harmony_plugins that is not public."""
    public = set(harmony_plugins.__all__)
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("harmony_plugins") and not alias.name.startswith(
                        "harmony_plugins.adapter_support"):
                    bad.append(f"{name}:{node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            module = node.module
            if module == "harmony_plugins":
                bad += [f"{name}:{node.lineno}: from harmony_plugins import {a.name}"
                        for a in node.names if a.name not in public]
            elif module.startswith("harmony_plugins.") and not (
                    module == "harmony_plugins.adapter_support"
                    or module.startswith("harmony_plugins.adapter_support.")):
                bad.append(f"{name}:{node.lineno}: from {module} import ...")
    return bad


def test_the_adapters_import_only_the_cores_public_names():
    found = [line for name, tree in sources(*ADAPTERS) for line in core_imports(name, tree)]
    assert found == []


def test_the_import_check_can_fail():
    sample = ast.parse("from harmony_plugins import Turn, markers\n"
                       "from harmony_plugins._turn import pass_undeclared\n"
                       "from harmony_plugins.adapter_support import metrics\n"
                       "import harmony_plugins.conversation\n")
    assert core_imports("m", sample) == [
        "m:1: from harmony_plugins import markers",
        "m:2: from harmony_plugins._turn import ...",
        "m:4: import harmony_plugins.conversation",
    ]
    assert {"Turn", "Request", "harmony", "rules"} <= set(harmony_plugins.__all__)


def io_uses(name: str, tree: ast.Module) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"{name}:{node.lineno}: import {a.name}" for a in node.names
                      if a.name.split(".")[0] in IO_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] in IO_MODULES:
                found.append(f"{name}:{node.lineno}: from {node.module} import ...")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "open"):
            found.append(f"{name}:{node.lineno}: open(...)")
    return found


def test_the_core_does_no_io():
    found = [line for name, tree in sources("harmony_plugins") if not name.startswith(EDGES)
             for line in io_uses(name, tree)]
    assert found == []


def test_the_io_check_can_fail_and_the_edges_are_where_the_io_is():
    sample = ast.parse("import os\nfrom pathlib import Path\nimport logging.handlers\n"
                       "def f():\n    return open('x')\n")
    assert io_uses("m", sample) == ["m:1: import os", "m:2: from pathlib import ...",
                                    "m:3: import logging.handlers", "m:5: open(...)"]
    edges = {name for name, tree in sources("harmony_plugins") if io_uses(name, tree)}
    assert edges and all(name.startswith(EDGES) for name in edges)


GLUE = "harmony_plugins.adapter_support"
GLUE_FOLDER = "harmony_plugins/adapter_support/"


def glue_imports(name: str, tree: ast.Module) -> list[str]:
    """Where a module imports the engine glue, relative imports resolved from its path."""
    package = name.removesuffix(".py").split("/")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1] if node.level else [])
            module = ".".join(part for part in (base, node.module) if part)
            modules = [module] + [f"{module}.{alias.name}" for alias in node.names]
        else:
            continue
        if any(m == GLUE or m.startswith(GLUE + ".") for m in modules):
            found.append(f"{name}:{node.lineno}")
    return found


def glue_mentions(name: str, text: str) -> list[str]:
    """The lines of a module that name the engine glue at all (a docstring pointing at it is
    a dependency of the reader's, the same arrow)."""
    return [f"{name}:{number}" for number, line in enumerate(text.splitlines(), 1)
            if "adapter_support" in line]


def core_modules() -> Iterator[tuple[str, ast.Module]]:
    return ((name, tree) for name, tree in sources("harmony_plugins")
            if not name.startswith(GLUE_FOLDER))


def test_no_core_module_imports_the_glue():
    found = [line for name, tree in core_modules() for line in glue_imports(name, tree)]
    assert found == []


def test_no_core_module_names_the_glue():
    found = [line for name, _ in core_modules()
             for line in glue_mentions(name, (ROOT / name).read_text())]
    assert found == []


def test_the_glue_checks_can_fail():
    sample = ast.parse("from ..adapter_support import once\nfrom . import adapter_support\n"
                       "import harmony_plugins.adapter_support.models\nfrom .. import rules\n"
                       "from ._header import ROLE\n")
    assert glue_imports("harmony_plugins/prompt/_x.py", sample) == [
        "harmony_plugins/prompt/_x.py:1", "harmony_plugins/prompt/_x.py:3"]
    assert glue_imports("harmony_plugins/_x.py", sample) == [
        "harmony_plugins/_x.py:2", "harmony_plugins/_x.py:3"]
    assert glue_mentions("m", '"""Built by :mod:`harmony_plugins.adapter_support.x`."""\n'
                              "X = 1\n# the adapter support\n") == ["m:1"]
    # The glue's own modules do import one another: the checks above see them.
    glue = [name for name, tree in sources("harmony_plugins")
            if name.startswith(GLUE_FOLDER) and glue_imports(name, tree)]
    assert glue
