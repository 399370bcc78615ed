"""harmony_plugins._turn: the request object. Expected values are written from the contract."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from types import MappingProxyType, SimpleNamespace

import pytest

from harmony_plugins import (
    ChatResult,
    ContentText,
    EndOfTurn,
    LeakSuspected,
    MessageBegin,
    MessageEnd,
    ReasoningText,
    Recovery,
    Request,
    Step,
    StreamParser,
    ToolCallArguments,
    ToolCallBegin,
    ToolCallEnd,
    Turn,
    fold,
    parse_ids,
    parse_text,
    rules,
)
from harmony_plugins._steps import EMPTY, CallDelta
from harmony_plugins._switches import switch
from harmony_plugins._tools import declared_tools, name_and_schema
from harmony_plugins.vocab import o200k
from tests.data import STRICT, variant
from tests.garbage import cyclic_garbage

WEATHER = variant(None, STRICT)
CALL = ("<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
        '{"city": "Paris"}<|call|>')


@pytest.mark.parametrize("value, on", [
    ("1", True), ("true", True), ("TRUE", True), ("yes", True), (" on ", True),
    ("0", False), ("", False), (None, False), ("no", False), ("2", False),
])
def test_switch_is_spelled_one_way(value, on):
    assert switch(value) is on


def test_declared_tools_take_every_shape():
    tools = [
        WEATHER,
        {"type": "function", "name": "lookup", "parameters": {"type": "object"}},
        {"type": "code_interpreter"},
        {"type": "namespace", "name": "crm", "tools": [
            {"type": "function", "name": "find", "parameters": {"type": "object"}}]},
        {"type": "file_search"},
    ]
    assert declared_tools(tools) == [
        WEATHER,
        {"type": "function", "name": "lookup", "parameters": {"type": "object"}},
        "python",
        {"name": "crm__find", "parameters": {"type": "object"}},
        {"type": "file_search"},
    ]


class _ToolMapping(Mapping):
    """A mapping that is not a dict (as a server might hand over a read-only view)."""

    def __init__(self, data: dict) -> None:
        self._data = data

    def __getitem__(self, key: str) -> object:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def _as_objects(tool: dict) -> SimpleNamespace:
    """A tool as attributes (as the engines' pydantic tool objects hold it)."""
    function = SimpleNamespace(**tool["function"])
    return SimpleNamespace(type=tool["type"], function=function)


@pytest.mark.parametrize("shape", [
    dict, MappingProxyType, _ToolMapping, _as_objects,
    lambda tool: {**tool, "function": MappingProxyType(tool["function"])},
], ids=["dict", "mappingproxy", "mapping", "objects", "nested_proxy"])
def test_a_tool_in_any_mapping_or_object_shape_names_its_call_and_checks_it(shape):
    """Whatever holds the tool (a dict, another mapping, attributes), its name resolves the
    call and its schema checks the arguments (contract section 3)."""
    for arguments, outcome in (('{"city": "Paris"}', "surfaced"),
                               ('{"town": "Paris"}', "schema_mismatch")):
        seen = []
        turn = Turn(Request([shape(variant(None, STRICT))]), observer=seen.append)
        call = CALL.replace('{"city": "Paris"}', arguments)
        step = turn.feed_text(call, finish="stop")
        assert [c.name for c in step.calls if c.id is not None] == ["get_weather"]
        assert seen[0].outcomes == {outcome: 1}


def test_tools_given_as_a_tuple_are_read_as_a_list_is():
    seen = []
    turn = Turn(Request((variant(None, STRICT),)), observer=seen.append)
    step = turn.feed_text(CALL, finish="stop")
    assert [c.name for c in step.calls if c.id is not None] == ["get_weather"]
    assert seen[0].outcomes == {"surfaced": 1}


@pytest.mark.parametrize(("parameters", "outcome"), [
    # a schema in another mapping is declared, but jsonschema cannot apply it (rules.md)
    (MappingProxyType(STRICT), "unchecked"),
    # no mapping at all is no schema: the tool is declared without one
    (json.dumps(STRICT), "surfaced"),
    (None, "surfaced"),
])
def test_a_tool_s_parameters_are_its_schema_only_when_they_are_a_mapping(parameters, outcome):
    tool = variant(None, STRICT)
    tool["function"]["parameters"] = parameters
    seen = []
    turn = Turn(Request([tool]), observer=seen.append)
    step = turn.feed_text(CALL.replace('"city"', '"town"'), finish="stop")
    assert [c.name for c in step.calls if c.id is not None] == ["get_weather"]
    assert seen[0].outcomes == {outcome: 1}


def test_tool_choice_none_declares_nothing_and_counts_the_call_as_undeclared():
    seen = []
    turn = Turn(Request([WEATHER], tool_choice="none"), observer=seen.append)
    step = turn.feed_text(CALL, finish="stop")
    assert step.calls == ()
    assert seen[0].outcomes == {"undeclared": 1}
    assert seen[0].recoveries == {"undeclared_function": 1}


@pytest.mark.parametrize(("tools", "pass_undeclared", "surfaced", "outcomes"), [
    ([WEATHER], False, 1, {"surfaced": 1}),
    ([], False, 0, {"undeclared": 1}),
    ([], True, 1, {"undeclared": 1}),  # passed through: still one call, one outcome
    ([WEATHER], True, 1, {"surfaced": 1}),
])
def test_each_call_has_exactly_one_outcome(tools, pass_undeclared, surfaced, outcomes):
    seen = []
    turn = Turn(Request(tools, pass_undeclared=pass_undeclared), observer=seen.append)
    step = turn.feed_text(CALL, finish="stop")
    assert len(step.calls) == surfaced
    assert seen[0].outcomes == outcomes
    assert sum(seen[0].outcomes.values()) == 1
    assert set(seen[0].outcomes) <= set(rules.OUTCOMES)
    # The metric's labels are the contract's (section 9), whatever the outcome.
    assert {rules.outcome_label(o) for o in rules.OUTCOMES} == {
        "surfaced", "undeclared", "invalid_json", "not_object", "schema_mismatch"}


def test_one_step_per_feed_with_text_calls_and_the_end():
    turn = Turn(Request([WEATHER]), id_factory=lambda: "call_1")
    first = turn.feed_text("<|channel|>analysis<|message|>Hmm.<|end|>")
    assert (first.reasoning, first.content, first.calls) == ("Hmm.", "", ())
    second = turn.feed_text(CALL[:-len("<|call|>")])
    assert second.calls == (CallDelta(0, "call_1", "get_weather", '{"city": "Paris"}'),)
    last = turn.feed_text("<|call|>", finish="stop")
    assert [(e.index, e.arguments, e.outcome) for e in last.ended] == [
        (0, '{"city": "Paris"}', "surfaced")]
    assert last.finish is not None and last.finish.finish_reason == "tool_calls"
    assert turn.closed


def test_schema_is_checked_from_the_full_tools():
    seen = []
    turn = Turn(Request([WEATHER]), observer=seen.append)
    turn.feed_text(CALL.replace('"Paris"', "3"), finish="stop")
    assert seen[0].outcomes == {"schema_mismatch": 1}


def test_summary_is_reported_once_and_the_core_logs_nothing(caplog):
    """Contract section 9: one log line per response that needed a rule, with each rule. The
    line is the adapters' observer's (adapter_support.metrics), written from the one Summary the
    turn reports; the core itself writes to no logger, at any level."""
    from harmony_plugins.adapter_support.metrics import Counting

    seen = []
    counting = Counting(logging.getLogger("harmony_ext.test_turn"), count=False)

    def observe(summary):
        seen.append(summary)
        counting(summary)

    turn = Turn(Request([WEATHER]), observer=observe)
    with caplog.at_level(logging.DEBUG):
        turn.feed_text("<|channel|>final<|message|>Hi<|end|>junk words<|start|>assistant"
                       "<|channel|>final<|message|>!<|return|>")
        assert caplog.records == []  # nothing before the response ends
        turn.close()
        turn.close()  # a second close is empty and reports nothing
    assert len(seen) == 1
    assert seen[0].recoveries == {"free_text": 1}
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("harmony_ext.test_turn", logging.INFO,
         "harmony-ext: request=- rules=free_text(final)")]


