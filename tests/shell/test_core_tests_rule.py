"""The rule tests/conftest.py holds the core's tests to can fail: a core test that asks for a
temporary folder, or changes the environment, is failed with the reason."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = '''
def test_asks_for_a_folder(tmp_path):
    pass


def test_changes_the_environment(monkeypatch):
    monkeypatch.setenv("HARMONY_EXT_PROBE", "1")


def test_clean():
    pass
'''


def test_a_core_test_with_a_folder_or_an_environment_change_fails(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    shutil.copy(ROOT / "tests" / "conftest.py", tests / "conftest.py")
    (tests / "test_probe.py").write_text(PROBE)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "400"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "-rfE", str(tests)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    out = proc.stdout
    assert "1 failed, 1 passed, 1 error" in out, out[-3000:]
    assert ("a core test needs no temporary folder (asks for ['tmp_path', 'tmp_path_factory'])"
            in out)
    assert "a core test changed the environment: ['HARMONY_EXT_PROBE']" in out
