"""SGLang's chat responses carry ``reasoning`` beside ``reasoning_content``, equal to it, where
harmony-ext is the reasoning parser (issue 56): the field vLLM's responses and OpenAI's gpt-oss
compatibility check read, on both engines.

Through SGLang's real chat serving with the model scripted (``sglang_chat``), streamed and not,
and through SGLang's own HTTP app (``/v1/chat/completions`` and ``/invocations``, whose route
serialises the reply). The control: SGLang's own ``gpt-oss`` reasoning parser gives
``reasoning_content`` and no ``reasoning``. The reasoning text is written by hand.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harmony_ext_testing.sglang_cases import NAME, pieces_for
from harmony_ext_testing.sglang_serving import shared_server, text_replies

TEXT = ("<|channel|>analysis<|message|>The user asks for the weather.<|end|><|start|>assistant"
        "<|channel|>final<|message|>Sunny.")
REASONING = "The user asks for the weather."


@pytest.fixture(scope="module")
def pieces(hf_dir: Path) -> Callable[[str], list[str]]:
    return pieces_for(hf_dir)


def streamed_fields(chunks: list[dict[str, Any]]) -> tuple[str, str, list[dict[str, Any]]]:
    """Each field's deltas joined, and the deltas where the two differ."""
    deltas = [c["delta"] for chunk in chunks for c in chunk.get("choices") or ()]
    differ = [d for d in deltas if d.get("reasoning") != d.get("reasoning_content")]
    return ("".join(d.get("reasoning_content") or "" for d in deltas),
            "".join(d.get("reasoning") or "" for d in deltas), differ)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_reasoning_equals_reasoning_content(sglang_chat: Any, pieces: Any, stream: bool) -> None:
    result = sglang_chat(pieces(TEXT), stream=stream, tool_parser=NAME, reasoning_parser=NAME)
    if not stream:
        message = result.body["choices"][0]["message"]
        assert (message["reasoning_content"], message["reasoning"]) == (REASONING, REASONING)
        assert message["content"] == "Sunny."
        return
    content, reasoning, differ = streamed_fields(result.chunks)
    assert (content, reasoning, differ) == (REASONING, REASONING, [])
    assert result.joined()["content"] == "Sunny."


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_with_sglangs_own_parser_there_is_no_reasoning_field(sglang_chat: Any, pieces: Any,
                                                             stream: bool) -> None:
    """The control: SGLang's ``gpt-oss`` parsers give ``reasoning_content`` alone."""
    result = sglang_chat(pieces(TEXT), stream=stream, tool_parser="gpt-oss",
                         reasoning_parser="gpt-oss")
    if not stream:
        message = result.body["choices"][0]["message"]
        assert message["reasoning_content"] == REASONING
        assert "reasoning" not in message
        return
    deltas = [c["delta"] for chunk in result.chunks for c in chunk.get("choices") or ()]
    assert "".join(d.get("reasoning_content") or "" for d in deltas) == REASONING
    assert [d for d in deltas if "reasoning" in d] == []


@pytest.mark.parametrize("route", ["/v1/chat/completions", "/invocations"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_over_sglangs_http_routes(gpt_oss_model_dir: Path, pieces: Any, route: str,
                                  stream: bool) -> None:
    """What a client reads off SGLang's own routes, the JSON as its app serialises it."""
    body = {"model": "gpt-oss", "stream": stream,
            "messages": [{"role": "user", "content": "What is the weather?"}]}

    async def client(http: Any) -> Any:
        response = await http.post(route, json=body)
        assert response.status_code == 200, response.text
        if not stream:
            return response.json()
        return [json.loads(line[len("data: "):]) for line in response.text.split("\n")
                if line.startswith("data: ") and line != "data: [DONE]"]

    got, _ = shared_server(gpt_oss_model_dir).over_http(
        text_replies(pieces(TEXT), None), client, tool_parser=NAME, reasoning_parser=NAME)
    if not stream:
        message = got["choices"][0]["message"]
        assert (message["reasoning_content"], message["reasoning"]) == (REASONING, REASONING)
        return
    assert streamed_fields(got) == (REASONING, REASONING, [])
