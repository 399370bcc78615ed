"""The canitoolcall counts of a test tier, for the summary scripts/test.sh prints at its end.

    python scripts/conformance_counts.py REPORT.xml

REPORT.xml is the tier's ``pytest --junitxml`` report. Every tier replays canitoolcall's gpt-oss
fixtures through harmony-ext (``test_the_fixture_conforms[<fixture id>]`` in
``tests/test_canitoolcall.py``, ``tests/vllm/test_canitoolcall_vllm.py`` and
``tests/sglang/test_canitoolcall_sglang.py``); this prints, on one line, how many of them
conform, how many are the strict expected failures the contract decides otherwise, and how many
failed or were skipped when any did, e.g. ``canitoolcall: 49 of 51 conform, 2 xfail
(contract)``. It prints nothing for a report without them (the wheel and benchmark steps).
Standard library only: the host's Python runs it in either lane of scripts/test.sh.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

TEST = "test_the_fixture_conforms["
"""The name (up to its parameter) of the test each fixture is replayed by, in every tier."""


def counts(root: ET.Element) -> dict[str, int]:
    """conform, xfail, failed, skipped: the conformance tests of a JUnit report by outcome."""
    found = {"conform": 0, "xfail": 0, "failed": 0, "skipped": 0}
    for case in root.iter("testcase"):
        if not case.get("name", "").startswith(TEST):
            continue
        outcomes = {child.tag: child for child in case}
        if "failure" in outcomes or "error" in outcomes:
            found["failed"] += 1
        elif "skipped" in outcomes:
            xfail = outcomes["skipped"].get("type") == "pytest.xfail"
            found["xfail" if xfail else "skipped"] += 1
        else:
            found["conform"] += 1
    return found


def line(found: dict[str, int]) -> str:
    """The summary's words for ``found`` ("" when the report held no conformance test)."""
    total = sum(found.values())
    if not total:
        return ""
    text = f"canitoolcall: {found['conform']} of {total} conform, {found['xfail']} xfail (contract)"
    for outcome in ("failed", "skipped"):
        if found[outcome]:
            text += f", {found[outcome]} {outcome}"
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
