"""Importing the core imports no engine and none of the adapters' third-party libraries.

Every module of ``harmony_plugins`` (``adapter_support`` included, whose pydantic and
prometheus_client imports wait until an adapter uses them) is imported in a fresh
interpreter, which then says which of the forbidden modules got loaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FORBIDDEN = ["pydantic", "prometheus_client", "vllm", "sglang", "torch", "tiktoken",
             "tokenizers", "transformers", "openai_harmony", "jsonschema"]

_CODE = """
import importlib, json, pkgutil, sys
import harmony_plugins
names = sorted(m.name for m in pkgutil.walk_packages(harmony_plugins.__path__, "harmony_plugins."))
for name in names:
    importlib.import_module(name)
forbidden = %r
print(json.dumps({"modules": names, "loaded": [m for m in forbidden if m in sys.modules]}))
"""


def test_importing_every_core_module_loads_no_engine_or_adapter_library():
    out = subprocess.run(
        [sys.executable, "-c", _CODE % FORBIDDEN],
        env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO,
        capture_output=True, text=True, check=True,
    )
    seen = json.loads(out.stdout)
    # The walk found the modules it should (so an empty list below means something).
    for name in ("harmony_plugins.cli", "harmony_plugins.vocab.o200k", "harmony_plugins.vocab",
                 "harmony_plugins.adapter_support.models",
                 "harmony_plugins.adapter_support.metrics"):
        assert name in seen["modules"]
    assert seen["loaded"] == []


def test_the_check_sees_a_forbidden_import():
    """The same probe, after an import of pydantic, reports it (the test can fail)."""
    out = subprocess.run(
        [sys.executable, "-c", "import pydantic\n" + _CODE % FORBIDDEN],
        env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO,
        capture_output=True, text=True, check=True,
    )
    assert json.loads(out.stdout)["loaded"] == ["pydantic"]


# -- nothing read at import ----------------------------------------------------------------------

_OPENED = """
import json, sys
opened = []
sys.addaudithook(lambda event, args: event == "open" and opened.append(str(args[0])))
import harmony_plugins
%s
print(json.dumps([path for path in opened if "/harmony_plugins/data/" in path
                  and not path.endswith((".py", ".pyc"))]))
"""


def _data_files_opened(then: str = "") -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", _OPENED % then],
        env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO,
        capture_output=True, text=True, check=True,
    )
    return [Path(path).name for path in json.loads(out.stdout)]


def test_importing_the_core_reads_no_data_file():
    """``import harmony_plugins`` (the command line, API servers, detokenizers) opens none of
    the shipped data; the first guard reads its token classes (the control: the probe sees an
    open)."""
    assert _data_files_opened() == []
    assert _data_files_opened("harmony_plugins.Guard(); harmony_plugins.Guard()") == [
        "o200k_starts.xz"]


_WITHOUT_TABLE = """
import sys

def missing(event, args):
    if event == "open" and str(args[0]).endswith("o200k_starts.xz"):
        raise FileNotFoundError(2, "No such file or directory", str(args[0]))

sys.addaudithook(missing)
import harmony_plugins
parser = harmony_plugins.StreamParser()  # the parse needs no table
try:
    harmony_plugins.Guard()
except RuntimeError as e:
    print(e)
"""


def test_a_guard_without_its_table_says_so_and_the_package_still_imports():
    """A missing data file fails the guard, naming the file and what to do, not the import
    (the engines' hooks then say so and leave the guard off)."""
    out = subprocess.run(
        [sys.executable, "-c", _WITHOUT_TABLE],
        env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO,
        capture_output=True, text=True, check=True,
    )
    assert out.stdout.strip() == (
        "cannot read the shipped o200k token classes o200k_starts.xz (No such file or "
        "directory); reinstall harmony-ext (pip install --force-reinstall harmony-ext)")
