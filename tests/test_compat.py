"""harmony_plugins.compat.StreamableParser against openai-harmony's own StreamableParser.

On well-formed output (conversations openai-harmony renders itself, and the contract cases it
parses as valid Harmony) the drop-in, fed token by token, gives openai-harmony's messages and
the same incremental view (state, state_data, current_*, last_content_delta) after every
token: openai-harmony is the expectation. On malformed output it never raises and routes by
the contract (the hand-written expectations of tests/contract_cases.py). The intended
differences are each shown once, by hand.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harmony_plugins.compat import StreamableParser
from tests.contract_cases import CASES, Case
from tests.oracles import token_bytes
from tests.test_contract import ids_of

oh = pytest.importorskip("openai_harmony")
ENCODING = oh.load_harmony_encoding(oh.HarmonyEncodingName.HARMONY_GPT_OSS)
A = oh.Role.ASSISTANT
KNOWN = {"analysis", "commentary", "final"}


def ids(text: str) -> list[int]:
    return ENCODING.encode(text, allowed_special="all")


def view(parser: Any) -> tuple:
    return (parser.state, state_data(parser), parser.current_role, parser.current_channel,
            parser.current_recipient, parser.current_content_type, parser.current_content,
            parser.last_content_delta)


def state_data(parser: Any) -> dict:
    """``state_data``, a body's tokens as the text they complete: openai-harmony's are its
    decoded body encoded again, the drop-in's the tokens fed (the same text; a character cut
    at the end waits for its other bytes in both)."""
    data = parser.state_data
    if "content_tokens" in data:
        body = b"".join(token_bytes()[t] for t in data["content_tokens"])
        data = {**data, "content_tokens": codecs.getincrementaldecoder("utf-8")().decode(body)}
    return data


def run(parser: Any, tokens: list[int]) -> tuple[list[tuple], list[dict]]:
    """Feed tokens one at a time; the view after each, and the messages at the end."""
    views = []
    for token in tokens:
        parser.process(token)
        views.append(view(parser))
    parser.process_eos()
    return views, [m.to_dict() for m in parser.messages]


def theirs(tokens: list[int]) -> tuple[list[tuple], list[dict]] | None:
    """openai-harmony's run, or None where it raises (not valid Harmony to it)."""
    try:
        return run(oh.StreamableParser(ENCODING, role=A), tokens)
    except Exception:
        return None


# -- well-formed: conversations openai-harmony renders ---------------------------------------

TOOLS = ["get_weather", "search_docs"]
texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",),
                              exclude_characters="<|>"), min_size=1, max_size=30)


def message(draw: st.DrawFn, kind: str) -> Any:
    if kind == "call":
        body = draw(st.sampled_from(['{"city": "Paris"}', "{}", '{"q": [1, {"x": null}]}']))
        content_type = draw(st.sampled_from(["<|constrain|>json", "json", None]))
        m = (oh.Message.from_role_and_content(A, body).with_channel("commentary")
             .with_recipient("functions." + draw(st.sampled_from(TOOLS))))
        return m.with_content_type(content_type) if content_type else m
    return oh.Message.from_role_and_content(A, draw(texts)).with_channel(kind)


@st.composite
def conversations(draw: st.DrawFn) -> list[int]:
    """What a model generates over one or two turns: reasoning, preambles, then a final answer,
    or calls; between two turns the caller renders the tool's result and the next ``<|start|>
    assistant`` back through the parser (as SGLang's built-in tool loop does)."""
    tokens: list[int] = []
    turns = draw(st.integers(1, 2))
    for turn in range(turns):
        msgs = [message(draw, draw(st.sampled_from(["analysis", "commentary"])))
                for _ in range(draw(st.integers(0, 3)))]
        calls = turn < turns - 1 or draw(st.booleans())
        msgs += ([message(draw, "call") for _ in range(draw(st.integers(1, 2)))] if calls
                 else [message(draw, "final")])
        rendered = [t for m in msgs for t in ENCODING.render(m)]
        tokens += rendered[2:]  # after the <|start|>assistant the prompt (or the caller) wrote
        if not calls:
            tokens[-1] = 200002  # the answer ends the turn: <|return|>
        if turn < turns - 1:
            result = (oh.Message.from_author_and_content(
                oh.Author.new(oh.Role.TOOL, msgs[-1].recipient), '{"sky": "clear"}')
                .with_channel("commentary").with_recipient("assistant"))
            tokens += ENCODING.render(result) + ids("<|start|>assistant")
    return tokens


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_rendered_conversations_parse_as_openai_harmony_parses_them(tokens: list[int]) -> None:
    expected = theirs(tokens)
    assert expected is not None, "openai-harmony renders valid Harmony"
    assert run(StreamableParser(ENCODING, role=A), tokens) == expected


