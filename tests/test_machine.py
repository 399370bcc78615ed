"""Every state and transition of the state machine, written by hand from the contract (the
machine's own table, :mod:`harmony_plugins._transitions`, is held to it in
``tests/test_transitions.py``), and the header and argument readers underneath it."""

from __future__ import annotations

from typing import Any

import pytest

from harmony_plugins import _arguments as arguments
from harmony_plugins import _header, rules
from harmony_plugins import harmony as mk
from harmony_plugins._events import (
    ContentText,
    EndOfTurn,
    MessageBegin,
    MessageEnd,
    ReasoningText,
    Recovery,
    ToolCallArguments,
    ToolCallBegin,
    ToolCallEnd,
)
from harmony_plugins._frontends import TextInput
from harmony_plugins._header import (
    final_without_message,
    is_header_like,
    parse_header,
    resolve_recipient,
    role_forges,
)
from harmony_plugins._machine import (
    Body,
    CallBody,
    ContentBody,
    Done,
    DropBody,
    HeaderState,
    Machine,
    ReasoningBody,
    Rules,
)
from harmony_plugins._steps import StepBuilder
from harmony_plugins._tools import tool_names

TOOLS = frozenset({"get_weather", "shell"})

# The three states, and a body's route: the class of the object the machine holds as its state.
HEADER, BODY, DONE = HeaderState, Body, Done
REASONING, CONTENT, CALL, DROP = ReasoningBody, ContentBody, CallBody, DropBody


def state_of(machine: Machine) -> type:
    """HEADER, BODY or DONE: the state the machine is in."""
    return next(kind for kind in (HEADER, BODY, DONE) if isinstance(machine.at, kind))


def route_of(machine: Machine) -> type | None:
    """The route of the body being read (None outside a body)."""
    return type(machine.at) if isinstance(machine.at, BODY) else None

# Prefixes that put a fresh machine in each state (and body route).
STATES = {
    "initial header": ("", HEADER, None),
    "bare header": ("<|channel|>final<|message|>A<|end|>", HEADER, None),
    "role header": ("<|channel|>final<|message|>A<|end|><|start|>assistant", HEADER, None),
    "free header": ("<|channel|>final<|message|>A<|end|>Some text", HEADER, None),
    "reasoning body": ("<|channel|>analysis<|message|>A", BODY, REASONING),
    "content body": ("<|channel|>final<|message|>A", BODY, CONTENT),
    "call body": ("<|channel|>commentary to=functions.shell<|message|>ls", BODY, CALL),
    "dropped body": ("<|channel|>analysis to=python<|message|>1+1", BODY, DROP),
    "done": ("<|channel|>final<|message|>A<|return|>", DONE, None),
}

# The markers by name, as markers.py numbers them (written here from its table).
NAMES = ("start", "end", "message", "channel", "constrain", "return", "call", "end_of_text",
         "ignored")
MARKERS = {name: getattr(mk, name.upper()) for name in NAMES}


def machine_in(prefix: str) -> tuple[Machine, list]:
    machine = Machine(Rules(tools=TOOLS), new_id=lambda: "call_x")
    return machine, feed(machine, prefix)


def feed(machine: Machine, text: str) -> list:
    """Hand ``text`` (markers spelled) to the machine as a turn does; the events it made."""
    front = TextInput()
    parts = []
    for piece in front.feed(text) + front.flush():
        if isinstance(piece, tuple):
            parts.append(machine.text(*piece))
        else:
            parts += machine.marker(piece)
    return events_of(parts)


def events_of(parts: list) -> list:
    """The events the machine's parts stand for, in order."""
    steps = StepBuilder(events=True)
    steps.add_all(parts)
    return list(steps.step().events)


def test_a_machine_built_with_no_switches_drops_an_undeclared_function():
    machine, _ = machine_in("<|channel|>commentary to=functions.other<|message|>{}")
    assert (state_of(machine), route_of(machine)) == (BODY, DROP)
    assert machine.rules.pass_undeclared is False


