"""SGLang 0.5.23's own gpt-oss parsing, pinned as observed (docs/sglang-builtin-observations.md).

These tests prove the harness reaches SGLang's real parsers, and record the builtin behaviour our
adapter replaces: if an SGLang upgrade changes one of them, the observations need a new look.
The detector chain mirrors serving_chat: reasoning parser first, its normal text to the tool parser.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
import sglang_cases
from sglang.srt.entrypoints.openai.protocol import Tool
from sglang.srt.function_call.function_call_parser import FunctionCallParser
from sglang.srt.parser.reasoning_parser import ReasoningParser
from tokenizers import Tokenizer

from tests.data import WEATHER

TOOLS = [Tool(**WEATHER)]
ANALYSIS = "<|channel|>analysis<|message|>Need weather.<|end|>"
CALL = (
    "<|channel|>commentary to=functions.get_weather <|constrain|>json"
    '<|message|>{"city":"Paris"}<|call|>'
)


def builtin_nonstream(text: str, tools: list[Tool] | None = TOOLS) -> dict[str, Any]:
    """What serving_chat's non-streaming path gets from the gpt-oss parsers."""
    reasoning, content = ReasoningParser(
        "gpt-oss", stream_reasoning=False, tool_call_parser_active=bool(tools)
    ).parse_non_stream(text)
    calls: list[tuple[str, str]] = []
    if tools:
        parser = FunctionCallParser(tools, "gpt-oss")
        if parser.has_tool_call(content):
            content, items = parser.parse_non_stream(content)
            calls = [(item.name, item.parameters) for item in items]
    return {"reasoning": reasoning, "content": content, "calls": calls}


def builtin_stream(deltas: list[str], tools: list[Tool] | None = TOOLS) -> dict[str, Any]:
    """What serving_chat's streaming path emits, deltas folded as a client would."""
    rp = ReasoningParser("gpt-oss", stream_reasoning=True, tool_call_parser_active=bool(tools))
    fp = FunctionCallParser(tools, "gpt-oss") if tools else None
    reasoning, content, calls = "", "", []
    for i, delta in enumerate(deltas):
        last = i == len(deltas) - 1
        r, n = rp.parse_stream_chunk(delta)
        if last:
            end_r, end_n = rp.parse_stream_end()
            r, n = (r or "") + (end_r or ""), (n or "") + (end_n or "")
        reasoning += r or ""
        if fp is None:
            content += n or ""
            continue
        text, items = fp.parse_stream_chunk(n or "")
        if last:
            end_text, end_items = fp.parse_stream_end()
            text, items = text + end_text, [*items, *end_items]
        content += text
        for item in items:
            if item.name:
                calls.append([item.name, item.parameters])
            else:
                calls[-1][1] += item.parameters
    return {"reasoning": reasoning, "content": content, "calls": [tuple(c) for c in calls]}


@pytest.fixture(scope="module")
def token_texts(hf_dir: Path):
    """Splits text into per-token pieces: the detokenizer never splits a special token."""
    tok = Tokenizer.from_file(str(hf_dir / "tokenizer.json"))

    def pieces(text: str) -> list[str]:
        ids = tok.encode(text, add_special_tokens=False).ids
        out = [tok.decode([i], skip_special_tokens=False) for i in ids]
        assert "".join(out) == text
        return out

    return pieces


# Whole text, one token per delta, and random groups of 1-4 tokens per delta.
token_chunkings = functools.partial(sglang_cases.token_chunkings, seeds=8)


def test_analysis_then_final_is_split_the_same_streamed_or_not(token_texts) -> None:
    text = ANALYSIS + "<|start|>assistant<|channel|>final<|message|>The answer is 4."
    want = {"reasoning": "Need weather.", "content": "The answer is 4.", "calls": []}
    assert builtin_nonstream(text) == want
    for deltas in token_chunkings(token_texts(text)):
        assert builtin_stream(deltas) == want


