"""harmony_plugins._frontends: what the ids front end holds back, the ids and deltas the front
ends refuse (the API boundary: a bad delta changes nothing), and the markers text mode never
assembles from pieces.

Expected values are written from the contract: section 6 ("every piece of model text ends up
in exactly one place ... nothing is silently lost"; the result does not depend on the cuts)
and the rule ``unknown_token`` (an id outside the vocabulary is skipped and counted). Token
ids come from tiktoken's o200k_harmony encoding, not from the parser's table.
"""

from __future__ import annotations

import pytest

from harmony_plugins import (
    ContentText,
    ReasoningText,
    Recovery,
    Request,
    StreamParser,
    Turn,
    parse_ids,
    parse_text,
    rules,
)
from harmony_plugins.vocab import o200k
from tests.data import CUTS, cut_events, per_char_events

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


@pytest.mark.parametrize("channel, field", [("final", "content"), ("analysis", "reasoning")])
def test_a_delta_that_only_begins_a_character_shows_nothing_until_it_is_whole(channel, field):
    """A delta of several tokens with no marker is parsed as one piece; when its tokens only
    begin a character it shows nothing, and its tokens count with that character's text."""
    tube = ids(TEST_TUBE)
    turn = Turn(Request())
    turn.feed_ids(ids(f"<|channel|>{channel}<|message|>"))
    first = turn.feed_ids(tube[:2])
    assert (first.reasoning, first.content, first.calls) == ("", "", ())
    second = turn.feed_ids(tube[2:] + ids(" ok"))
    assert getattr(second, field) == TEST_TUBE + " ok"
    assert turn.reasoning_tokens == (4 if channel == "analysis" else 0)
    last = turn.close()
    assert (last.reasoning, last.content) == ("", "")


def test_a_delta_that_ends_beginning_a_character_hands_over_what_came_before_in_it():
    """The delta's last run only begins a character (held for the next delta): the text and
    markers before it in the same delta are that delta's step, not a later one's."""
    turn = Turn(Request())
    turn.feed_ids(ids("<|channel|>analysis<|message|>Hm"))
    step = turn.feed_ids(ids(" ok<|end|>") + ids(TEST_TUBE)[:1])
    assert step.reasoning == " ok"
    assert turn.feed_ids(ids(TEST_TUBE)[1:]).reasoning == ""  # the character: a header's text


def test_a_character_cut_by_a_marker_is_passed_on_before_it():
    """The marker ends the message: the incomplete character belongs to the text before it."""
    stream = ids("<|channel|>final<|message|>A") + ids(TEST_TUBE)[:1] + ids("<|end|>")
    turn = Turn(Request())
    step = turn.feed_ids(stream)
    assert step.content == "A\ufffd"
    assert turn.close().content == ""


_N = ENCODING.n_vocab  # the vocabulary's ids are 0 .. _N - 1


# Ids just past the vocabulary and far past it, and negative ids that a list index would
# wrap to entries of the vocabulary (-1 to -_N) or past its start.
@pytest.mark.parametrize("bad", [_N, _N + 1_000, 2 * _N, 10**9, -1, -_N, -_N - 1,
                                 -(10**9)])
@pytest.mark.parametrize("how", ["alone", "in a delta"])
def test_ids_outside_the_vocabulary_are_skipped_and_counted(bad, how):
    """One token per delta, and inside a longer delta: the same."""
    head = ids("<|channel|>final<|message|>")
    turn = Turn(Request())
    turn.feed_ids(head)
    if how == "alone":
        steps = [turn.feed_ids([i]) for i in ids("Hi") + [bad] + ids(" there")]
    else:
        steps = [turn.feed_ids(ids("Hi") + [bad] + ids(" there"))]
    steps.append(turn.close())
    assert "".join(s.content for s in steps) == "Hi there"
    recoveries = [r for s in steps for r in s.recoveries]
    assert recoveries == [Recovery(rules.UNKNOWN_TOKEN, "")]
    assert turn.summary.recoveries == {rules.UNKNOWN_TOKEN: 1}


# --- what the front ends accept: the API boundary --------------------------------------


@pytest.mark.parametrize("bad", [[None], [5.0], [float("nan")], [True], [False],
                                 [200005, None], [1, 2, 3.5]])
def test_parse_ids_refuses_non_int_ids(bad):
    with pytest.raises(TypeError, match="position"):
        parse_ids(bad)


