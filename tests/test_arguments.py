"""harmony_plugins._arguments: a call's arguments, however deep or however many pieces, are
kept whole and never raise (no recursion, no quadratic joins)."""

from __future__ import annotations

import pytest

from harmony_plugins import (
    Builders,
    Request,
    StreamParser,
    ToolCallEnd,
    Turn,
    _arguments,
    parse_ids,
    parse_text,
    rules,
)
from harmony_plugins.vocab import o200k

ENCODING = o200k.tiktoken_encoding()

RESERVED = 200010  # a reserved id: skipped, cutting the text around it

def test_deep_brackets_in_arguments_never_raise():
    text = ("<|channel|>commentary to=functions.f<|message|>" + "[" * 989 + "]" * 989
            + "<|call|>")
    message = parse_text(text, ["f"])
    assert message["tool_calls"][0]["function"]["arguments"] == "[" * 989 + "]" * 989


@pytest.mark.parametrize("depth", [100_000])
def test_json_nested_100k_deep_never_raises(depth):
    deep = "[" * depth + "]" * depth
    call = "<|channel|>commentary to=functions.f<|message|>" + deep + "]<|call|>"
    message = parse_text(call, ["f"])
    assert message["tool_calls"][0]["function"]["arguments"].startswith("[[[")
    parser = StreamParser([{"type": "function", "function": {
        "name": "f", "parameters": {"type": "object"}}}])
    events = parser.feed_text(call) + parser.close()
    ends = [e for e in events if isinstance(e, ToolCallEnd)]
    assert ends[0].outcome in (rules.UNCHECKED, rules.NOT_OBJECT)
    content = parse_text("<|channel|>final<|message|>" + deep)
    assert content["content"] == deep


def test_many_argument_pieces_in_one_delta_complete():
    """128k tokens in one delta, the arguments cut into pieces by reserved ids."""
    from harmony_plugins.vocab.o200k import tiktoken_encoding

    enc = tiktoken_encoding()
    ids = enc.encode("<|channel|>commentary to=functions.f<|message|>",
                     allowed_special="all")
    a = enc.encode("a")
    ids += (a + [RESERVED]) * 64_000
    message = parse_ids(ids, ["f"])
    assert message["tool_calls"][0]["function"]["arguments"] == "a" * 64_000


# --- PLAIN: the remembered answer for a decode step's piece ---------------------------------

PLAIN_PIECES = [" hello", "abc", "", "é", " 分析", "\n", ":", "'", "()", "<|"]
STRUCTURAL_PIECES = ["{", "}", "[", "]", '"', "\\", ' "a', "x\\", "[1", '\\"', '{"']


@pytest.mark.parametrize("text", PLAIN_PIECES + STRUCTURAL_PIECES)
def test_plain_says_whether_a_piece_has_a_bracket_quote_or_backslash(text):
    answer = text in PLAIN_PIECES  # written above by hand
    fresh = _arguments.PlainPieces()
    assert fresh[text] is answer  # asked the first time (searched)
    assert fresh[text] is answer  # asked again (remembered)
    assert text in fresh


def test_plain_remembers_no_more_than_its_bound(monkeypatch):
    monkeypatch.setattr(_arguments, "REMEMBERED", 2)
    fresh = _arguments.PlainPieces()
    texts = [" a", " b", ' "c', " d"]
    assert [fresh[t] for t in texts] == [True, True, False, True]
    assert [fresh[t] for t in texts] == [True, True, False, True]  # the same, unremembered
    assert sorted(fresh) == [" a", " b"]


def test_a_call_decoded_one_token_at_a_time_keeps_its_structural_pieces():
    """Pieces with and without structure, each one decode step: the arguments come whole,
    each piece once, and end with the JSON value (the junk after it dropped), whether or
    not PLAIN already knew the pieces."""
    arguments = '{"path": "a \\"b\\" [c]", "n": [1, {"x": "}"}]}'
    text = ("<|channel|>commentary to=functions.f<|constrain|>json<|message|>" + arguments
            + " ]")
    for _ in range(2):  # the second time, every piece is remembered
        turn = Turn(Request([{"type": "function", "function": {"name": "f"}}]),
                    build=Builders(str, str, lambda index, piece: piece, lambda step: step))
        pieces = [turn.decode_ids([t]) for t in ENCODING.encode(text, allowed_special="all")]
        end = turn.close("stop")
        got = "".join(p if isinstance(p, str) else "".join(c.arguments for c in p.calls)
                      for p in pieces if p is not None)
        assert got + "".join(c.arguments for c in end.calls) == arguments


def test_a_call_fed_one_token_at_a_time_keeps_its_structural_pieces():
    """As above, through ``feed_ids`` (one token's piece answered by PLAIN there too), and
    through a delta of several tokens (searched)."""
    arguments = '{"path": "a \\"b\\" [c]", "n": [1, {"x": "}"}]}'
    text = ("<|channel|>commentary to=functions.f<|constrain|>json<|message|>" + arguments
            + " ]")
    ids = ENCODING.encode(text, allowed_special="all")
    for size in (1, 1, 3):  # the second time, every piece is remembered
        turn = Turn(Request([{"type": "function", "function": {"name": "f"}}]))
        steps = [turn.feed_ids(ids[i:i + size]) for i in range(0, len(ids), size)]
        steps.append(turn.close("stop"))
        assert "".join(c.arguments for s in steps for c in s.calls) == arguments
        assert [end.arguments for s in steps for end in s.ended] == [arguments]
