"""scripts/venv.sh's checks before an engine venv is built: the disk check (how much the venvs
still to build need, and the refusal when they would not fit) and the platform check (one line
naming what is missing). Run in bash with a `df` and a `uname` of the test's own on the PATH;
the disk figures are the test's own too (VENV_GIB set after sourcing), so the expected lines are
written by hand. That the real figures are the venvs' real sizes is checked in the engine tiers
(tests/vllm/test_installed_set.py, tests/sglang/test_installed_set.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def bash(tmp_path: Path, script: str, free_gib: int = 0, machine: str = "x86_64"
         ) -> subprocess.CompletedProcess[str]:
    """Run ``script`` after sourcing scripts/venv.sh, with `df` reporting ``free_gib`` GiB free
    and `uname -sm` saying Linux ``machine``."""
    fake = tmp_path / "fake-bin"
    fake.mkdir(exist_ok=True)
    (fake / "df").write_text(
        "#!/bin/sh\necho 'Filesystem 1024-blocks Used Available Capacity Mounted on'\n"
        f"echo '/dev/x 999999999 0 {free_gib * 1048576} 0% /'\n")
    (fake / "uname").write_text(f"#!/bin/sh\necho 'Linux {machine}'\n")
    for tool in ("df", "uname"):
        (fake / tool).chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["bash", "-c", f"source scripts/venv.sh\n{script}"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def built(folder: Path) -> None:
    (folder / "bin").mkdir(parents=True)
    (folder / "bin" / "python").write_text("")
    (folder / "bin" / "python").chmod(0o755)


def room(tmp_path: Path, free_gib: int) -> subprocess.CompletedProcess[str]:
    return bash(tmp_path, f"VENV_GIB=(a:3 b:5)\nvenv_room {tmp_path}/a {tmp_path}/b", free_gib)


NEED_8 = "  {} GiB free on this disk; the venvs still to build need 8 GiB (and pip 2 GiB more " \
         "while it installs)\n"


def test_the_venvs_to_build_fit_with_pip_s_room_beside_them(tmp_path: Path) -> None:
    out = room(tmp_path, 10)
    assert (out.returncode, out.stdout) == (0, NEED_8.format(10))


def test_one_gib_short_it_refuses_and_says_how_much_to_free(tmp_path: Path) -> None:
    out = room(tmp_path, 9)
    assert (out.returncode, out.stdout) == (1, NEED_8.format(9) + (
        "  not enough room: free at least 1 GiB more (old clones, ~/.cache/pip) and run again\n"))


def test_a_venv_already_built_needs_no_room(tmp_path: Path) -> None:
    built(tmp_path / "a")
    assert room(tmp_path, 6).returncode == 1  # b (5) and pip (2) do not fit in 6
    out = room(tmp_path, 7)
    assert (out.returncode, out.stdout.split(";")[1]) == (
        0, " the venvs still to build need 5 GiB (and pip 2 GiB more while it installs)\n")
    built(tmp_path / "b")
    assert room(tmp_path, 0).returncode == 0


def test_a_venv_of_another_name_counts_as_the_largest(tmp_path: Path) -> None:
    out = bash(tmp_path, f"VENV_GIB=(a:3 b:5)\nvenv_room {tmp_path}/mine", 1)
    assert "need 5 GiB" in out.stdout and out.returncode == 1


def test_the_figures_are_read_per_venv_name() -> None:
    out = subprocess.run(["bash", "-c", "source scripts/venv.sh\n"
                          "for v in .venv-vllm .venv-sglang-0.5.22 .venv-nothing; do\n"
                          "  venv_gib $v || echo none; done"], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    figures = out.stdout.split()
    assert [f.isdigit() for f in figures] == [True, True, False] and figures[2] == "none"


def test_test_sh_builds_no_engine_venv_when_the_check_fails() -> None:
    """scripts/test.sh runs the check first and starts each engine venv's set-up (and so its
    tier) only where it passed."""
    text = (ROOT / "scripts" / "test.sh").read_text()
    setups = re.findall(r"^.*scripts/setup_(?:vllm|vllm_python|sglang)_env\.sh.*$", text,
                        re.MULTILINE)
    assert len(setups) == 5
    assert all("((room)) && run " in line for line in setups), setups
    assert re.search(r"^run .* engine_room && room=1$", text, re.MULTILINE)
    assert text.index("engine_room && room=1") < text.index("sglang_lane \"$@\" >")


def test_the_platform_check_passes_here_and_names_what_is_missing(tmp_path: Path) -> None:
    ok = bash(tmp_path, f'venv_platform "{sys.executable}" setup_x; echo after')
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "after\n", "")
    arm = bash(tmp_path, f'venv_platform "{sys.executable}" setup_x; echo after',
               machine="aarch64")
    assert (arm.returncode, arm.stdout) == (2, "")
    assert arm.stderr == ("setup_x: needs x86-64 Linux, the platform its packages are taken from "
                          "PyPI for and tested on; this is Linux aarch64\n")
    missing = bash(tmp_path, "venv_platform /nonexistent/python3.11 setup_x; echo after")
    assert (missing.returncode, missing.stdout) == (2, "")
    assert missing.stderr == ("setup_x: needs Python 3.11 ('/nonexistent/python3.11': not found);"
                              " name one with PYTHON=/path/to/python3.11\n")
