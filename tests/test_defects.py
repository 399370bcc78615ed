"""Regression tests for the fuzz defects of issue 11, one or more per defect.

No wall-clock assertions: cost is checked by structure (no repeated concatenation) or by
completing bounded but large inputs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from harmony_plugins import (
    ChatResult,
    ContentText,
    Recovery,
    StreamParser,
    ToolCallArguments,
    ToolCallBegin,
    ToolCallEnd,
    Vocab,
    parse_ids,
    parse_text,
    rules,
    vocab,
)
from harmony_plugins._openai import chat_delta

RESERVED = 200010


def _stream_text(text: str, tools=None) -> list:
    parser = StreamParser(tools)
    events: list = []
    for ch in text:
        events += parser.feed_text(ch)
    return events + parser.close()


# ---------------------------------------------------------------- 1. RecursionError


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


# ---------------------------------------------------------------- 2. quadratic result


class _CountingStr(str):
    """A str whose use as the right operand of ``+`` is counted (``"" + piece``)."""

    adds = 0

    def __radd__(self, other):
        _CountingStr.adds += 1
        return str.__add__(other, self)


def test_chat_delta_joins_argument_pieces_once():
    events = [ToolCallBegin(0, "call_0", "f")]
    events += [ToolCallArguments(0, _CountingStr("x")) for _ in range(1000)]
    _CountingStr.adds = 0
    delta = chat_delta(events)
    assert delta["tool_calls"][0]["function"]["arguments"] == "x" * 1000
    assert _CountingStr.adds == 0, "arguments grown by repeated concatenation"
    result = ChatResult()
    _CountingStr.adds = 0
    result.add(events)
    assert result.message()["tool_calls"][0]["function"]["arguments"] == "x" * 1000
    assert _CountingStr.adds == 0


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


# ---------------------------------------------------------------- 3. header words lost


@pytest.mark.parametrize("mode", ["whole", "per_char"])
def test_header_words_dropped_are_in_recovery_text(mode):
    text = "<|start|>assistant LOST WORDS<|channel|>final The answer<|end|>"
    if mode == "whole":
        p = StreamParser()
        events = p.feed_text(text) + p.close()
    else:
        events = _stream_text(text)
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


# ---------------------------------------------------------------- 4. assembled marker


@pytest.mark.parametrize("marker", ["<|reserved_200010|>", "<|startoftext|>",
                                    "<|message|>", "<|constrain|>"])
def test_text_mode_never_assembles_a_marker(marker):
    text = "<|channel|>final<|message|>A<|" + marker + "end|>B"
    whole = parse_text(text)
    assert "<|end|>" not in whole["content"]
    assert whole["content"] == "A<|B"
    streamed = "".join(e.text for e in _stream_text(text) if isinstance(e, ContentText))
    assert streamed == "A<|B"


# ---------------------------------------------------------------- 5. the CLI


def _cli(*args: str, stdin: str = "", env: dict | None = None, stdout=subprocess.PIPE):
    import os

    exe = Path(sys.executable).parent / "harmony-ext"
    if not exe.exists():
        pytest.fail(f"{exe} is missing: run scripts/setup_env.sh (the core tier installs the "
                    "command; a skip would pass the tier without the CLI)", pytrace=False)
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run([str(exe), "parse", *args], input=stdin.encode(), stdout=stdout,
                          stderr=subprocess.PIPE, env=full_env, timeout=60)


def _one_line_usage_error(proc) -> None:
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "Traceback" not in err
    assert "usage: harmony-ext parse" in err
    assert len([line for line in err.splitlines() if "error:" in line]) == 1


@pytest.mark.parametrize("stdin", ["[" + "1" * 5000 + "]", "[" * 100_000 + "]" * 100_000])
def test_cli_ids_unusable_json_is_a_usage_error(stdin):
    _one_line_usage_error(_cli("--input", "ids", stdin=stdin))


def test_cli_usage_error_shows_the_parse_usage():
    proc = _cli("--input", "ids", stdin="nope")
    _one_line_usage_error(proc)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_cli_write_error_is_one_line():
    with open("/dev/full", "wb") as full:
        proc = _cli(stdin="<|channel|>final<|message|>Hi", stdout=full)
    err = proc.stderr.decode()
    assert proc.returncode != 0
    assert "Traceback" not in err and "Exception ignored" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("stream", [False, True])
def test_cli_ascii_stdout(stream):
    text = "<|channel|>final<|message|>caf\u00e9 \U0001f99c"
    args = ("--stream",) if stream else ()
    proc = _cli(*args, stdin=text, env={"PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 0, proc.stderr.decode()
    lines = proc.stdout.decode("ascii").splitlines()
    if stream:
        content = "".join(json.loads(line)["choices"][0]["delta"].get("content") or ""
                          for line in lines)
    else:
        content = json.loads(lines[0])["content"]
    assert content == "caf\u00e9 \U0001f99c"


# ---------------------------------------------------------------- 6. the API boundary


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


@pytest.mark.parametrize("bad", ["get", b"get", {"type": "function", "function": {
    "name": "get"}}, [5], [None]])
def test_tools_of_no_tool_shape_are_refused(bad):
    with pytest.raises(TypeError):
        StreamParser(bad)


def test_pass_undeclared_never_surfaces_an_empty_name():
    text = '<|channel|>commentary to=functions.<|message|>{"a": 1}<|call|>'
    parser = StreamParser(["get_weather"], pass_undeclared=True)
    events = parser.feed_text(text) + parser.close()
    assert not [e for e in events if isinstance(e, ToolCallBegin)]
    assert parser.recoveries.get(rules.EMPTY_RECIPIENT) == 1


def test_bad_finish_is_a_value_error():
    with pytest.raises(ValueError):
        parse_text("x", finish="maybe")
    with pytest.raises(ValueError):
        parse_ids([], finish="maybe")


# ---------------------------------------------------------------- 7. one vocabulary build


def test_o200k_built_once_by_racing_threads(monkeypatch):
    builds = []
    real = Vocab.from_pieces.__func__  # type: ignore[attr-defined]
    gate = threading.Barrier(64)

    def counting(cls, pieces, specials, name="custom"):
        builds.append(name)
        return real(cls, pieces, specials, name)

    monkeypatch.setattr(vocab, "_o200k", None)
    monkeypatch.setattr(Vocab, "from_pieces", classmethod(counting))
    got: list = []

    def worker():
        gate.wait()
        got.append(Vocab.o200k_harmony())

    threads = [threading.Thread(target=worker) for _ in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert builds == ["o200k_harmony"]
    assert len(got) == 64 and all(v is got[0] for v in got)