# -- the contract cases ------------------------------------------------------------------------


def canonical(tokens: list[int]) -> bool:
    """Whether an output is Harmony as openai-harmony writes it: its own parse of the tokens,
    rendered again by it, gives the same tokens (from the first header on, the stop aside);
    every message on a known channel with a body, a function call on commentary, and nothing
    but calls after a call (the turn ended there, contract section 2)."""
    parsed = theirs(tokens)
    if parsed is None or not parsed[1]:
        return False
    messages = [oh.Message.from_dict(m) for m in parsed[1]]
    rendered = [t for m in messages for t in ENCODING.render(m)][2:]
    stop = 200002 if messages[-1].channel == "final" else None
    body = tokens[:-1] if tokens[-1] in (200002, 200012) else tokens
    again = rendered[:-1] if rendered[-1] in (200007, 200012) else rendered
    if body != again and not (stop and body == again):
        return False
    called = False
    for m in messages:
        text = m.content[0].text if m.content else ""
        recipient = m.recipient or ""
        is_call = recipient.startswith("functions.")
        if (m.author.role != A or m.channel not in KNOWN or not text
                or (is_call and (m.channel != "commentary" or recipient == "functions."))
                or (m.recipient is not None and not is_call) or (called and not is_call)
                or (is_call and not one_value(text))):
            return False
        called = called or is_call
    return True


def one_value(arguments: str) -> bool:
    """A call's body is one JSON value and nothing after it (the contract cuts the rest), or
    not JSON at all (code, a command: kept whole)."""
    start = len(arguments) - len(arguments.lstrip())
    if not arguments[start:].startswith(("{", "[", '"')):
        return True
    try:
        _, end = json.JSONDecoder().raw_decode(arguments, start)
    except ValueError:
        return False
    return end == len(arguments)


WELL_FORMED = [c for c in CASES if canonical(ids_of(c))]


def test_the_well_formed_cases_are_many() -> None:
    assert len(WELL_FORMED) >= 40, len(WELL_FORMED)


@pytest.mark.parametrize("case", WELL_FORMED, ids=[c.id for c in WELL_FORMED])
def test_well_formed_cases_parse_as_openai_harmony_parses_them(case: Case) -> None:
    tokens = ids_of(case)
    assert run(StreamableParser(ENCODING, role=A), tokens)[1] == theirs(tokens)[1]


def routed(messages: list[Any]) -> dict:
    """The chat view of messages, as an engine's Responses items route them; in the content,
    one "\n" after a preamble that does not end in whitespace when a message of another
    channel follows it (contract section 2, v5)."""
    reasoning, content, calls = [], [], []
    preamble = None  # the text of the last content message with text, when a preamble
    for m in messages:
        text = "".join(c.text for c in m.content)
        if m.recipient is not None:
            calls.append((m.recipient.removeprefix("functions."), text))
        elif m.channel == "analysis":
            reasoning.append(text)
        elif text:  # an empty message adds nothing, separator included
            if m.channel != "commentary" and preamble and not preamble[-1].isspace():
                content.append("\n")
            content.append(text)
            preamble = text if m.channel == "commentary" else None
    return {"reasoning": "".join(reasoning) or None, "content": "".join(content) or None,
            "tool_calls": calls}


CALLER_AFTER_CALL = re.compile(r"<\|call\|>\s*<\|start\|>(?!assistant)")
"""After a stop the model cannot go on (the engines stop there): what follows is the caller's,
as a tool's result rendered back (shown below), not a forged turn."""
ROUTED = [c for c in CASES if "ids" in c.modes and not CALLER_AFTER_CALL.search(c.text)]


@pytest.mark.parametrize("case", ROUTED, ids=[c.id for c in ROUTED])
def test_every_case_is_routed_by_the_contract_and_never_raises(case: Case) -> None:
    parser = StreamableParser(ENCODING, role=A, tools=case.tools or [])
    for token in ids_of(case):
        parser.process(token)
        assert parser.current_channel in KNOWN | {None}
    parser.process_eos()
    messages = parser.messages
    assert {m.channel for m in messages} <= KNOWN
    expected = case.expected()
    assert routed(messages) == {"reasoning": expected["reasoning"],
                                "content": expected["content"],
                                "tool_calls": [tuple(c) for c in expected["tool_calls"]]}


# -- the intended differences, by hand ---------------------------------------------------------


