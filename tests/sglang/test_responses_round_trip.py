"""Responses items round-trip through SGLang's real ``OpenAIServingResponses`` (contract 8, v4).

Turn 1 is an agent turn (analysis, a preamble, a call), scripted as token ids
(:mod:`tests.sglang.responses_serving`), streamed or not. The client then asks for turn 2 the
two ways an agent does: it sends every output item back with the tool's
``function_call_output`` (the OpenAI Agents SDK's default: each item as the server sent it), or
it names turn 1 by ``previous_response_id`` (SGLang's response store,
``enable_response_store``) and sends the output alone. Either way the prompt ids SGLang hands
the model for turn 2 (the scripted tokenizer manager sees them) must be, token for token, the
turn as the model wrote it, in its order, the preamble on ``commentary``, and the tool's result
from ``functions.get_weather`` to the assistant on ``commentary``: the renderings below are
written by hand from the contract (harmony_ext_testing/renderings.py). SGLang renders with
openai_harmony, the release SGLang pins (openai-harmony 0.0.4, tests/sglang/test_installed_set.py),
whose call and result headers put the recipient in the role section (``<|start|>assistant
to=functions.NAME<|channel|>commentary <|constrain|>json``; the model wrote it after the channel
in turn 1): contract section 8 lets either place stand, as Harmony does.

The same items on SGLang's own parsers (harmony-ext not selected) show what the hooks
(sglang_ext/items.py) fix: SGLang keeps a message item's ``phase``, but renders the tool's
result with no channel and no recipient, a message sent back without ``phase`` on no channel,
and a reasoning item with no text as an empty analysis message. And the message items carry
``phase`` (``commentary`` / ``final_answer``), streamed and whole: SGLang's own item builders
set it, with either parser.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from harmony_ext_testing.renderings import (
    CALL,
    CH,
    END,
    MSG,
    PARIS,
    START,
    M,
    analysis,
    final,
    preamble,
    token_ids,
    user,
)
from sglang_ext import items as sglang_items
from sglang_ext import plugin
from tests.sglang import responses_serving as rs

NAME = "harmony-ext"
TOOLS = ["get_weather"]
HOT = "It is sunny."
CALL_W = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
AGENT_TURN = ("<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant"
              "<|channel|>commentary<|message|>Checking now.<|end|><|start|>assistant"
              + CALL_W + PARIS + "<|call|>")
ANSWERED = ("<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>commentary"
            "<|message|>One moment.<|end|><|start|>assistant<|channel|>final<|message|>"
            "Sunny.<|return|>")
TURN_TWO = "<|channel|>final<|message|>Sunny in Paris.<|return|>"
OSLO = "And Oslo?"


def call(name: str, arguments: str) -> list[str]:
    """A call as openai-harmony 0.0.4 renders it (SGLang's Responses prompt): the recipient in
    the role section, ``<|constrain|>json`` after the channel."""
    return [START, f"assistant to=functions.{name}", CH, "commentary ", M("<|constrain|>"),
            "json", MSG, arguments, CALL]


def result(name: str, text: str) -> list[str]:
    """A tool's result as openai-harmony 0.0.4 renders it: from ``functions.NAME``, the recipient
    ``assistant`` in the role section, on ``commentary``."""
    return [START, f"functions.{name} to=assistant", CH, "commentary", MSG, text, END]


AS_WRITTEN = (*user(rs.USER), *analysis("Need weather."), *preamble("Checking now."),
              *call("get_weather", PARIS), *result("get_weather", HOT), START, "assistant")
"""Turn 2's prompt from the user's message on: turn 1 as the model wrote it, then the result."""
SGLANG_RESULT = [START, "functions.get_weather", MSG, HOT, END]
"""SGLang's own rendering of the result: no channel, no recipient."""


def sglang_call(name: str, arguments: str) -> list[str]:
    """SGLang's own rendering of a call sent back: openai-harmony 0.0.4 writes the content type
    SGLang gives it bare (``commentary json``), where the model wrote ``<|constrain|>json``."""
    return [START, f"assistant to=functions.{name}", CH, "commentary json", MSG, arguments, CALL]


SGLANG_ALONE = (*user(rs.USER), *analysis("Need weather."), *preamble("Checking now."),
                *sglang_call("get_weather", PARIS), *SGLANG_RESULT, START, "assistant")
SGLANG_BY_ID = (*user(rs.USER), *analysis("Need weather."), *preamble("Checking now."),
                *call("get_weather", PARIS), *SGLANG_RESULT, START, "assistant")
"""SGLang's own, by ``previous_response_id``: the messages its parse stored, the call's
``<|constrain|>json`` kept, the result as resent."""
SGLANG_NO_PHASE = (*user(rs.USER), *analysis("Need weather."),
                   START, "assistant", MSG, "Checking now.", END,
                   *sglang_call("get_weather", PARIS), *SGLANG_RESULT, START, "assistant")
"""SGLang's own, for items sent back without ``phase``: the preamble on no channel."""


@pytest.fixture(scope="module")
def servers(gpt_oss_model_dir: Path) -> dict[str, rs.ResponsesServer]:
    """harmony-ext selected, and SGLang's own parsers; both with SGLang's response store."""
    return {parser: rs.ResponsesServer(gpt_oss_model_dir, parser, parser,
                                       enable_response_store=True)
            for parser in (NAME, "gpt-oss")}


def want(pieces: Any) -> list[int]:
    return token_ids(rs.encoding(), list(pieces))


def shown(ids: list[int]) -> str:
    return rs.encoding().decode(ids)


def tail(ids: list[int], expected: list[int]) -> list[int]:
    return ids[-len(expected):]


def turn_one(server: rs.ResponsesServer, stream: bool, script: str = AGENT_TURN) -> rs.ResponsesRun:
    run = server.run(rs.ids_of(script), stream=stream, tools=TOOLS)
    assert run.error is None and run.status == "completed", run
    assert run.response_id and run.response_id.startswith("resp_")
    return run


def output_of(run: rs.ResponsesRun, text: str = HOT) -> dict[str, Any]:
    (called,) = [item for item in run.output if item["type"] == "function_call"]
    return {"type": "function_call_output", "call_id": called["call_id"], "output": text}


def prompt_of(server: rs.ResponsesServer, *, stream: bool = False, **request: Any) -> list[int]:
    """The prompt ids SGLang hands the model for a turn-2 request."""
    run = server.run(rs.ids_of(TURN_TWO), stream=stream, tools=TOOLS, **request)
    assert run.error is None and run.status == "completed", run
    (prompt,) = run.prompts
    return prompt


def resent(first: rs.ResponsesRun, *extra: dict[str, Any]) -> list[dict[str, Any]]:
    """Turn 2's input as the Agents SDK sends it: the user's message, turn 1's output items as
    the server sent them (nulls included), then the tool's output."""
    return [{"role": "user", "content": rs.USER}, *first.output, *extra]


def test_the_hooks_are_installed_on_this_sglang() -> None:
    assert sglang_items.problem() is None
    assert plugin.status[plugin.ITEMS] == "on", plugin.status


@pytest.mark.parametrize("stream_two", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("stream_one", [False, True], ids=["turn1_whole", "turn1_streamed"])
def test_items_sent_back_render_as_the_model_wrote_them(servers: dict[str, rs.ResponsesServer],
                                                        stream_one: bool,
                                                        stream_two: bool) -> None:
    server = servers[NAME]
    first = turn_one(server, stream_one)
    assert [rs.view(i) for i in first.output] == [
        ["reasoning", "Need weather."], ["message", "commentary", "Checking now."],
        ["function_call", "get_weather", PARIS]]
    got = prompt_of(server, stream=stream_two, input=resent(first, output_of(first)))
    expected = want(AS_WRITTEN)
    assert shown(tail(got, expected)) == shown(expected)
    assert tail(got, expected) == expected


@pytest.mark.parametrize("stream_one", [False, True], ids=["turn1_whole", "turn1_streamed"])
def test_previous_response_id_renders_the_same_prompt(servers: dict[str, rs.ResponsesServer],
                                                      stream_one: bool) -> None:
    """SGLang renders the messages it stored for turn 1: its input and the drop-in parser's
    completed messages, each on the channel it counts as (the preamble on commentary)."""
    server = servers[NAME]
    first = turn_one(server, stream_one)
    by_id = prompt_of(server, previous_response_id=first.response_id, input=[output_of(first)])
    expected = want(AS_WRITTEN)
    assert shown(tail(by_id, expected)) == shown(expected)
    assert tail(by_id, expected) == expected
    assert by_id == prompt_of(server, input=resent(first, output_of(first)))  # system, tools too


def test_without_phase_the_call_after_a_message_makes_it_the_preamble(
        servers: dict[str, rs.ResponsesServer]) -> None:
    """A client that drops ``phase``: the call of the same turn says what the message was."""
    server = servers[NAME]
    first = turn_one(server, False)
    assert [i.get("phase") for i in first.output] == [None, "commentary", None]
    items = [{k: v for k, v in item.items() if k != "phase"} for item in first.output]
    got = prompt_of(server, input=[{"role": "user", "content": rs.USER}, *items,
                                   output_of(first)])
    assert tail(got, want(AS_WRITTEN)) == want(AS_WRITTEN)


def test_an_answered_turn_drops_its_analysis_either_way(
        servers: dict[str, rs.ResponsesServer]) -> None:
    """Chain of thought is dropped once a final answer closed the turn (contract 8), resent or
    by ``previous_response_id``; the preamble before the answer stays on commentary."""
    server = servers[NAME]
    first = turn_one(server, False, ANSWERED)
    expected = want((*user(rs.USER), *preamble("One moment."), *final("Sunny."), *user(OSLO),
                     START, "assistant"))
    again = prompt_of(server, input=resent(first, {"role": "user", "content": OSLO}))
    by_id = prompt_of(server, previous_response_id=first.response_id,
                      input=[{"role": "user", "content": OSLO}])
    assert shown(tail(again, expected)) == shown(expected)
    assert tail(again, expected) == expected and by_id == again


def test_a_reasoning_item_without_text_renders_nothing(
        servers: dict[str, rs.ResponsesServer]) -> None:
    """A client that keeps reasoning items but not their text: no analysis message (SGLang's
    own renders an empty one)."""
    first = turn_one(servers[NAME], False)
    items = resent(first, output_of(first))
    items[1] = {**items[1], "content": []}
    expected = want((*user(rs.USER), *preamble("Checking now."), *call("get_weather", PARIS),
                     *result("get_weather", HOT), START, "assistant"))
    assert tail(prompt_of(servers[NAME], input=items), expected) == expected
    alone = want((*user(rs.USER), *analysis(""), *preamble("Checking now."),
                  *sglang_call("get_weather", PARIS), *SGLANG_RESULT, START, "assistant"))
    assert tail(prompt_of(servers["gpt-oss"], input=items), alone) == alone


def test_sglang_alone_renders_the_result_on_no_channel(
        servers: dict[str, rs.ResponsesServer]) -> None:
    """The same requests on SGLang's own parsers: what the tests above would see unfixed. SGLang
    keeps ``phase`` (the preamble stays on commentary) but renders the tool's result with no
    channel and no recipient, resent or by ``previous_response_id``, a call's content type bare
    (``json``), and a message without ``phase`` on no channel."""
    server = servers["gpt-oss"]
    first = turn_one(server, False)
    assert [rs.view(i) for i in first.output] == [
        ["reasoning", "Need weather."], ["message", "commentary", "Checking now."],
        ["function_call", "get_weather", PARIS]]
    fixed = want(AS_WRITTEN)
    got = prompt_of(server, input=resent(first, output_of(first)))
    by_id = prompt_of(server, previous_response_id=first.response_id, input=[output_of(first)])
    for ids, alone in ((got, want(SGLANG_ALONE)), (by_id, want(SGLANG_BY_ID))):
        assert shown(tail(ids, alone)) == shown(alone)
        assert tail(ids, fixed) != fixed
    items = [{k: v for k, v in item.items() if k != "phase"} for item in first.output]
    no_phase = prompt_of(server, input=[{"role": "user", "content": rs.USER}, *items,
                                        output_of(first)])
    assert shown(tail(no_phase, want(SGLANG_NO_PHASE))) == shown(want(SGLANG_NO_PHASE))


def test_items_the_core_cannot_read_stay_sglangs(servers: dict[str, rs.ResponsesServer],
                                                 caplog: pytest.LogCaptureFixture) -> None:
    """SGLang's ``custom_tool_call`` is no item of the contract: the request's items are all
    converted by SGLang (the same prompt as without harmony-ext), said once."""
    items = [{"role": "user", "content": rs.USER},
             {"type": "custom_tool_call", "call_id": "c1", "name": "shell", "input": "ls"},
             {"type": "custom_tool_call_output", "call_id": "c1", "output": "a.txt"}]
    sglang_items._once.forget("items fallback:item type")
    with caplog.at_level(logging.INFO, logger="sglang_ext"):
        ours = prompt_of(servers[NAME], input=items)
        prompt_of(servers[NAME], input=items)
    lines = [r.getMessage() for r in caplog.records if "converted by SGLang" in r.getMessage()]
    assert lines == ["harmony-ext: an input item of type 'custom_tool_call'; the input items of "
                     "such Responses requests are converted by SGLang, not harmony-ext"]
    assert ours == prompt_of(servers["gpt-oss"], input=items)


def test_sglangs_internals_not_as_expected_is_one_line_and_no_hook(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from sglang.srt.entrypoints.openai.serving_responses import OpenAIServingResponses

    def construct(self: Any, request: Any, prev_response: Any) -> list[Any]:
        return []  # converts no item with parse_response_input

    monkeypatch.setattr(OpenAIServingResponses, "_construct_input_messages_with_harmony",
                        construct)
    why = sglang_items.problem()
    assert why == ("_construct_input_messages_with_harmony no longer converts items with "
                   "parse_response_input")
    with caplog.at_level(logging.WARNING, logger="sglang_ext"):
        done = plugin.install_hooks()
    lines = [r.getMessage() for r in caplog.records if plugin.ITEMS in r.getMessage()]
    assert lines == [f"harmony-ext: hook {plugin.ITEMS!r} not installed: {why}"]
    assert done[plugin.ITEMS] == f"off ({why})"


def message_phases(items: list[dict[str, Any]]) -> list[Any]:
    return [item.get("phase") for item in items if item["type"] == "message"]


@pytest.mark.parametrize("parser", [NAME, "gpt-oss"])
@pytest.mark.parametrize(("script", "phases"), [
    (AGENT_TURN, ["commentary"]),
    (ANSWERED, ["commentary", "final_answer"]),
], ids=["agent_turn", "answered"])
def test_message_items_carry_their_phase_streamed_and_whole(
        servers: dict[str, rs.ResponsesServer], parser: str, script: str,
        phases: list[str]) -> None:
    server = servers[parser]
    whole = turn_one(server, False, script)
    streamed = turn_one(server, True, script)
    assert rs.problems(whole, streamed) == []
    assert message_phases(whole.output) == phases
    assert message_phases([item for _, item in streamed.added]) == phases
    assert message_phases([item for _, item in streamed.done]) == phases
    assert message_phases(streamed.output) == phases  # response.completed
