"""The fuzzer on a real vLLM server (issue 56): outputs nobody chose, scripted, on every endpoint
harmony-ext parses.

Each output of harmony_ext_testing/fuzzed_outputs.py (mutated Harmony turns and random
sequences; its token ids are the script, ``script_ids``) goes to chat completions, the Responses
API and ``/v1/messages`` (the Anthropic Messages API), streamed and not, with the functions
declared; each output the grammar for tools with a response format admits goes to chat
completions and the Responses API with the functions and a JSON-schema format. Each request is
checked against invariants, not expected values (``fuzzed_outputs.engine_problems``): no HTTP
error, no broken stream, streamed equals non-streamed, no call to an undeclared function, no
control-token spelling in a text or arguments (no ordinary token of an output holds ``<`` or
``|``, so any spelling there is a leak). And chat completions show exactly what the core parses
of what the engine generated (the script up to where harmony-ext's guard or the token limit ends
it, ``fuzzed_outputs.generated``): what the core accounts for reaches the client.

A failure prints the output (seed, ids, text) as a case for tests/contract_cases.py. The counts
tried and failed go to CI's summary (scripts/fuzz_counts.py). ``HARMONY_EXT_FUZZ=N`` runs N
outputs (CONTRIBUTING.md). Run:
``.venv-vllm/bin/python -m pytest tests/e2e_vllm/test_fuzzed_outputs_server.py``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest

httpx = pytest.importorskip("httpx", reason="needs httpx: use .venv-vllm/bin/pytest")

from harmony_ext_testing import fuzzed_outputs as fz  # noqa: E402
from harmony_ext_testing.client import Fold  # noqa: E402
from harmony_ext_testing.messages_api import (  # noqa: E402
    anthropic_tools,
    streamed_view,
    whole_view,
)
from harmony_ext_testing.vllm_cases import MESSAGES, MODEL, finish_reason_bug  # noqa: E402

OUTPUTS = 200
"""Mutated and random outputs per run, each sent six times (three endpoints, streamed and not)."""
ADMITTED = 50
"""Outputs the grammar admits, each sent four times (chat and Responses, streamed and not)."""
AT_ONCE = 12
"""Requests in flight at once: the server batches them."""

RESPONSES_TOOLS = [{"type": "function", **t["function"]} for t in fz.TOOLS]
MESSAGES_TOOLS = anthropic_tools(fz.TOOLS)
FORMAT = {"type": "json_schema", "json_schema": {"name": "weather", "schema": fz.SCHEMA}}
TEXT_FORMAT = {"format": {"type": "json_schema", "name": "weather", "schema": fz.SCHEMA}}


def max_tokens(out: fz.Output) -> int:
    """The token limit of an output's requests: its length where it was cut by the limit, else
    room for the ``<|return|>`` the scripted model adds."""
    return len(out.ids) if out.finish == "length" else len(out.ids) + 4


def script(out: fz.Output) -> dict[str, Any]:
    return {"vllm_xargs": {"script_ids": json.dumps(list(out.ids))}}


# -- one request, as a client sees it ------------------------------------------------------------


async def sse(http: Any, path: str, body: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    """The JSON events of a streamed request, and whether its stream said it was done
    (``[DONE]``); an HTTP error raises."""
    events, done = [], False
    async with http.stream("POST", path, json={**body, "stream": True}) as response:
        if response.status_code != 200:
            await response.aread()
            raise RuntimeError(f"HTTP {response.status_code}: {response.text[:300]}")
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                data = line[len("data: "):]
                if data == "[DONE]":
                    done = True
                else:
                    events.append(json.loads(data))
    return events, done


async def post(http: Any, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await http.post(path, json=body)
    if response.status_code != 200:
        raise RuntimeError(f"HTTP {response.status_code}: {response.text[:300]}")
    return dict(response.json())


async def answer(request: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    """A request's view, or ``{"error": ...}`` for an HTTP error or a stream that broke off."""
    try:
        return await request
    except Exception as e:  # what the client saw is the finding
        return {"error": f"{type(e).__name__}: {e}"}


