"""The release's metadata agrees with itself: one version, named by the changelog."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import harmony_plugins

REPO = Path(__file__).resolve().parents[1]


def test_the_version_is_written_once_and_the_changelog_names_it():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "harmony_plugins.__version__"}
    first = re.search(r"^## (\S+)", (REPO / "CHANGELOG.md").read_text(), re.M)
    assert first is not None and first.group(1) == harmony_plugins.__version__


def test_the_licence_is_the_apache_2_text():
    text = (REPO / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License\n                           Version 2.0")
    assert "END OF TERMS AND CONDITIONS" in text and len(text.splitlines()) == 202