def test_leaks_are_reported_with_an_excerpt():
    seen = []
    turn = Turn(Request([WEATHER]), observer=seen.append)
    turn.feed_ids([], finish="stop")  # nothing fed: an empty response still reports
    assert seen[0].leaks == [] and seen[0].outcomes == {}
    turn = Turn(Request([WEATHER]), observer=seen.append)
    text = "<|channel|>final<|message|>use commentary to=functions.get_weather json now<|return|>"
    turn.feed_text(text, finish="stop")
    assert len(seen[1].leaks) == 1 and "to=functions.get_weather" in seen[1].leaks[0]


# What each rule touched and each call's outcome, by the contract's sections: a dropped call by
# its name (3, 10), a forged turn by its role (2), a rule inside a message by that message's
# channel as written (2, 3) or its call's name (4), text a rule makes content as `final` (2),
# nothing outside any message (2). (output, request, applied, calls)
TOUCHED = [
    ('<|channel|>commentary to=functions.lookup <|constrain|>json<|message|>{"q": 1}<|end|>'
     "<|start|>assistant<|channel|>final<|message|>Hi<|end|><|start|>user<|message|>more",
     {}, {("undeclared_function", "lookup"): 1, ("forged_turn", "user"): 1,
          ("after_end_of_turn", ""): 1}, [("lookup", "undeclared")]),
    ('<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>'
     '{"city": "Paris"}]<|call|>', {},
     {("after_json_value", "get_weather"): 1}, [("get_weather", "surfaced")]),
    ("<|channel|>comment<|message|>x<|end|><|channel|>final<|message|>a<|constrain|>b<|end|>",
     {}, {("unknown_channel", "comment"): 1, ("stray_marker", "final"): 1}, []),
    ("<|channel|>final<|message|>a<|end|>Removing it now.<|start|>assistant<|channel|>analysis"
     " to=browser.search<|message|>{}<|call|>", {},
     {("free_text", "final"): 1, ("undeclared_recipient", "browser.search"): 1}, []),
    (CALL + CALL.replace("Paris", "Rome"), {"parallel_tool_calls": False},
     {("parallel_calls_refused", "get_weather"): 1}, [("get_weather", "surfaced")]),
    ("<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{}<|end|>", {},
     {("forged_turn", "functions.get_weather"): 1, ("after_end_of_turn", ""): 1}, []),
]


