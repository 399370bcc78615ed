"""harmony_plugins._arguments: a call's arguments, however deep or however many pieces, are
kept whole and never raise (no recursion, no quadratic joins)."""

from __future__ import annotations

import pytest

from harmony_plugins import (
    Request,
    StreamParser,
    ToolCallEnd,
    Turn,
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


# --- pieces with and without structure -------------------------------------------------------


def test_a_call_fed_one_token_at_a_time_keeps_its_structural_pieces():
    """Pieces with and without structure, one token per delta (twice) and three: the arguments
    come whole, each piece once, and end with the JSON value (the junk after it dropped)."""
    arguments = '{"path": "a \\"b\\" [c]", "n": [1, {"x": "}"}]}'
    text = ("<|channel|>commentary to=functions.f<|constrain|>json<|message|>" + arguments
            + " ]")
    ids = ENCODING.encode(text, allowed_special="all")
    for size in (1, 1, 3):
        turn = Turn(Request([{"type": "function", "function": {"name": "f"}}]))
        steps = [turn.feed_ids(ids[i:i + size]) for i in range(0, len(ids), size)]
        steps.append(turn.close("stop"))
        assert "".join(c.arguments for s in steps for c in s.calls) == arguments
        assert [end.arguments for s in steps for end in s.ended] == [arguments]
