"""scripts/fuzz_counts.py: how many fuzzed outputs a tier's JUnit report says its fuzz tests tried
and how many failed, as scripts/test.sh's summary prints them; nothing for a report without
them (tests/shell/test_fuzz_counts_report.py: what a fuzz test records, through pytest's
report, to the script)."""

from __future__ import annotations

import importlib.util
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _counter() -> ModuleType:
    name = "fuzz_counts"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def case(module: str, name: str, outcome: str = "") -> str:
    return f'<testcase classname="{module}" name="{name}">{outcome}</testcase>'


def report(properties: dict[str, list[int]], cases: list[str]) -> ET.Element:
    props = "".join(f'<property name="{name}" value="{value}"/>'
                    for name, values in properties.items() for value in values)
    return ET.fromstring(f"<testsuites><testsuite><properties>{props}</properties>"
                         f"{''.join(cases)}</testsuite></testsuites>")


CORE = "tests.test_fuzzed_outputs"
VLLM = "tests.e2e_vllm.test_fuzzed_outputs_server"


def test_a_tier_s_fuzz_counts_are_summed() -> None:
    counter = _counter()
    found = counter.counts(report(
        {"fuzzed_outputs": [200, 0, 50], "fuzz_failures": [0, 3, 0]},
        [case(VLLM, "test_fuzzed_outputs_on_chat_and_responses"),
         case(VLLM, "test_fuzzed_outputs_on_messages", '<failure message="no"/>'),
         case(VLLM, "test_admitted_outputs_with_a_response_format"),
         case("tests.e2e_vllm.test_responses", "test_other")]))
    assert found == {"tried": 250, "failed": 3, "tests": 3, "failed tests": 1}
    assert counter.line(found) == ("fuzzer: 250 outputs tried, 3 failed (1 of 3 fuzz tests "
                                   "failed)")
    clean = counter.counts(report({"fuzzed_outputs": [300], "fuzz_failures": [0]},
                                  [case(CORE, "test_fuzzed_outputs_hold_every_invariant")]))
    assert counter.line(clean) == "fuzzer: 300 outputs tried, none failed"


def test_a_fuzz_test_that_broke_off_before_counting_is_said() -> None:
    counter = _counter()
    found = counter.counts(report({}, [case(CORE, "test_fuzzed_outputs_hold_every_invariant",
                                            '<error message="server"/>')]))
    assert counter.line(found) == "fuzzer: 0 outputs tried, none failed (1 of 1 fuzz tests failed)"


def test_a_report_without_them_says_nothing() -> None:
    counter = _counter()
    assert counter.line(counter.counts(report({}, [case("tests.test_demo", "test_demo")]))) == ""


@pytest.mark.parametrize("argv, status", [([], 2), (["a", "b"], 2), (["/nonexistent.xml"], 0)])
def test_its_command_line(argv: list[str], status: int) -> None:
    assert _counter().main(argv) == status