@pytest.mark.parametrize("state", STATES)
def test_prefixes_reach_their_states(state):
    prefix, expected, route = STATES[state]
    machine, _ = machine_in(prefix)
    assert state_of(machine) == expected
    if route is not None:
        assert route_of(machine) == route


# (state, marker) -> (next state, events the marker itself produces, as (type, key) pairs)
TRANSITIONS = {
    ("initial header", "start"): (HEADER, []),
    ("initial header", "channel"): (HEADER, []),
    ("initial header", "constrain"): (HEADER, []),
    ("initial header", "message"): (BODY, [(MessageBegin, "content")]),
    ("initial header", "end"): (HEADER, []),
    ("initial header", "call"): (HEADER, []),
    ("initial header", "return"): (DONE, []),
    ("initial header", "end_of_text"): (DONE, []),
    ("initial header", "ignored"): (HEADER, [(Recovery, rules.IGNORED_TOKEN)]),
    ("role header", "message"): (BODY, [(MessageBegin, "content")]),
    ("role header", "end"): (HEADER, [(Recovery, rules.HEADER_WITHOUT_MESSAGE)]),
    # Free text after <|end|>: content if no header marker follows before <|start|> or a stop.
    ("free header", "start"): (HEADER, [(Recovery, rules.FREE_TEXT), (MessageBegin, "content"),
                                        (ContentText, None),
                                        (MessageEnd, "new_header")]),
    ("free header", "end"): (HEADER, [(Recovery, rules.FREE_TEXT), (MessageBegin, "content"),
                                      (ContentText, None), (MessageEnd, "end")]),
    ("free header", "return"): (DONE, [(Recovery, rules.FREE_TEXT), (MessageBegin, "content"),
                                       (ContentText, None), (MessageEnd, "return")]),
    ("free header", "channel"): (HEADER, []),
    ("free header", "message"): (BODY, [(Recovery, rules.HEADER_JUNK), (MessageBegin, "content")]),
    ("reasoning body", "start"): (HEADER, [(Recovery, rules.MISSING_END),
                                           (MessageEnd, "new_header")]),
    ("reasoning body", "channel"): (HEADER, [(Recovery, rules.MISSING_END),
                                             (MessageEnd, "new_header")]),
    ("reasoning body", "constrain"): (BODY, [(Recovery, rules.STRAY_MARKER)]),
    ("reasoning body", "message"): (BODY, [(Recovery, rules.STRAY_MARKER)]),
    ("reasoning body", "end"): (HEADER, [(MessageEnd, "end")]),
    ("reasoning body", "call"): (HEADER, [(MessageEnd, "call")]),
    ("reasoning body", "return"): (DONE, [(MessageEnd, "return")]),
    ("reasoning body", "end_of_text"): (DONE, [(MessageEnd, "end_of_text")]),
    ("reasoning body", "ignored"): (BODY, [(Recovery, rules.IGNORED_TOKEN)]),
    ("content body", "end"): (HEADER, [(MessageEnd, "end")]),
    ("content body", "return"): (DONE, [(MessageEnd, "return")]),
    ("call body", "end"): (HEADER, [(ToolCallEnd, 0), (MessageEnd, "end")]),
    ("call body", "call"): (HEADER, [(ToolCallEnd, 0), (MessageEnd, "call")]),
    ("call body", "return"): (DONE, [(ToolCallEnd, 0), (MessageEnd, "return")]),
    ("call body", "start"): (HEADER, [(Recovery, rules.MISSING_END), (ToolCallEnd, 0),
                                        (MessageEnd, "new_header")]),
    ("call body", "message"): (BODY, [(Recovery, rules.STRAY_MARKER)]),
    ("dropped body", "end"): (HEADER, [(Recovery, rules.UNDECLARED_RECIPIENT)]),
    ("dropped body", "call"): (HEADER, [(Recovery, rules.UNDECLARED_RECIPIENT)]),
    **{("done", m): (DONE, []) for m in NAMES if m != "ignored"},
    ("done", "ignored"): (DONE, [(Recovery, rules.IGNORED_TOKEN)]),
    # The rest of the product, read from machine.py's transition table.
    ("bare header", "start"): (HEADER, []),
    ("bare header", "end"): (HEADER, []),
    ("bare header", "message"): (BODY, [(MessageBegin, "content")]),
    ("bare header", "channel"): (HEADER, []),
    ("bare header", "constrain"): (HEADER, []),
    ("bare header", "return"): (DONE, []),
    ("bare header", "call"): (HEADER, []),
    ("bare header", "end_of_text"): (DONE, []),
    ("bare header", "ignored"): (HEADER, [(Recovery, rules.IGNORED_TOKEN)]),
    ("role header", "start"): (HEADER, [(Recovery, rules.HEADER_RESTARTED)]),
    ("role header", "channel"): (HEADER, []),
    ("role header", "constrain"): (HEADER, []),
    ("role header", "return"): (DONE, [(Recovery, rules.HEADER_WITHOUT_MESSAGE)]),
    ("role header", "call"): (HEADER, [(Recovery, rules.HEADER_WITHOUT_MESSAGE)]),
    ("role header", "end_of_text"): (DONE, [(Recovery, rules.HEADER_WITHOUT_MESSAGE)]),
    ("role header", "ignored"): (HEADER, [(Recovery, rules.IGNORED_TOKEN)]),
    ("free header", "constrain"): (HEADER, []),
    ("free header", "call"): (HEADER, [(Recovery, rules.FREE_TEXT), (MessageBegin, "content"),
                                       (ContentText, None), (MessageEnd, "call")]),
    ("free header", "end_of_text"): (DONE, [(Recovery, rules.FREE_TEXT), (MessageBegin, "content"),
                                            (ContentText, None),
                                           (MessageEnd, "end_of_text")]),
    ("free header", "ignored"): (HEADER, [(Recovery, rules.IGNORED_TOKEN)]),
    ("content body", "start"): (HEADER, [(Recovery, rules.MISSING_END),
                                         (MessageEnd, "new_header")]),
    ("content body", "channel"): (HEADER, [(Recovery, rules.MISSING_END),
                                           (MessageEnd, "new_header")]),
    ("content body", "message"): (BODY, [(Recovery, rules.STRAY_MARKER)]),
    ("content body", "constrain"): (BODY, [(Recovery, rules.STRAY_MARKER)]),
    ("content body", "call"): (HEADER, [(MessageEnd, "call")]),
    ("content body", "end_of_text"): (DONE, [(MessageEnd, "end_of_text")]),
    ("content body", "ignored"): (BODY, [(Recovery, rules.IGNORED_TOKEN)]),
    ("call body", "channel"): (HEADER, [(Recovery, rules.MISSING_END), (ToolCallEnd, 0),
                                        (MessageEnd, "new_header")]),
    ("call body", "constrain"): (BODY, [(Recovery, rules.STRAY_MARKER)]),
    ("call body", "end_of_text"): (DONE, [(ToolCallEnd, 0), (MessageEnd, "end_of_text")]),
    ("call body", "ignored"): (BODY, [(Recovery, rules.IGNORED_TOKEN)]),
    ("dropped body", "start"): (HEADER, [(Recovery, rules.MISSING_END),
                                         (Recovery, rules.UNDECLARED_RECIPIENT)]),
    ("dropped body", "channel"): (HEADER, [(Recovery, rules.MISSING_END),
                                           (Recovery, rules.UNDECLARED_RECIPIENT)]),
    ("dropped body", "message"): (BODY, [(Recovery, rules.STRAY_MARKER)]),
    ("dropped body", "constrain"): (BODY, [(Recovery, rules.STRAY_MARKER)]),
    ("dropped body", "return"): (DONE, [(Recovery, rules.UNDECLARED_RECIPIENT)]),
    ("dropped body", "end_of_text"): (DONE, [(Recovery, rules.UNDECLARED_RECIPIENT)]),
    ("dropped body", "ignored"): (BODY, [(Recovery, rules.IGNORED_TOKEN)]),
}