@pytest.mark.parametrize("text, options, applied, calls", TOUCHED)
def test_the_summary_names_what_each_rule_touched_and_each_call(text, options, applied, calls):
    seen = []
    Turn(Request([WEATHER], **options), observer=seen.append).feed_text(text, finish="stop")
    summary = seen[0]
    assert (summary.applied, summary.calls) == (applied, calls)
    # the same counts as the counters read, rule by rule and outcome by outcome
    by_rule: dict[str, int] = {}
    for (rule, _at), n in applied.items():
        by_rule[rule] = by_rule.get(rule, 0) + n
    assert summary.recoveries == by_rule
    assert summary.outcomes == {o: [c[1] for c in calls].count(o) for _, o in calls}
    assert summary.needed_rules


@pytest.mark.parametrize("text, needed", [
    (CALL, False),  # a clean call: nothing to say
    ("<|channel|>final<|message|>Hi<|return|>", False),
    (CALL.replace('"Paris"', "3"), True),  # schema_mismatch: an outcome, no recovery
    ("<|channel|>final<|message|>use commentary to=functions.get_weather json now<|return|>",
     True),  # a suspected leak alone
])
def test_needed_rules_is_false_only_for_a_response_that_needed_none(text, needed):
    seen = []
    Turn(Request([WEATHER]), observer=seen.append).feed_text(text, finish="stop")
    assert seen[0].needed_rules is needed
    assert seen[0].recoveries == {}


def test_an_unchecked_schema_is_a_rule_the_response_needed():
    seen = []
    tool = variant(None, {"type": "object", "properties": {"city": {"$ref": "#/nowhere"}}})
    Turn(Request([tool]), observer=seen.append).feed_text(CALL, finish="stop")
    assert seen[0].calls == [("get_weather", "unchecked")]
    assert seen[0].needed_rules


def test_each_leak_is_handed_over_in_one_step():
    """A step takes the leaks flagged since the last one: the step after does not repeat them
    (the close's step is built whole, as any step with more than one kind of part)."""
    turn = Turn(Request([WEATHER]))
    text = "<|channel|>final<|message|>use commentary to=functions.get_weather json now"
    steps = [turn.feed_text(text), turn.feed_text(" and more."), turn.close()]
    assert [len(step.leaks) for step in steps] == [1, 0, 0]
    assert "to=functions.get_weather" in steps[0].leaks[0]


