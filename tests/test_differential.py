"""Differential test: on well-formed conversations rendered by openai_harmony itself, our
parse equals openai_harmony's own parse of the same tokens."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harmony_plugins import parse_ids
from tests.data import KNOWN_IDS

oh = pytest.importorskip("openai_harmony")
ENCODING = oh.load_harmony_encoding(oh.HarmonyEncodingName.HARMONY_GPT_OSS)
TOOLS = ["get_weather", "search_docs", "run"]

texts = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="<|>"),
    min_size=1, max_size=40,
)


def call_message(draw: st.DrawFn):
    recipient = "functions." + draw(st.sampled_from(TOOLS))
    body = draw(st.sampled_from(['{"city": "Paris"}', "{}", '{"q": "a \\"b\\" {c}"}',
                                '{"list": [1, 2, {"x": null}]}']))
    channel = draw(st.sampled_from(["commentary", "analysis"]))
    return (oh.Message.from_role_and_content(oh.Role.ASSISTANT, body)
            .with_channel(channel).with_recipient(recipient)
            .with_content_type("<|constrain|>json"))


@st.composite
def messages(draw: st.DrawFn) -> list:
    """A well-formed assistant turn: reasoning and preambles, then a final answer or calls.

    A call ends the turn (``<|call|>``), so calls only come last.
    """
    out = []
    for _ in range(draw(st.integers(0, 4))):
        channel = draw(st.sampled_from(["analysis", "commentary"]))
        out.append(oh.Message.from_role_and_content(oh.Role.ASSISTANT, draw(texts))
                   .with_channel(channel))
    if draw(st.booleans()):
        out.append(oh.Message.from_role_and_content(oh.Role.ASSISTANT, draw(texts))
                   .with_channel("final"))
    else:
        out += [call_message(draw) for _ in range(draw(st.integers(1, 3)))]
    return out


def completion_tokens(msgs: list) -> list[int]:
    """What the model generates after the prompt's ``<|start|>assistant``."""
    tokens: list[int] = []
    for msg in msgs:
        tokens += ENCODING.render(msg)
    start_assistant = ENCODING.render(msgs[0])[:2]
    assert tokens[:2] == start_assistant  # <|start|> assistant
    tokens = tokens[2:]
    if msgs[-1].channel == "final":
        tokens[-1] = 200002  # <|end|> -> <|return|>, as the model stops
    return tokens


def expected_from_harmony(tokens: list[int]) -> dict:
    parsed = ENCODING.parse_messages_from_completion_tokens(tokens, oh.Role.ASSISTANT)
    reasoning, content, calls = [], [], []
    preamble = None  # the text of the last content message with text, when a preamble
    for msg in parsed:
        text = "".join(part.text for part in msg.content)
        if msg.recipient:
            calls.append((msg.recipient.removeprefix("functions."), text))
        elif msg.channel == "analysis":
            reasoning.append(text)
        elif text:  # contract section 2 (v5): one "\n" after a preamble, before another channel
            if msg.channel != "commentary" and preamble and not preamble[-1].isspace():
                content.append("\n")
            content.append(text)
            preamble = text if msg.channel == "commentary" else None
    return {
        "reasoning": "".join(reasoning) or None,
        "content": "".join(content) or None,
        "calls": calls,
    }


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages())
def test_our_parse_equals_openai_harmony(msgs):
    tokens = completion_tokens(msgs)
    expected = expected_from_harmony(tokens)
    got = parse_ids(tokens, tools=TOOLS)
    assert got["reasoning"] == expected["reasoning"]
    assert got["content"] == expected["content"]
    calls = [(c["function"]["name"], c["function"]["arguments"]) for c in got["tool_calls"]]
    assert calls == expected["calls"]
    assert got["finish_reason"] == ("tool_calls" if calls else "stop")


def test_known_sequence_matches():
    """The real gpt-oss output from docs/tokenizer.md."""
    expected = expected_from_harmony(KNOWN_IDS)
    got = parse_ids(KNOWN_IDS)
    assert (got["reasoning"], got["content"]) == (expected["reasoning"], expected["content"])
    assert got["content"] == "2 + 2 = 4."