def _key(event) -> tuple:
    if isinstance(event, MessageBegin):
        return (MessageBegin, event.kind)
    if isinstance(event, MessageEnd):
        return (MessageEnd, event.by)
    if isinstance(event, Recovery):
        return (Recovery, event.rule)
    if isinstance(event, ToolCallEnd):
        return (ToolCallEnd, event.index)
    return (type(event), None)


@pytest.mark.parametrize(("state", "marker"), list(TRANSITIONS))
def test_transition(state, marker):
    machine, _ = machine_in(STATES[state][0])
    out = events_of(machine.marker(MARKERS[marker]))
    expected_state, expected_events = TRANSITIONS[(state, marker)]
    assert state_of(machine) == expected_state
    assert [_key(e) for e in out] == expected_events


def test_every_state_and_marker_is_in_the_table():
    """The whole state x marker product is in the table, so test_transition walks each cell."""
    assert set(TRANSITIONS) == {(s, m) for s in STATES for m in NAMES}


def test_call_marker_sets_after_call_and_drops_later_prose():
    machine, _ = machine_in("<|channel|>commentary to=functions.shell<|message|>ls<|call|>")
    assert machine.after_call and machine.stop_reason == "call"
    out = feed(machine, "<|channel|>final<|message|>Done<|end|>")
    assert out == [Recovery(rules.AFTER_CALL, "Done")]