def test_call_after_analysis_is_parsed_and_arguments_reserialised(token_texts) -> None:
    text = ANALYSIS + "<|start|>assistant" + CALL
    # json.loads + json.dumps: the model's '{"city":"Paris"}' comes back with a space.
    want = {
        "reasoning": "Need weather.",
        "content": "",
        "calls": [("get_weather", '{"city": "Paris"}')],
    }
    assert builtin_nonstream(text) == want
    for deltas in token_chunkings(token_texts(text)):
        assert builtin_stream(deltas) == want


def test_call_as_first_message_leaks_when_not_streamed(token_texts) -> None:
    # has_tool_call() looks for "<|start|>assistant<|channel|>commentary", which a call that
    # opens the output lacks: non-streaming returns the raw markup as content.
    assert builtin_nonstream(CALL) == {"reasoning": "", "content": CALL, "calls": []}
    for deltas in token_chunkings(token_texts(CALL)):
        assert builtin_stream(deltas)["calls"] == [("get_weather", '{"city": "Paris"}')]


def test_call_without_call_token_is_dropped(token_texts) -> None:
    text = ANALYSIS + "<|start|>assistant" + CALL.removesuffix("<|call|>")
    want = {"reasoning": "Need weather.", "content": "", "calls": []}
    assert builtin_nonstream(text) == want
    for deltas in token_chunkings(token_texts(text)):
        assert builtin_stream(deltas) == want


def test_recipient_in_role_section_is_not_a_call(token_texts) -> None:
    text = ' to=functions.get_weather<|channel|>commentary json<|message|>{"city":"Paris"}<|call|>'
    assert builtin_nonstream(text) == {"reasoning": "", "content": text, "calls": []}
    # Streaming drops the body and emits the header text, once or twice depending on chunking.
    for deltas in token_chunkings(token_texts(text)):
        result = builtin_stream(deltas)
        assert result["calls"] == []
        assert result["content"] in (" to=functions.get_weather", " to=functions.get_weather" * 2)


def test_channel_word_in_final_answer_garbles_stream_with_tools(token_texts) -> None:
    # With tools declared, the tool detector's HarmonyParser switches to its plain-text fallback
    # on a whitespace-led "analysis"/"commentary" and repeats or drops content.
    text = "<|channel|>final<|message|>Our analysis: yes."
    assert builtin_nonstream(text)["content"] == "Our analysis: yes."
    assert builtin_stream(token_texts(text), tools=None)["content"] == "Our analysis: yes."
    assert builtin_stream(token_texts(text))["content"] == "OurOur analysis: yes."


# --- Through the real OpenAIServingChat, only the model scripted -------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_serving_chat_returns_builtin_tool_call(sglang_chat, token_texts, stream: bool) -> None:
    text = ANALYSIS + "<|start|>assistant" + CALL
    result = sglang_chat(
        token_texts(text),
        stream=stream,
        tools=[WEATHER],
        finish={"type": "stop", "matched": 200012},
    )
    if stream:
        got = result.joined()
        reasoning, content, calls = got["reasoning"], got["content"], got["tool_calls"]
        finish = got["finish_reason"]
    else:
        choice = result.body["choices"][0]
        msg = choice["message"]
        reasoning, content, finish = (
            msg["reasoning_content"],
            msg["content"],
            choice["finish_reason"],
        )
        calls = [
            {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}
            for c in msg["tool_calls"]
        ]
    assert reasoning == "Need weather."
    assert content == ""
    assert calls == [{"name": "get_weather", "arguments": '{"city": "Paris"}'}]
    assert finish == "tool_calls"


def test_prompt_control_token_spelling_in_user_text_becomes_a_control_token(sglang_chat) -> None:
    messages = [{"role": "user", "content": "say <|call|> please"}]
    result = sglang_chat(["<|channel|>final<|message|>ok"], stream=False, messages=messages)
    prompt_ids = result.manager.requests[0].input_ids
    assert 200012 in prompt_ids  # <|call|> as the special token, not as text
    assert prompt_ids[-2:] == [200006, 173781]  # "<|start|>assistant"
    assert result.body["choices"][0]["message"]["content"] == "ok"
