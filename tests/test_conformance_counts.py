"""scripts/conformance_counts.py: the canitoolcall counts of a tier's JUnit report, as
scripts/test.sh's summary prints them; nothing for a report without conformance tests."""

from __future__ import annotations

import importlib.util
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _counter() -> ModuleType:
    name = "conformance_counts"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def case(name: str, outcome: str = "") -> str:
    return f'<testcase classname="tests.test_canitoolcall" name="{name}">{outcome}</testcase>'


XFAIL = '<skipped type="pytest.xfail" message="contract section 2: ..."/>'
REPORT = "<testsuites><testsuite>{}</testsuite></testsuites>"


def test_a_tier_s_conformance_tests_are_counted_by_outcome() -> None:
    counter = _counter()
    report = REPORT.format("".join([
        case("test_the_fixture_conforms[gpt-oss/a]"),
        case("test_the_fixture_conforms[gpt-oss/b]"),
        case("test_the_fixture_conforms[gpt-oss/c]", XFAIL),
        case("test_the_fixture_conforms[gpt-oss/d]", '<failure message="no"/>'),
        case("test_the_fixture_conforms[gpt-oss/e]", '<skipped message="why"/>'),
        case("test_the_pinned_release_and_its_gpt_oss_fixtures"),  # not a fixture's test
        case("test_something_else", XFAIL),
    ]))
    found = counter.counts(ET.fromstring(report))
    assert found == {"conform": 2, "xfail": 1, "failed": 1, "skipped": 1}
    assert counter.line(found) == "canitoolcall: 2 of 5 conform, 1 xfail (contract), 1 failed, " \
                                  "1 skipped"
    clean = {"conform": 49, "xfail": 2, "failed": 0, "skipped": 0}
    assert counter.line(clean) == "canitoolcall: 49 of 51 conform, 2 xfail (contract)"


def test_a_report_without_them_says_nothing() -> None:
    counter = _counter()
    found = counter.counts(ET.fromstring(REPORT.format(case("test_demo"))))
    assert counter.line(found) == ""
