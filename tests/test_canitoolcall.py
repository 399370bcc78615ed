"""canitoolcall's gpt-oss fixtures through the core (``harmony_plugins.parse_ids``, and a
``Turn`` fed each chunking of canitoolcall's own), judged by canitoolcall's ``assert_conforms``
(:mod:`harmony_ext_testing.conformance`). The vLLM and SGLang tiers replay the same fixtures
through their engine's parser path (``tests/vllm/test_canitoolcall_vllm.py``,
``tests/sglang/test_canitoolcall_sglang.py``).

A fixture the contract decides otherwise is a strict expected failure whose reason names the
section (it shows when either side changes), and its parse is held to the contract's answer.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harmony_ext_testing import conformance
from harmony_plugins import parse_ids

ENGINE = "core"
FIXTURES = conformance.fixtures()
REPLAY = conformance.CoreReplay()


def test_the_pinned_release_and_its_gpt_oss_fixtures() -> None:
    assert conformance.check_pinned() == conformance.PINNED
    ids = [fixture.id for fixture in FIXTURES]
    assert len(ids) == len(set(ids)) == 51  # canitoolcall 0.1.1 ships 51 for gpt-oss
    assert set(conformance.DECIDED) <= set(ids)  # no decision about a fixture gone
    assert all(fixture.output_token_ids for fixture in FIXTURES)  # replayed from its ids


def test_every_venv_installs_the_pinned_release() -> None:
    root = Path(__file__).resolve().parents[1]
    pin = f"canitoolcall=={conformance.PINNED}"
    for place in ("pyproject.toml", "scripts/setup_vllm_env.sh", "scripts/setup_sglang_env.sh"):
        named = re.findall(r"canitoolcall[=<>!~]=?[\w.]*", (root / place).read_text())
        assert named == [pin], place


@pytest.mark.parametrize("fixture", conformance.cases(ENGINE))
def test_the_fixture_conforms(fixture) -> None:
    assert conformance.problems(fixture, *conformance.observe(REPLAY, fixture)) == []


@pytest.mark.parametrize("fixture_id", conformance.decided_ids(ENGINE))
def test_a_fixture_the_contract_decides_gets_the_contract_s_answer(fixture_id: str) -> None:
    whole, streams, want = conformance.against_contract(REPLAY, fixture_id)
    assert whole == want
    assert {strategy: want for strategy in streams} == streams
    fixture = next(f for f in FIXTURES if f.id == fixture_id)
    # Section 5: a call cut by max_tokens finishes with "length", whatever else it holds.
    message = parse_ids(list(fixture.output_token_ids), conformance.tools_of(fixture),
                        conformance.finish_of(fixture))
    assert message["finish_reason"] == ("length" if fixture.truncated else "tool_calls")
