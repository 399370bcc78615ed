"""SGLang 0.5.23's own gpt-oss parsing, pinned as observed (docs/sglang-builtin-observations.md).

These tests prove the harness reaches SGLang's real parsers, and record the builtin behaviour our
adapter replaces: if an SGLang upgrade changes one of them, the observations need a new look.
Each goes through SGLang's real ``OpenAIServingChat`` (harmony_ext_testing/sglang_serving.py),
the model scripted, never through a copy of its parser chain.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
from tokenizers import Tokenizer

from harmony_ext_testing import sglang_cases
from harmony_ext_testing.client import WEATHER

TOOLS = [WEATHER]
ANALYSIS = "<|channel|>analysis<|message|>Need weather.<|end|>"
CALL = (
    "<|channel|>commentary to=functions.get_weather <|constrain|>json"
    '<|message|>{"city":"Paris"}<|call|>'
)


def builtin(sglang_chat: Any, deltas: list[str], stream: bool,
            tools: list[dict[str, Any]] | None = TOOLS) -> dict[str, Any]:
    """What SGLang's real ``OpenAIServingChat`` returns with its gpt-oss parsers, the model
    scripted to write ``deltas``: the message (whole, the deltas joined) or the stream folded
    as a client folds it."""
    result = sglang_chat(deltas, stream=stream, tools=tools)
    if stream:
        got = result.joined()
        return {"reasoning": got["reasoning"], "content": got["content"],
                "calls": [(c["name"], c["arguments"]) for c in got["tool_calls"]]}
    message = result.body["choices"][0]["message"]
    return {"reasoning": message.get("reasoning_content") or "",
            "content": message.get("content") or "",
            "calls": [(c["function"]["name"], c["function"]["arguments"])
                      for c in message.get("tool_calls") or []]}


def builtin_nonstream(sglang_chat: Any, text: str,
                      tools: list[dict[str, Any]] | None = TOOLS) -> dict[str, Any]:
    return builtin(sglang_chat, [text], False, tools)


def builtin_stream(sglang_chat: Any, deltas: list[str],
                   tools: list[dict[str, Any]] | None = TOOLS) -> dict[str, Any]:
    return builtin(sglang_chat, deltas, True, tools)


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


def test_analysis_then_final_is_split_the_same_streamed_or_not(sglang_chat, token_texts) -> None:
    text = ANALYSIS + "<|start|>assistant<|channel|>final<|message|>The answer is 4."
    want = {"reasoning": "Need weather.", "content": "The answer is 4.", "calls": []}
    assert builtin_nonstream(sglang_chat, text) == want
    for deltas in token_chunkings(token_texts(text)):
        assert builtin_stream(sglang_chat, deltas) == want


def test_call_after_analysis_is_parsed_and_arguments_reserialised(sglang_chat, token_texts) -> None:
    text = ANALYSIS + "<|start|>assistant" + CALL
    # json.loads + json.dumps: the model's '{"city":"Paris"}' comes back with a space.
    want = {
        "reasoning": "Need weather.",
        "content": "",
        "calls": [("get_weather", '{"city": "Paris"}')],
    }
    assert builtin_nonstream(sglang_chat, text) == want
    for deltas in token_chunkings(token_texts(text)):
        assert builtin_stream(sglang_chat, deltas) == want


def test_call_as_first_message_leaks_when_not_streamed(sglang_chat, token_texts) -> None:
    # has_tool_call() looks for "<|start|>assistant<|channel|>commentary", which a call that
    # opens the output lacks: non-streaming returns the raw markup as content.
    assert builtin_nonstream(sglang_chat, CALL) == {"reasoning": "", "content": CALL, "calls": []}
    for deltas in token_chunkings(token_texts(CALL)):
        got = builtin_stream(sglang_chat, deltas)
        assert got["calls"] == [("get_weather", '{"city": "Paris"}')]


def test_call_without_call_token_is_dropped(sglang_chat, token_texts) -> None:
    text = ANALYSIS + "<|start|>assistant" + CALL.removesuffix("<|call|>")
    want = {"reasoning": "Need weather.", "content": "", "calls": []}
    assert builtin_nonstream(sglang_chat, text) == want
    for deltas in token_chunkings(token_texts(text)):
        assert builtin_stream(sglang_chat, deltas) == want


def test_recipient_in_role_section_is_not_a_call(sglang_chat, token_texts) -> None:
    text = ' to=functions.get_weather<|channel|>commentary json<|message|>{"city":"Paris"}<|call|>'
    assert builtin_nonstream(sglang_chat, text) == {"reasoning": "", "content": text, "calls": []}
    # Streaming drops the body and emits the header text, once or twice depending on chunking.
    for deltas in token_chunkings(token_texts(text)):
        result = builtin_stream(sglang_chat, deltas)
        assert result["calls"] == []
        assert result["content"] in (" to=functions.get_weather", " to=functions.get_weather" * 2)


def test_channel_word_in_final_answer_garbles_stream_with_tools(sglang_chat, token_texts) -> None:
    # With tools declared, the tool detector's HarmonyParser switches to its plain-text fallback
    # on a whitespace-led "analysis"/"commentary" and repeats or drops content.
    text = "<|channel|>final<|message|>Our analysis: yes."
    assert builtin_nonstream(sglang_chat, text)["content"] == "Our analysis: yes."
    pieces = token_texts(text)
    assert builtin_stream(sglang_chat, pieces, tools=None)["content"] == "Our analysis: yes."
    assert builtin_stream(sglang_chat, pieces)["content"] == "OurOur analysis: yes."


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
    prompt_ids = result.prompts[0]
    assert 200012 in prompt_ids  # <|call|> as the special token, not as text
    assert prompt_ids[-2:] == [200006, 173781]  # "<|start|>assistant"
    assert result.body["choices"][0]["message"]["content"] == "ok"