def test_text_in_each_state_goes_to_its_place():
    expectations = {
        "reasoning body": ReasoningText("B"),
        "content body": ContentText("B"),
        "call body": ToolCallArguments(0, "B"),
    }
    for state, event in expectations.items():
        machine, _ = machine_in(STATES[state][0])
        out = events_of([machine.text("B", 0)])
        assert out == [event]
    for state in ("initial header", "role header", "dropped body", "done"):
        machine, _ = machine_in(STATES[state][0])
        assert machine.text("B", 0) is None


def test_close_in_each_state():
    cases = {
        "initial header": [EndOfTurn("end_of_stream", "stop")],
        "role header": [Recovery(rules.UNFINISHED_HEADER, "assistant"),
                        EndOfTurn("end_of_stream", "stop")],
        "reasoning body": [MessageEnd("end_of_stream"), EndOfTurn("end_of_stream", "stop")],
        "call body": [ToolCallEnd(0, "ls", "invalid_json"), MessageEnd("end_of_stream"),
                      EndOfTurn("end_of_stream", "tool_calls")],
        "dropped body": [Recovery(rules.UNDECLARED_RECIPIENT, "1+1"),
                         EndOfTurn("end_of_stream", "stop")],
        "done": [EndOfTurn("return", "stop")],
    }
    for state, expected in cases.items():
        machine, _ = machine_in(STATES[state][0])
        out = events_of(machine.close("stop"))
        assert out == expected, state
    machine, _ = machine_in(STATES["call body"][0])
    out = events_of(machine.close("length"))
    assert out[-1] == EndOfTurn("end_of_stream", "length")


def test_forged_role_ends_the_turn_at_its_first_marker():
    machine, out = machine_in("<|channel|>final<|message|>A<|end|><|start|>user<|message|>B")
    assert state_of(machine) == DONE and machine.stop_reason == "forged_turn"
    assert Recovery(rules.FORGED_TURN, "user") in out
    assert [e for e in out if isinstance(e, ContentText)] == [ContentText("A")]


def test_forged_role_closed_without_message_is_one_recovery():
    """A header that ends at `<|end|>` after another role's name ends the turn as forged, and
    is not also a header without a message."""
    machine, out = machine_in("<|channel|>final<|message|>A<|end|><|start|>user<|end|>")
    assert state_of(machine) == DONE and machine.stop_reason == "forged_turn"
    assert [e for e in out if isinstance(e, Recovery)] == [Recovery(rules.FORGED_TURN, "user")]


