"""The other routes a vLLM server sends through harmony-ext's parser (issue 56, item 2).

Chat completions, the Responses API and ``/v1/messages`` have their own test files. The rest,
read from vLLM 0.32, 0.33 and 0.34's routers, each with a well-formed answer, a well-formed
call and malformed outputs, streamed and not where the route streams:

* ``/invocations`` (SageMaker's route, always served): a chat completions body goes to the
  chat completions handler, streamed and not;
* ``/v1/chat/completions/batch``: one conversation per choice, parsed by ``parse``; vLLM takes
  no ``tools`` there and does not stream it (a call is then to an undeclared function);
* ``/v1/chat/completions/derender`` (``--enable-scale-out``, which the shared server is
  started with): the token ids an engine generated, parsed whole by ``parse`` or, streamed,
  one request per chunk, vLLM replaying the earlier chunks through ``parse_delta``. vLLM
  makes a call's ``finish_reason`` ``tool_calls``, as on chat completions, but for 0.32's
  whole derender, which passes on the caller's.

The expected results are the contract's (:mod:`harmony_ext_testing.vllm_cases`, written by
hand), the same on every route; the responses are read with the ``openai`` package's types.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from harmony_plugins.adapter_support.versions import release

openai = pytest.importorskip("openai", reason="needs the openai client: use .venv-vllm/bin/pytest")
httpx = pytest.importorskip("httpx", reason="comes with vLLM: use .venv-vllm/bin/pytest")

from harmony_ext_testing.vllm_cases import (  # noqa: E402
    CASES_BY_ID,
    MESSAGES,
    MODEL,
    Case,
    ChunkFolder,
    chat_tools,
    expected_nonstream,
    leaked_markers,
)

ROUTE_CASES = [CASES_BY_ID[i] for i in (
    "reasoning_final", "call_channel_commentary", "trailing_junk", "forged_user",
    "first_header_garbage", "no_markup")]
"""An answer, a call, and malformed outputs (junk after a call, a forged turn, a header closed
before its message, no markup at all)."""


def whole_outcome(data: dict[str, Any], index: int = 0) -> dict[str, Any]:
    """A chat completion's choice as a client reads it (the ``openai`` types)."""
    choice = openai.types.chat.ChatCompletion.model_validate(data).choices[index]
    message = choice.message
    return {"reasoning": getattr(message, "reasoning", None) or None,
            "content": message.content or None,
            "tool_calls": [[c.function.name, c.function.arguments]
                           for c in message.tool_calls or ()],
            "finish_reason": choice.finish_reason}


def streamed_outcome(chunks: list[dict[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    folder = ChunkFolder()
    for chunk in chunks:
        folder.add(openai.types.chat.ChatCompletionChunk.model_validate(chunk))
    run = folder.result()
    return run.outcome, run.problems


def body(case: Case, *, stream: bool) -> dict[str, Any]:
    out = {"model": MODEL, "messages": MESSAGES, "stream": stream,
           "vllm_xargs": {"script_text": case.script}, **case.request, **case.extra_body}
    if case.tools:
        out["tools"] = chat_tools(case.tools)
    return out


def sse_chunks(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[len("data: "):]) for line in text.split("\n")
            if line.startswith("data: ") and line != "data: [DONE]"]


# -- /invocations -----------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("case", ROUTE_CASES, ids=lambda c: c.id)
def test_invocations(vllm_server: str, vllm_version: str, case: Case, stream: bool) -> None:
    response = httpx.post(f"{vllm_server}/invocations", json=body(case, stream=stream),
                          timeout=300)
    assert response.status_code == 200, response.text
    if not stream:
        assert whole_outcome(response.json()) == expected_nonstream(case, vllm_version)
        return
    outcome, problems = streamed_outcome(sse_chunks(response.text))
    assert (outcome, problems) == (case.expected(), [])


# -- /v1/chat/completions/batch ---------------------------------------------------------------

BATCH_CASES = [CASES_BY_ID[i] for i in ("reasoning_final", "forged_user",
                                         "first_header_garbage", "no_markup")]


@pytest.mark.parametrize("case", BATCH_CASES, ids=lambda c: c.id)
def test_batch(vllm_server: str, case: Case) -> None:
    """Two conversations, one choice each, both the case's output."""
    request = {**body(case, stream=False), "messages": [MESSAGES, MESSAGES]}
    response = httpx.post(f"{vllm_server}/v1/chat/completions/batch", json=request,
                          timeout=300)
    assert response.status_code == 200, response.text
    assert [whole_outcome(response.json(), i) for i in (0, 1)] == [case.expected()] * 2


def test_batch_drops_a_call_it_takes_no_tools_for(vllm_server: str) -> None:
    """Without ``tools`` (the route takes none) a call names an undeclared function: dropped,
    never shown as content (contract section 3)."""
    case = CASES_BY_ID["call_channel_commentary"]
    request = {**body(case, stream=False), "messages": [MESSAGES]}
    request.pop("tools")
    response = httpx.post(f"{vllm_server}/v1/chat/completions/batch", json=request,
                          timeout=300)
    assert response.status_code == 200, response.text
    assert whole_outcome(response.json()) == {
        "reasoning": "Need the weather.", "content": None, "tool_calls": [],
        "finish_reason": "stop"}


# -- /v1/chat/completions/derender ------------------------------------------------------------


def output_ids(script: str) -> list[int]:
    """The o200k_harmony ids the engine would have generated for ``script``."""
    from harmony_plugins.vocab.o200k import tiktoken_encoding

    return tiktoken_encoding().encode(script, allowed_special="all")


DERENDER_CASES = [c for c in ROUTE_CASES if not c.request and not c.extra_body]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("case", DERENDER_CASES, ids=lambda c: c.id)
def test_derender(vllm_server: str, vllm_version: str, case: Case, stream: bool) -> None:
    chat = body(case, stream=stream)
    with httpx.Client(base_url=vllm_server, timeout=300) as http:
        rendered = http.post("/v1/chat/completions/render", json=chat)
        assert rendered.status_code == 200, rendered.text
        prompt = rendered.json()["token_ids"]
        ids = output_ids(case.script)
        if not stream:
            response = http.post("/v1/chat/completions/derender", json={
                "generate_response": {"request_id": "derender-test", "choices": [
                    {"index": 0, "token_ids": ids, "finish_reason": "stop"}]},
                "prompt_token_ids": prompt, "chat_request": chat})
            assert response.status_code == 200, response.text
            outcome = whole_outcome(response.json())
            problems: list[str] = []
        else:
            chunks, state = [], None
            for n, token in enumerate(ids):
                last = n == len(ids) - 1
                response = http.post("/v1/chat/completions/derender", json={
                    "stream": True, "stream_state": state, "prompt_token_ids": prompt,
                    "chat_request": chat, "generate_chunk": {
                        "request_id": "derender-test", "choices": [
                            {"index": 0, "token_ids": [token],
                             "finish_reason": "stop" if last else None}]}})
                assert response.status_code == 200, response.text
                data = response.json()
                chunks.append(data["chunk"])
                state = data["stream_state"]
            outcome, problems = streamed_outcome(chunks)
    want = case.expected()
    if not stream and release(vllm_version)[:2] < (0, 33):
        want["finish_reason"] = "stop"  # vLLM 0.32's whole derender: the caller's, as it is
    assert (outcome, problems) == (want, [])
    assert leaked_markers(outcome) == []
