"""scripts/check_skips.py holds each tier's skips to scripts/skips.toml, and can fail: an
unexpected skip, a count off, an import failure turned into a skip (even one allowed) and an
empty report each fail; and the allow-list itself is well formed, every entry saying why."""

from __future__ import annotations

import importlib.util
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
TIERS = {"core", "wheel", "vllm-0_32", "vllm-0_33", "vllm-0_34", "sglang-0_5_23", "sglang-0_5_22",
         "bench"}


def _checker() -> ModuleType:
    name = "check_skips"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / "check_skips.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def junit(*cases: str) -> ET.Element:
    return ET.fromstring("<testsuites><testsuite>" + "".join(cases) + "</testsuite></testsuites>")


PASSED = '<testcase classname="tests.test_a" name="test_ok" time="0.1"/>'
RUST_SKIP = ('<testcase classname="tests.e2e_vllm.test_rust_frontend" '
             'name="test_the_rust_front_end_refuses_harmony_ext_and_the_warning_says_so">'
             '<skipped type="pytest.skip" message="no vllm-rs in /x: this vLLM has no Rust front '
             'end">/x/test_rust_frontend.py:36: no vllm-rs</skipped></testcase>')
IMPORT_SKIP = ('<testcase classname="" name="tests.test_compat"><skipped type="pytest.skip" '
               'message="could not import \'openai_harmony\': No module named \'openai_harmony\'"'
               '/></testcase>')
XFAIL = ('<testcase classname="tests.e2e_vllm.test_harmony_ext_server" name="test_truncated">'
         '<skipped type="pytest.xfail" message="vLLM 0.32 reports tool_calls"/></testcase>')
FAILED = ('<testcase classname="tests.test_a" name="test_bad"><failure message="x">x</failure>'
          '</testcase>')


def problems(tier: str, *cases: str) -> list[str]:
    module = _checker()
    entries = module.allow_entries(tomllib.loads((ROOT / "scripts" / "skips.toml").read_text()),
                                   tier)
    return module.problems(module.report_from(junit(*cases)), entries)


def test_the_report_is_counted() -> None:
    report = _checker().report_from(junit(PASSED, PASSED, RUST_SKIP, XFAIL, FAILED))
    assert (report.passed, len(report.skips), report.xfailed, report.failed) == (2, 1, 1, 1)
    assert report.skips[0].test.startswith("tests.e2e_vllm.test_rust_frontend::test_the_rust")


def test_the_rust_front_end_may_skip_on_032_only() -> None:
    assert problems("vllm-0_32", PASSED, RUST_SKIP) == []
    assert problems("vllm-0_33", PASSED, RUST_SKIP) == [
        "unexpected skip: tests.e2e_vllm.test_rust_frontend::test_the_rust_front_end_refuses_"
        "harmony_ext_and_the_warning_says_so: no vllm-rs in /x: this vLLM has no Rust front end"]


def test_an_allowed_skip_with_a_count_must_happen_that_often() -> None:
    assert problems("vllm-0_32", PASSED) == [
        "expected 1 skip(s) matching 'this vLLM has no Rust front end', got 0"]


def test_an_import_failure_turned_into_a_skip_always_fails() -> None:
    for tier in TIERS:
        got = problems(tier, PASSED, IMPORT_SKIP)
        assert [p for p in got if p.startswith("an import failure turned into a skip")] == [
            "an import failure turned into a skip: tests.test_compat: could not import "
            "'openai_harmony': No module named 'openai_harmony'"], tier


MODULE_SKIP = ('<testcase classname="" name="tests.gpu.test_gpu_sglang"><skipped '
               'message="collection skipped">(\'/x/tests/gpu/test_gpu_sglang.py\', 79, '
               '\'Skipped: no CUDA GPU: nvidia-smi is absent\')</skipped></testcase>')
OWN_IMPORT_SKIP = ('<testcase classname="" name="tests.e2e_vllm.test_metrics"><skipped '
                   'message="collection skipped">(\'/x/test_metrics.py\', 15, \'Skipped: needs '
                   'the openai client: use .venv-vllm/bin/pytest\')</skipped></testcase>')


def test_a_module_skipped_whole_is_named_with_its_reason() -> None:
    assert problems("vllm-0_33", PASSED, MODULE_SKIP) == [
        "unexpected skip: tests.gpu.test_gpu_sglang: ('/x/tests/gpu/test_gpu_sglang.py', 79, "
        "'Skipped: no CUDA GPU: nvidia-smi is absent')"]
    assert problems("vllm-0_33", PASSED, OWN_IMPORT_SKIP)[0].startswith(
        "an import failure turned into a skip: tests.e2e_vllm.test_metrics")


def test_an_empty_report_fails() -> None:
    assert problems("core") == ["the report holds no test"]


def test_xfails_are_counted_not_judged() -> None:
    assert problems("core", PASSED, XFAIL) == []


def test_every_entry_names_its_reason_and_why() -> None:
    data = tomllib.loads((ROOT / "scripts" / "skips.toml").read_text())
    assert set(data) <= TIERS
    for tier, entries in data.items():
        assert _checker().allow_entries(data, tier) == entries
        assert all(len(str(entry["why"])) > 20 for entry in entries)


def test_test_sh_checks_every_pytest_step_and_runs_no_gpu_test() -> None:
    script = (ROOT / "scripts" / "test.sh").read_text()
    pytest_steps = script.count("-m pytest")
    assert pytest_steps == 8 and script.count("checked ") >= pytest_steps
    for tier in TIERS:
        assert f"checked {tier} " in script
    commands = [line.split("#")[0] for line in script.splitlines()]
    assert [c for c in commands if "tests/gpu" in c.replace("--ignore=tests/gpu", "")] == []
