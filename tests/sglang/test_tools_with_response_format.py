"""Tools and a response schema under one grammar on SGLang (contract section 10, issue 50).

Each case is a chat request sent through SGLang's real ``OpenAIServingChat`` and
``TokenizerManager`` (the model scripted: :mod:`harmony_ext_testing.sglang_serving`), so the
response is what a client gets and the sampling parameters are the ones the scheduler
receives; then the model's output is walked token by token through the grammar SGLang's
scheduler builds from those parameters (its ``GrammarManager`` and xgrammar:
:mod:`harmony_ext_testing.sglang_grammar`). With harmony-ext as both parsers: analysis and
preambles free, then one call to a declared function (a strict one's arguments held to its
schema) or the final answer (any header spelling) whose body the schema holds; tool_choice
none: the answer only; required or named: calls only (SGLang alone answers HTTP 400 there);
``parallel_tool_calls`` false: one call, then the turn is over. With SGLang's own ``gpt-oss``
parsers, for comparison, the schema alone holds from the first ``<|end|>`` on.

Outputs, tools and the expected accepted prefixes and refused tokens are written by hand.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import pytest

from harmony_ext_testing.sglang_grammar import GPT_OSS_EOS, Walk, grammar_walker
from harmony_ext_testing.sglang_serving import RunChat

HX = "harmony-ext"
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "strict": True, "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"], "additionalProperties": False}}}
TIME = {"type": "function", "function": {  # not strict: any JSON object for arguments
    "name": "get_time", "parameters": {"type": "object",
                                       "properties": {"zone": {"type": "string"}}}}}
TOOLS = [WEATHER, TIME]
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"},
                                           "temp": {"type": "integer"}},
          "required": ["city", "temp"], "additionalProperties": False}
FORMAT = {"type": "json_schema", "json_schema": {"name": "weather", "schema": SCHEMA,
                                                  "strict": True}}

NEXT = "<|start|>assistant"
THINK = "<|channel|>analysis<|message|>I need the weather.<|end|>" + NEXT
PREAMBLE = "<|channel|>commentary<|message|>Checking.<|end|>" + NEXT
CALL_HEAD = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
CALL = CALL_HEAD + '{"city":"Paris"}<|call|>'
ROLE_CALL = ' to=functions.get_weather<|channel|>commentary json<|message|>{"city":"Paris"}<|call|>'
TIME_CALL = ('<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>'
             '{"anything":[1,2]}<|call|>')
ANSWER = '<|channel|>final<|message|>{"city":"Paris","temp":20}<|return|>'
JSON_ANSWER = '<|channel|>final <|constrain|>json<|message|>{"city":"Paris","temp":20}<|return|>'


@pytest.fixture(scope="module")
def walks(gpt_oss_model_dir: Any) -> Callable[..., Walk]:
    """SGLang's scheduler-side grammar path, per reasoning parser (the same tool-call one) and
    model end-of-sequence ids (a gpt-oss checkpoint's by default), each built once."""
    return functools.cache(functools.partial(grammar_walker, gpt_oss_model_dir))


Served = tuple[dict[str, Any], Callable[[str], tuple[str, str | None]]]


@pytest.fixture(scope="module")
def serve(sglang_chat: RunChat, walks: Callable[..., Walk]) -> Callable[..., Served]:
    """``serve(output, parser=HX, eos=GPT_OSS_EOS, **request)``: (the non-streamed response
    body, a walk of any output through the grammar the scheduler got for this request)."""

    def run(output: str, parser: str = HX, eos: frozenset[int] = GPT_OSS_EOS,
            **request: Any) -> Served:
        request = {"tools": TOOLS, "response_format": FORMAT, **request}
        call = output.endswith("<|call|>")
        result = sglang_chat([output.removesuffix("<|return|>")], stream=False,
                             tool_parser=parser, reasoning_parser=parser,
                             finish={"type": "stop", "matched": 200012 if call else 200002},
                             **request)
        sent = result.requests[0] if result.requests else None

        def walk(text: str) -> tuple[str, str | None]:
            assert sent is not None, "the request never reached the scheduler"
            return walks(parser, eos)(sent.sampling_params, sent.require_reasoning, text)

        return result.body, walk

    return run


def message(body: dict[str, Any]) -> dict[str, Any]:
    choice = body["choices"][0]
    m = choice["message"]
    return {"reasoning": m.get("reasoning_content"), "content": m.get("content"),
            "calls": [(c["function"]["name"], c["function"]["arguments"])
                      for c in m.get("tool_calls") or []],
            "finish_reason": choice["finish_reason"]}


def test_reasoning_a_preamble_then_a_call(serve) -> None:
    output = THINK + PREAMBLE + CALL
    body, walk = serve(output)
    assert message(body) == {"reasoning": "I need the weather.", "content": "Checking.",
                             "calls": [("get_weather", '{"city":"Paris"}')],
                             "finish_reason": "tool_calls"}
    assert walk(output) == (output, None)
    assert walk(THINK + ROLE_CALL) == (THINK + ROLE_CALL, None)  # the header as rendered
    assert walk(THINK + TIME_CALL) == (THINK + TIME_CALL, None)  # not strict: any object


def test_reasoning_then_an_answer_the_schema_accepts(serve) -> None:
    output = THINK + ANSWER
    body, walk = serve(output)
    assert message(body) == {"reasoning": "I need the weather.",
                             "content": '{"city":"Paris","temp":20}', "calls": [],
                             "finish_reason": "stop"}
    assert json.loads(message(body)["content"]) == {"city": "Paris", "temp": 20}
    assert walk(output) == (output, None)
    assert walk(THINK + JSON_ANSWER) == (THINK + JSON_ANSWER, None)
    assert walk(ANSWER) == (ANSWER, None)  # the answer with nothing before it


def test_an_answer_or_strict_arguments_the_schema_refuses_are_refused(serve) -> None:
    _, walk = serve(THINK + ANSWER)
    assert walk(THINK + '<|channel|>final<|message|>{"town":"Paris"}<|return|>') == (
        THINK + '<|channel|>final<|message|>{"', "town")
    assert walk(THINK + '<|channel|>final json<|message|>Paris.<|return|>') == (
        THINK + "<|channel|>final json<|message|>", "Paris")
    assert walk(THINK + CALL_HEAD + '{"town":"Paris"}<|call|>') == (
        THINK + CALL_HEAD + '{"', "town")
    # an undeclared function, and text that is no message
    assert walk(THINK + "<|channel|>commentary to=functions.get_news json<|message|>{}") == (
        THINK + "<|channel|>commentary to=functions.get", "_news")
    assert walk("Paris is sunny.") == ("", "Paris")


def test_tool_choice_none_the_answer_only(serve) -> None:
    body, walk = serve(THINK + ANSWER, tool_choice="none")
    assert message(body)["content"] == '{"city":"Paris","temp":20}'
    assert walk(THINK + ANSWER) == (THINK + ANSWER, None)
    assert walk(THINK + CALL) == (THINK + "<|channel|>commentary", " to")


@pytest.mark.parametrize("choice", ["required",
                                    {"type": "function", "function": {"name": "get_weather"}}])
def test_a_forced_call_calls_only(serve, choice: Any) -> None:
    body, walk = serve(THINK + CALL, tool_choice=choice)
    got = message(body)
    assert got.pop("content") in (None, "")  # SGLang's serving writes "" for a forced call
    assert got == {"reasoning": "I need the weather.",
                   "calls": [("get_weather", '{"city":"Paris"}')], "finish_reason": "tool_calls"}
    assert walk(THINK + PREAMBLE + CALL) == (THINK + PREAMBLE + CALL, None)
    assert walk(THINK + ANSWER) == (THINK + "<|channel|>", "final")
    if choice == "required":
        assert walk(THINK + TIME_CALL) == (THINK + TIME_CALL, None)
    else:  # named: that function only
        assert walk(THINK + TIME_CALL) == (THINK + "<|channel|>commentary to=functions.get",
                                           "_time")


def test_parallel_tool_calls_false_one_call_then_the_turn_is_over(serve) -> None:
    two = THINK + CALL.replace("<|call|>", "<|end|>") + NEXT + CALL
    body, walk = serve(two, parallel_tool_calls=False)
    assert message(body)["calls"] == [("get_weather", '{"city":"Paris"}')]
    assert message(body)["finish_reason"] == "tool_calls"
    first = THINK + CALL.replace("<|call|>", "<|end|>")
    assert walk(two) == (first, "<|start|>")


def test_sglang_alone_holds_the_schema_from_the_first_end(serve) -> None:
    """SGLang's own gpt-oss parsers: the JSON grammar starts after the first ``<|end|>``, so a
    call after reasoning is refused at its header; a forced call with a response format is
    refused before any output."""
    _, walk = serve(THINK + CALL, parser="gpt-oss")
    assert walk(THINK + CALL) == (THINK.removesuffix(NEXT), "<|start|>")
    assert walk(CALL) == (CALL, None)  # a call first, before any <|end|>: nothing holds it
    body, _ = serve(THINK + CALL, parser="gpt-oss", tool_choice="required")
    assert "cannot be combined with response_format" in json.dumps(body)


def test_a_final_header_naming_json_starts_the_grammar(serve) -> None:
    """Without tools: the three spellings of the final header all start the schema."""
    _, walk = serve(THINK + ANSWER, tools=None)
    for header in ("<|channel|>final<|message|>", "<|channel|>final json<|message|>",
                   "<|channel|>final <|constrain|>json<|message|>"):
        assert walk(THINK + header + "Paris.<|return|>") == (THINK + header, "Paris")
        good = THINK + header + '{"city":"Paris","temp":20}<|return|>'
        assert walk(good) == (good, None)


def test_on_a_checkpoint_without_the_call_stop_a_call_ends_at_end(serve) -> None:
    """A documented limit: the grammar ends a call or the answer at ``<|end|>`` or at a token
    xgrammar takes for a stop, which on SGLang are the checkpoint's end-of-sequence ids. On a
    checkpoint whose generation config does not list ``<|call|>``, ``<|call|>`` is refused
    after a call's arguments (the answer's ``<|return|>`` is its end of sequence)."""
    _, walk = serve(THINK + CALL, eos=frozenset({200002}))
    assert walk(THINK + CALL) == (THINK + CALL.removesuffix("<|call|>"), "<|call|>")
    ended = THINK + CALL.replace("<|call|>", "<|end|>")
    assert walk(ended) == (ended, None)
    assert walk(THINK + ANSWER) == (THINK + ANSWER, None)


def test_the_scheduler_is_told_the_grammar_covers_the_reasoning(sglang_chat: RunChat) -> None:
    """SGLang 0.5.23 has a request flag for a grammar that also describes the reasoning (the
    request keeps counting reasoning tokens, up to the end it selects: the final header);
    0.5.22 has none, so the request goes as one without reasoning, constrained from the start."""
    from importlib.metadata import version

    sent = sglang_chat([ANSWER.removesuffix("<|return|>")], stream=False, tool_parser=HX,
                       reasoning_parser=HX, tools=TOOLS, response_format=FORMAT).requests[0]
    params = sent.sampling_params.custom_params or {}
    assert "harmony_ext_grammar" not in params  # no flag of harmony-ext's own reaches it
    assert sent.sampling_params.json_schema is None
    assert json.loads(sent.sampling_params.structural_tag)["type"] == "structural_tag"
    if version("sglang") == "0.5.22":
        assert sent.require_reasoning is False
        assert "__sglang_reasoning_in_grammar" not in params
    else:
        assert sent.require_reasoning is True
        assert params["__sglang_reasoning_in_grammar"] is True
        assert params["__sglang_reasoning_end_token_ids"] == [200005, 17196, 200008]


def test_sglang_tool_strict_level_2_holds_every_function_s_arguments(
        serve, monkeypatch: pytest.MonkeyPatch) -> None:
    """README: every function's arguments held under ``SGLANG_TOOL_STRICT_LEVEL=2`` (SGLang's
    ``parameter`` level, read per request as SGLang reads it). ``get_time`` is not strict: its
    arguments pass unheld without the variable (the control), and are held to its schema
    (``zone`` a string) with it; the strict function's are held either way."""
    wrong = THINK + ('<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>'
                     '{"zone":5}<|call|>')
    held_at = (THINK + '<|channel|>commentary to=functions.get_time <|constrain|>json'
               '<|message|>{"zone":', "5")
    monkeypatch.delenv("SGLANG_TOOL_STRICT_LEVEL", raising=False)
    _, loose = serve(THINK + CALL)
    assert loose(wrong) == (wrong, None)
    monkeypatch.setenv("SGLANG_TOOL_STRICT_LEVEL", "1")  # SGLang's function level: strict ones
    _, function_level = serve(THINK + CALL)
    assert function_level(wrong) == (wrong, None)
    monkeypatch.setenv("SGLANG_TOOL_STRICT_LEVEL", "2")
    body, held = serve(THINK + CALL)
    assert message(body)["calls"] == [("get_weather", '{"city":"Paris"}')]
    assert held(wrong) == held_at
    assert held(THINK + TIME_CALL.replace('{"anything":[1,2]}', '{"zone":"CET"}')) == (
        THINK + TIME_CALL.replace('{"anything":[1,2]}', '{"zone":"CET"}'), None)
    assert held(THINK + CALL_HEAD + '{"town":"Paris"}<|call|>') == (
        THINK + CALL_HEAD + '{"', "town")
