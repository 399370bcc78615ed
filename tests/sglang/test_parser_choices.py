"""What harmony-ext does on SGLang when it is not both parsers of a request (README's SGLang
section and its limits).

harmony-ext's two parsers share one parse per choice. Mixed with SGLang's own ``gpt-oss``, each
logs a warning once per process naming the other; what a client then gets:

- ``--reasoning-parser harmony-ext --tool-call-parser gpt-oss``: no call is surfaced (the
  reasoning parser keeps the calls, which the tool parser never sees);
- ``--tool-call-parser harmony-ext --reasoning-parser gpt-oss``: the two parse separately; a
  single call comes out, but of two calls in a turn the first is lost (SGLang's reasoning
  parser takes the text up to the first ``<|end|>``).

With ``separate_reasoning: false`` SGLang runs no reasoning parser: harmony-ext's tool parser
parses the output alone, and the request's ``parallel_tool_calls`` reaches no parse of ours (two
calls both come out, where harmony-ext as both parsers surfaces the first only); with
``tool_choice: "none"`` SGLang runs no parser at all, and the text goes out as the model wrote
it, markup and chain of thought included. The same holds with harmony-ext as the tool parser
alone (no reasoning parser).

Each output goes through SGLang's ``OpenAIServingChat`` and ``TokenizerManager``, only the model
scripted (:func:`harmony_ext_testing.sglang_serving.chat_runner`), whole and streamed one token per
delta. Expected results and warnings are written by hand.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harmony_ext_testing.sglang_cases import NAME, Case, pieces_for
from harmony_ext_testing.sglang_serving import RunChat
from sglang_ext import detectors

REASONING = "Need weather."
ANALYSIS = f"<|channel|>analysis<|message|>{REASONING}<|end|><|start|>assistant"
CALL_HEAD = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
PARIS, ROME = ("get_weather", '{"city":"Paris"}'), ("get_weather", '{"city":"Rome"}')
ONE_CALL = Case("one_call", ANALYSIS + CALL_HEAD + PARIS[1] + "<|call|>", "")
TWO_CALLS = Case("two_calls", CALL_HEAD + PARIS[1] + "<|end|><|start|>assistant" + CALL_HEAD
                 + ROME[1] + "<|call|>", "")
ANSWER = Case("answer", ANALYSIS + "<|channel|>final<|message|>Hi.", "")

TOOL_GPT_OSS = ("harmony-ext: --reasoning-parser harmony-ext with --tool-call-parser gpt-oss: "
                "tool calls are not surfaced; select harmony-ext for both")
REASONING_GPT_OSS = ("harmony-ext: --tool-call-parser harmony-ext with --reasoning-parser "
                     "gpt-oss: the two parse separately and may disagree; select harmony-ext "
                     "for both")


def got(reasoning: str | None = None, content: str | None = None,
        calls: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    calls = calls or []
    return {"reasoning": reasoning, "content": content, "calls": calls,
            "finish_reason": "tool_calls" if calls else "stop"}


@pytest.fixture(scope="module")
def pieces(hf_dir: Path) -> Callable[[str], list[str]]:
    return pieces_for(hf_dir)


def through(sglang_chat: RunChat, pieces: Callable[[str], list[str]], case: Case,
            tool_parser: str | None, reasoning_parser: str | None,
            **request: Any) -> dict[str, Any]:
    """``case`` whole and streamed through SGLang's chat serving with these parsers: what a
    client gets, the same both ways (returned once)."""
    answers = []
    for deltas in (None, pieces(case.text)):
        matched = 200012 if case.text.endswith("<|call|>") else None
        result = sglang_chat(deltas or [case.text], stream=deltas is not None,
                             tools=case.tool_list, finish={"type": "stop", "matched": matched},
                             tool_parser=tool_parser, reasoning_parser=reasoning_parser,
                             **request)
        if deltas is None:
            choice = result.body["choices"][0]
            message = choice["message"]
            answers.append(got(message.get("reasoning_content") or None,
                               message.get("content") or None,
                               [(c["function"]["name"], c["function"]["arguments"])
                                for c in message.get("tool_calls") or []]))
            assert answers[-1]["finish_reason"] == choice["finish_reason"]
        else:
            joined = result.joined()
            answers.append(got(joined["reasoning"] or None, joined["content"] or None,
                               [(c["name"], c["arguments"]) for c in joined["tool_calls"]]))
            assert answers[-1]["finish_reason"] == joined["finish_reason"]
    assert answers[0] == answers[1]
    return answers[0]


# -- one name mixed with gpt-oss ---------------------------------------------------------------


def warned(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "sglang_ext" and r.levelno == logging.WARNING]


def test_harmony_ext_as_both_parsers_the_control(sglang_chat, pieces, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="sglang_ext")
    assert through(sglang_chat, pieces, ONE_CALL, NAME, NAME) == got(REASONING, calls=[PARIS])
    assert through(sglang_chat, pieces, TWO_CALLS, NAME, NAME) == got(calls=[PARIS, ROME])
    assert warned(caplog) == []


def test_with_sglang_s_tool_parser_no_call_is_surfaced(sglang_chat, pieces, caplog) -> None:
    detectors.once.forget("tool:gpt-oss")
    caplog.set_level(logging.WARNING, logger="sglang_ext")
    assert through(sglang_chat, pieces, ONE_CALL, "gpt-oss", NAME) == got(REASONING)
    assert through(sglang_chat, pieces, TWO_CALLS, "gpt-oss", NAME) == got()
    assert through(sglang_chat, pieces, ANSWER, "gpt-oss", NAME) == got(REASONING, "Hi.")
    assert warned(caplog) == [TOOL_GPT_OSS]  # once, for all of them


def test_with_sglang_s_reasoning_parser_the_first_of_two_calls_is_lost(sglang_chat, pieces,
                                                                       caplog) -> None:
    detectors.once.forget("reasoning:gpt-oss")
    caplog.set_level(logging.WARNING, logger="sglang_ext")
    assert through(sglang_chat, pieces, ONE_CALL, NAME, "gpt-oss") == got(REASONING,
                                                                          calls=[PARIS])
    assert through(sglang_chat, pieces, TWO_CALLS, NAME, "gpt-oss") == got(calls=[ROME])
    assert warned(caplog) == [REASONING_GPT_OSS]


# -- separate_reasoning false, or harmony-ext as the tool parser alone --------------------------

ALONE = [(NAME, NAME, {"separate_reasoning": False}), (NAME, None, {})]
ALONE_IDS = ["separate_reasoning_false", "tool_parser_alone"]


@pytest.mark.parametrize(("tool_parser", "reasoning_parser", "request_"), ALONE, ids=ALONE_IDS)
def test_parallel_tool_calls_false_reaches_no_parse_of_ours(
        sglang_chat, pieces, tool_parser: str, reasoning_parser: str | None,
        request_: dict[str, Any]) -> None:
    """The tool parser parses the output alone, without the request's field: both calls come
    out; harmony-ext as both parsers (the control) surfaces the first only."""
    assert through(sglang_chat, pieces, TWO_CALLS, NAME, NAME,
                   parallel_tool_calls=False) == got(calls=[PARIS])
    assert through(sglang_chat, pieces, TWO_CALLS, tool_parser, reasoning_parser,
                   parallel_tool_calls=False, **request_) == got(calls=[PARIS, ROME])


@pytest.mark.parametrize(("tool_parser", "reasoning_parser", "request_"), ALONE, ids=ALONE_IDS)
def test_tool_choice_none_reaches_no_parser_at_all(
        sglang_chat, pieces, tool_parser: str, reasoning_parser: str | None,
        request_: dict[str, Any]) -> None:
    """SGLang asks no parser for ``tool_choice: "none"`` when it runs no reasoning parser: the
    text goes out as written, where without it the tool parser drops the chain of thought.
    harmony-ext as both parsers (the control): the reasoning, the answer, no call."""
    assert through(sglang_chat, pieces, ANSWER, NAME, NAME, tool_choice="none") == got(
        REASONING, "Hi.")
    assert through(sglang_chat, pieces, ANSWER, tool_parser, reasoning_parser,
                   **request_) == got(content="Hi.")  # chain of thought dropped, not shown
    assert through(sglang_chat, pieces, ANSWER, tool_parser, reasoning_parser,
                   tool_choice="none", **request_) == got(content=ANSWER.text)
    assert through(sglang_chat, pieces, ONE_CALL, tool_parser, reasoning_parser,
                   tool_choice="none", **request_) == got(content=ONE_CALL.text)