async def chat(http: Any, body: dict[str, Any], stream: bool) -> dict[str, Any]:
    if not stream:
        data = await post(http, "/v1/chat/completions", body)
        choice = data["choices"][0]
        message = choice["message"]
        reasoning = message.get("reasoning") or message.get("reasoning_content")
        return {"texts": fz.texts(("reasoning", reasoning), ("content", message.get("content"))),
                "calls": [(c["function"]["name"], c["function"]["arguments"])
                          for c in message.get("tool_calls") or []],
                "finish": choice["finish_reason"]}
    events, done = await sse(http, "/v1/chat/completions", body)
    fold, finish = Fold(), None
    for event in events:
        for choice in event.get("choices") or ():
            fold.add(choice.get("delta"))
            finish = choice.get("finish_reason") or finish
    message = fold.message()
    problems = [*fold.problems, *([] if done else ["no [DONE]"]),
                *([] if finish else ["no finish_reason"])]
    return {"texts": fz.texts(("reasoning", message["reasoning"]),
                              ("content", message["content"])),
            "calls": [(c["function"]["name"], c["function"]["arguments"])
                      for c in message["tool_calls"]],
            "finish": finish, "problems": problems}


def item_texts(items: Sequence[dict[str, Any]]
               ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """A Responses output's texts (item type, text) and calls (name, arguments)."""
    texts, calls = [], []
    for item in items:
        if item["type"] == "function_call":
            calls.append((item["name"], item["arguments"]))
        else:
            texts += fz.texts((item["type"], "".join(
                part.get("text") or "" for part in item.get("content") or [])))
    return texts, calls


async def responses(http: Any, body: dict[str, Any], stream: bool) -> dict[str, Any]:
    if not stream:
        data = await post(http, "/v1/responses", body)
        texts, calls = item_texts(data["output"])
        return {"texts": texts, "calls": calls, "finish": data["status"]}
    events, _ = await sse(http, "/v1/responses", body)
    final = next((e["response"] for e in reversed(events) if e.get("type") in (
        "response.completed", "response.incomplete")), None)
    if final is None:
        return {"error": f"the stream ended with {events[-1].get('type') if events else None}"}
    texts, calls = item_texts(final["output"])
    done = [e["item"] for e in events if e.get("type") == "response.output_item.done"]
    deltas: dict[int, str] = {}
    for e in events:
        if e.get("type", "").endswith(".delta") and "delta" in e:
            deltas[e["output_index"]] = deltas.get(e["output_index"], "") + e["delta"]
    problems = []
    if item_texts(done) != (texts, calls):
        problems.append(f"output_item.done items {item_texts(done)} are not the response's")
    for i, item in enumerate(final["output"]):
        whole = (item["arguments"] if item["type"] == "function_call"
                 else "".join(p.get("text") or "" for p in item.get("content") or []))
        if deltas.get(i, "") != whole:
            problems.append(f"item {i}'s deltas {deltas.get(i, '')!r} are not its {whole!r}")
    return {"texts": texts, "calls": calls, "finish": final["status"], "problems": problems}


async def messages(http: Any, body: dict[str, Any], stream: bool) -> dict[str, Any]:
    if not stream:
        return whole_view(await post(http, "/v1/messages", body), fz.DECLARED)
    events, _ = await sse(http, "/v1/messages", body)
    return streamed_view(events, fz.DECLARED)


# -- the runs ----------------------------------------------------------------------------------

Endpoint = Callable[[Any, dict[str, Any], bool], Awaitable[dict[str, Any]]]


def bodies(out: fz.Output, response_format: bool) -> dict[str, tuple[Endpoint, dict[str, Any]]]:
    """Each endpoint's request for an output: name -> (endpoint, body)."""
    limit = max_tokens(out)
    chat_body = {"model": MODEL, "messages": MESSAGES, "tools": fz.TOOLS, "max_tokens": limit,
                 **script(out)}
    responses_body = {"model": MODEL, "input": MESSAGES[0]["content"], "tools": RESPONSES_TOOLS,
                      "max_output_tokens": limit, **script(out)}
    if response_format:
        return {"chat": (chat, {**chat_body, "response_format": FORMAT}),
                "responses": (responses, {**responses_body, "text": TEXT_FORMAT})}
    return {"chat": (chat, chat_body), "responses": (responses, responses_body),
            "messages": (messages, {"model": MODEL, "messages": MESSAGES, "tools": MESSAGES_TOOLS,
                                    "max_tokens": limit, **script(out)})}


def run_all(base_url: str, outputs: Sequence[fz.Output], endpoints: Sequence[str],
            response_format: bool = False) -> list[dict[str, dict[str, Any]]]:
    """Every output to each of ``endpoints``, streamed and not, ``AT_ONCE`` at a time: per
    output, name -> {"whole", "streamed"}."""

    async def main() -> list[dict[str, dict[str, Any]]]:
        gate = asyncio.Semaphore(AT_ONCE)
        async with httpx.AsyncClient(base_url=base_url, timeout=300) as http:

            async def one(endpoint: Endpoint, body: dict[str, Any], stream: bool
                          ) -> dict[str, Any]:
                async with gate:
                    return await answer(endpoint(http, body, stream))

            async def both(out: fz.Output) -> dict[str, dict[str, Any]]:
                requests = bodies(out, response_format)
                got = await asyncio.gather(*(one(*requests[name], stream)
                                             for name in endpoints for stream in (False, True)))
                return {name: {"whole": got[2 * i], "streamed": got[2 * i + 1]}
                        for i, name in enumerate(endpoints)}

            return list(await asyncio.gather(*(both(out) for out in outputs)))

    return asyncio.run(main())


def failures_of(outputs: Sequence[fz.Output], answers: Sequence[dict[str, dict[str, Any]]],
                version: str) -> list[fz.Failure]:
    failures = []
    for out, got in zip(outputs, answers, strict=True):
        for name, pair in got.items():
            whole, streamed = dict(pair["whole"]), pair["streamed"]
            if finish_reason_bug(version) and (whole.get("finish"), streamed.get("finish")) in (
                    ("tool_calls", "length"), ("tool_use", "max_tokens")):
                # vLLM 0.32's chat serving reports a cut call's finish as tool_calls when not
                # streaming (docs/vllm.md), and /v1/messages turns that into tool_use
                whole["finish"] = streamed["finish"]
            for problem in fz.engine_problems(name, whole, streamed):
                failures.append(fz.Failure(out, "the endpoint holds contract section 6", problem))
            if name == "chat" and "error" not in whole:
                failures += core_differences(out, whole)
    return failures


def core_differences(out: fz.Output, whole: dict[str, Any]) -> list[fz.Failure]:
    """Chat completions show what the core parses of what the engine generated."""
    ids, finish = fz.generated(out, max_tokens(out))
    message = fz.parse("ids", [ids], finish)[0]
    core = {"texts": fz.texts(("reasoning", message["reasoning"]),
                              ("content", message["content"])),
            "calls": [(c["function"]["name"], c["function"]["arguments"])
                      for c in message["tool_calls"]]}
    shown = {"texts": whole["texts"], "calls": whole["calls"]}
    if shown == core:
        return []
    return [fz.Failure(out, "chat completions show the core's parse",
                       f"the server shows {shown}, the core parses {core} from {ids}")]


def test_fuzzed_outputs_on_chat_and_responses(vllm_server: str, vllm_version: str,
                                              record_testsuite_property: Any) -> None:
    outputs = fz.outputs(fz.how_many(OUTPUTS))
    answers = run_all(vllm_server, outputs, ("chat", "responses"))
    failures = failures_of(outputs, answers, vllm_version)
    fz.record(record_testsuite_property, len(outputs), failures)
    assert not failures, fz.reports(failures, f"vLLM {vllm_version}")


def test_fuzzed_outputs_on_messages(vllm_server: str, vllm_version: str,
                                    record_testsuite_property: Any) -> None:
    outputs = fz.outputs(fz.how_many(OUTPUTS))
    answers = run_all(vllm_server, outputs, ("messages",))
    failures = failures_of(outputs, answers, vllm_version)
    fz.record(record_testsuite_property, 0, failures)  # the same outputs: counted once
    assert not failures, fz.reports(failures, f"vLLM {vllm_version} /v1/messages")


def test_admitted_outputs_with_a_response_format(vllm_server: str, vllm_version: str,
                                                  record_testsuite_property: Any) -> None:
    outputs = fz.admitted_outputs(fz.how_many(ADMITTED, 4))
    answers = run_all(vllm_server, outputs, ("chat", "responses"), response_format=True)
    failures = failures_of(outputs, answers, vllm_version)
    fz.record(record_testsuite_property, len(outputs), failures)
    assert not failures, fz.reports(failures, f"vLLM {vllm_version}, a response format")