def test_an_observer_that_fails_reaches_the_caller():
    """Documented: an observer must not raise (the adapters' never does); the core does not
    hide an exception of its caller's code."""
    def broken(summary):
        raise ValueError("registry gone")

    turn = Turn(Request(), observer=broken)
    assert turn.feed_text("<|channel|>final<|message|>Hi").content == "Hi"
    with pytest.raises(ValueError, match="registry gone"):
        turn.close()
    assert turn.closed


def test_building_parses_nothing():
    turn = Turn(Request([WEATHER]))
    assert turn._machine is None and turn.request._declared is None


def test_empty_feed_is_the_shared_empty_step():
    turn = Turn(Request())
    assert turn.feed_text("") is EMPTY and isinstance(EMPTY, Step)


def test_chat_result_folds_steps():
    turn = Turn(Request([WEATHER]), id_factory=lambda: "call_9")
    result = ChatResult()
    deltas = [result.add(turn.feed_text(piece)) for piece in
              ("<|channel|>analysis<|message|>A", "B<|end|>", CALL)]
    result.add(turn.close())
    assert deltas == [
        {"reasoning": "A"},
        {"reasoning": "B"},
        {"tool_calls": [{"index": 0, "id": "call_9", "type": "function",
                         "function": {"name": "get_weather",
                                      "arguments": '{"city": "Paris"}'}}]},
    ]
    assert result.message() == {
        "reasoning": "AB", "content": None, "finish_reason": "tool_calls",
        "tool_calls": [{"id": "call_9", "type": "function", "function": {
            "name": "get_weather", "arguments": '{"city": "Paris"}'}}]}


@pytest.mark.parametrize("feed, data", [("feed_ids", [200005]), ("feed_text", "x")])
def test_stream_parser_refuses_feeds_after_close_even_once_fed(feed, data):
    parser = StreamParser()
    getattr(parser, feed)(data)
    parser.close()
    with pytest.raises(RuntimeError, match="after close"):
        getattr(parser, feed)(data)


@pytest.mark.parametrize("events", [False, True])
@pytest.mark.parametrize("feed", ["feed_ids", "feed_text"])
def test_a_reported_turn_is_freed_by_its_last_reference(feed, events):
    """A finished turn holds no reference back to itself: freed at once, not left to the
    cyclic collector (a server finishes a turn per response); and its feeds still refuse."""
    text = "<|channel|>analysis<|message|>Hmm.<|end|><|start|>assistant" + CALL
    data = o200k.tiktoken_encoding().encode(text, allowed_special="all") if "ids" in feed else text
    pieces = [data[i : i + 3] for i in range(0, len(data), 3)]

    def run() -> None:
        turn = Turn(Request([WEATHER]), events=events)
        for piece in pieces:
            getattr(turn, feed)(piece)
        turn.close()
        with pytest.raises(RuntimeError, match="after close"):
            getattr(turn, feed)(pieces[0])

    assert cyclic_garbage(run) == 0


def test_a_turn_whose_tools_come_late_is_freed_once_reported():
    def run() -> None:
        turn = Turn(Request(None, tools_known=False))
        turn.feed_text("<|channel|>analysis<|message|>Hmm.<|end|><|start|>assistant" + CALL,
                       finish="stop")
        turn.declare([WEATHER])
        settled = Turn(Request(None, tools_known=False))
        settled.feed_text(CALL, finish="stop")
        settled.settle()

    assert cyclic_garbage(run) == 0


# -- a request whose tools are not known yet (Turn.declare) -----------------------------

def test_tools_unknown_then_declared_surfaces_the_call_once():
    seen = []
    turn = Turn(Request(None, tools_known=False), id_factory=lambda: "call_1",
                observer=seen.append)
    assert turn.tools_unknown
    first = turn.feed_text("<|channel|>analysis<|message|>Hmm.<|end|><|start|>assistant"
                           + CALL[:40])
    assert (first.reasoning, first.content, first.calls) == ("Hmm.", "", ())
    second = turn.feed_text(CALL[40:])
    assert second.calls == ()  # nothing is a call before the tools are known
    released = turn.declare([WEATHER])
    assert not turn.tools_unknown
    assert released.reasoning == ""  # handed out already
    assert released.calls == (CallDelta(0, "call_1", "get_weather", '{"city": "Paris"}'),)
    last = turn.close()
    assert last.finish is not None and last.finish.finish_reason == "tool_calls"
    assert seen[0].outcomes == {"surfaced": 1}
    assert seen[0].recoveries == {}


