"""The project's pytest settings make every xfail strict: an xfail whose test passes fails the
run (``XPASS(strict)``), so a bug that was fixed, or a test that stopped testing, shows; and the
same probe under pytest's own default (``xfail_strict`` false) passes, the control."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = '''
import pytest


@pytest.mark.xfail(reason="no strict= given: the project's setting decides")
def test_marked_but_passes():
    assert 1 + 1 == 2


@pytest.mark.xfail(reason="fails as marked")
def test_marked_and_fails():
    assert 1 + 1 == 3
'''


def run_probe(folder: Path, *options: str) -> str:
    (folder / "test_probe.py").write_text(PROBE)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfEX",
         "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(folder), *options,
         str(folder / "test_probe.py")],
        cwd=folder, env={**os.environ, "COLUMNS": "400"}, capture_output=True, text=True,
        timeout=300)
    return done.stdout


def test_an_xfail_that_passes_fails_the_run(tmp_path: Path) -> None:
    out = run_probe(tmp_path)
    assert "1 failed, 1 xfailed" in out, out[-2000:]
    assert "[XPASS(strict)] no strict= given" in out, out[-2000:]


def test_without_the_setting_it_would_pass_unseen(tmp_path: Path) -> None:
    out = run_probe(tmp_path, "-o", "xfail_strict=false")
    assert "1 xfailed, 1 xpassed" in out, out[-2000:]
