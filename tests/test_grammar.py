"""harmony_plugins._grammar and _tools.held_schemas: the one grammar of a turn that ends in a
call or in an answer a schema holds (contract section 10), as plain data. What it admits is
walked token by token with xgrammar in the vLLM tier (tests/vllm/test_answer_or_call.py); here,
its shape, written by hand."""

from __future__ import annotations

import pytest

from harmony_plugins import answer_or_call, harmony, held_schemas

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
ANSWER = {"type": "object", "properties": {"temp": {"type": "integer"}}}


def test_the_call_headers_a_grammar_admits():
    assert harmony.call_headers("get_weather") == (
        "<|channel|>commentary to=functions.get_weather<|message|>",
        " to=functions.get_weather<|channel|>commentary<|message|>",
        "<|channel|>commentary to=functions.get_weather json<|message|>",
        " to=functions.get_weather<|channel|>commentary json<|message|>",
        "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>",
        " to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>",
        "<|channel|>analysis to=functions.get_weather<|message|>",
        " to=functions.get_weather<|channel|>analysis<|message|>",
        "<|channel|>analysis to=functions.get_weather json<|message|>",
        " to=functions.get_weather<|channel|>analysis json<|message|>",
        "<|channel|>analysis to=functions.get_weather <|constrain|>json<|message|>",
        " to=functions.get_weather<|channel|>analysis <|constrain|>json<|message|>",
    )
    assert harmony.ANSWER_HEADERS == ("<|channel|>final<|message|>",
                                      "<|channel|>final json<|message|>",
                                      "<|channel|>final <|constrain|>json<|message|>")


def test_free_messages_then_one_call_or_the_answer():
    tag = answer_or_call({"get_weather": WEATHER}, ANSWER)
    assert tag["type"] == "structural_tag"
    free, ends = tag["format"]["elements"]
    assert free == {"type": "star", "content": {"type": "or", "elements": [
        {"type": "sequence", "elements": [
            {"type": "tag", "begin": "<|channel|>analysis<|message|>",
             "content": {"type": "any_text"}, "end": "<|end|>"},
            {"type": "const_string", "value": "<|start|>assistant"}]},
        {"type": "sequence", "elements": [
            {"type": "tag", "begin": "<|channel|>commentary<|message|>",
             "content": {"type": "any_text"}, "end": "<|end|>"},
            {"type": "const_string", "value": "<|start|>assistant"}]}]}}
    assert ends["type"] == "or" and len(ends["elements"]) == 12 + 3
    call = ends["elements"][4]
    assert call == {"type": "tag",
                    "begin": "<|channel|>commentary to=functions.get_weather <|constrain|>json"
                             "<|message|>",
                    "content": {"type": "json_schema", "json_schema": WEATHER},
                    "end": ["<|end|>", ""]}
    assert ends["elements"][12] == {"type": "tag", "begin": "<|channel|>final<|message|>",
                                    "content": {"type": "json_schema", "json_schema": ANSWER},
                                    "end": ["<|end|>", ""]}


def test_calls_only_and_the_answer_only():
    assert len(answer_or_call({"a": {"type": "object"}, "b": {"type": "object"}},
                              None)["format"]["elements"][1]["elements"]) == 24
    answer_only = answer_or_call({}, ANSWER)["format"]["elements"][1]["elements"]
    assert [e["begin"] for e in answer_only] == list(harmony.ANSWER_HEADERS)
    with pytest.raises(ValueError, match="neither a call nor an answer"):
        answer_or_call({}, None)


def test_held_schemas_holds_strict_functions_only():
    tools = [
        {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER,
                                          "strict": True}},
        {"type": "function", "function": {"name": "note", "parameters": WEATHER}},
        {"type": "function", "name": "lookup", "parameters": WEATHER, "strict": True},
        {"type": "function", "function": {"name": "bare"}},
        {"type": "web_search"},  # a built-in tool: no function
    ]
    loose = {"type": "object"}
    assert held_schemas(tools) == {"get_weather": WEATHER, "note": loose, "lookup": WEATHER,
                                   "bare": loose}
    assert held_schemas(tools, hold_all=True) == {"get_weather": WEATHER, "note": WEATHER,
                                                  "lookup": WEATHER, "bare": loose}
    assert held_schemas(None) == {} and held_schemas(["plain"]) == {"plain": loose}
