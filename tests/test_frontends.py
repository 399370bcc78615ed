"""harmony_plugins._frontends: what the ids front end holds back, and the ids it refuses.

Expected values are written from the contract: section 6 ("every piece of model text ends up
in exactly one place ... nothing is silently lost"; the result does not depend on the cuts)
and the rule ``unknown_token`` (an id outside the vocabulary is skipped and counted). Token
ids come from tiktoken's o200k_harmony encoding, not from the parser's table.
"""

from __future__ import annotations

import pytest

from harmony_plugins import Recovery, Request, Turn, rules
from harmony_plugins.vocab import o200k

ENCODING = o200k.tiktoken_encoding()
TEST_TUBE = "\U0001f9ea"  # three tokens of o200k_harmony, each a part of its four bytes


def ids(text: str) -> list[int]:
    return ENCODING.encode(text, allowed_special="all")


def test_the_test_tube_is_cut_across_tokens():
    parts = [ENCODING.decode_single_token_bytes(i) for i in ids(TEST_TUBE)]
    assert len(parts) == 3 and b"".join(parts) == TEST_TUBE.encode()


@pytest.mark.parametrize("channel, field", [("final", "content"), ("analysis", "reasoning")])
@pytest.mark.parametrize("per_token", [True, False])
def test_a_stream_cut_inside_a_character_keeps_it_as_a_replacement(channel, field, per_token):
    """max_tokens can stop the model between the bytes of one character: the bytes held back
    are not lost at the end of the stream, they become one U+FFFD (what a UTF-8 decoder makes
    of an incomplete character), in the field they were written in."""
    stream = ids(f"<|channel|>{channel}<|message|>Hi ") + ids(TEST_TUBE)[:2]
    turn = Turn(Request())
    deltas = [[i] for i in stream] if per_token else [stream]
    text = "".join(getattr(turn.feed_ids(d), field) for d in deltas)
    assert text == "Hi "  # the cut character is held back until the stream ends
    last = turn.close("length")
    assert text + getattr(last, field) == "Hi \ufffd"
    assert last.finish.finish_reason == "length"
    # reasoning tokens: "Hi", " " and the two tokens of the cut character
    assert turn.reasoning_tokens == (4 if channel == "analysis" else 0)


def test_a_character_cut_by_a_marker_is_passed_on_before_it():
    """The marker ends the message: the incomplete character belongs to the text before it."""
    stream = ids("<|channel|>final<|message|>A") + ids(TEST_TUBE)[:1] + ids("<|end|>")
    turn = Turn(Request())
    step = turn.feed_ids(stream)
    assert step.content == "A\ufffd"
    assert turn.close().content == ""


@pytest.mark.parametrize("bad", [ENCODING.n_vocab, ENCODING.n_vocab + 1_000, 10**9, -1])
@pytest.mark.parametrize("alone", [True, False])
def test_ids_outside_the_vocabulary_are_skipped_and_counted(bad, alone):
    """One token per delta (the fast path) and inside a longer delta: the same."""
    head = ids("<|channel|>final<|message|>")
    turn = Turn(Request())
    turn.feed_ids(head)
    if alone:
        steps = [turn.feed_ids([i]) for i in ids("Hi") + [bad] + ids(" there")]
    else:
        steps = [turn.feed_ids(ids("Hi") + [bad] + ids(" there"))]
    steps.append(turn.close())
    assert "".join(s.content for s in steps) == "Hi there"
    recoveries = [r for s in steps for r in s.recoveries]
    assert recoveries == [Recovery(rules.UNKNOWN_TOKEN, "")]
    assert turn.summary.recoveries == {rules.UNKNOWN_TOKEN: 1}
