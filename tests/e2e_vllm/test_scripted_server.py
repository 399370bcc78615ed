"""The scripted tiny vLLM server behaves like a model that wrote the script.

These pin the test bench itself (harmony_ext_testing.vllm_scripted + scripts/vllm_tiny_server.sh) on
the shared session server, which runs the script's default parsers (harmony-ext, see
test_harmony_ext_server.py), so the adapter tests can trust it. The outputs here are
well formed, so vLLM's built-in parsing (TOOL_PARSER=openai REASONING_PARSER=openai_gptoss)
passes them too, except that it re-serialises non-streamed JSON arguments.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

openai = pytest.importorskip("openai", reason="needs the openai client: use .venv-vllm/bin/pytest")

from harmony_ext_testing.client import WEATHER, fold_chunks  # noqa: E402

MODEL = "tiny-gpt-oss"
MESSAGES = [{"role": "user", "content": "Say hi."}]
ANSWER = (
    "<|channel|>analysis<|message|>Think.<|end|>"
    "<|start|>assistant<|channel|>final<|message|>Hi!<|return|>"
)
ANSWER_IDS = [200005, 35644, 200008, 42421, 13, 200007, 200006, 173781]
ANSWER_IDS += [200005, 17196, 200008, 12194, 0, 200002]
TOOLS = [WEATHER]
CALL = (
    "<|channel|>analysis<|message|>Need the weather.<|end|>"
    "<|start|>assistant<|channel|>commentary to=functions.get_weather"
    ' <|constrain|>json<|message|>{"city": "Paris"}<|call|>'
)


def script(text: str | None = None, ids: list[int] | None = None, **extra: Any) -> dict[str, Any]:
    xargs: dict[str, Any] = {}
    if text is not None:
        xargs["script_text"] = text
    if ids is not None:
        xargs["script_ids"] = json.dumps(ids)
    return {"vllm_xargs": xargs, **extra}


def collect(stream: Any) -> dict[str, Any]:
    """The chunks folded as a client folds them, each call as ``{id, name, arguments}``."""
    got = fold_chunks(stream)
    return {
        "reasoning": got["reasoning"] or "",
        "content": got["content"] or "",
        "tool_calls": [{"id": c["id"] or "", "name": c["function"]["name"] or "",
                        "arguments": c["function"]["arguments"]} for c in got["tool_calls"]],
        "finish_reason": got["finish_reason"],
    }


def test_chat_non_streaming(openai_client: Any) -> None:
    r = openai_client.chat.completions.create(
        model=MODEL, messages=MESSAGES, extra_body=script(ANSWER, return_token_ids=True)
    )
    choice = r.choices[0]
    assert choice.model_extra["token_ids"] == ANSWER_IDS
    assert getattr(choice.message, "reasoning", None) == "Think."
    assert choice.message.content == "Hi!"
    assert not choice.message.tool_calls
    assert choice.finish_reason == "stop"
    assert r.usage.completion_tokens == len(ANSWER_IDS)


def test_chat_streaming(openai_client: Any) -> None:
    stream = openai_client.chat.completions.create(
        model=MODEL, messages=MESSAGES, stream=True, extra_body=script(ANSWER)
    )
    assert collect(stream) == {
        "reasoning": "Think.",
        "content": "Hi!",
        "tool_calls": [],
        "finish_reason": "stop",
    }


def test_script_ids_same_as_text(openai_client: Any) -> None:
    r = openai_client.chat.completions.create(
        model=MODEL, messages=MESSAGES, extra_body=script(ids=ANSWER_IDS, return_token_ids=True)
    )
    assert r.choices[0].model_extra["token_ids"] == ANSWER_IDS
    assert r.choices[0].message.content == "Hi!"


def test_tool_call_non_streaming(openai_client: Any) -> None:
    r = openai_client.chat.completions.create(
        model=MODEL, messages=MESSAGES, tools=TOOLS, extra_body=script(CALL)
    )
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert getattr(choice.message, "reasoning", None) == "Need the weather."
    assert not choice.message.content
    [call] = choice.message.tool_calls
    assert call.type == "function" and call.id
    assert call.function.name == "get_weather"
    assert call.function.arguments == '{"city": "Paris"}'  # as the model wrote it


def test_tool_call_streaming(openai_client: Any) -> None:
    stream = openai_client.chat.completions.create(
        model=MODEL, messages=MESSAGES, tools=TOOLS, stream=True, extra_body=script(CALL)
    )
    got = collect(stream)
    assert got["reasoning"] == "Need the weather."
    assert got["content"] == ""
    assert got["finish_reason"] == "tool_calls"
    [call] = got["tool_calls"]
    assert call["id"] and call["name"] == "get_weather"
    assert call["arguments"] == '{"city": "Paris"}'


def test_max_tokens_truncates_the_script(openai_client: Any) -> None:
    r = openai_client.chat.completions.create(
        model=MODEL,
        messages=MESSAGES,
        max_tokens=5,
        extra_body=script(ANSWER, return_token_ids=True),
    )
    assert r.choices[0].model_extra["token_ids"] == ANSWER_IDS[:5]
    assert r.choices[0].finish_reason == "length"


def test_script_without_stop_token_gets_return(openai_client: Any) -> None:
    r = openai_client.chat.completions.create(
        model=MODEL,
        messages=MESSAGES,
        extra_body=script("<|channel|>final<|message|>Done.", return_token_ids=True),
    )
    assert r.choices[0].model_extra["token_ids"][-1] == 200002  # <|return|> forced
    assert r.choices[0].message.content == "Done."
    assert r.choices[0].finish_reason == "stop"


def test_request_without_script_is_untouched(openai_client: Any) -> None:
    r = openai_client.chat.completions.create(
        model=MODEL, messages=MESSAGES, max_tokens=4, extra_body={"return_token_ids": True}
    )
    # Random weights: four noise tokens, not the forced <|return|> of a script.
    assert len(r.choices[0].model_extra["token_ids"]) == 4
    assert r.choices[0].finish_reason == "length"


@pytest.mark.parametrize(
    "xargs",
    [
        {"script_ids": "[200005, 35644"},  # not JSON
        {"script_ids": "[200005, 1.5]"},  # not an integer
        {"script_ids": "[200005, true]"},  # a bool is not a token id
        {"script_ids": "[201088]"},  # out of range
        {"script_ids": "[-1]"},
        {"script_ids": '{"a": 1}'},  # not an array
        {"script_ids": "[]"},
        {"script_text": ""},
        {"script_text": "Hi", "script_ids": "[1]"},  # both keys
    ],
)
def test_malformed_script_is_http_400(openai_client: Any, xargs: dict[str, Any]) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        openai_client.chat.completions.create(
            model=MODEL, messages=MESSAGES, extra_body={"vllm_xargs": xargs}
        )
    assert info.value.status_code == 400
    assert "scripted output" in str(info.value)
    # The engine survived: the next request is served normally.
    r = openai_client.chat.completions.create(
        model=MODEL, messages=MESSAGES, extra_body=script(ANSWER)
    )
    assert r.choices[0].message.content == "Hi!"
