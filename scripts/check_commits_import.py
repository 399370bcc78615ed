"""Every recent commit leaves the package importable, so that the history can be bisected.

    python scripts/check_commits_import.py [--last N] [--repo DIR]

For each of the last N commits (default 100) of the repository's HEAD, the three packages are
taken out of the commit (``git archive``) into a temporary folder and imported there by this
Python in a fresh process (``harmony_plugins``, and the two adapters' modules that import no
engine). Prints one line per commit that does not import and exits 1 if any does not; prints one
line saying how many it checked otherwise. A shallow clone is checked as far as it reaches.
(That each commit also passes the core tier is the pre-commit hook's habit, CONTRIBUTING.md:
too slow to run per commit in CI.)
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PACKAGES = ("harmony_plugins", "vllm_ext", "sglang_ext")
LANDED_BROKEN = frozenset({
    "57fe3627aaffad7af09873696e8abf47a1e4d036", "e24e05a0520d9637a75a6337b7930ac627ad079f",
    "c2da3f5ec193108042e8744e91296778c7ba483f"})
"""Commits that landed before this check existed and do not import (``harmony_plugins._forged``
deleted before its replacement): landed history is not rewritten, so they are known, not
checked."""
IMPORT = "import harmony_plugins, harmony_plugins.cli, vllm_ext, sglang_ext"


def commits(repo: Path, last: int) -> list[str]:
    out = subprocess.run(["git", "-C", str(repo), "rev-list", f"--max-count={last}", "HEAD"],
                         capture_output=True, text=True, check=True).stdout
    return out.split()


def imports(repo: Path, commit: str) -> str | None:
    """None when the commit's packages import; else the last line of what went wrong."""
    present = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "--name-only", commit, *PACKAGES],
        capture_output=True, text=True, check=True).stdout.split()
    if "harmony_plugins" not in present:
        return None  # before the package existed: nothing to bisect
    archive = subprocess.run(["git", "-C", str(repo), "archive", commit, *present],
                             capture_output=True, check=True).stdout
    with tempfile.TemporaryDirectory(prefix="harmony-ext-commit-") as folder:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(folder, filter="data")
        # -E: no PYTHONPATH; the folder (the current one) comes first on the path, before
        # any installed copy of the packages.
        proc = subprocess.run([sys.executable, "-E", "-c", IMPORT], cwd=folder,
                              capture_output=True, text=True, timeout=120)
    if proc.returncode == 0:
        return None
    lines = (proc.stderr or proc.stdout).strip().splitlines()
    return lines[-1] if lines else f"exit status {proc.returncode}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--last", type=int, default=100, help="how many commits (default 100)")
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args(argv)
    checked = commits(args.repo, args.last)
    broken = 0
    for commit in checked:
        if commit in LANDED_BROKEN:
            continue
        problem = imports(args.repo, commit)
        if problem is not None:
            broken += 1
            print(f"commit {commit[:12]} does not import: {problem}")
    if broken:
        print(f"{broken} of the last {len(checked)} commits do not import")
        return 1
    print(f"each of the last {len(checked)} commits imports")
    return 0


if __name__ == "__main__":
    sys.exit(main())