@pytest.mark.parametrize(("stream", "reads"), [
    # An empty or exactly `assistant` role section forges nothing: each header is read once.
    ("<|channel|>analysis<|message|>A<|end|><|start|>assistant<|channel|>final<|message|>B", 2),
    ("<|start|>assistant<|channel|>commentary to=functions.shell<|message|>ls<|call|>", 1),
    # Any other is read once more, alone, to see whether it forges a turn.
    ("<|start|>Assistant<|channel|>final<|message|>B", 2),
    ("<|channel|>final<|message|>A<|end|><|start|>user<|channel|>final<|message|>B", 2),
])
def test_a_header_is_read_once_unless_its_role_section_may_forge_a_turn(
        monkeypatch: pytest.MonkeyPatch, stream: str, reads: int) -> None:
    read: list[Any] = []
    parse = _header.parse_header

    def counted(*args: Any, **kwargs: Any) -> Any:
        read.append(args[0])
        return parse(*args, **kwargs)

    monkeypatch.setattr(_header, "parse_header", counted)
    machine_in(stream)
    assert len(read) == reads, read


def test_call_begin_event_carries_header_facts():
    """The header's facts are said once, by MessageBegin; ToolCallBegin names the call."""
    _, out = machine_in(" to=functions.get_weather<|channel|>commentary <|constrain|>json"
                        "<|message|>")
    assert out == [
        MessageBegin("call", "commentary", "commentary", "functions.get_weather",
                     "<|constrain|>json"),
        ToolCallBegin(0, "call_x", "get_weather"),
    ]


# -- header.py ---------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "role_given", "forges"), [
    ("", True, False),  # `<|start|><|channel|>`: no role written
    ("", False, False),  # a header that begins with its channel
    ("assistant", True, False),
    ("Assistant", True, False),  # the role compared without case
    (" assistant ", True, False),
    ("final", True, False),  # `<|start|>final`: gpt-oss's channel in the role slot
    ("commentary", False, False),  # a channel name written without its marker
    ("user", True, True),
    ("user", False, True),  # the next turn's header written as plain text
    ("system", True, True),
])
def test_a_role_section_forges_a_turn_when_it_names_another_role(text, role_given, forges):
    assert role_forges(text, role_given) is forges


@pytest.mark.parametrize(("sections", "role_given", "expected"), [
    ([(-1, "assistant"), (mk.CHANNEL, "analysis")], True, ("assistant", None, "analysis", None)),
    ([(-1, " to=functions.f"), (mk.CHANNEL, "commentary json")], False,
     (None, "functions.f", "commentary", "json")),
    ([(-1, ""), (mk.CHANNEL, "commentary to=functions.f "), (mk.CONSTRAIN, "json")], False,
     (None, "functions.f", "commentary", "json")),
    ([(-1, ""), (mk.CHANNEL, "analysis"), (mk.CHANNEL, "final")], False,
     (None, None, "final", None)),
    ([(-1, "functions.f to=assistant"), (mk.CHANNEL, "commentary")], True,
     ("functions.f", None, "commentary", None)),
    ([(-1, "  "), (mk.CHANNEL, "  commentary   to=assistant ")], False,
     (None, None, "commentary", None)),
])
def test_parse_header(sections, role_given, expected):
    h = parse_header(sections, role_given)
    assert (h.role, h.recipient, h.channel, h.content_type) == expected


def test_header_junk_and_forged():
    h = parse_header([(-1, "assistant what"), (mk.CHANNEL, "final json extra")], True)
    assert h.junk == ["what", "extra"] and not h.forged
    assert parse_header([(-1, "user")], True).forged
    assert not parse_header([(-1, "")], True).forged
    # No <|start|>: the first word is a role only if it names another one (a forged turn
    # written as plain text after <|end|>).
    assert parse_header([(-1, "user")], False).forged
    assert parse_header([(-1, "functions.get_weather to=assistant")], False).forged
    assert not parse_header([(-1, "Sure")], False).forged
    assert not parse_header([(-1, " to=functions.x")], False).forged


