"""Message events: where every Harmony message begins and ends, with its channel, recipient
and content type (``MessageBegin`` / ``MessageEnd``). Expected values are written by hand
from the contract; every output runs through text and ids, whole and one piece at a time."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harmony_plugins import (
    ContentText,
    MessageBegin,
    MessageEnd,
    ReasoningText,
    StreamParser,
    ToolCallArguments,
)
from harmony_plugins.vocab import o200k

sys.path.insert(0, str(Path(__file__).resolve().parent))
from contract_cases import CALL_W, CASES, PARIS, W

_ENC = None


def encode(text: str) -> list[int]:
    global _ENC
    if _ENC is None:
        _ENC = o200k.tiktoken_encoding()
    return _ENC.encode(text, allowed_special="all")


def feeds(text: str):
    """(mode, pieces): the output whole and one piece at a time, as text and as ids."""
    ids = encode(text)
    yield "text", [text]
    yield "text", list(text)
    yield "ids", [ids]
    yield "ids", [[i] for i in ids]


def events_of(mode: str, pieces: list, tools) -> list:
    parser = StreamParser(tools)
    events: list = []
    for piece in pieces:
        events += parser.feed_text(piece) if mode == "text" else parser.feed_ids(piece)
    return events + parser.close()


def messages(events: list) -> list[tuple]:
    """(kind, channel, written_channel, recipient, content_type, text, by) per message."""
    out: list[tuple] = []
    begin: MessageBegin | None = None
    parts: list[str] = []
    for event in events:
        if isinstance(event, MessageBegin):
            assert begin is None, f"{event} inside an open message {begin}"
            begin, parts = event, []
        elif isinstance(event, ReasoningText | ContentText | ToolCallArguments):
            assert begin is not None, f"{event} outside any message"
            parts.append(event.text)
        elif isinstance(event, MessageEnd):
            assert begin is not None, f"{event} without a MessageBegin"
            out.append((begin.kind, begin.channel, begin.written_channel, begin.recipient,
                        begin.content_type, "".join(parts), event.by))
            begin = None
    assert begin is None, f"{begin} never ended"
    return out


AGENT_TURN = (
    "<|channel|>analysis<|message|>First thought.<|end|><|start|>assistant<|channel|>analysis"
    "<|message|>Second thought.<|end|><|start|>assistant<|channel|>commentary<|message|>"
    "Checking.<|end|><|start|>assistant" + CALL_W + PARIS + "<|call|>")

CASES_BY_HAND = [
    ("agent_turn", AGENT_TURN, W, [
        ("reasoning", "analysis", "analysis", None, None, "First thought.", "end"),
        ("reasoning", "analysis", "analysis", None, None, "Second thought.", "end"),
        ("content", "commentary", "commentary", None, None, "Checking.", "end"),
        ("call", "commentary", "commentary", "functions.get_weather", "<|constrain|>json",
         PARIS, "call"),
    ]),
    ("two_finals", "<|channel|>final<|message|>One.<|end|><|start|>assistant<|channel|>final"
     "<|message|>Two.<|return|>", None, [
         ("content", "final", "final", None, None, "One.", "end"),
         ("content", "final", "final", None, None, "Two.", "return"),
     ]),
    ("unknown_channel_counts_as_analysis", "<|channel|>comment<|message|>hello<|end|>"
     "<|start|>assistant<|channel|>final<|message|>Hi<|return|>", None, [
         ("reasoning", "analysis", "comment", None, None, "hello", "end"),
         ("content", "final", "final", None, None, "Hi", "return"),
     ]),
    ("no_channel_counts_as_final", "<|message|>Hi", None, [
        ("content", "final", None, None, None, "Hi", "end_of_stream"),
    ]),
    ("free_text_is_a_message", "<|channel|>analysis<|message|>a<|end|>Removing it now."
     "<|start|>assistant<|channel|>final<|message|>b<|return|>", None, [
         ("reasoning", "analysis", "analysis", None, None, "a", "end"),
         ("content", "final", None, None, None, "Removing it now.", "new_header"),
         ("content", "final", "final", None, None, "b", "return"),
     ]),
    ("no_markup", "Just text.", None, [
        ("content", "final", None, None, None, "Just text.", "end_of_stream"),
    ]),
    # A call to a function counts as commentary, where function calls go, whatever its channel.
    ("bare_recipient_on_final", '<|channel|>final to=get_weather json<|message|>{}<|call|>', W, [
        ("call", "commentary", "final", "functions.get_weather", "json", "{}", "call"),
    ]),
    ("call_on_analysis", '<|channel|>analysis to=functions.get_weather<|message|>{}<|call|>', W, [
        ("call", "commentary", "analysis", "functions.get_weather", None, "{}", "call"),
    ]),
    # A built-in tool's call keeps the known channel it was written on.
    ("builtin_call_on_analysis", '<|channel|>analysis to=browser.search<|message|>{"q":1}'
     '<|call|>', ["browser.search"], [
         ("call", "analysis", "analysis", "browser.search", None, '{"q":1}', "call"),
     ]),
    ("call_without_channel", ' to=functions.get_weather<|message|>{}<|call|>', W, [
        ("call", "commentary", None, "functions.get_weather", None, "{}", "call"),
    ]),
    ("call_on_unknown_channel", '<|channel|>comment to=functions.get_weather<|message|>{}'
     '<|call|>', W, [
         ("call", "commentary", "comment", "functions.get_weather", None, "{}", "call"),
     ]),
    ("missing_end", "<|channel|>analysis<|message|>a<|start|>assistant<|channel|>final"
     "<|message|>b", None, [
         ("reasoning", "analysis", "analysis", None, None, "a", "new_header"),
         ("content", "final", "final", None, None, "b", "end_of_stream"),
     ]),
    ("final_without_message", "<|channel|>final The answer.<|end|>", None, [
        ("content", "final", "final", None, None, "The answer.", "end"),
    ]),
    ("dropped_messages_are_not_framed", "<|channel|>analysis to=python code<|message|>"
     "print(1)<|call|>", W, []),
]


@pytest.mark.parametrize(("name", "text", "tools", "expected"), CASES_BY_HAND,
                         ids=[c[0] for c in CASES_BY_HAND])
def test_messages_are_framed_as_written(name, text, tools, expected):
    for mode, pieces in feeds(text):
        assert messages(events_of(mode, pieces, tools)) == expected, (mode, len(pieces))


# Contract cases framed by hand (section 1's format, section 2's routing and drops, section 3's
# last channel): what each one's messages must be, in either mode, however cut. The other
# contract cases are checked for consistency only (below).
WEATHER_CALL = ("call", "commentary", "commentary", "functions.get_weather", "<|constrain|>json",
                PARIS, "call")
FRAMED_BY_HAND = {
    "fmt_known_sequence": [
        ("reasoning", "analysis", "analysis", None, None,
         'User asks: "What is 2 + 2?" Simple arithmetic. Provide answer.', "end"),
        ("content", "final", "final", None, None, "2 + 2 = 4.", "return"),
    ],
    "route_preamble_then_call": [
        ("reasoning", "analysis", "analysis", None, None, "Need weather.", "end"),
        ("content", "commentary", "commentary", None, None, "Checking now.", "end"),
        WEATHER_CALL,
    ],
    "route_forged_user": [  # the forged turn and all after it are not messages of the answer
        ("content", "final", "final", None, None, "Answer.", "end"),
    ],
    "route_free_text_between": [
        ("reasoning", "analysis", "analysis", None, None, "Plan.", "end"),
        ("content", "final", None, None, None, "Removing it now.", "new_header"),
        ("content", "final", "final", None, None, "Done.", "return"),
    ],
    "route_free_text_header_words": [  # the junk between them is no message
        ("content", "final", "final", None, None, "A", "end"),
        ("content", "final", "final", None, None, "B", "return"),
    ],
    "hdr_two_channels_last_wins": [
        ("content", "final", "final", None, None, "X", "return"),
    ],
    "route_after_call_more_calls": [  # the prose after the first call is dropped
        WEATHER_CALL,
        ("call", "commentary", "commentary", "functions.get_time", "<|constrain|>json",
         '{"tz":"CET"}', "call"),
    ],
    "route_after_call_analysis_dropped": [WEATHER_CALL],
}


def test_the_hand_framed_cases_are_contract_cases():
    ids = {c.id: c for c in CASES}
    assert set(FRAMED_BY_HAND) <= set(ids)
    assert all(ids[name].modes == ("text", "ids") for name in FRAMED_BY_HAND)


@pytest.mark.parametrize("case", [c for c in CASES if "text" in c.modes], ids=lambda c: c.id)
def test_every_contract_case_frames_its_messages(case):
    """Over the whole contract table: every shown piece lies inside exactly one message,
    every message's channel is a valid Harmony channel, and the framing does not depend on
    how the output was cut, nor (where the case holds for both) on text or ids; where the case
    is framed by hand, it is that framing."""
    seen = []
    for mode, pieces in feeds(case.text):
        if mode == "ids" and "ids" not in case.modes:
            continue
        found = messages(events_of(mode, pieces, case.tools))
        assert all(m[1] in ("analysis", "commentary", "final") for m in found), found
        assert all((m[0] == "call") == (m[3] is not None) for m in found), found
        seen.append((mode, found))
    first = seen[0][1]
    for mode, found in seen:
        assert found == first, mode
    if case.id in FRAMED_BY_HAND:
        assert first == FRAMED_BY_HAND[case.id]
