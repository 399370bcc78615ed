"""vllm_ext.messages_api on vLLM's own Messages API conversion (contract section 4).

``AnthropicServingMessages.messages_full_converter`` of the installed vLLM, given a chat
response (vLLM's ``ChatCompletionResponse``) whose call's arguments are no JSON object: with
the hook active, the call is a ``text`` block holding the call as written and the response ends
``end_turn``; without it (the control), vLLM's own conversion raises, the exception that fails
the request. The streamed conversion and the whole route are tested on real servers
(``tests/e2e_vllm/test_messages_api_server.py``). A vLLM without the hook point is one log line.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

vllm = pytest.importorskip("vllm", reason="vLLM is not installed in this interpreter "
                           "(run with .venv-vllm/bin/pytest after scripts/setup_vllm_env.sh)")

from pydantic import ValidationError  # noqa: E402
from vllm.entrypoints.anthropic.serving import AnthropicServingMessages  # noqa: E402
from vllm.entrypoints.openai.chat_completion.protocol import (  # noqa: E402
    ChatCompletionResponse,
)

from vllm_ext import messages_api, plugin  # noqa: E402


@pytest.fixture(autouse=True)
def installed() -> None:
    plugin.install_or_warn(messages_api)  # once per process, as register() does


def chat_response(*arguments: str) -> Any:
    calls = [{"id": f"call_{i}", "type": "function",
              "function": {"name": "get_weather", "arguments": a}}
             for i, a in enumerate(arguments)]
    return ChatCompletionResponse.model_validate({
        "id": "chatcmpl-1", "model": "tiny-gpt-oss",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None, "reasoning": "Need the weather.",
            "tool_calls": calls}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})


def converted(response: Any) -> tuple[list[Any], str | None]:
    serving = object.__new__(AnthropicServingMessages)  # the conversion reads no state
    result = AnthropicServingMessages.messages_full_converter(serving, response)
    blocks = [[b.type, b.text] if b.type == "text" else [b.type, b.name, b.input]
              for b in result.content if b.type != "thinking"]
    return blocks, result.stop_reason


@pytest.mark.parametrize("arguments", ['{"city":"Par', '"Paris"', 'Sure: {"city":"Paris"}'])
def test_a_call_that_is_no_object_is_a_text_block(monkeypatch: pytest.MonkeyPatch,
                                                  arguments: str) -> None:
    monkeypatch.setattr(messages_api, "_active", True)
    assert converted(chat_response(arguments)) == (
        [["text", "get_weather " + arguments]], "end_turn")


def test_an_object_call_beside_it_stays_a_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(messages_api, "_active", True)
    assert converted(chat_response('"Paris"', '{"city":"Paris"}')) == (
        [["text", 'get_weather "Paris"'], ["tool_use", "get_weather", {"city": "Paris"}]],
        "tool_use")


@pytest.mark.parametrize(("arguments", "error"), [
    ('{"city":"Par', json.JSONDecodeError), ('"Paris"', ValidationError)])
def test_without_the_hook_vllm_raises(monkeypatch: pytest.MonkeyPatch, arguments: str,
                                      error: type[Exception]) -> None:
    """The control: vLLM's own conversion, the exception its route answers with HTTP 400."""
    monkeypatch.setattr(messages_api, "_active", False)
    with pytest.raises(error):
        converted(chat_response(arguments))


def test_a_vllm_without_the_hook_point_is_one_log_line(monkeypatch: pytest.MonkeyPatch,
                                                       caplog: pytest.LogCaptureFixture
                                                       ) -> None:
    monkeypatch.delattr(AnthropicServingMessages, "messages_full_converter")
    with caplog.at_level(logging.WARNING, logger="vllm.harmony_ext"):
        plugin.install_or_warn(messages_api)
    assert [r.getMessage() for r in caplog.records if r.name == "vllm.harmony_ext"] == [
        "harmony-ext: /v1/messages converts calls as vLLM does (a call whose arguments are no "
        "JSON object fails the request): vllm.entrypoints.anthropic.serving."
        "AnthropicServingMessages.messages_full_converter does not exist."]
