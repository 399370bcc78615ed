"""SGLang's Anthropic Messages API (``/v1/messages``) served through harmony-ext, streamed and not.

Through SGLang's own HTTP app (its route, request model, ``AnthropicServing`` over
``OpenAIServingChat`` and ``TokenizerManager``; :meth:`ScriptedServer.over_http`), harmony-ext
as both parsers, the model scripted. Contract section 4: a call is a ``tool_use`` block whose
``input`` is an object; a call whose arguments are none (cut short, a bare string, text before
the object) is a ``text`` block in its place holding the function's name and the arguments as
written, and a response left with no ``tool_use`` block says ``end_turn``. The control: the
same requests with the hook switched off get SGLang's own conversion, which fails the request
on a bare string and gives the other calls the ``input`` ``{}`` (what the model wrote lost).
Expected values are written by hand from the contract.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harmony_ext_testing.messages_api import block_view, fold_events, messages_tools
from harmony_ext_testing.sglang_cases import NAME, pieces_for
from harmony_ext_testing.sglang_serving import shared_server, text_replies

CALL = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
THINK = "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant"
CALL_STOP = {"type": "stop", "matched": 200012}
CUT = {"type": "length", "length": 30}

# (id, script, finish, blocks, stop_reason): written from contract section 4.
CASES = [
    ("answer", "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final"
     "<|message|>Hi!", None, [["thinking", "Think."], ["text", "Hi!"]], "end_turn"),
    ("call", THINK + CALL + '{"city":"Paris"}<|call|>', CALL_STOP,
     [["thinking", "Need the weather."], ["tool_use", "get_weather", {"city": "Paris"}]],
     "tool_use"),
    ("cut_short", CALL + '{"city":"Par', CUT, [["text", 'get_weather {"city":"Par']],
     "max_tokens"),
    ("bare_string", CALL + '"Paris"<|call|>', CALL_STOP, [["text", 'get_weather "Paris"']],
     "end_turn"),
    ("text_before_object", CALL + 'Sure: {"city":"Paris"}<|call|>', CALL_STOP,
     [["text", 'get_weather Sure: {"city":"Paris"}']], "end_turn"),
    ("one_of_two", CALL + '"Paris"<|end|><|start|>assistant' + CALL + '{"city":"Paris"}<|call|>',
     CALL_STOP, [["text", 'get_weather "Paris"'], ["tool_use", "get_weather", {"city": "Paris"}]],
     "tool_use"),
]
BY_ID = {c[0]: c for c in CASES}


@pytest.fixture(scope="module")
def pieces(hf_dir: Path) -> Callable[[str], list[str]]:
    return pieces_for(hf_dir)


def send(model_dir: Path, pieces: Any, case: tuple[Any, ...], *, stream: bool) -> dict[str, Any]:
    _, script, finish, _, _ = case
    body = {"model": "gpt-oss", "max_tokens": 200, "stream": stream,
            "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
            "tools": messages_tools(["get_weather"])}

    async def client(http: Any) -> dict[str, Any]:
        response = await http.post("/v1/messages", json=body)
        if response.status_code != 200:
            return {"status": response.status_code, "error": response.text}
        if stream:
            run = fold_events(response.text.split("\n"))
            return {"status": 200, "blocks": run.blocks, "stop_reason": run.stop_reason}
        data = response.json()
        return {"status": 200, "blocks": [block_view(b) for b in data["content"]],
                "stop_reason": data["stop_reason"]}

    got, _ = shared_server(model_dir).over_http(text_replies(pieces(script), finish), client,
                                                tool_parser=NAME, reasoning_parser=NAME)
    return got


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_what_the_model_wrote_reaches_the_client(gpt_oss_model_dir: Path, pieces: Any,
                                                 case: tuple[Any, ...], stream: bool) -> None:
    _, _, _, blocks, stop_reason = case
    assert send(gpt_oss_model_dir, pieces, case, stream=stream) == {
        "status": 200, "blocks": blocks, "stop_reason": stop_reason}


def test_without_the_hook_sglang_loses_the_arguments_or_fails(
        gpt_oss_model_dir: Path, pieces: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: SGLang's own conversion of the same chat responses."""
    from pydantic import ValidationError

    from sglang_ext import messages_api

    monkeypatch.setattr(messages_api, "_ours", lambda serving: False)
    for name in ("cut_short", "text_before_object"):
        got = send(gpt_oss_model_dir, pieces, BY_ID[name], stream=False)
        assert got["blocks"] == [["tool_use", "get_weather", {}]], name
    with pytest.raises(ValidationError, match="Input should be a valid dictionary"):
        send(gpt_oss_model_dir, pieces, BY_ID["bare_string"], stream=False)
    streamed = send(gpt_oss_model_dir, pieces, BY_ID["bare_string"], stream=True)
    assert streamed["blocks"] == [["tool_use", "get_weather", "Paris"]]  # not an object