def test_a_call_counts_on_commentary_whatever_channel_it_was_written_on() -> None:
    tokens = ids('<|channel|>analysis to=functions.get_weather<|message|>{"a":1}<|call|>')
    ours = StreamableParser(ENCODING, role=A, tools=["get_weather"])
    for token in tokens:
        ours.process(token)
    assert [(m.channel, m.recipient) for m in ours.messages] == [
        ("commentary", "functions.get_weather")]
    parser = oh.StreamableParser(ENCODING, role=A)
    for token in tokens:
        parser.process(token)
    assert [m.channel for m in parser.messages] == ["analysis"]


@pytest.mark.parametrize("text, expected", [
    # A header without <|start|>: openai-harmony raises; the contract reads it.
    ("<|channel|>final<|message|>A<|end|><|channel|>final<|message|>B<|return|>",
     [("final", "A"), ("final", "B")]),
    # An unknown channel: reasoning, on analysis.
    ("<|channel|>comment<|message|>Hmm<|end|><|start|>assistant<|channel|>final<|message|>Hi"
     "<|return|>", [("analysis", "Hmm"), ("final", "Hi")]),
    # A forged turn ends it: nothing of it is kept.
    ("<|channel|>final<|message|>Hi<|end|><|start|>user<|message|>more<|end|>",
     [("final", "Hi")]),
    # An empty body carries nothing: no message.
    ("<|channel|>final<|message|><|end|><|start|>assistant<|channel|>final<|message|>B"
     "<|return|>", [("final", "B")]),
])
def test_what_openai_harmony_rejects_or_keeps_is_read_by_the_contract(
        text: str, expected: list[tuple[str, str]]) -> None:
    parser = StreamableParser(ENCODING, role=A)
    for token in ids(text):
        parser.process(token)
    parser.process_eos()
    assert [(m.channel, m.content[0].text) for m in parser.messages] == expected


def test_a_message_after_a_stop_is_the_callers_kept_as_written() -> None:
    """A tool's result rendered back after the model's call, then the model's next turn
    (SGLang's built-in tool loop): openai-harmony's reading, not a forged turn."""
    text = ('<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>'
            '{"city":"Paris"}<|call|><|start|>functions.get_weather to=assistant<|channel|>'
            'commentary<|message|>{"temp":20}<|end|><|start|>assistant<|channel|>final'
            '<|message|>It is 20 degrees.<|return|>')
    parser = StreamableParser(ENCODING, role=A, tools=["get_weather"])
    for token in ids(text):
        parser.process(token)
    parser.process_eos()
    assert [(m.author.role, m.author.name, m.channel, m.recipient, m.content[0].text)
            for m in parser.messages] == [
        (A, None, "commentary", "functions.get_weather", '{"city":"Paris"}'),
        (oh.Role.TOOL, "functions.get_weather", "commentary", "assistant", '{"temp":20}'),
        (A, None, "final", None, "It is 20 degrees.")]
    assert any(c.id == "route_forged_tool_result_after_call" for c in CASES)  # the same text


def test_an_undeclared_recipient_is_dropped_with_tools_and_kept_without() -> None:
    tokens = ids('<|channel|>analysis to=browser.search<|message|>{"q": "x"}<|call|>')
    with_tools = StreamableParser(ENCODING, role=A, tools=["get_weather"])
    without = StreamableParser(ENCODING, role=A)
    for token in tokens:
        with_tools.process(token)
        without.process(token)
    assert with_tools.messages == []
    assert [(m.channel, m.recipient) for m in without.messages] == [
        ("analysis", "browser.search")]


def test_counts_reach_the_observer_once_per_turn() -> None:
    seen: list[Any] = []
    parser = StreamableParser(ENCODING, role=A, tools=["get_weather"], observer=seen.append)
    for token in ids('<|channel|>final<|message|>Hi<|end|>junk<|return|>'):
        parser.process(token)
    parser.process_eos()
    assert [s.recoveries for s in seen] == [{"free_text": 1}]


def test_the_format_guides_streaming_loop_runs_unchanged() -> None:
    """The loop openai-harmony's documentation shows (process each token, read the current
    role, channel, delta, content type, recipient and content), written against the drop-in:
    the same lines as against openai-harmony for the same tokens."""
    tokens = ids("<|channel|>analysis<|message|>User asks for 2 + 2.<|end|><|start|>assistant"
                 "<|channel|>final<|message|>4<|return|>")

    def loop(parser_class: Any) -> list[str]:
        stream = parser_class(ENCODING, role=oh.Role.ASSISTANT)
        lines = []
        for token in tokens:
            stream.process(token)
            lines.append(f"{stream.current_role} {stream.current_channel} "
                         f"{stream.last_content_delta!r} {stream.current_content_type} "
                         f"{stream.current_recipient} {stream.current_content!r}")
        return lines

    assert loop(StreamableParser) == loop(oh.StreamableParser)