def test_tools_declared_late_reparse_token_ids_as_ids():
    """A turn fed ids parses them again as ids once the tools are known (not as text)."""
    turn = Turn(Request(None, tools_known=False), id_factory=lambda: "call_1")
    ids = o200k.tiktoken_encoding().encode(
        "<|channel|>analysis<|message|>Hmm.<|end|><|start|>assistant" + CALL,
        allowed_special="all")
    half = len(ids) // 2
    assert turn.feed_ids(ids[:half]).calls == ()
    assert turn.feed_ids(ids[half:]).calls == ()
    released = turn.declare([WEATHER])
    assert released.calls == (CallDelta(0, "call_1", "get_weather", '{"city": "Paris"}'),)
    assert turn.feed_ids([]).calls == ()  # the turn reads ids still
    assert turn.close().finish.finish_reason == "tool_calls"


def test_tools_never_declared_drop_calls_by_a_named_rule():
    """A parse that never has the tools surfaces no call and counts a possible one by the
    rule tools_unknown alone: no call outcome (it may be a declared call: never undeclared)."""
    seen = []
    turn = Turn(Request(None, tools_known=False), observer=seen.append)
    step = turn.feed_text(CALL, finish="stop")
    assert turn.unresolved_calls == 1
    assert seen == []  # closed, but reported once the tools are known, or never will be
    turn.settle()
    turn.settle()
    assert step.calls == ()
    assert len(seen) == 1
    assert seen[0].outcomes == {}
    assert seen[0].recoveries == {"tools_unknown": 1}
    assert seen[0].applied == {("tools_unknown", "get_weather"): 1}  # the function it named


def test_a_possible_call_named_by_its_content_type_is_named_in_the_summary():
    """Contract section 3: a content type naming a function serves as the recipient; with the
    tools unknown the message is dropped by tools_unknown, which names that function."""
    seen = []
    turn = Turn(Request(None, tools_known=False), observer=seen.append)
    turn.feed_text('<|channel|>final <|constrain|>functions.get_weather<|message|>{"city": '
                   '"Paris"}<|return|>', finish="stop")
    turn.settle()
    assert (seen[0].recoveries, seen[0].applied) == (
        {"tools_unknown": 1}, {("tools_unknown", "get_weather"): 1})


@pytest.mark.parametrize("output, applied", [
    ("<|start|>final<|message|>Hi<|return|>", ("channel_in_role", "final")),
    ("<|channel|>final blah<|message|>Hi<|return|>", ("header_junk", "final")),
    ("<|channel|>analysis<|message|>r<|end|><|start|>analysis<|message|>t<|end|>",
     ("channel_in_role", "analysis")),
])
def test_a_rule_in_a_header_names_the_messages_channel(output, applied):
    """Summary.applied: a rule applied in a message names that message's channel, as
    written."""
    seen = []
    Turn(Request([]), observer=seen.append).feed_text(output, finish="stop")
    assert seen[0].applied == {applied: 1}


@pytest.mark.parametrize("first, then", [("feed_text", "feed_ids"), ("feed_ids", "feed_text")])
def test_a_turn_is_fed_one_way_and_says_which_when_fed_the_other(first, then):
    """Token ids or text, never both: the error names the call made and the one made before."""
    turn = Turn(Request([WEATHER]))
    getattr(turn, first)("" if first == "feed_text" else [])
    with pytest.raises(RuntimeError, match=rf"^Turn\.{then}\(\) on a turn already fed with "
                                           rf"{first}\(\)$"):
        getattr(turn, then)([] if then == "feed_ids" else "")


@pytest.mark.parametrize("tools_known", [True, False], ids=["known-empty", "never-known"])
def test_an_undeclared_builtin_call_counts_the_same_however_the_tools_arrive(tools_known):
    """Contract section 2: a built-in recipient the request did not declare is no call and no
    content, one rule (undeclared_recipient), no outcome: with no tools, tools never given,
    or tools given late (below)."""
    search = '<|channel|>analysis to=browser.search<|message|>{"query": "x"}<|call|>'
    seen = []
    turn = Turn(Request([] if tools_known else None, tools_known=tools_known),
                observer=seen.append)
    step = turn.feed_text(search, finish="stop")
    assert turn.unresolved_calls == 0  # never a maybe-call: no function is named
    turn.settle()
    assert (step.calls, step.content, step.reasoning) == ((), "", "")
    assert seen[0].recoveries == {"undeclared_recipient": 1} and seen[0].outcomes == {}
    late = []
    turn = Turn(Request(None, tools_known=False), observer=late.append)
    turn.feed_text(search)
    turn.declare([WEATHER])
    turn.close()
    assert late == seen


