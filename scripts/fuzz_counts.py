"""How many fuzzed outputs a test tier tried, for the summary scripts/test.sh prints at its end.

    python scripts/fuzz_counts.py REPORT.xml

REPORT.xml is the tier's ``pytest --junitxml`` report. Each fuzz test (``test_fuzzed_outputs*.py``
in every tier) records on the report's test suite how many outputs it tried (the property
``fuzzed_outputs``) and how many of them broke an invariant (``fuzz_failures``), through
``harmony_ext_testing.fuzzed_outputs.record``; this prints their sums on one line, e.g. ``fuzzer:
300 outputs tried, none failed``, and how many fuzz tests failed when any did (a test that broke
off before recording its counts included). It prints nothing for a report without them (the
wheel and benchmark steps). Standard library only: the host's Python runs it in either lane of
scripts/test.sh.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

TRIED, FAILED = "fuzzed_outputs", "fuzz_failures"
"""The properties each fuzz test records."""
MODULE = "test_fuzzed_outputs"
"""What the fuzz tests' modules are named after, in every tier."""


def counts(root: ET.Element) -> dict[str, int]:
    """tried, failed (outputs), tests, failed tests: a JUnit report's fuzz counts."""
    found = {"tried": 0, "failed": 0, "tests": 0, "failed tests": 0}
    for prop in root.iter("property"):
        key = {TRIED: "tried", FAILED: "failed"}.get(prop.get("name", ""))
        if key is not None:
            found[key] += int(prop.get("value", "0"))
    for case in root.iter("testcase"):
        if MODULE not in case.get("classname", ""):
            continue
        found["tests"] += 1
        if any(child.tag in ("failure", "error") for child in case):
            found["failed tests"] += 1
    return found


def line(found: dict[str, int]) -> str:
    """The summary's words for ``found`` ("" when the report held no fuzz test)."""
    if not found["tests"] and not found["tried"]:
        return ""
    failed = found["failed"]
    text = f"fuzzer: {found['tried']} outputs tried, {failed or 'none'} failed"
    if found["failed tests"]:
        text += f" ({found['failed tests']} of {found['tests']} fuzz tests failed)"
    return text


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        root = ET.parse(Path(args[0])).getroot()
    except (OSError, ET.ParseError):
        return 0  # check_skips.py says the report is missing
    print(line(counts(root)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