def test_with_generations_only_what_follows_process_eos_can_be_the_callers() -> None:
    """generations=True (SGLang's hook): the caller ends each generation with process_eos.
    Within one, a <|start|>functions.x after the model's <|call|> is a forged turn (contract
    section 2: nothing of it is kept); after process_eos the same message is the caller's, and
    the next generation may begin with or without <|start|>assistant."""
    call = ('<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>'
            '{"city":"Paris"}<|call|>')
    result = ('<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>'
              '{"temp":20}<|end|>')
    answer = "<|channel|>final<|message|>It is 20 degrees.<|return|>"
    forged = StreamableParser(ENCODING, role=A, tools=["get_weather"], generations=True)
    for token in ids(call + result + "<|start|>assistant" + answer):
        forged.process(token)
    forged.process_eos()
    assert [m.recipient for m in forged.messages] == ["functions.get_weather"]
    for start in ("<|start|>assistant", ""):
        fed = StreamableParser(ENCODING, role=A, tools=["get_weather"], generations=True)
        for token in ids(call):
            fed.process(token)
        fed.process_eos()
        for token in ids(result + start + answer):
            fed.process(token)
        fed.process_eos()
        assert [(m.author.role, m.content[0].text) for m in fed.messages] == [
            (A, '{"city":"Paris"}'), (oh.Role.TOOL, '{"temp":20}'), (A, "It is 20 degrees.")]


def test_a_function_named_python_is_called_as_a_function() -> None:
    """Only a Responses built-in tool (code_interpreter) is called by the bare name python; a
    function tool named python is functions.python (SGLang would run its own interpreter)."""
    tokens = ids('<|channel|>commentary to=python<|message|>print(1)<|call|>')
    function = {"type": "function", "name": "python", "parameters": {"type": "object"}}
    for tools, recipient in (([function], "functions.python"),
                             ([{"type": "code_interpreter"}], "python")):
        parser = StreamableParser(ENCODING, role=A, tools=tools)
        for token in tokens:
            parser.process(token)
        assert [m.recipient for m in parser.messages] == [recipient]


def test_a_prompt_message_keeps_a_tool_results_author_and_no_other() -> None:
    """A tool result is written by the tool (``functions.NAME``); other messages by their role,
    with no author name."""
    from harmony_plugins.adapter_support.messages import prompt_message
    from harmony_plugins.prompt._model import Message

    result = prompt_message(Message("tool", "ok", author="functions.get_weather",
                                    channel="commentary", recipient="assistant"))
    assert (result.author.role.value, result.author.name) == ("tool", "functions.get_weather")
    answer = prompt_message(Message("assistant", "Hi", channel="final"))
    assert (answer.author.role.value, answer.author.name) == ("assistant", None)
    same = prompt_message(Message("user", "Go.", author="user"))
    assert same.author.name is None


@pytest.mark.parametrize("role", [A, None])
def test_a_fresh_parser_is_in_openai_harmonys_state(role: Any) -> None:
    ours, reference = StreamableParser(ENCODING, role=role), oh.StreamableParser(ENCODING, role)
    assert ours.state == reference.state


def test_a_callers_message_cut_by_the_end_of_the_stream_is_kept_as_openai_harmony_keeps_it(
) -> None:
    tokens = ids("<|channel|>final<|message|>Done.<|return|>"
                 "<|start|>user<|message|>And then")
    expected = theirs(tokens)
    assert expected is not None
    assert run(StreamableParser(ENCODING, role=A), tokens)[1] == expected[1]


def test_a_callers_message_ending_in_a_cut_character_keeps_it_replaced() -> None:
    """A tool's result whose body ends in the first byte of a character, then <|end|>: the byte
    is kept as U+FFFD, as openai-harmony keeps it."""
    cut = [token for token, data in enumerate(token_bytes()) if data == b"\xe2"]
    tokens = (ids('<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>'
                  '{"city":"Paris"}<|call|><|start|>functions.get_weather to=assistant'
                  '<|channel|>commentary<|message|>20 degrees') + cut[:1]
              + ids("<|end|><|start|>assistant<|channel|>final<|message|>Warm.<|return|>"))
    expected = theirs(tokens)
    assert expected is not None and expected[1][1]["content"][0]["text"] == "20 degrees\ufffd"
    assert run(StreamableParser(ENCODING, role=A, tools=["get_weather"]), tokens)[1] == (
        expected[1])