@pytest.mark.parametrize("bad", [b"abc", "abc", None, 5])
def test_parse_ids_refuses_non_iterables_of_ids(bad):
    with pytest.raises(TypeError):
        parse_ids(bad)


@pytest.mark.parametrize("bad", [None, b"x", 5, ["a"]])
def test_parse_text_refuses_non_str(bad):
    with pytest.raises(TypeError):
        parse_text(bad)


def test_a_bad_delta_changes_no_state():
    from harmony_plugins.vocab.o200k import tiktoken_encoding

    ids = tiktoken_encoding().encode("<|channel|>final<|message|>Hello there",
                                     allowed_special="all")
    parser = StreamParser()
    events = parser.feed_ids(ids[:3])
    with pytest.raises(TypeError):
        parser.feed_ids([*ids[3:], None])
    events += parser.feed_ids(ids[3:]) + parser.close()
    assert "".join(e.text for e in events if isinstance(e, ContentText)) == "Hello there"
    single = StreamParser()
    with pytest.raises(TypeError):
        single.feed_ids([None])
    with pytest.raises(TypeError):
        single.feed_text(None)


def test_ids_of_other_integer_types_are_accepted():
    from harmony_plugins.vocab.o200k import tiktoken_encoding

    ids = tiktoken_encoding().encode("<|channel|>final<|message|>Hi", allowed_special="all")
    assert parse_ids(tuple(ids))["content"] == "Hi"
    assert parse_ids(iter(ids))["content"] == "Hi"
    np = pytest.importorskip("numpy")
    assert parse_ids(np.array(ids))["content"] == "Hi"




@pytest.mark.parametrize("marker", ["<|reserved_200010|>", "<|startoftext|>",
                                    "<|message|>", "<|constrain|>"])
def test_text_mode_never_assembles_a_marker(marker):
    text = "<|channel|>final<|message|>A<|" + marker + "end|>B"
    whole = parse_text(text)
    assert "<|end|>" not in whole["content"]
    assert whole["content"] == "A<|B"
    streamed = "".join(e.text for e in per_char_events(text) if isinstance(e, ContentText))
    assert streamed == "A<|B"


@pytest.mark.parametrize("after", ["<|start|>end|>assistant<|channel|>final",
                                   "<|channel|>end|>final"])
def test_text_after_a_marker_that_ends_a_body_opens_the_next_header(after):
    """Section 6 keeps the two sides of a skipped marker apart; a ``<|start|>`` or
    ``<|channel|>`` that ends a body (its ``<|end|>`` missing) is not skipped: the text after it
    is the next header, never dropped as the right half of a spelling (here ``end|>`` after
    content ending in ``<|``). That header names the role ``end|>assistant`` (a forged turn,
    section 2) or the channel ``end|>final`` (unknown, section 2): ``B`` is no content."""
    for cut in CUTS:
        events = cut_events(f"<|channel|>final<|message|>A<|{after}<|message|>B<|return|>", cut)
        assert "".join(e.text for e in events if isinstance(e, ContentText)) == "A<|"
        found = [e.rule for e in events if isinstance(e, Recovery)]
        assert rules.MISSING_END in found
        assert rules.SPLIT_MARKER not in found


def test_text_fed_as_text_counts_no_reasoning_tokens():
    """``reasoning_tokens`` counts token ids; a turn fed text has none, whatever its deltas."""
    for deltas in (["<|channel|>analysis<|message|>", "Think", " more", ".<|end|>"],
                   ["<|channel|>analysis<|message|>Think more.<|end|>"]):
        turn = Turn(Request())
        for delta in deltas:
            turn.feed_text(delta)
        turn.close()
        assert turn.reasoning_tokens == 0


def test_an_end_after_reasoning_joins_nothing():
    """Reasoning and the free text after its ``<|end|>`` are two fields: their halves cannot
    spell ``<|end|>`` in one, so nothing is dropped (after content, the right half is)."""
    for cut in CUTS:
        events = cut_events("<|channel|>analysis<|message|>A<|<|end|>end|>B", cut)
        assert "".join(e.text for e in events if isinstance(e, ReasoningText)) == "A<|"
        assert "".join(e.text for e in events if isinstance(e, ContentText)) == "end|>B"
        assert not [e for e in events if isinstance(e, Recovery) and e.rule == rules.SPLIT_MARKER]
