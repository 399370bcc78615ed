"""Tests written from the contract (docs/contract.md), not from the parser.

Every case of :mod:`contract_cases` runs through both front ends (``parse_text`` and
``parse_ids``), then streamed one character / one token at a time and in random chunks
through :class:`StreamParser` + :class:`ChatResult`, and the merged deltas must equal the
non-streamed result and the contract's expected result.

Readings of the contract chosen where it is ambiguous (the one most useful to an OpenAI
client) are marked ``AMBIGUOUS:`` here and in ``contract_cases.py``.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harmony_ext_testing.client import fold_deltas
from harmony_plugins import (
    ChatResult,
    EndOfTurn,
    Recovery,
    Request,
    Step,
    StreamParser,
    ToolCallArguments,
    ToolCallBegin,
    ToolCallEnd,
    Turn,
    parse_ids,
    parse_text,
)
from harmony_plugins.vocab import o200k
from tests.data import KNOWN_IDS, STRICT, variant

sys.path.insert(0, str(Path(__file__).resolve().parent))
from contract_cases import CALL_W, CASES, MALFORMED, PARIS, Case, W

# Any special-token spelling of o200k_harmony (named or reserved).
LEAK = re.compile(
    r"<\|(?:start|end|message|channel|constrain|return|call|startoftext|endoftext|"
    r"endofprompt|reserved_\d+)\|>"
)

# Parser bugs found by these tests: case id -> reason. Marked xfail(strict=True) so that a fix
# shows up as XPASS (then remove the entry).
PARSER_BUGS: dict[str, str] = {}


_ENC = None


def encoding():
    global _ENC
    if _ENC is None:
        _ENC = o200k.tiktoken_encoding()
    return _ENC


def ids_of(case: Case) -> list[int]:
    e = encoding()
    if case.ids_parts is None:
        return e.encode(case.text, allowed_special="all")
    out: list[int] = []
    for part, special in case.ids_parts:
        if special:
            out += e.encode(part, allowed_special="all")
        else:
            out += e.encode(part, allowed_special=set(), disallowed_special=())
    return out


def norm(message: dict) -> dict:
    """The comparable view of a result; checks the call ids and shape on the way."""
    calls = message["tool_calls"]
    ids = [c["id"] for c in calls]
    assert all(isinstance(i, str) and i for i in ids), f"empty tool-call id in {calls}"
    assert len(set(ids)) == len(ids), f"tool-call ids not unique: {ids}"
    for c in calls:
        assert c.get("type", "function") == "function"
    return {
        "reasoning": message["reasoning"],
        "content": message["content"],
        "tool_calls": [(c["function"]["name"], c["function"]["arguments"]) for c in calls],
        "finish_reason": message["finish_reason"],
    }


def assert_no_leak(result: dict) -> None:
    fields = [result["reasoning"] or "", result["content"] or ""]
    fields += [args for _, args in result["tool_calls"]]
    for text in fields:
        assert not LEAK.search(text), f"control-token spelling leaked: {text!r}"


def check_events(events: list) -> None:
    """Event-stream invariants of the core API: begin first, indexes 0.., End = sum of args."""
    assert events and isinstance(events[-1], EndOfTurn), "close() must end with EndOfTurn"
    assert sum(isinstance(e, EndOfTurn) for e in events) == 1
    begun: dict[int, int] = {}
    pieces: dict[int, list[str]] = {}
    ended: set[int] = set()
    for pos, e in enumerate(events):
        if isinstance(e, ToolCallBegin):
            assert e.index == len(begun), f"call index {e.index}, expected {len(begun)}"
            begun[e.index] = pos
            pieces[e.index] = []
        elif isinstance(e, ToolCallArguments):
            assert e.index in begun, "arguments before the call's begin event"
            assert e.index not in ended, "arguments after the call's end event"
            pieces[e.index].append(e.text)
        elif isinstance(e, ToolCallEnd):
            assert e.index in begun and e.index not in ended
            ended.add(e.index)
            assert e.arguments == "".join(pieces[e.index])
    ids = [e.id for e in events if isinstance(e, ToolCallBegin)]
    assert all(ids) and len(set(ids)) == len(ids), f"tool-call ids: {ids}"


def run_stream(units, mode: str, tools, finish: str):
    """Feed units one per delta; return (merged deltas as a result, result.message(), events)."""
    parser = StreamParser(tools)
    result = ChatResult()
    events: list = []
    deltas = []
    for unit in units:
        ev = parser.feed_text(unit) if mode == "text" else parser.feed_ids(unit)
        events += ev
        deltas.append(result.add(ev))
    ev = parser.close(finish)
    events += ev
    deltas.append(result.add(ev))
    for d in deltas:
        for key in ("reasoning", "content"):
            if d and key in d:
                assert "\ufffd" not in d[key], f"broken UTF-8 in a delta: {d!r}"
    merged = fold_deltas(deltas)
    merged["finish_reason"] = result.finish_reason
    return merged, result.message(), events


def chunks(seq, rng: random.Random, most: int) -> list:
    out, i = [], 0
    while i < len(seq):
        n = rng.randint(1, most)
        out.append(seq[i:i + n])
        i += n
    return out


def _marks(case: Case):
    if case.id in PARSER_BUGS:
        return [pytest.mark.xfail(strict=True, reason="parser bug: " + PARSER_BUGS[case.id])]
    return []


def _params(mode: str):
    return [pytest.param(c, id=c.id, marks=_marks(c)) for c in CASES if mode in c.modes]


# ---------------------------------------------------------------------------- the cases


@pytest.mark.parametrize("case", _params("text"))
def test_text(case: Case):
    got = norm(parse_text(case.text, case.tools, case.finish))
    assert got == case.expected()
    assert_no_leak(got)


@pytest.mark.parametrize("case", _params("ids"))
def test_ids(case: Case):
    got = norm(parse_ids(ids_of(case), case.tools, case.finish))
    assert got == case.expected()
    if not case.leak_ok:
        assert_no_leak(got)


@pytest.mark.parametrize("case", _params("text"))
def test_text_streamed_per_character(case: Case):
    merged, message, events = run_stream(list(case.text), "text", case.tools, case.finish)
    check_events(events)
    assert norm(merged) == norm(message) == case.expected()


@pytest.mark.parametrize("case", _params("ids"))
def test_ids_streamed_per_token(case: Case):
    ids = ids_of(case)
    merged, message, events = run_stream([[i] for i in ids], "ids", case.tools, case.finish)
    check_events(events)
    assert norm(merged) == norm(message) == case.expected()


@pytest.mark.parametrize("case", _params("ids"))
def test_any_cut(case: Case):
    """6: the result does not depend on how the stream is cut into deltas."""
    ids = ids_of(case)
    for seed in range(3):
        rng = random.Random(f"{case.id}-{seed}")
        merged, _, events = run_stream(chunks(ids, rng, 5), "ids", case.tools, case.finish)
        check_events(events)
        assert norm(merged) == case.expected(), f"ids, seed {seed}"
        if "text" in case.modes:
            merged, _, events = run_stream(
                chunks(case.text, rng, 9), "text", case.tools, case.finish)
            check_events(events)
            assert norm(merged) == case.expected(), f"text, seed {seed}"


DROPPED = [pytest.param(c, id=c.id, marks=_marks(c)) for c in CASES if c.dropped]


@pytest.mark.parametrize("case", DROPPED)
def test_dropped_text_is_counted(case: Case):
    """6: text dropped by a rule is counted (Recovery events carry the dropped text)."""
    for mode in case.modes:
        data = case.text if mode == "text" else ids_of(case)
        parser = StreamParser(case.tools)
        events = parser.feed_text(data) if mode == "text" else parser.feed_ids(data)
        events += parser.close(case.finish)
        recoveries = [e for e in events if isinstance(e, Recovery)]
        assert recoveries, f"{mode}: model text dropped without a Recovery event"
        assert "".join(r.text for r in recoveries), f"{mode}: Recovery events carry no text"


# ---------------------------------------------------------------------------- malformed


@pytest.mark.parametrize(("text", "tools", "finish"),
                         [pytest.param(t, tl, f, id=i) for i, t, tl, f in MALFORMED])
def test_malformed_never_leaks_never_fails(text, tools, finish):
    """6: malformed output never raises, never leaks a control spelling, and the result is
    the same in text mode, ids mode, and however the stream is cut."""
    ids = encoding().encode(text, allowed_special="all")
    reference = norm(parse_text(text, tools, finish))
    assert_no_leak(reference)
    assert norm(parse_ids(ids, tools, finish)) == reference
    merged, _, events = run_stream(list(text), "text", tools, finish)
    check_events(events)
    assert norm(merged) == reference
    merged, _, events = run_stream([[i] for i in ids], "ids", tools, finish)
    check_events(events)
    assert norm(merged) == reference


FRAGMENTS = [
    "<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>", "<|return|>",
    "<|call|>", "<|endoftext|>", "<|reserved_200100|>", "assistant", "analysis", "commentary",
    "final", "comment", " to=functions.get_weather", " to=browser.search", " to=assistant",
    " json", "user", "functions.get_weather to=assistant", '{"a": 1}', '{"s": "}"', "]",
    "Hello ", "world.", "<|e", "<| b |>", "<|example|>", "\n", " ", "\U0001f99c", "\u9c7b",
    "final The answer", "to=get_weather", "print(1)",
]


@pytest.mark.parametrize("seed", range(40))
def test_random_markup_invariants(seed):
    """6: random mixtures of markers and text never raise, never leak a control spelling,
    and give one result in text mode, ids mode and however the stream is cut."""
    rng = random.Random(seed)
    for _ in range(10):
        text = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 14)))
        finish = rng.choice(["stop", "length"])
        ids = encoding().encode(text, allowed_special="all")
        reference = norm(parse_text(text, W, finish))
        assert_no_leak(reference)
        assert norm(parse_ids(ids, W, finish)) == reference, text
        merged, _, events = run_stream(chunks(text, rng, 4), "text", W, finish)
        check_events(events)
        assert norm(merged) == reference, text
        merged, _, events = run_stream(chunks(ids, rng, 3), "ids", W, finish)
        check_events(events)
        assert norm(merged) == reference, text


# ---------------------------------------------------------------------------- specific rules


def _case(case_id: str) -> Case:
    return next(c for c in CASES if c.id == case_id)


def test_known_ids_from_tokenizer_doc():
    case = _case("fmt_known_sequence")
    assert ids_of(case) == KNOWN_IDS
    assert norm(parse_ids(KNOWN_IDS)) == case.expected()


def test_multi_token_names_really_span_tokens():
    """1: channel names and recipients often span several tokens; the ids cases do."""
    e = encoding()
    # "commentary" right after <|channel|> is two tokens: comment + ary.
    ids = ids_of(_case("route_preamble_content"))
    assert ids[:4] == [200005, 12606, 815, 200008]
    assert [e.decode_single_token_bytes(i) for i in ids[1:3]] == [b"comment", b"ary"]
    # "comment" alone is one token (the unknown channel case).
    assert ids_of(_case("route_unknown_channel_comment"))[:3] == [200005, 12606, 200008]
    # The recipient functions.get_weather is three tokens, create_event too.
    def pieces(case_id):
        return [e.decode_single_token_bytes(i) for i in ids_of(_case(case_id))]

    def contains(seq, sub):
        return any(seq[k:k + len(sub)] == sub for k in range(len(seq)))

    assert contains(pieces("fmt_call_token_present"),
                    [b" to", b"=", b"functions", b".get", b"_weather"])
    assert contains(pieces("hdr_recipient_ends_at_marker"),
                    [b"functions", b".create", b"_event", b"<|channel|>"])
    # shelljson is shell + json; the bare recipient get_weather is get + _weather.
    assert contains(pieces("hdr_shelljson_split"), [b".shell", b"json", b"<|message|>"])
    assert contains(pieces("hdr_bare_recipient_declared"), [b"=get", b"_weather", b" "])


def test_utf8_characters_really_split_across_tokens():
    e = encoding()
    for case_id in ("utf8_content", "utf8_reasoning_before_end", "utf8_arguments"):
        pieces = [e.decode_single_token_bytes(i) for i in ids_of(_case(case_id))]
        broken = []
        for p in pieces:
            try:
                p.decode("utf-8")
            except UnicodeDecodeError:
                broken.append(p)
        assert broken, f"{case_id}: no multi-byte character split across tokens"


def test_ordinary_spelling_is_really_ordinary_tokens():
    for case_id in ("ids_ordinary_end_spelling", "ids_ordinary_call_spelling"):
        case = _case(case_id)
        ids = ids_of(case)
        ordinary = "".join(p for p, special in case.ids_parts if not special)
        specials_in_parts = sum(
            sum(i >= 199998 for i in encoding().encode(p, allowed_special="all"))
            for p, s in case.ids_parts if s)
        assert sum(i >= 199998 for i in ids) == specials_in_parts
        assert "<|" in ordinary


@pytest.mark.parametrize("mode", ["text", "ids"])
def test_call_begins_when_header_completes_and_arguments_stream(mode):
    """4: the call (index, id, name) is emitted as soon as its header is complete; then the
    raw body streams as argument deltas, in order, as tokens arrive."""
    head = CALL_W
    body1, body2 = '{"city": "Pa', 'ris", "units": "metric"}'
    parser = StreamParser(W)
    if mode == "text":
        def feed(s):
            out = []
            for ch in s:
                out += parser.feed_text(ch)
            return out
    else:
        def feed(s):
            out = []
            for i in encoding().encode(s, allowed_special="all"):
                out += parser.feed_ids([i])
            return out
    ev = feed(head)
    begins = [e for e in ev if isinstance(e, ToolCallBegin)]
    assert len(begins) == 1, f"no ToolCallBegin once the header is complete: {ev}"
    assert (begins[0].index, begins[0].name) == (0, "get_weather") and begins[0].id
    assert not [e for e in ev if isinstance(e, ToolCallArguments) and e.text]
    ev = feed(body1)
    streamed = "".join(e.text for e in ev if isinstance(e, ToolCallArguments))
    assert streamed, "arguments not streamed as they arrive"
    assert body1.startswith(streamed)
    rest = feed(body2 + "<|call|>") + parser.close("stop")
    streamed += "".join(e.text for e in rest if isinstance(e, ToolCallArguments))
    ev += rest
    assert streamed == body1 + body2
    assert [e.arguments for e in ev if isinstance(e, ToolCallEnd)] == [body1 + body2]
    assert ev[-1].finish_reason == "tool_calls"


@pytest.mark.parametrize("mode", ["text", "ids"])
def test_three_calls_indexes_and_unique_ids(mode):
    case = _case("args_three_calls")
    units = list(case.text) if mode == "text" else [[i] for i in ids_of(case)]
    _, message, events = run_stream(units, mode, case.tools, case.finish)
    begins = [e for e in events if isinstance(e, ToolCallBegin)]
    assert [b.index for b in begins] == [0, 1, 2]
    assert len({b.id for b in begins}) == 3 and all(b.id for b in begins)
    assert [c["id"] for c in message["tool_calls"]] == [b.id for b in begins]


def test_empty_body_gives_one_piece():
    parser = StreamParser(["get_time"])
    events = parser.feed_text(
        "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|><|call|>")
    events += parser.close()
    assert [e.text for e in events if isinstance(e, ToolCallArguments)] == ["{}"]


# ---------------------------------------------------------------------------- the CLI


def _cli() -> str:
    exe = Path(sys.executable).parent / "harmony-ext"
    if exe.exists():
        return str(exe)
    found = shutil.which("harmony-ext")
    if not found:
        pytest.fail("harmony-ext is not installed: run scripts/setup_env.sh (the core tier "
                    "installs the command; a skip would pass the tier without the CLI)",
                    pytrace=False)
    return found


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([_cli(), "parse", *args], input=stdin, capture_output=True,
                          text=True, timeout=60)


def cli_json(*args: str, stdin: str | None = None) -> dict:
    proc = cli(*args, stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


CLI_TEXT = (
    "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary"
    "<|message|>Checking.<|end|><|start|>assistant" + CALL_W + PARIS + "<|call|>"
)
CLI_EXPECTED = {"reasoning": "Need weather.", "content": "Checking.",
                "tool_calls": [("get_weather", PARIS)], "finish_reason": "tool_calls"}


def test_cli_text_stdin_default():
    out = cli_json("--tool", "get_weather", stdin=CLI_TEXT)
    assert set(out) == {"reasoning", "content", "tool_calls", "finish_reason"}
    assert out["tool_calls"][0]["type"] == "function"
    assert norm(out) == CLI_EXPECTED


def test_cli_text_single_trailing_newline_ignored():
    """CLI help: in text mode one trailing newline (as echo adds) is not model output."""
    assert norm(cli_json("--tool", "get_weather", stdin=CLI_TEXT + "\n")) == CLI_EXPECTED
    out = cli_json(stdin="<|channel|>final<|message|>Hi\n\n")
    assert out["content"] == "Hi\n"


def test_cli_no_tools_no_call():
    out = cli_json(stdin=CLI_TEXT)
    assert norm(out) == {"reasoning": "Need weather.", "content": "Checking.",
                         "tool_calls": [], "finish_reason": "stop"}


def test_cli_ids():
    ids = encoding().encode(CLI_TEXT, allowed_special="all")
    assert norm(cli_json("--input", "ids", "--tool", "get_weather",
                         stdin=json.dumps(ids))) == CLI_EXPECTED


def test_cli_tool_repeatable():
    text = CLI_TEXT + ("<|start|>assistant<|channel|>commentary to=functions.get_time"
                       '<|message|>{"tz":"UTC"}<|call|>')
    expected = dict(CLI_EXPECTED, tool_calls=[("get_weather", PARIS),
                                              ("get_time", '{"tz":"UTC"}')])
    out = cli_json("--tool", "get_weather", "--tool", "get_time", stdin=text)
    assert norm(out) == expected


def test_cli_finish_length():
    out = cli_json("--finish", "length", "--tool", "get_weather",
                   stdin=CALL_W + '{"city": "Par')
    assert norm(out) == {"reasoning": None, "content": None,
                         "tool_calls": [("get_weather", '{"city": "Par')],
                         "finish_reason": "length"}
    out = cli_json("--finish", "stop", stdin="<|channel|>final<|message|>Hi<|return|>")
    assert norm(out)["finish_reason"] == "stop"


def _merge_chunks(stdout: str, units: int) -> dict:
    lines = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    assert lines
    # one delta per input unit at most, plus a role chunk, the close() delta and the
    # finish_reason chunk
    assert len(lines) <= units + 3, "more chunks than input units"
    deltas = []
    for i, chunk in enumerate(lines):
        assert chunk["object"] == "chat.completion.chunk"
        choice = chunk["choices"][0]
        delta = dict(choice["delta"])
        if "reasoning_content" in delta and "reasoning" not in delta:
            delta["reasoning"] = delta.pop("reasoning_content")
        deltas.append(delta)
        if i < len(lines) - 1:
            assert choice.get("finish_reason") is None
    merged = fold_deltas(deltas)
    merged["finish_reason"] = lines[-1]["choices"][0]["finish_reason"]
    return merged


@pytest.mark.parametrize("mode", ["text", "ids"])
def test_cli_stream(mode):
    if mode == "text":
        data, units, args = CLI_TEXT, len(CLI_TEXT), ()
    else:
        ids = encoding().encode(CLI_TEXT, allowed_special="all")
        data, units, args = json.dumps(ids), len(ids), ("--input", "ids")
    proc = cli(*args, "--tool", "get_weather", "--stream", stdin=data)
    assert proc.returncode == 0, proc.stderr
    assert norm(_merge_chunks(proc.stdout, units)) == CLI_EXPECTED
    whole = cli_json(*args, "--tool", "get_weather", stdin=data)
    assert norm(whole) == CLI_EXPECTED


def test_cli_stream_finish_length():
    text = "<|channel|>final<|message|>The answer is"
    proc = cli("--stream", "--finish", "length", stdin=text)
    assert proc.returncode == 0, proc.stderr
    assert norm(_merge_chunks(proc.stdout, len(text))) == {
        "reasoning": None, "content": "The answer is", "tool_calls": [],
        "finish_reason": "length"}


@pytest.mark.parametrize("text", [t for _, t, _, _ in MALFORMED[:8]] + ["", "<|", "<|start|>"])
def test_cli_malformed_exit_0(text):
    proc = cli("--tool", "get_weather", stdin=text)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert_no_leak(norm(out))
    proc = cli("--tool", "get_weather", "--stream", stdin=text)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(("args", "stdin"), [
    (("--input", "ids"), "[200005, 35644,"),         # bad JSON
    (("--input", "ids"), '"not a list"'),            # JSON, but not an array of ids
    (("--input", "ids"), "[1.5, 2]"),                # not integers
    (("/nonexistent/harmony-output.txt",), None),    # missing input file
    (("--tools", "/nonexistent/tools.json"), "x"),   # missing tools file
    (("--finish", "maybe"), "x"),                    # bad --finish
    (("--input", "tokens"), "x"),                    # bad --input
])
def test_cli_usage_errors_exit_2(args, stdin):
    proc = cli(*args, stdin=stdin)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stderr.strip(), "a usage error needs a message"
    assert "Traceback" not in proc.stderr
    assert not proc.stdout.strip()


def test_pass_undeclared_option():
    """3: a server option may pass calls to undeclared functions through."""
    text = ('<|channel|>commentary to=functions.send_email <|constrain|>json<|message|>'
            '{"to":"bob"}<|call|>')
    parser = StreamParser(W, pass_undeclared=True)
    result = ChatResult()
    result.add(parser.feed_text(text))
    result.add(parser.close())
    assert norm(result.message())["tool_calls"] == [("send_email", '{"to":"bob"}')]


@pytest.mark.parametrize("mode", ["text", "ids"])
def test_text_streams_before_close(mode):
    """6/OpenAI: reasoning and content reach the client as they arrive, not at close()."""
    text = ("<|channel|>analysis<|message|>Thinking about the question carefully.<|end|>"
            "<|start|>assistant<|channel|>final<|message|>Here is a long enough answer.")
    parser = StreamParser()
    result = ChatResult()
    units = list(text) if mode == "text" else [
        [i] for i in encoding().encode(text, allowed_special="all")]
    deltas = [result.add(parser.feed_text(u) if mode == "text" else parser.feed_ids(u))
              for u in units]
    merged = fold_deltas(deltas)
    assert merged["reasoning"] == "Thinking about the question carefully."
    assert merged["content"] and "Here is a long enough answer.".startswith(merged["content"])
    assert len(merged["content"]) >= len("Here is a long enough")


# ---------------------------------------------------------------------------- v2: 4 and 6

SCHEMA_TOOLS = [
    variant(parameters=STRICT),
    {"type": "function", "function": {"name": "free_form"}},  # no parameters: nothing to check
    {"type": "function", "name": "bad_schema", "parameters": {"type": 12}},  # Responses shape
]


def _call(name: str, body: str) -> str:
    return f"<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{body}<|call|>"


@pytest.mark.parametrize(("text", "outcome"), [
    (_call("get_weather", PARIS), "surfaced"),
    (_call("get_weather", '{"city": 7}'), "schema_mismatch"),
    (_call("get_weather", '{"town": "Paris"}'), "schema_mismatch"),
    (_call("get_weather", "{'city': 'Paris'}"), "invalid_json"),
    (_call("get_weather", '{"city": "Par'), "invalid_json"),
    (_call("get_weather", '["Paris"]'), "not_object"),
    (_call("get_weather", '"Paris"'), "not_object"),
    (_call("get_weather", ""), "schema_mismatch"),  # {} lacks the required city
    (_call("free_form", '{"anything": [1, 2]}'), "surfaced"),
    (_call("free_form", "ls -la"), "invalid_json"),
    (_call("bad_schema", '{"a": 1}'), "unchecked"),
    # A call named by its content type (section 3) is the declared function's: checked so.
    ("<|channel|>commentary <|constrain|>functions.get_weather<|message|>" + PARIS
     + "<|call|>", "surfaced"),
    ('<|channel|>commentary <|constrain|>functions.get_weather<|message|>{"city": 7}<|call|>',
     "schema_mismatch"),
])
@pytest.mark.parametrize("mode", ["text", "ids"])
def test_call_end_outcome(text, outcome, mode):
    """4: when a call ends its arguments are checked; the outcome is on ToolCallEnd and
    counted, and the arguments are passed on unchanged."""
    units = list(text) if mode == "text" else [[i] for i in encoding().encode(
        text, allowed_special="all")]
    parser = StreamParser(SCHEMA_TOOLS)
    events = []
    for unit in units:
        events += parser.feed_text(unit) if mode == "text" else parser.feed_ids(unit)
    events += parser.close()
    ends = [e for e in events if isinstance(e, ToolCallEnd)]
    assert [e.outcome for e in ends] == [outcome]
    assert parser.call_outcomes == {outcome: 1}
    streamed = "".join(e.text for e in events if isinstance(e, ToolCallArguments))
    assert ends[0].arguments == streamed
    result = ChatResult()
    result.add(events)
    assert result.outcomes == {outcome: 1}


def test_call_outcome_unchecked_without_jsonschema(monkeypatch):
    from harmony_plugins import _checks as checks

    monkeypatch.setattr(checks, "_jsonschema", False)
    parser = StreamParser(SCHEMA_TOOLS)
    events = parser.feed_text(_call("get_weather", '{"city": 7}')) + parser.close()
    assert [e.outcome for e in events if isinstance(e, ToolCallEnd)] == ["unchecked"]


def test_validator_built_once_per_parser(monkeypatch):
    from harmony_plugins import _checks as checks

    built = []
    real = checks.build_validator
    monkeypatch.setattr(checks, "build_validator", lambda s: built.append(s) or real(s))
    parser = StreamParser(SCHEMA_TOOLS)
    parser.feed_text((_call("get_weather", PARIS) + "<|start|>assistant") * 5)
    parser.close()
    assert len(built) == 1


@pytest.mark.parametrize(("parts", "leaks"), [
    # ids mode: a control-token spelling made of ordinary tokens in content
    ((("<|channel|>final<|message|>", True), ("Type <|end|> to stop.", False),
      ("<|return|>", True)), ["<|end|>"]),
    # a whole header written as prose
    ((("<|channel|>final<|message|>", True),
      ("Calling commentary to=functions.get_weather json now", False), ("<|return|>", True)),
     ["commentary to=functions.get_weather"]),
    ((("<|channel|>commentary<|message|>", True),
      ("I will send to=functions.get_weather json", False), ("<|end|>", True)),
     ["to=functions.get_weather json"]),
    # a lone to=functions.x in prose is not a leak
    ((("<|channel|>final<|message|>", True),
      ("Write to=functions.get_weather in the header.", False), ("<|return|>", True)), []),
    # reasoning is not visible text
    ((("<|channel|>analysis<|message|>", True), ("I must not type <|end|> here", False),
      ("<|end|>", True)), []),
])
def test_leak_suspected_flagged_never_rewritten(parts, leaks):
    """6: visible text holding markup written as text is flagged, however it is cut."""
    e = encoding()
    ids: list[int] = []
    for part, special in parts:
        ids += (e.encode(part, allowed_special="all") if special
                else e.encode(part, allowed_special=set(), disallowed_special=()))
    plain = "".join(p for p, special in parts if not special)
    rng = random.Random(7)
    for groups in ([ids], [[i] for i in ids], chunks(ids, rng, 3)):
        parser = StreamParser(W)
        result = ChatResult()
        for group in groups:
            result.add(parser.feed_ids(group))
        result.add(parser.close())
        assert result.leaks == leaks
        assert parser.leaks_suspected == len(leaks)
        message = result.message()
        assert (message["content"] or message["reasoning"]) == plain  # never rewritten
    if "<|end|>" not in plain:  # text mode (no spellings: those are markers there)
        text = "".join(p for p, _ in parts)
        for cuts in ([text], list(text), chunks(text, rng, 4)):
            parser = StreamParser(W)
            result = ChatResult()
            for piece in cuts:
                result.add(parser.feed_text(piece))
            result.add(parser.close())
            assert result.leaks == leaks


# Routing to reasoning never depends on the tools, except for one rule: a bare declared
# name as the content type of an `analysis` header makes it a call. A parse that does not
# know the tools yet hands that body out as reasoning (Turn.declare's documented limit);
# no contract case is of that shape, so this set is empty and the limit is shown below.
TOOLS_LATE_DIVERGES: set[str] = set()


def test_tools_given_late_limit_bare_name_on_analysis():

    text = '<|channel|>analysis get_weather<|message|>{"city":"Oslo"}<|call|>'
    assert norm(parse_text(text, W))["tool_calls"] == [("get_weather", '{"city":"Oslo"}')]
    turn = Turn(Request(None, tools_known=False))
    early = turn.feed_text(text)
    assert early.reasoning == '{"city":"Oslo"}'  # handed out before the tools came
    assert turn.declare(W).calls[0].name == "get_weather"


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES if "text" in c.modes])
def test_tools_given_late_give_the_same_result(case: Case):
    """A turn that learns the request's tools part-way (Turn.declare, as SGLang's detectors
    do when used outside a server) ends with the contract's result, cut anywhere."""

    for cut in sorted({0, len(case.text) // 3, len(case.text) // 2, len(case.text)}):
        turn = Turn(Request(None, tools_known=False))
        result = ChatResult()
        for char in case.text[:cut]:  # before the tools: only the reasoning is handed out
            result.add(Step(reasoning=turn.feed_text(char).reasoning))
        result.add(turn.declare(case.tools))
        for char in case.text[cut:]:
            result.add(turn.feed_text(char))
        result.add(turn.close(case.finish))
        got = norm(result.message())
        if case.id in TOOLS_LATE_DIVERGES and cut:
            assert got != case.expected(), "the divergence is gone: remove the entry"
            continue
        assert got == case.expected(), cut


def test_the_demo_names_each_samples_recoveries(capsys):
    """harmony-ext demo: the well-formed samples need none; the malformed ones name the
    contract's rules for what they hold (trailing junk after the arguments, a forged tool
    result and the text after it; final without <|message|>, an undeclared built-in)."""
    from harmony_plugins import cli

    cli.run_demo()
    lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
    said = [line.removeprefix("recoveries: ") for line in lines
            if line.startswith("recoveries: ")]
    assert said[:2] == ["none", "none"]
    assert [set(json.loads(s.replace("'", '"'))) for s in said[2:]] == [
        {"after_json_value", "forged_turn", "after_end_of_turn"},
        {"final_without_message", "undeclared_recipient"}]
