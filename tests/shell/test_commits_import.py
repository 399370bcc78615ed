"""scripts/check_commits_import.py, which CI runs so that the history can be bisected, finds a
commit whose packages do not import, and passes a history whose commits all do."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_commits_import.py"
IMPORTED = "import harmony_plugins, harmony_plugins.cli, vllm_ext, sglang_ext"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def package(init: str) -> dict[str, str]:
    """A stand-in of the three packages, whose core's ``__init__`` is ``init``."""
    return {"harmony_plugins/__init__.py": init, "harmony_plugins/cli.py": "",
            "vllm_ext/__init__.py": "", "sglang_ext/__init__.py": ""}


def check(repo: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), "--repo", str(repo)],
                          capture_output=True, text=True, timeout=600)


def test_a_commit_that_does_not_import_is_named(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    commit(tmp_path, {"README": "before the package\n"}, "no package yet")
    commit(tmp_path, package("from . import cli\n"), "the package")
    broken = commit(tmp_path, package("from . import _gone\n"), "a module deleted too soon")
    commit(tmp_path, package("from . import cli\n"), "its replacement")
    proc = check(tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    first, last = proc.stdout.splitlines()
    assert first.startswith(f"commit {broken[:12]} does not import: ImportError: cannot "
                            "import name '_gone' from"), proc.stdout
    assert last == "1 of the last 4 commits do not import"


def test_a_history_that_imports_passes_and_the_copy_checked_is_the_commits(tmp_path: Path
                                                                            ) -> None:
    """The control; and what is imported is the commit's own copy, not an installed one: a
    commit whose package says where it is says the temporary folder."""
    git(tmp_path, "init", "-q")
    here = "import os\nassert 'harmony-ext-commit-' in os.path.abspath(__file__)\n"
    commit(tmp_path, package(here), "the package")
    proc = check(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "each of the last 1 commits imports"


def test_the_import_line_is_the_scripts():
    assert f'IMPORT = "{IMPORTED}"' in SCRIPT.read_text()
