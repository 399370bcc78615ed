"""harmony_plugins._header: a header's words are read or handed to a recovery, never lost
(contract section 6: every piece of model text ends up in exactly one place)."""

from __future__ import annotations

import pytest

from harmony_plugins import (
    ContentText,
    ReasoningText,
    Recovery,
    StreamParser,
    ToolCallBegin,
    rules,
)
from tests.data import CUTS, cut_events


@pytest.mark.parametrize("mode", CUTS)
def test_header_words_dropped_are_in_recovery_text(mode):
    text = "<|start|>assistant LOST WORDS<|channel|>final The answer<|end|>"
    events = cut_events(text, mode)
    dropped = " ".join(e.text for e in events if isinstance(e, Recovery))
    assert "LOST" in dropped and "WORDS" in dropped
    assert "".join(e.text for e in events if isinstance(e, ContentText)) == "The answer"


@pytest.mark.parametrize("mode", CUTS)
@pytest.mark.parametrize(("header", "lost"), [
    ("<|channel|>0<|channel|>analysis", "0"),  # found by hypothesis: "0" was lost silently
    ("<|channel|>final<|channel|>analysis", "final"),
    ("<|start|>assistant commentary<|channel|>analysis", "commentary"),
])
def test_a_channel_the_last_one_replaces_is_header_junk(header, lost, mode):
    """Two channels in one header: the last wins (contract section 3) and the one it
    replaces is dropped and counted as header junk (section 6: nothing silently lost)."""
    events = cut_events(header + "<|message|>Thinking.<|end|>", mode)
    assert [(e.rule, e.text) for e in events if isinstance(e, Recovery)] == [
        (rules.HEADER_JUNK, lost)]
    assert "".join(e.text for e in events if isinstance(e, ReasoningText)) == "Thinking."


@pytest.mark.parametrize("tail", ["", "<|message|>x", "<|end|>"])
def test_bare_word_after_channel_is_not_silently_a_content_type(tail):
    p = StreamParser()
    events = p.feed_text("<|channel|>WORLD IS BIG" + tail) + p.close()
    dropped = " ".join(e.text for e in events if isinstance(e, Recovery))
    for word in ("WORLD", "IS", "BIG"):
        assert word in dropped, (word, events)


def test_pass_undeclared_never_surfaces_an_empty_name():
    text = '<|channel|>commentary to=functions.<|message|>{"a": 1}<|call|>'
    parser = StreamParser(["get_weather"], pass_undeclared=True)
    events = parser.feed_text(text) + parser.close()
    assert not [e for e in events if isinstance(e, ToolCallBegin)]
    assert parser.recoveries.get(rules.EMPTY_RECIPIENT) == 1


@pytest.mark.parametrize("header", [
    "<|channel|>to=functions.web search",
    "<|channel|>commentary to=functions.web search",
    "<|start|>assistant to=functions.web search<|channel|>commentary",
])
def test_a_spaced_declared_name_is_the_recipient_wherever_it_stands(header):
    """A declared name with a space in it is matched whole, also when its ``to=`` opens the
    section (contract section 3: the recipient names a declared function)."""
    events = StreamParser(["web search"]).feed_text(header + "<|message|>{}<|call|>")
    assert [e.name for e in events if isinstance(e, ToolCallBegin)] == ["web search"]


def test_the_declared_names_read_as_spaced_are_those_holding_any_whitespace_character():
    """Every character ``str.isspace`` calls whitespace makes a name spaced, and no other
    (the names are matched whole in recipients; a name missed would be cut at its space)."""
    from harmony_plugins._header import spaced_names

    spaces = [chr(c) for c in range(0x110000) if chr(c).isspace()]
    others = ["x", "_", ".", "-", "\u200b", "\ufeff", "\x00", "\u2060"]  # no isspace
    names = [f"a{c}b" for c in spaces + others] + ["long name here"]
    assert len(spaces) == 29
    got = spaced_names(names)
    assert sorted(got) == sorted([f"a{c}b" for c in spaces] + ["long name here"])
    assert got[0] == "long name here"  # longest first


@pytest.mark.parametrize(("recipient", "calls"), [
    ("functions.nope", ["nope"]),  # an undeclared function: passed on, as the switch says
    ("python", []),  # not a function: never a call (contract section 3, undeclared_recipient)
    ("browser.search", []),
])
def test_pass_undeclared_passes_undeclared_functions_only(recipient, calls):
    parser = StreamParser(["get_weather"], pass_undeclared=True)
    text = f"<|channel|>commentary to={recipient} <|constrain|>json<|message|>{{}}<|call|>"
    events = parser.feed_text(text) + parser.close()
    assert [e.name for e in events if isinstance(e, ToolCallBegin)] == calls
