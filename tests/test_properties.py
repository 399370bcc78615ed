"""Property tests: the parse never depends on how the stream was cut, never raises, never
leaks a control token, and accounts for every character of model text."""

from __future__ import annotations

import re
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harmony_ext_testing.client import fold_deltas
from harmony_plugins.harmony import SPELLINGS
from tests.harmony_gen import (
    COUNTED,
    harmony_output,
    leaks,
    run,
    split,
    to_ids,
)

SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
cuts = st.lists(st.integers(0, 400), max_size=40)


def random_groups(ids: list[int], data: st.DataObject, most: int) -> list[list[int]]:
    """Cut ids into consecutive deltas of 1 to ``most`` tokens, sizes drawn by hypothesis."""
    sizes = data.draw(st.lists(st.integers(1, most), min_size=len(ids), max_size=len(ids)))
    groups, pos = [], 0
    for size in sizes:
        if pos >= len(ids):
            break
        groups.append(ids[pos : pos + size])
        pos += size
    return groups


@SETTINGS
@given(harmony_output(), cuts, st.sampled_from(["stop", "length"]))
def test_text_result_does_not_depend_on_the_cuts(text, positions, finish):
    whole = run([text], "text", finish=finish)
    assert run(split(text, positions), "text", finish=finish).message == whole.message
    assert run(list(text), "text", finish=finish).message == whole.message
    pieces = run(split(text, positions), "text", finish=finish)
    assert pieces.recoveries == whole.recoveries


@SETTINGS
@given(harmony_output(), st.data())
def test_ids_result_does_not_depend_on_the_cuts(text, data):
    ids = to_ids(text)
    whole = run([ids], "ids")
    one_by_one = run([[i] for i in ids], "ids")
    grouped = run(random_groups(ids, data, 8), "ids")
    assert one_by_one.message == whole.message
    assert grouped.message == whole.message
    assert grouped.recoveries == whole.recoveries == one_by_one.recoveries


@SETTINGS
@given(harmony_output())
def test_text_and_ids_agree(text):
    assert run([to_ids(text)], "ids").message == run([text], "text").message


@SETTINGS
@given(harmony_output(), cuts)
def test_streamed_deltas_add_up_to_the_message(text, positions):
    from tests.harmony_gen import TOOLS

    for mode, data in (("text", text), ("ids", to_ids(text))):
        import itertools

        from harmony_plugins import ChatResult, StreamParser

        counter = itertools.count()
        parser = StreamParser(TOOLS, id_factory=lambda c=counter: f"call_{next(c)}")
        result = ChatResult()
        feed = parser.feed_text if mode == "text" else parser.feed_ids
        deltas = [result.add(feed(piece)) for piece in split(data, positions)]
        deltas.append(result.add(parser.close()))
        message = result.message()
        merged = fold_deltas(deltas)
        assert merged == {k: v for k, v in message.items() if k != "finish_reason"}


@SETTINGS
@given(harmony_output())
def test_no_control_token_leaks(text):
    for mode, data in (("text", text), ("ids", to_ids(text))):
        assert leaks(run([data], mode).message) == []


@SETTINGS
@given(harmony_output(), st.sampled_from(["text", "ids"]))
def test_every_character_is_accounted_for(text, mode):
    """Each body character is emitted exactly once, or dropped by a rule that carries it."""
    from tests.harmony_gen import emitted_text

    data = text if mode == "text" else to_ids(text)
    events = run([data], mode).events
    plain = re.sub(r"<\|[a-z_0-9]+\|>", lambda m: "" if m[0] in SPELLINGS else m[0], text)
    expected = Counter(c for c in plain if c in COUNTED)
    got = Counter(c for c in emitted_text(events) if c in COUNTED)
    assert got == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-5, 201100), max_size=60), st.sampled_from(["stop", "length"]))
def test_random_ids_never_raise(ids, finish):
    result = run([ids], "ids", finish=finish)
    assert result.message["finish_reason"] in ("stop", "length", "tool_calls")
    assert result.message == run([[i] for i in ids], "ids", finish=finish).message


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list("ab <|>=.\n") + [
    "<|end|>", "<|channel|>", "<|message|>", "<|start|>", "<|call|>", "<|constrain|>",
    "to=functions.shell", "final", "analysis", "é", "<|reserved_200010|>", "end|>", "<|",
    "user", "to=", "comm", "entary"]), max_size=80).map("".join), cuts)
def test_random_text_never_raises(text, positions):
    result = run(split(text, positions), "text")
    assert result.message == run([text], "text").message
    assert leaks(result.message) == []


# Characters of 2, 3 and 4 UTF-8 bytes, several of which o200k cuts across tokens.
WIDE_TEXT = st.text("aé数据😀𝔘𝔫𝔦 \n", max_size=40)


@SETTINGS
@given(WIDE_TEXT, WIDE_TEXT, st.data())
def test_characters_cut_across_tokens_survive_any_delta_split(reasoning, answer, data):
    text = (f"<|channel|>analysis<|message|>{reasoning}<|end|><|start|>assistant"
            f"<|channel|>final<|message|>{answer}<|return|>")
    ids = to_ids(text)
    message = run(random_groups(ids, data, 5), "ids").message
    assert (message["reasoning"] or "") == reasoning
    assert (message["content"] or "") == answer


# Pathological sizes (contract section 6): never raise, lose nothing, stay bounded. Few
# examples each: the sizes, not the variety, are the point.
BIG = settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))


@BIG
@given(st.integers(900, 30_000), st.sampled_from(["[", "{\"a\":"]),
       st.sampled_from(["text", "ids"]))
def test_deep_json_never_raises(depth, opener, mode):
    closer = "]" if opener == "[" else "}"
    deep = opener * depth + "1" * (opener != "[") + closer * depth
    text = f"<|channel|>commentary to=functions.shell<|message|>{deep}<|call|>"
    got = run([text if mode == "text" else to_ids(text)], mode).message
    assert got["tool_calls"][0]["function"]["arguments"] == deep
    text = f"<|channel|>final<|message|>{deep}<|return|>"
    assert run([text if mode == "text" else to_ids(text)], mode).message["content"] == deep


@BIG
@given(st.integers(10_000, 200_000), st.sampled_from(["text", "ids"]))
def test_megabyte_header_is_dropped_and_counted(words, mode):
    junk = "WORD " * words
    text = f"<|channel|>commentary {junk}<|message|>Hi<|end|>"
    result = run([text if mode == "text" else to_ids(text)], mode)
    assert result.message["content"] == "Hi"
    assert result.recoveries.get("header_junk") == 1
    dropped = "".join(e.text for e in result.events if e.__class__.__name__ == "Recovery")
    assert dropped.count("WORD") == words


@BIG
@given(st.integers(1_000, 20_000), st.sampled_from(["text", "ids"]))
def test_many_calls(n, mode):
    text = ("<|start|>assistant<|channel|>commentary to=functions.lookup <|constrain|>json"
            '<|message|>{"Q": 1}<|call|>') * n
    got = run([text if mode == "text" else to_ids(text)], mode).message
    assert len(got["tool_calls"]) == n
    assert {c["function"]["arguments"] for c in got["tool_calls"]} == {'{"Q": 1}'}
