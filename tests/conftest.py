"""Fixtures shared by the core's tests, and the rule they keep: no temporary folder, no change
to the environment (the core does no I/O, so its tests need none).

The rule covers the core's test modules (``tests/test_*.py``, the benchmark smoke test aside,
which runs the benchmarks as commands); tests of the I/O edges (the command line with files,
the vocabulary files written for others) live in ``tests/shell``, the engine tiers in their
folders. A core test that asks for a temporary folder, or leaves the environment changed when
its body has run, fails and says why.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir

from harmony_ext_testing.hf_tokenizer import build_hf_tokenizer

# Hypothesis would write ``.hypothesis/`` into the working directory, the checkout (tests never
# write there): it keeps no example database (each run draws its examples afresh), and its
# other caches go to the system's temporary folder.
settings.register_profile("harmony-ext", database=None)
settings.load_profile("harmony-ext")
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "harmony-ext-hypothesis")

TESTS = Path(__file__).resolve().parent
EXEMPT = {"test_benchmarks_smoke.py"}  # runs the benchmark commands, in a step of its own
TEMPORARY = {"tmp_path", "tmp_path_factory", "tmpdir", "tmpdir_factory"}
_ENVIRON = pytest.StashKey[dict[str, str]]()


def is_core_test(item: pytest.Item) -> bool:
    path = Path(str(item.fspath)).resolve()
    return path.parent == TESTS and path.name.startswith("test_") and path.name not in EXEMPT


def _environ() -> dict[str, str]:
    """The environment, less what pytest itself sets for each phase."""
    return {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Any:
    if is_core_test(item):
        asked = sorted(TEMPORARY & set(getattr(item, "fixturenames", ())))
        if asked:
            pytest.fail(f"a core test needs no temporary folder (asks for {asked}); tests of "
                        "the I/O edges go in tests/shell", pytrace=False)
        item.stash[_ENVIRON] = _environ()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    result = yield
    before = item.stash.get(_ENVIRON, None)
    now = _environ()
    if before is not None and now != before:
        changed = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
        raise AssertionError(f"a core test changed the environment: {changed}")
    return result


@pytest.fixture(scope="session")
def hf_tokenizer() -> Any:
    """A real o200k_harmony Hugging Face tokenizer (``tokenizers.Tokenizer``), built offline
    in memory once."""
    return build_hf_tokenizer()
