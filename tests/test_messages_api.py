"""A call on the Anthropic Messages API (contract section 4): a ``tool_use`` block where its
arguments are a JSON object, else a ``text`` block holding the function's name and the
arguments as written; and the ``stop_reason`` of a response left without a ``tool_use`` block.
Then the same on an event stream (the adapters' shared ``messages_stream``): each ``tool_use``
block held until it ends, then sent as it came or as the ``text`` block of its index.

Every expected value is written by hand from contract section 4.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from harmony_plugins import Request, Turn, messages_block, messages_stop_reason
from harmony_plugins.adapter_support.messages_stream import shown

CALL = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


@pytest.mark.parametrize(("arguments", "value"), [
    ('{"city":"Paris"}', {"city": "Paris"}),
    ("{}", {}),
    (' {"city": "Oslo", "days": [1, 2]} ', {"city": "Oslo", "days": [1, 2]}),
    ('{"town":"Paris"}', {"town": "Paris"}),  # schema_mismatch: still an object, passed on
])
def test_an_object_is_a_tool_use_block(arguments: str, value: dict) -> None:
    assert messages_block("call_1", "get_weather", arguments) == {
        "type": "tool_use", "id": "call_1", "name": "get_weather", "input": value}


@pytest.mark.parametrize("arguments", [
    '{"city":"Par',                 # cut short by max_tokens (invalid_json)
    '"Paris"',                      # a bare string (not_object)
    'Sure: {"city":"Paris"}',       # text before the object (invalid_json)
    "city=Paris",                   # no JSON at all
    "[1, 2]",                       # an array
    "3",
    "null",
    '{"x": NaN}',                   # JSON a response cannot carry
    '{"x": 1e999}',
    '{"x": "\\ud800"}',             # a lone surrogate
    '{"a":' * 100_000 + "1" + "}" * 100_000,  # deeper than Python's JSON reader goes
])
def test_no_object_is_a_text_block_with_the_call_as_written(arguments: str) -> None:
    assert messages_block("call_1", "get_weather", arguments) == {
        "type": "text", "text": "get_weather " + arguments}


@pytest.mark.parametrize(("body", "outcome"), [
    ('{"city":"Par', "invalid_json"),
    ('"Paris"', "not_object"),
    ('Sure: {"city":"Paris"}', "invalid_json"),
])
def test_a_call_shown_as_text_is_counted_by_the_parse(body: str, outcome: str) -> None:
    """What the Messages API shows as text is a call the parse surfaced and counted under the
    outcome of section 4: the block is built from the chat call, nothing is lost."""
    summaries = []
    turn = Turn(Request(TOOLS), observer=summaries.append)
    step = turn.feed_text(CALL + body + "<|call|>", finish="stop")
    [call] = step.calls
    assert (call.name, call.arguments) == ("get_weather", body)
    assert summaries[0].calls == [("get_weather", outcome)]
    assert messages_block(call.id, call.name, call.arguments) == {
        "type": "text", "text": "get_weather " + body}


@pytest.mark.parametrize(("reason", "tool_uses", "shown"), [
    ("tool_use", 0, "end_turn"),     # every call became text: no tool_use block to look for
    ("tool_use", 1, "tool_use"),
    ("tool_use", 2, "tool_use"),
    ("max_tokens", 0, "max_tokens"),
    ("end_turn", 0, "end_turn"),
    ("stop_sequence", 0, "stop_sequence"),
    (None, 0, None),                 # a stream's message_start: no reason yet
])
def test_the_stop_reason_of_a_response_without_a_tool_use_block(
        reason: str | None, tool_uses: int, shown: str | None) -> None:
    assert messages_stop_reason(reason, tool_uses) == shown


# -- the stream (harmony_plugins.adapter_support.messages_stream), on events written by hand ----

def event(name: str, data: dict) -> str:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"


def tool_use(index: int, call_id: str, parts: list[str]) -> list[str]:
    """A tool_use block's events as the engines stream them."""
    return [event("content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "tool_use", "id": call_id,
                                                            "name": "get_weather", "input": {}}}),
            *(event("content_block_delta", {"type": "content_block_delta", "index": index,
                                            "delta": {"type": "input_json_delta",
                                                      "partial_json": p}}) for p in parts),
            event("content_block_stop", {"type": "content_block_stop", "index": index})]


def stop(reason: str) -> str:
    return event("message_delta", {"type": "message_delta",
                                   "delta": {"stop_reason": reason, "stop_sequence": None}})


START = event("message_start", {"type": "message_start", "message": {"id": "msg_1"}})
END = event("message_stop", {"type": "message_stop"})


def passed_on(events: list[str]) -> list[str]:
    async def source():
        for e in events:
            yield e

    async def collect() -> list[str]:
        return [e async for e in shown(source())]

    return asyncio.run(collect())


def read(events: list[str]) -> list[tuple[str, dict]]:
    out = []
    for e in events:
        head, data = e.split("\n", 1)
        out.append((head.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return out


def test_a_stream_with_object_calls_passes_unchanged() -> None:
    events = [START, *tool_use(0, "call_1", ['{"city"', ':"Paris"}']),
              *tool_use(1, "call_2", ["{}"]), stop("tool_use"), END]
    assert passed_on(events) == events


@pytest.mark.parametrize("parts", [['"Par', 'is"'], ['{"city":"Par'], ["Sure: ", '{"a":1}']])
def test_a_streamed_call_that_is_no_object_is_a_text_block_of_its_index(parts: list[str]) -> None:
    thinking = event("content_block_start", {"type": "content_block_start", "index": 0,
                                             "content_block": {"type": "thinking"}})
    events = [START, thinking, *tool_use(1, "call_1", parts), stop("tool_use"), END]
    assert read(passed_on(events)) == read([START, thinking]) + [
        ("content_block_start", {"type": "content_block_start", "index": 1,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                 "delta": {"type": "text_delta",
                                           "text": "get_weather " + "".join(parts)}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": "end_turn", "stop_sequence": None}}),
        ("message_stop", {"type": "message_stop"})]


def test_a_stream_keeps_tool_use_where_one_call_is_left() -> None:
    events = [START, *tool_use(0, "call_1", ['"Paris"']), *tool_use(1, "call_2", ["{}"]),
              stop("tool_use"), END]
    out = passed_on(events)
    assert [d["content_block"]["type"] for n, d in read(out) if n == "content_block_start"] == [
        "text", "tool_use"]
    assert out[-2:] == [stop("tool_use"), END]


def test_a_stream_that_breaks_inside_a_block_is_passed_on_as_it_came() -> None:
    error = event("error", {"type": "error", "error": {"type": "api_error", "message": "x"}})
    block = tool_use(0, "call_1", ['"Par'])[:2]  # no content_block_stop
    assert passed_on([START, *block, error]) == [START, *block, error]
    assert passed_on([START, *block]) == [START, *block]
