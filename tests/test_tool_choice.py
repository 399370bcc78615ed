"""harmony_plugins._tool_choice: what a request's ``tool_choice`` and ``parallel_tool_calls``
allow, read once, and its three readers in the core: the parse's ``Request``, the grammar's
``answer_or_call`` (contract section 10). Expected values by hand from the contract and the
OpenAI API's forms of ``tool_choice``."""

from __future__ import annotations

import enum
from types import SimpleNamespace

import pytest

from harmony_plugins import Request, ToolChoice, answer_or_call, harmony, read_tool_choice


class Mode(enum.Enum):  # an engine's enum of the modes (not a str)
    NONE = "none"
    REQUIRED = "required"


@pytest.mark.parametrize("tool_choice, expected", [
    (None, ToolChoice()),
    ("auto", ToolChoice()),
    ("none", ToolChoice(calls=False)),
    (Mode.NONE, ToolChoice(calls=False)),
    ("required", ToolChoice(answer=False)),
    (Mode.REQUIRED, ToolChoice(answer=False)),
    ({"type": "function", "function": {"name": "get_weather"}},
     ToolChoice(function="get_weather", answer=False)),
    (SimpleNamespace(type="function", function=SimpleNamespace(name="get_weather")),
     ToolChoice(function="get_weather", answer=False)),
    ({"type": "function", "name": "get_weather"},  # the Responses API's form
     ToolChoice(function="get_weather", answer=False)),
    ({"type": "function", "function": {"name": ""}}, ToolChoice(known=False)),
    ({"type": "file_search"}, ToolChoice(known=False)),  # a hosted tool: read as auto
    ({"type": "allowed_tools", "mode": "auto", "tools": []}, ToolChoice(known=False)),
    ("sometimes", ToolChoice(known=False)),
])
def test_each_form_of_tool_choice(tool_choice, expected):
    assert read_tool_choice(tool_choice) == expected
    assert read_tool_choice(tool_choice, False) == ToolChoice(
        expected.calls, expected.function, expected.answer, False, expected.known)


def test_auto_allows_everything_and_is_known():
    """``"auto"`` (and no ``tool_choice``), field by field by hand rather than against
    ``ToolChoice()``'s defaults: calls to any function, the answer, several calls, a form the
    core reads (an engine keeps its own handling for the forms that are not)."""
    for tool_choice in (None, "auto"):
        choice = read_tool_choice(tool_choice)
        assert (choice.calls, choice.function, choice.answer, choice.parallel, choice.known) \
            == (True, None, True, True, True)


@pytest.mark.parametrize("parallel, expected", [(True, True), (None, True), (False, False)])
def test_only_false_turns_parallel_calls_off(parallel, expected):
    assert read_tool_choice("auto", parallel).parallel is expected


def test_which_functions_a_call_may_name():
    declared = {"get_weather": 1, "get_time": 2}
    assert read_tool_choice("auto").allowed(declared) == declared
    assert read_tool_choice("required").allowed(declared) == declared
    assert read_tool_choice("none").allowed(declared) == {}
    named = read_tool_choice({"type": "function", "name": "get_time"})
    assert named.allowed(declared) == {"get_time": 2}
    assert read_tool_choice({"type": "function", "name": "other"}).allowed(declared) == {}


def test_what_the_parse_reads_of_it():
    """The parse's rules come of the one reading: tool_choice none declares nothing; a forced
    call (required, or a named function) gives the bare-object recovery its functions, only
    where that recovery is on; parallel_tool_calls false, one call."""
    assert Request(["x"], "none").declared == []
    assert Request(["x"], "auto").declared == ["x"]
    tools = ["get_weather", "get_time"]
    assert Request(tools, "required", recover_text_calls=True).rules().forced == set(tools)
    named = {"type": "function", "name": "get_weather"}
    assert Request(tools, named, recover_text_calls=True).rules().forced == {"get_weather"}
    assert Request(tools, "required").rules().forced == frozenset()  # the recovery off
    assert Request(tools, "auto", recover_text_calls=True).rules().forced == frozenset()
    assert Request(tools, parallel_tool_calls=False).rules().single_call
    assert not Request(tools).rules().single_call
    kept = Request(None, "required", parallel_tool_calls=False).with_tools(["x"])
    assert kept.choice == read_tool_choice("required", False) and kept.declared == ["x"]


def _ends(tag: dict) -> list[str]:
    return [element["begin"] for element in tag["format"]["elements"][1]["elements"]]


def test_what_the_grammar_reads_of_it():
    calls = {"get_weather": {"type": "object"}, "get_time": {"type": "object"}}
    answer = {"type": "object", "properties": {"temp": {"type": "integer"}}}
    weather, time = harmony.call_headers("get_weather"), harmony.call_headers("get_time")
    assert _ends(answer_or_call(calls, answer)) == [*weather, *time, *harmony.ANSWER_HEADERS]
    assert _ends(answer_or_call(calls, answer, read_tool_choice("none"))) == list(
        harmony.ANSWER_HEADERS)
    assert _ends(answer_or_call(calls, answer, read_tool_choice("required"))) == [
        *weather, *time]
    named = read_tool_choice({"type": "function", "function": {"name": "get_time"}})
    assert _ends(answer_or_call(calls, answer, named)) == list(time)
    undeclared = read_tool_choice({"type": "function", "function": {"name": "other"}})
    with pytest.raises(ValueError, match="neither a call nor an answer"):
        answer_or_call(calls, answer, undeclared)
