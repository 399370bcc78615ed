"""canitoolcall's gpt-oss fixtures through SGLang with harmony-ext selected: each chunking of
canitoolcall's own decoded by SGLang's ``DetokenizerManager`` (its incremental decoding and
stop trim), then SGLang's real ``OpenAIServingChat`` over a real ``TokenizerManager``, whose
``ReasoningParser`` and ``FunctionCallParser`` run as its server chains them, judged by
canitoolcall's ``assert_conforms`` (:class:`harmony_ext_testing.conformance.SglangReplay`).
Runs in both SGLang tiers.

A fixture the contract decides otherwise is a strict expected failure whose reason names the
section, and its parse is held to the contract's answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harmony_ext_testing import conformance

ENGINE = "sglang"
FIXTURES = conformance.fixtures()


@pytest.fixture(scope="module")
def replay(gpt_oss_model_dir: Path) -> Iterator[conformance.SglangReplay]:
    replay = conformance.SglangReplay(gpt_oss_model_dir)
    yield replay
    replay.close()


def test_the_pinned_release_and_harmony_ext_s_detectors(
        replay: conformance.SglangReplay) -> None:
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    from sglang_ext.detectors import HarmonyExtDetector, HarmonyExtReasoningDetector

    assert conformance.check_pinned() == conformance.PINNED
    assert len(FIXTURES) == 51
    assert FunctionCallParser.ToolCallParserEnum[replay.parser] is HarmonyExtDetector
    assert ReasoningParser.DetectorMap[replay.parser] is HarmonyExtReasoningDetector
    assert replay.detokenizer.is_tool_call_parser_gpt_oss  # <|call|> kept, as on a server


@pytest.mark.parametrize("fixture", conformance.cases(ENGINE))
def test_the_fixture_conforms(replay: conformance.SglangReplay, fixture) -> None:
    assert conformance.problems(fixture, *conformance.observe(replay, fixture)) == []


@pytest.mark.parametrize("fixture_id", conformance.decided_ids(ENGINE))
def test_a_fixture_the_contract_decides_gets_the_contract_s_answer(
        replay: conformance.SglangReplay, fixture_id: str) -> None:
    whole, streams, want = conformance.against_contract(replay, fixture_id)
    assert whole == want
    assert {strategy: want for strategy in streams} == streams