def test_declared_tools_that_do_not_name_the_call():
    seen = []
    turn = Turn(Request(None, tools_known=False), observer=seen.append)
    turn.feed_text(CALL)
    assert turn.declare([{"type": "function", "function": {"name": "other"}}]).calls == ()
    turn.close()
    assert seen[0].outcomes == {"undeclared": 1}
    assert seen[0].recoveries == {"undeclared_function": 1}


def test_tools_declared_after_close_report_once_with_them():
    seen = []
    turn = Turn(Request(None, tools_known=False), observer=seen.append)
    whole = turn.feed_text("<|channel|>analysis<|message|>Hmm.<|end|><|start|>assistant" + CALL,
                           finish="stop")
    assert (whole.reasoning, whole.calls, seen) == ("Hmm.", (), [])
    released = turn.declare([WEATHER])
    assert [c.name for c in released.calls] == ["get_weather"]
    assert released.finish is not None and released.finish.finish_reason == "tool_calls"
    turn.settle()  # already reported: nothing more
    assert [s.outcomes for s in seen] == [{"surfaced": 1}]


def test_declare_only_once():
    with pytest.raises(RuntimeError, match="known"):
        Turn(Request([WEATHER])).declare([WEATHER])
    turn = Turn(Request(None, tools_known=False))
    turn.declare([WEATHER])
    with pytest.raises(RuntimeError, match="known"):
        turn.declare([WEATHER])


def test_chat_request_tools_include_those_on_system_and_developer_messages():
    from harmony_plugins._tools import chat_request_tools

    time = {"type": "function", "function": {"name": "get_time"}}
    request = {"tools": [WEATHER], "messages": [
        {"role": "system", "content": "x", "tools": [time]},
        {"role": "user", "content": "hi", "tools": [{"type": "function",
                                                     "function": {"name": "forged"}}]},
    ]}
    assert chat_request_tools(request) == [WEATHER, time]
    assert chat_request_tools({"messages": []}) == []


def test_fold_keeps_each_calls_id_and_name_whichever_step_brought_them():
    """Each call's pieces are joined under its first appearance, with the id and name of the
    step that began it, even when another call's step comes between."""
    other = Step(calls=(CallDelta(1, "call_2", "g", "{}"),))
    begun = Step(calls=(CallDelta(0, "call_1", "f", "{"),))
    piece = Step(calls=(CallDelta(0, None, None, "}"),))
    assert fold([begun, other, piece]).calls == (
        CallDelta(0, "call_1", "f", "{}"), CallDelta(1, "call_2", "g", "{}"))
    begun_late = Step(calls=(CallDelta(0, "call_1", "f", "}"),))
    assert fold([Step(calls=(CallDelta(0, None, None, "{"),)), other, begun_late]).calls == (
        CallDelta(0, "call_1", "f", "{}"), CallDelta(1, "call_2", "g", "{}"))


def test_fold_keeps_every_steps_events_in_order():
    one = Step(content="a", events=[MessageBegin("content", "final", "final", None, None),
                                    ContentText("a")])
    two = Step(content="b", events=[ContentText("b"), MessageEnd("return")])
    folded = fold([one, EMPTY, two])
    assert folded.content == "ab"
    assert list(folded.events) == [*one.events, *two.events]
    assert fold([Step(content="a"), Step(content="b")]).events == ()


@pytest.mark.parametrize("feed", ["feed_ids", "feed_text"])
def test_a_feed_looked_up_before_the_first_one_still_parses_each_delta(feed):
    """A caller that keeps ``turn.feed_text`` from before the first feed parses with it as
    with the attribute looked up per call."""
    turn = Turn(Request(None))
    take = getattr(turn, feed)
    pieces = ["<|channel|>final<|message|>", "Hi", " there", ""]
    if feed == "feed_ids":
        encode = o200k.tiktoken_encoding().encode
        pieces = [encode(p, allowed_special="all") for p in pieces]
    steps = [take(p) for p in pieces]
    assert [s.content for s in steps] == ["", "Hi", " there", ""]
    assert steps[-1] == EMPTY
    assert turn.close().finish.finish_reason == "stop"


