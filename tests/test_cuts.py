"""Outputs cut by max_tokens (tests/cut_cases.py): the core's parse, and ``harmony-ext parse
--finish length``, give the hand-written result; the vLLM server tiers and SGLang's serving
chain are held to the same cases in their own suites."""

from __future__ import annotations

import json

import pytest

from harmony_plugins import ChatResult, Request, Summary, Turn
from tests.cut_cases import CUTS, TOOLS, Cut
from tests.test_contract import cli_json, encoding


def parse(cut: Cut, mode: str, finish: str) -> tuple[dict, Summary]:
    seen: list[Summary] = []
    turn = Turn(Request(TOOLS), observer=seen.append, id_factory=lambda: "call_x")
    result = ChatResult()
    if mode == "text":
        for ch in cut.text:
            result.add(turn.feed_text(ch))
    else:
        for token in encoding().encode(cut.text, allowed_special="all"):
            result.add(turn.feed_ids([token]))
    result.add(turn.close(finish))
    return result.message(), seen[0]


@pytest.mark.parametrize("cut", CUTS, ids=[c.id for c in CUTS])
@pytest.mark.parametrize("mode", ["text", "ids"])
def test_a_cut_output_parses_as_written(cut: Cut, mode: str) -> None:
    message, summary = parse(cut, mode, "length")
    calls = tuple((c["function"]["name"], c["function"]["arguments"])
                  for c in message["tool_calls"])
    assert (message["reasoning"], message["content"], calls) == (
        cut.reasoning, cut.content, cut.calls)
    assert message["finish_reason"] == cut.finish_reason == "length"
    assert (summary.outcomes, summary.recoveries) == (cut.outcomes, cut.recoveries)


@pytest.mark.parametrize("cut", CUTS, ids=[c.id for c in CUTS])
def test_only_the_finish_reason_depends_on_the_finish(cut: Cut) -> None:
    """An engine that does not say why it stopped (finish "unknown", vLLM) gets the same parse
    and no finish_reason of the core's: the engine reports its own."""
    cut_message, cut_summary = parse(cut, "ids", "length")
    unknown, summary = parse(cut, "ids", "unknown")
    assert unknown["finish_reason"] is None
    assert {**unknown, "finish_reason": "length"} == cut_message
    assert summary == cut_summary


@pytest.mark.parametrize("cut", CUTS, ids=[c.id for c in CUTS])
def test_the_command_line_with_finish_length(cut: Cut) -> None:
    out = cli_json("--tool", "get_weather", "--finish", "length", stdin=cut.text)
    calls = tuple((c["function"]["name"], c["function"]["arguments"]) for c in out["tool_calls"])
    assert (out["reasoning"], out["content"], calls, out["finish_reason"]) == (
        cut.reasoning, cut.content, cut.calls, "length")
    ids = json.dumps(encoding().encode(cut.text, allowed_special="all"))
    by_ids = cli_json("--input", "ids", "--tool", "get_weather", "--finish", "length", stdin=ids)
    assert [c["function"] for c in by_ids["tool_calls"]] == [c["function"]
                                                             for c in out["tool_calls"]]