def test_resolve_recipient():
    tools = frozenset({"shell", "get_weather", "python"})
    assert resolve_recipient("functions.shell", tools) == ("shell", None)
    assert resolve_recipient("shell", tools) == ("shell", rules.BARE_RECIPIENT)
    assert resolve_recipient("functions.shelljson", tools) == ("shell", rules.GLUED_CONTENT_TYPE)
    assert resolve_recipient("functions.shelljson", tools | {"shelljson"}) == ("shelljson", None)
    assert resolve_recipient("functions.nope", tools) == (None, rules.UNDECLARED_FUNCTION)
    assert resolve_recipient("browser.search", tools) == (None, rules.UNDECLARED_RECIPIENT)
    # A function named python, called bare: the slip. A built-in tool's recipient is written
    # bare: declared as one, it is no slip.
    assert resolve_recipient("python", tools) == ("python", rules.BARE_RECIPIENT)
    assert resolve_recipient("python", tools, frozenset({"python"})) == ("python", None)
    assert resolve_recipient("browser.search", tools | {"browser.search"},
                             frozenset({"browser.search"})) == ("browser.search", None)


def test_tool_names_shapes():
    class Fn:
        name = "from_object"

    class Tool:
        function = Fn()

    tools = [
        {"type": "function", "function": {"name": "chat_shape"}},
        {"type": "function", "name": "responses_shape"},
        "plain",
        Tool(),
        {"type": "web_search"},
    ]
    assert tool_names(tools) == {"chat_shape", "responses_shape", "plain", "from_object"}
    assert tool_names(None) == frozenset()


def test_final_without_message_and_header_like():
    assert final_without_message([(-1, ""), (mk.CHANNEL, "final The answer.")]) == "The answer."
    assert final_without_message([(-1, ""), (mk.CHANNEL, "finally")]) is None
    assert final_without_message([(-1, ""), (mk.CHANNEL, "final")]) is None
    assert final_without_message([(-1, "final x")]) is None
    assert is_header_like(" to=functions.x json ")
    assert not is_header_like("Hello there")


# -- arguments.py ------------------------------------------------------------------------

def cut(pieces: list[str]) -> tuple[str, str]:
    cutter = arguments.ArgumentCutter()
    kept = "".join(cutter.feed(p) for p in pieces)
    return kept, cutter.junk_text()


@pytest.mark.parametrize(("body", "kept", "junk"), [
    ('{"a": 1}', '{"a": 1}', ""),
    ('{"a": 1}]', '{"a": 1}', "]"),
    ('{"a": "}"} tail', '{"a": "}"}', " tail"),
    ('{"a": "\\"}"}x', '{"a": "\\"}"}', "x"),
    ('{"a": "\\\\"}x', '{"a": "\\\\"}', "x"),
    ('[1, [2]] [3]', "[1, [2]]", " [3]"),
    ('"str" x', '"str"', " x"),
    ("  {}", "  {}", ""),
    ("ls -la | grep x", "ls -la | grep x", ""),
    ("print({'a': 1})", "print({'a': 1})", ""),
    ("{'a': 1}]", "{'a': 1}]", ""),
    ('{"a": True}.keys()', '{"a": True}.keys()', ""),
    ("[x for x in y]\nprint(1)", "[x for x in y]\nprint(1)", ""),
    ('{"a": [1, 2', '{"a": [1, 2', ""),
])
def test_argument_cutter_any_split(body, kept, junk):
    assert cut([body]) == (kept, junk)
    assert cut(list(body)) == (kept, junk)
    for i in range(len(body) + 1):
        assert cut([body[:i], body[i:]]) == (kept, junk)


def test_argument_cutter_holds_leading_whitespace():
    cutter = arguments.ArgumentCutter()
    assert cutter.feed("  ") == ""
    assert cutter.pending_lead() == "  "
    assert cutter.feed("\n{") == "  \n{"


def test_reasoning_tokens_are_counted_per_run_whatever_the_cuts():
    from harmony_plugins import StreamParser
    from harmony_plugins.vocab.o200k import tiktoken_encoding

    enc = tiktoken_encoding()
    text = ("<|channel|>analysis<|message|>one two three<|end|><|start|>assistant"
            "<|channel|>final<|message|>four five<|return|>")
    ids = enc.encode(text, allowed_special="all")
    expected = len(enc.encode_ordinary("one two three"))
    whole = StreamParser()
    whole.feed_ids(ids)
    single = StreamParser()
    for i in ids:
        single.feed_ids([i])
    assert whole.reasoning_tokens == single.reasoning_tokens == expected
    assert StreamParser().reasoning_tokens == 0


