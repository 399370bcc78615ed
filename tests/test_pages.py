"""The comparison pages' generators (``pages/``) import, and stand on their own.

Nothing in CI regenerates the pages (each needs its engine and minutes), so a generator that a
change elsewhere broke, a test helper renamed or moved, would stay broken until someone ran it.
Here every generator is imported in a fresh interpreter of the core's venv: importing loads no
engine (each imports vLLM or SGLang when it makes its page), and what a generator shares with
the tests comes from ``harmony_ext_testing``, never from ``tests/`` and never through an edited
``sys.path``, so that moving a test cannot break a page unseen. ``pages/run.sh`` names exactly
the generators there are.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(p for p in (ROOT / "pages").glob("*.py") if p.name != "__init__.py")
ENGINES = ["vllm", "sglang", "torch", "openai"]
"""Loaded by none of the generators when imported: each imports them when it makes its page."""
TEST_MODULES = {p.stem for p in (ROOT / "tests").rglob("*.py")} - {"__init__", "conftest"}
"""What a test module may be imported as by bare name, with its folder on ``sys.path``."""

_IMPORT_ALL = """
import importlib, json, sys
modules = {m: importlib.import_module(m) for m in %r}
print(json.dumps({"mains": sorted(m for m, mod in modules.items() if callable(mod.main)),
                  "loaded": [m for m in %r if m in sys.modules]}))
"""


def test_every_generator_imports_without_an_engine() -> None:
    names = [f"pages.{p.stem}" for p in PAGES]
    assert len(names) >= 4  # the four pages of CONTRIBUTING.md's table at least
    out = subprocess.run([sys.executable, "-c", _IMPORT_ALL % (names, ENGINES)],
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen == {"mains": names, "loaded": []}


def test_run_sh_names_every_generator() -> None:
    script = (ROOT / "pages" / "run.sh").read_text(encoding="utf-8")
    # The case arms: "vllm-comparison | multi-turn-vllm) venv=..." and so on.
    named = {n.replace("-", "_") for arm in re.findall(r"^\s*([a-z| -]+)\) venv=", script,
                                                       re.MULTILINE)
             for n in arm.replace(" ", "").split("|")}
    assert named == {p.stem for p in PAGES}


def reliance_on_tests(source: str, where: str) -> list[str]:
    """What in ``source`` reaches into the tests: an import of ``tests`` or of a test module
    by bare name, and any use of ``sys.path``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        found += [(node.lineno, f"imports {name}") for name in names
                  if name.split(".")[0] == "tests" or name.split(".")[0] in TEST_MODULES]
        if isinstance(node, ast.Attribute) and node.attr == "path" \
                and isinstance(node.value, ast.Name) and node.value.id == "sys":
            found.append((node.lineno, "uses sys.path"))
    return [f"{where}:{line}: {what}" for line, what in sorted(found)]


def test_generators_and_instruments_import_nothing_from_the_tests() -> None:
    sources = [*PAGES, *sorted((ROOT / "harmony_ext_testing").glob("*.py"))]
    assert len(sources) > len(PAGES) + 5  # the instruments were read too
    found = [problem for path in sources for problem in reliance_on_tests(
        path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())]
    assert found == []


def test_reaching_into_the_tests_is_found() -> None:
    source = ("import sys\nsys.path.insert(0, 'tests/sglang')\nfrom tests.data import WEATHER\n"
              "import sglang_process\nfrom harmony_ext_testing.client import WEATHER\n")
    assert reliance_on_tests(source, "pages/x.py") == [
        "pages/x.py:2: uses sys.path", "pages/x.py:3: imports tests.data",
        "pages/x.py:4: imports sglang_process"]
