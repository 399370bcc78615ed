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