def test_a_character_cut_by_a_marker_counts_its_token_where_it_was_written():
    """The reasoning tokens are the ids of the reasoning text: a byte that begins a character
    and that a marker cuts off is one of them (passed on, replaced, contract section 6), and the
    text after the marker is counted as it is, no more: after a skipped token (section 1) in the
    same message, or in the next analysis message."""
    from harmony_plugins import StreamParser
    from harmony_plugins.vocab.o200k import tiktoken_encoding

    enc = tiktoken_encoding()
    cut = enc.encode_single_token(b"\xe2")  # the first byte of a three-byte character
    final = "<|end|><|start|>assistant<|channel|>final<|message|>Done.<|return|>"
    for after, more in (("<|reserved_200013|> more", " more"),
                        ("<|end|><|start|>assistant<|channel|>analysis<|message|>More words",
                         "More words")):
        ids = (enc.encode("<|channel|>analysis<|message|>Think", allowed_special="all")
               + [cut] + enc.encode(after + final, allowed_special="all"))
        for steps in ([ids], [[i] for i in ids]):
            parser = StreamParser()
            for step in steps:
                parser.feed_ids(step)
            parser.close()
            assert parser.reasoning_tokens == len(enc.encode("Think")) + 1 + len(
                enc.encode(more)), (after, len(steps))


def test_free_text_header_words_only_are_junk():
    machine, _ = machine_in("<|channel|>final<|message|>A<|end|> assistant to=functions.x ")
    out = events_of(machine.marker(mk.START))
    assert out == [Recovery(rules.HEADER_JUNK, " assistant to=functions.x ")]


def test_free_text_at_close_is_content():
    machine, _ = machine_in("<|channel|>final<|message|>A<|end|>Bye now")
    out = events_of(machine.close("stop"))
    assert out[:4] == [Recovery(rules.FREE_TEXT), MessageBegin("content", "final"),
                       ContentText("Bye now"), MessageEnd("end_of_stream")]


def test_forged_role_without_start_ends_the_turn_at_the_channel_marker():
    machine, out = machine_in("<|channel|>final<|message|>A<|end|>user<|channel|>final")
    assert state_of(machine) == DONE and machine.stop_reason == "forged_turn"
    assert Recovery(rules.FORGED_TURN, "user") in out


def test_role_slot_channel():
    machine, out = machine_in("<|start|>final<|message|>Hi")
    assert state_of(machine) == BODY and route_of(machine) == CONTENT
    assert MessageBegin("content", "final", "final") in out
    assert Recovery(rules.CHANNEL_IN_ROLE) in out
    h = parse_header([(-1, "analysis")], True)
    assert (h.role, h.channel, h.role_channel, h.forged) == ("assistant", "analysis", True,
                                                            False)


def test_header_v2_fields():
    h = parse_header([(-1, ""), (mk.CHANNEL, "commentary to= "), (mk.CONSTRAIN, "json")],
                     False)
    assert h.empty_recipient and h.recipient is None
    h = parse_header([(-1, " to=functions.Web Search"), (mk.CHANNEL, "commentary")], False,
                     frozenset({"Web Search"}), ("Web Search",))
    assert h.recipient == "functions.Web Search" and not h.junk
    h = parse_header([(-1, ""), (mk.CHANNEL, "final IS")], False)
    assert h.content_type is None and h.junk == ["IS"]
    h = parse_header([(-1, ""), (mk.CHANNEL, "final get_ticket")], False,
                     frozenset({"get_ticket"}))
    assert h.content_type == "get_ticket"


def test_joins_is_where_text_meets_across_a_marker():
    for state, (prefix, expected, route) in STATES.items():
        machine, _ = machine_in(prefix)
        assert machine.joins(mk.IGNORED) == (expected != DONE), state
        # <|message|> joins in a body (a stray one), and in the empty header right after
        # <|end|> (the content it opens follows the content before)
        assert machine.joins(mk.MESSAGE) == (expected == BODY or state == "bare header"), state
        assert machine.joins(mk.END) == (expected == HEADER or route == CONTENT), state
        assert not machine.joins(mk.START), state