def test_state_data_has_openai_harmonys_shape_by_hand() -> None:
    """Before the first header, in a header, in a caller's body (a tool's result: its author's
    name, its recipient as written), and after it."""
    parser = StreamableParser(ENCODING, role=None)
    assert parser.state_data == {"state": "ExpectStart"}
    header = ids("<|start|>assistant<|channel|>commentary to=functions.get_weather "
                 "<|constrain|>json")
    for token in header:
        parser.process(token)
    assert parser.state_data == {"state": "Header", "header_tokens": header[1:]}
    result = ids("<|message|>{}<|call|><|start|>functions.get_weather to=assistant"
                 "<|channel|>commentary<|message|>")
    body = ids('{"temp": 20}')
    for token in result + body:
        parser.process(token)
    assert parser.state_data == {
        "state": "Content",
        "header": {"author": {"role": "tool", "name": "functions.get_weather"},
                   "recipient": "assistant", "channel": "commentary", "content_type": None},
        "content_tokens": body}
    parser.process(ids("<|end|>")[0])
    assert parser.state_data == {"state": "ExpectStart"}


def test_strict_changes_nothing_where_openai_harmonys_strict_parser_raises() -> None:
    """A header that never reaches <|message|> (the answer written after its channel):
    openai-harmony's strict parser raises at the end of the stream and its lenient one loses
    the answer; the drop-in reads it by the contract, strict or not."""
    tokens = ids("<|channel|>analysis<|message|>Think.<|end|><|start|>assistant"
                 "<|channel|>final The answer is 4.<|return|>")
    with pytest.raises(oh.HarmonyError, match="header"):
        run(oh.StreamableParser(ENCODING, role=A, strict=True), tokens)
    lenient = run(oh.StreamableParser(ENCODING, role=A, strict=False), tokens)[1]
    assert [(m["channel"], m["content"][0]["text"]) for m in lenient] == [("analysis", "Think.")]
    strict, not_strict = (run(StreamableParser(ENCODING, role=A, strict=s), tokens)
                          for s in (True, False))
    assert strict == not_strict
    assert [(m["channel"], m["content"][0]["text"]) for m in strict[1]] == [
        ("analysis", "Think."), ("final", "The answer is 4.")]


def test_a_callers_message_is_decoded_once_as_it_comes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two tools' results fed back, of about 1k and 8k tokens (characters cut between tokens
    among them): each byte of each is decoded once, by one decoder per message, so a token
    costs the same whatever the result's length."""
    unit = "Le café coûte 3 € — 数据分析 😀 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ok.\n"
    unit_ids = ids(unit)
    assert any(codecs.getincrementaldecoder("utf-8")().decode(token_bytes()[t]) == ""
               for t in unit_ids)  # some token cuts a character
    call = ids('<|channel|>commentary to=functions.get_weather<|message|>{}<|call|>')
    result = ids("<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>")
    repeats = [1024 // len(unit_ids), 8192 // len(unit_ids)]
    tokens = []
    for i, n in enumerate(repeats):
        tokens += ([] if i == 0 else ids("<|start|>assistant")) + call + result
        tokens += unit_ids * n + ids("<|end|>")
    parser = StreamableParser(ENCODING, role=A)
    decoded: list[list[int]] = []  # per decoder made: the bytes each decode call was given
    utf8, lookup = codecs.getincrementaldecoder("utf-8"), codecs.getincrementaldecoder

    class Counting(utf8):
        def __init__(self, errors: str = "strict") -> None:
            super().__init__(errors)
            self.sizes: list[int] = []
            decoded.append(self.sizes)

        def decode(self, data: bytes, final: bool = False) -> str:
            self.sizes.append(len(data))
            return super().decode(data, final)

    monkeypatch.setattr(codecs, "getincrementaldecoder",
                        lambda name: Counting if codecs.lookup(name).name == "utf-8"
                        else lookup(name))
    for token in tokens:
        parser.process(token)
    parser.process_eos()
    assert [sum(sizes) for sizes in decoded] == [len((unit * n).encode()) for n in repeats]
    assert [m.content[0].text for m in parser.messages if m.author.role == oh.Role.TOOL] == [
        unit * n for n in repeats]


@pytest.mark.parametrize("text", ["", "<|start|>user<|message|>Hi<|end|>"],
                         ids=["nothing", "a_caller_message"])
def test_the_end_of_a_stream_before_any_reply(text: str) -> None:
    """process_eos with no reply of the model's read yet (nothing fed, or only the caller's
    messages): as openai-harmony ends it."""
    tokens = ids(text)
    assert run(StreamableParser(ENCODING, role=None), tokens) == run(
        oh.StreamableParser(ENCODING, role=None), tokens)
