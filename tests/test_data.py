"""The shared test data (tests/data.py, harmony_ext_testing/client.py) is what the other tests
take it to be (the known sequence is checked against openai-harmony and tiktoken in
test_o200k.py)."""

from __future__ import annotations

import pytest

from harmony_ext_testing.client import WEATHER, fold_chunks, fold_deltas
from tests.data import STRICT, responses_tool, variant


def test_variants_are_fresh_copies() -> None:
    strict = variant(None, STRICT)
    assert "description" not in strict["function"]
    assert strict["function"]["parameters"]["additionalProperties"] is False
    unit = variant(unit={"type": "string"})
    assert set(unit["function"]["parameters"]["properties"]) == {"city", "unit"}
    assert set(WEATHER["function"]["parameters"]["properties"]) == {"city"}
    assert "additionalProperties" not in WEATHER["function"]["parameters"]
    assert responses_tool(WEATHER) == {
        "type": "function", "name": "get_weather", "description": "Current weather in a city",
        "parameters": WEATHER["function"]["parameters"]}


def test_fold_puts_a_stream_together_as_a_client_does() -> None:
    chunks = [
        {"choices": [{"delta": {"role": "assistant"}, "finish_reason": None}]},
        {"choices": [{"delta": {"reasoning_content": "Need "}, "finish_reason": None}]},
        {"choices": [{"delta": {"reasoning": "weather."}, "finish_reason": None}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                                "function": {"name": "get_weather",
                                                             "arguments": '{"ci'}}]}}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {
            "arguments": 'ty": "Paris"}'}}]}, "finish_reason": "tool_calls"}]},
        {"choices": []},  # the usage chunk
    ]
    assert fold_chunks(chunks) == {
        "reasoning": "Need weather.", "content": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "get_weather", "arguments": '{"city": "Paris"}'}}],
        "finish_reason": "tool_calls"}
    assert fold_deltas([None, {"content": "Hi"}, {"content": "!"}]) == {
        "reasoning": None, "content": "Hi!", "tool_calls": []}


def test_fold_refuses_a_name_repeated_on_a_later_item() -> None:
    first = {"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                             "function": {"name": "f"}}]}
    again = {"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "{}"}}]}
    with pytest.raises(AssertionError, match="call 0 repeats its id/name"):
        fold_deltas([first, again])


@pytest.mark.parametrize("item, problem", [
    ({"index": 0, "type": "function", "function": {"name": "f"}}, "call 0 starts without"),
    ({"index": 0, "id": "call_1", "type": "function", "function": {}}, "call 0 starts without"),
    ({"index": 0, "id": "call_1", "function": {"name": "f"}}, "call 0 starts without"),
    ({"index": 1, "id": "call_1", "type": "function", "function": {"name": "f"}},
     r"call indexes \[1\]"),
])
def test_fold_refuses_a_call_that_starts_out_of_shape(item, problem) -> None:
    with pytest.raises(AssertionError, match=problem):
        fold_deltas([{"tool_calls": [item]}])
