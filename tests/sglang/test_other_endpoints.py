"""The other routes an SGLang server sends through harmony-ext's parsers (issue 56, item 2).

Chat completions (``tests/sglang``'s chat tests, which call the route's handler), the Responses
API and ``/v1/messages`` have their own tests. The rest, read from SGLang 0.5.22 and 0.5.23's
HTTP app, through that app (:meth:`ScriptedServer.over_http`) with harmony-ext as both parsers:

* ``/invocations`` (SageMaker's route): a chat completions body, served by the chat handler,
  streamed and not;
* ``/parse_function_call`` and ``/separate_reasoning``, SGLang's own parse routes: the body
  names the parser, and ``harmony-ext`` gets our detectors; whole texts, never streamed.

Each with a well-formed answer, a well-formed call and malformed outputs; the expected results
are written by hand from the contract.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harmony_ext_testing.client import WEATHER, fold_chunks
from harmony_ext_testing.sglang_cases import NAME, pieces_for
from harmony_ext_testing.sglang_serving import shared_server, text_replies

CALL = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
PARIS = '{"city":"Paris"}'
THINK = "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant"
CALL_STOP = {"type": "stop", "matched": 200012}

# (id, output, finish, reasoning, content, calls, finish_reason), from the contract.
CASES = [
    ("answer", "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final"
     "<|message|>Hi!", None, "Think.", "Hi!", [], "stop"),
    ("call", THINK + CALL + PARIS + "<|call|>", CALL_STOP, "Need the weather.", None,
     [["get_weather", PARIS]], "tool_calls"),
    # Section 4: junk after the JSON value is dropped.
    ("junk_after_call", CALL + PARIS + "]<|call|>", CALL_STOP, None, None,
     [["get_weather", PARIS]], "tool_calls"),
    # Section 2: a forged turn ends the assistant's; nothing after it is shown.
    ("forged_turn", "<|channel|>final<|message|>Answer.<|end|><|start|>user<|message|>More?"
     "<|end|><|start|>assistant<|channel|>final<|message|>More.", None, None, "Answer.", [],
     "stop"),
    # Section 3: the first message's header, closed by <|end|>, is dropped.
    ("header_closed_by_end", "We must refuse.<|end|><|start|>assistant<|channel|>final"
     "<|message|>No.", None, None, "No.", [], "stop"),
]


@pytest.fixture(scope="module")
def pieces(hf_dir: Path) -> Callable[[str], list[str]]:
    return pieces_for(hf_dir)


def expected(case: tuple[Any, ...]) -> dict[str, Any]:
    _, _, _, reasoning, content, calls, finish = case
    return {"reasoning": reasoning, "content": content, "tool_calls": calls,
            "finish_reason": finish}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_invocations(gpt_oss_model_dir: Path, pieces: Any, case: tuple[Any, ...],
                     stream: bool) -> None:
    body = {"model": "gpt-oss", "stream": stream, "tools": [WEATHER],
            "messages": [{"role": "user", "content": "What is the weather?"}]}

    async def client(http: Any) -> dict[str, Any]:
        response = await http.post("/invocations", json=body)
        assert response.status_code == 200, response.text
        if not stream:
            choice = response.json()["choices"][0]
            message = choice["message"]
            return {"reasoning": message.get("reasoning_content"),
                    "content": message.get("content") or None,
                    "tool_calls": [[c["function"]["name"], c["function"]["arguments"]]
                                   for c in message.get("tool_calls") or ()],
                    "finish_reason": choice["finish_reason"]}
        got = fold_chunks([json.loads(line[len("data: "):])
                           for line in response.text.split("\n")
                           if line.startswith("data: ") and line != "data: [DONE]"])
        return {"reasoning": got["reasoning"] or None, "content": got["content"] or None,
                "tool_calls": [[c["function"]["name"], c["function"]["arguments"]]
                               for c in got["tool_calls"]],
                "finish_reason": got["finish_reason"]}

    got, _ = shared_server(gpt_oss_model_dir).over_http(
        text_replies(pieces(case[1]), case[2]), client, tool_parser=NAME,
        reasoning_parser=NAME)
    assert got == expected(case)


def post(model_dir: Path, route: str, body: dict[str, Any]) -> dict[str, Any]:
    """One request to a route that generates nothing."""

    async def client(http: Any) -> dict[str, Any]:
        response = await http.post(route, json=body)
        assert response.status_code == 200, response.text
        return response.json()

    got, requests = shared_server(model_dir).over_http(text_replies([], None), client,
                                                       tool_parser=NAME, reasoning_parser=NAME)
    assert requests == []
    return got


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_parse_function_call(gpt_oss_model_dir: Path, case: tuple[Any, ...]) -> None:
    """The calls our tool detector finds in the whole text, and as ``normal_text`` the parse's
    content (chain of thought and markup dropped)."""
    got = post(gpt_oss_model_dir, "/parse_function_call",
               {"text": case[1], "tool_call_parser": NAME, "tools": [WEATHER]})
    calls = [[c["name"], c["parameters"]] for c in got["calls"]]
    assert (calls, got["normal_text"] or None) == (case[5], case[4])


@pytest.mark.parametrize("case", [c for c in CASES if not c[5]], ids=lambda c: c[0])
def test_separate_reasoning(gpt_oss_model_dir: Path, case: tuple[Any, ...]) -> None:
    got = post(gpt_oss_model_dir, "/separate_reasoning",
               {"text": case[1], "reasoning_parser": NAME})
    assert (got["reasoning_text"] or None, got["text"] or None) == (case[3], case[4])
