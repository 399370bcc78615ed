"""harmony_plugins._header: a header's words are read or handed to a recovery, never lost
(contract section 6: every piece of model text ends up in exactly one place)."""

from __future__ import annotations

import pytest

from harmony_plugins import (
    ContentText,
    Recovery,
    StreamParser,
    ToolCallBegin,
    rules,
)
from tests.data import per_char_events


@pytest.mark.parametrize("mode", ["whole", "per_char"])
def test_header_words_dropped_are_in_recovery_text(mode):
    text = "<|start|>assistant LOST WORDS<|channel|>final The answer<|end|>"
    if mode == "whole":
        p = StreamParser()
        events = p.feed_text(text) + p.close()
    else:
        events = per_char_events(text)
    dropped = " ".join(e.text for e in events if isinstance(e, Recovery))
    assert "LOST" in dropped and "WORDS" in dropped
    assert "".join(e.text for e in events if isinstance(e, ContentText)) == "The answer"


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
