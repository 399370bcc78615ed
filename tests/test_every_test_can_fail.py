"""Every collected test function can fail: ``scripts/check_test_asserts.py`` finds an
``assert``, ``pytest.raises`` or ``pytest.fail`` reachable from each (statically, so the
engine tiers' tests are read here too, without their engines); and the check itself can fail."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _checker() -> ModuleType:
    name = "check_test_asserts"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / "check_test_asserts.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_no_test_in_the_tree_lacks_an_assertion() -> None:
    checker = _checker().load(ROOT)
    tests = list(checker.tests())
    assert len(tests) > 400  # every tier's tests were read, not an empty folder
    assert {str(m.path.parent) for m, _ in tests} >= {"tests", "tests/vllm", "tests/e2e_vllm",
                                                     "tests/sglang", "tests/gpu", "tests/shell"}
    assert checker.offenders() == []


PROBE = '''
import pytest
from tests.helpers import checks, records
import tests.helpers as helpers


def _local_check(x):
    assert x


def _local_record(x):
    print(x)


def _indirect(x):
    _local_check(x)


def test_bare():
    value = 1 + 1


def test_records_only():
    _local_record(1)


def test_imported_recorder():
    records(1)


def test_module_attribute_recorder():
    helpers.records(1)


async def test_async_bare():
    pass


def test_asserts():
    assert 1 + 1 == 2


def test_raises():
    with pytest.raises(ValueError):
        int("x")


def test_fails():
    pytest.fail("always")


def test_local_helper():
    _indirect(1)


def test_imported_helper():
    checks(1)


def test_module_attribute_helper():
    helpers.checks(1)


def test_nested():
    def inner():
        assert True
    inner()


class TestGroup:
    def _check(self):
        assert True

    def test_method_bare(self):
        pass

    def test_method_helper(self):
        self._check()


class Helper:
    def test_not_collected(self):
        pass
'''

SUPPORT = ("tests.helpers", "def checks(x):\n    assert x\n\n\ndef records(x):\n    print(x)\n")


def test_the_check_lists_exactly_the_tests_without_an_assertion() -> None:
    got = _checker().check_source(PROBE, "tests.test_probe", [SUPPORT])
    assert got == sorted(f"tests/test_probe.py::{name}" for name in (
        "test_bare", "test_records_only", "test_imported_recorder",
        "test_module_attribute_recorder", "test_async_bare", "TestGroup::test_method_bare"))


def test_a_bare_module_name_resolves_beside_its_importer() -> None:
    """tests/sglang imports its helpers by bare name (``from sglang_cases import ...``)."""
    source = "from cases import check, note\n\ndef test_a():\n    check()\n\n" \
             "def test_b():\n    note()\n"
    support = ("tests.sub.cases", "def check():\n    assert 1\n\ndef note():\n    pass\n")
    got = _checker().check_source(source, "tests.sub.test_x", [support])
    assert got == ["tests/sub/test_x.py::test_b"]


def test_the_command_reports_the_clean_tree_and_exits_zero(capsys) -> None:
    module = _checker()
    assert module.main(["check_test_asserts", str(ROOT)]) == 0
    assert "0 of " in capsys.readouterr().err
