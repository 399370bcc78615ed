"""Hold a test tier's skips to its allow-list (scripts/skips.toml).

    python scripts/check_skips.py TIER REPORT.xml [--allow FILE]

REPORT.xml is the tier's ``pytest --junitxml`` report. Prints one summary line,
``TIER: N passed, N skipped (allowed), N xfailed, N failed, N errors``, then each problem:

- a skip that no entry of the tier allows (reason and test id);
- an entry with a ``count`` that matched another number of skips;
- a skip that hides an import failure (``pytest.importorskip``, an ``ImportError`` or a
  missing module in its reason), allowed or not: a broken environment must fail its tier;
- a report with no test in it.

Exit status 1 on any problem, 0 otherwise; scripts/test.sh fails the tier on 1 and prints the
summary's counts in its tier table.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

ALLOW = Path(__file__).resolve().parent / "skips.toml"
IMPORT_FAILURE = re.compile(r"could not import|ImportError|ModuleNotFoundError|No module named"
                            r"|not importable|is not installed|needs the openai client"
                            r"|comes with vLLM")
"""pytest.importorskip's message ("could not import 'x': No module named 'x'") and its kin,
and the reasons the suite's own ``importorskip(..., reason=...)`` calls give."""


@dataclass
class Skip:
    test: str
    reason: str


@dataclass
class Report:
    passed: int = 0
    skips: list[Skip] = field(default_factory=list)
    xfailed: int = 0
    failed: int = 0
    errors: int = 0


def _test_id(case: ET.Element) -> str:
    classname, name = case.get("classname", ""), case.get("name", "")
    return f"{classname}::{name}" if classname else name


def read_report(path: Path) -> Report:
    """Counts and skips of a JUnit XML report file, as pytest writes it."""
    return report_from(ET.parse(path).getroot())


def report_from(root: ET.Element) -> Report:
    report = Report()
    for case in root.iter("testcase"):
        outcomes = {child.tag: child for child in case}
        if "failure" in outcomes:
            report.failed += 1
        elif "error" in outcomes:
            report.errors += 1
        elif "skipped" in outcomes:
            skipped = outcomes["skipped"]
            if skipped.get("type") == "pytest.xfail":
                report.xfailed += 1
            else:
                reason = skipped.get("message") or ""
                if reason == "collection skipped":  # a module skipped whole: reason in text
                    reason = skipped.text or reason
                report.skips.append(Skip(_test_id(case), reason))
        else:
            report.passed += 1
    return report


def load_allow(path: Path, tier: str) -> list[dict[str, object]]:
    return allow_entries(tomllib.loads(path.read_text()), tier, str(path))


def allow_entries(data: dict[str, list[dict[str, object]]], tier: str,
                  path: str = "skips.toml") -> list[dict[str, object]]:
    entries = data.get(tier, [])
    for entry in entries:
        if "reason" not in entry or "why" not in entry:
            raise SystemExit(f"{path}: every [[{tier}]] entry needs `reason` and `why`")
        if "count" not in entry and "test" not in entry:
            raise SystemExit(f"{path}: [[{tier}]] {entry['reason']!r} needs `count` or `test`")
    return entries


def problems(report: Report, entries: list[dict[str, object]]) -> list[str]:
    found: list[str] = []
    matched = [0] * len(entries)
    for skip in report.skips:
        if IMPORT_FAILURE.search(skip.reason):
            found.append(f"an import failure turned into a skip: {skip.test}: {skip.reason}")
            continue
        hits = [i for i, entry in enumerate(entries)
                if re.search(str(entry["reason"]), skip.reason)
                and re.search(str(entry.get("test", "")), skip.test)]
        if not hits:
            found.append(f"unexpected skip: {skip.test}: {skip.reason}")
        for i in hits[:1]:
            matched[i] += 1
    for entry, n in zip(entries, matched, strict=True):
        if "count" in entry and n != entry["count"]:
            found.append(f"expected {entry['count']} skip(s) matching {entry['reason']!r}, "
                         f"got {n}")
    if not (report.passed or report.skips or report.failed or report.errors or report.xfailed):
        found.append("the report holds no test")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tier")
    parser.add_argument("report", type=Path)
    parser.add_argument("--allow", type=Path, default=ALLOW)
    args = parser.parse_args(argv)
    entries = load_allow(args.allow, args.tier)
    try:
        report = read_report(args.report)
    except (OSError, ET.ParseError) as e:
        print(f"{args.tier}: no report ({e})")
        return 1
    found = problems(report, entries)
    allowed = len(report.skips) - sum(p.startswith(("unexpected", "an import")) for p in found)
    print(f"{args.tier}: {report.passed} passed, {len(report.skips)} skipped ({allowed} "
          f"allowed), {report.xfailed} xfailed, {report.failed} failed, {report.errors} errors")
    for problem in found:
        print(f"{args.tier}: {problem}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
