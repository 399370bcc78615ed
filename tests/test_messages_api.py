"""A call on the Anthropic Messages API (contract section 4): a ``tool_use`` block where its
arguments are a JSON object, else a ``text`` block holding the function's name and the
arguments as written; and the ``stop_reason`` of a response left without a ``tool_use`` block.

Every expected value is written by hand from contract section 4.
"""

from __future__ import annotations

import pytest

from harmony_plugins import Request, Turn, messages_block, messages_stop_reason

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