@pytest.mark.parametrize("events", [True, False])
def test_declare_hands_back_the_events_less_reasoning_to_a_turn_that_keeps_them(events):
    turn = Turn(Request(None, tools_known=False), events=events, id_factory=lambda: "call_1")
    turn.feed_text("<|channel|>analysis<|message|>Hm.<|end|><|start|>assistant" + CALL)
    step = turn.declare([WEATHER])
    assert step.reasoning == ""
    assert [(c.id, c.name) for c in step.calls] == [("call_1", "get_weather")]
    if events:
        kinds = {e.__class__ for e in step.events}
        assert ToolCallBegin in kinds and ReasoningText not in kinds
    else:
        assert step.events == ()


def test_a_tool_with_an_empty_name_declares_nothing():
    assert name_and_schema({"type": "function", "function": {"name": "", "parameters": {}}}) == (
        None, None)
    assert name_and_schema({"type": "function", "function": {"name": "f"}}) == ("f", None)


def test_bad_finish_is_a_value_error():
    with pytest.raises(ValueError):
        parse_text("x", finish="maybe")
    with pytest.raises(ValueError):
        parse_ids([], finish="maybe")


def test_a_stream_parser_whose_tools_are_unknown_drops_each_possible_call_by_its_rule():
    """StreamParser(tools_unknown=True), even given tools: no call is surfaced, each message
    that may be one is counted by ``tools_unknown`` alone, with no call outcome."""
    parser = StreamParser([WEATHER], tools_unknown=True)
    events = parser.feed_text(CALL) + parser.close()
    assert not any(isinstance(e, ToolCallBegin) for e in events)
    assert (parser.maybe_calls, parser.recoveries, parser.call_outcomes) == (
        1, {"tools_unknown": 1}, {})
    known = StreamParser([WEATHER])
    assert any(isinstance(e, ToolCallBegin) for e in known.feed_text(CALL) + known.close())
    assert (known.maybe_calls, known.call_outcomes) == (0, {"surfaced": 1})


EVENT_SAMPLES = [
    MessageBegin("content", "final", "final", None, None), MessageEnd("end"),
    ReasoningText("r"), ContentText("c"), ToolCallBegin(0, "call_1", "f"),
    ToolCallArguments(0, "{}"), ToolCallEnd(0, "{}", "surfaced"), EndOfTurn("return", "stop"),
    Recovery("free_text"), LeakSuspected("<|end|>"),
]


@pytest.mark.parametrize("event", EVENT_SAMPLES, ids=lambda e: type(e).__name__)
def test_events_are_frozen_slotted_data(event):
    """Events are values, as h11's and wsproto's are: they cannot be changed once handed out
    (a caller may keep them while the turn goes on), hash, and carry no instance dict."""
    import dataclasses

    field = dataclasses.fields(event)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(event, field, getattr(event, field))
    assert not hasattr(event, "__dict__")
    assert hash(event) == hash(dataclasses.replace(event)) and event == dataclasses.replace(event)


TWO_CALLS = (CALL.replace("<|call|>", "<|end|>") + "<|start|>assistant"
             + CALL.replace("Paris", "Rome"))


@pytest.mark.parametrize("parallel", [True, False, None])
def test_parallel_tool_calls_false_surfaces_the_first_call_only(parallel):
    """Contract section 10: with ``parallel_tool_calls`` false the first call is surfaced and
    each later one dropped, counted by ``parallel_calls_refused`` with no call outcome; true,
    or not given (None: the request did not say), every call is."""
    seen = []
    request = (Request([WEATHER]) if parallel is None
               else Request([WEATHER], parallel_tool_calls=parallel))
    message = ChatResult()
    message.add(Turn(request, observer=seen.append).feed_text(TWO_CALLS, finish="stop"))
    cities = [json.loads(c["function"]["arguments"])["city"]
              for c in message.message()["tool_calls"]]
    if parallel is False:
        assert cities == ["Paris"]
        assert seen[0].recoveries == {"parallel_calls_refused": 1}
        assert seen[0].outcomes == {"surfaced": 1}
    else:
        assert cities == ["Paris", "Rome"]
        assert "parallel_calls_refused" not in seen[0].recoveries
    declared_late = Turn(Request(None, tools_known=False,
                                 parallel_tool_calls=parallel is not False))
    declared_late.feed_text(TWO_CALLS)
    assert len(declared_late.declare([WEATHER]).calls) == (1 if parallel is False else 2)
