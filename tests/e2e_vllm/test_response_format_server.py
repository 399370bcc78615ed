"""``response_format`` with a JSON schema, through harmony-ext inside a real vLLM server.

The issue's requirement: on the vLLM tiers, a request whose ``response_format`` is a JSON
schema (chat) or whose ``text.format`` is one (the Responses API), served with harmony-ext's
parsers (``--tool-call-parser harmony-ext --reasoning-parser harmony-ext``, the shared session
server), returns the reasoning and the JSON content, streamed equal to not.

How vLLM serves it (its ``vllm/parser/harmony.py``, ``_adjust_output_format``, which
harmony-ext's ``adjust_request`` runs first and keeps): the schema becomes a structural tag
for the whole output, an optional ``<|channel|>analysis<|message|>…<|end|><|start|>assistant``
and then a final message whose header names the JSON content type, ``<|channel|>final
<|constrain|>json<|message|>`` or ``<|channel|>final json<|message|>``, whose body is the
schema's JSON, closed by ``<|end|>`` or a stop token. The scripted model
(``harmony_ext_testing/vllm_scripted.py``) must therefore write a stream that grammar accepts:
every script here begins after the prompt's ``<|start|>assistant``, as gpt-oss writes.

What is checked, against values written here by hand:

- **Chat**: ``message.reasoning`` is the analysis text (None without one), ``message.content``
  is the JSON body exactly as scripted and parses to the scripted object, finish_reason
  ``stop``; the streamed deltas joined give the same outcome, also with a tool declared.
- **The grammar is on**: a body that breaks the schema, a final header without the JSON
  content type, or (a tool declared, ``tool_choice`` auto) a call instead of the answer is
  refused by vLLM's grammar (the CPU engine ends the request: HTTP 500, an error mid-stream),
  while the same script without ``response_format`` comes out as written, and the server
  keeps serving. The call is vLLM's choice, not harmony-ext's: it joins a tools' grammar to
  the schema's only for a tool parser with a structural-tag model, which neither its own
  gpt-oss parser nor harmony-ext's has. Should vLLM stop constraining (or constrain
  differently), these fail.
- **Responses API** (``text.format`` json_schema): a reasoning item and a message item with
  the JSON text, streamed (deltas and the final response) equal to not.

Run: ``.venv-vllm/bin/python -m pytest tests/e2e_vllm/test_response_format_server.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.register_assert_rewrite("harmony_ext_testing.vllm_cases")
openai = pytest.importorskip("openai", reason="needs the openai client: use .venv-vllm/bin/pytest")

from harmony_ext_testing.vllm_cases import (  # noqa: E402
    CALL_W,
    MODEL,
    PARIS,
    Case,
    item_view,
    run_chat,
)

SCHEMA = {"type": "object",
          "properties": {"city": {"type": "string"}, "temp": {"type": "integer"}},
          "required": ["city", "temp"], "additionalProperties": False}
RESPONSE_FORMAT = {"type": "json_schema",
                   "json_schema": {"name": "weather", "schema": SCHEMA, "strict": True}}
TEXT_FORMAT = {"format": {"type": "json_schema", "name": "weather", "schema": SCHEMA,
                          "strict": True}}
WITH_SCHEMA = {"response_format": RESPONSE_FORMAT}

# The scripted answer, by hand: its reasoning, its JSON body as written and as an object.
REASONING = "Need JSON."
BODY = '{"city":"Paris","temp":20}'
OBJECT = {"city": "Paris", "temp": 20}
ANALYSIS = f"<|channel|>analysis<|message|>{REASONING}<|end|><|start|>assistant"
FINAL_JSON = "<|channel|>final <|constrain|>json<|message|>"  # gpt-oss's spelling
SCRIPT = f"{ANALYSIS}{FINAL_JSON}{BODY}<|return|>"


def expected(reasoning: str | None, content: str | None,
             calls: tuple[tuple[str, str], ...] = (), finish: str = "stop") -> dict[str, Any]:
    """A chat outcome as ``run_chat`` gives it."""
    return {"reasoning": reasoning, "content": content, "tool_calls": [list(c) for c in calls],
            "finish_reason": finish}


@pytest.fixture(scope="module")
def client(openai_client: Any) -> Any:
    """The harmony-ext server's client (the shared session server)."""
    return openai_client


# ---------------------------------------------------------------------------------- chat

CHAT_CASES = [
    (Case("reasoning_json", "analysis, then the JSON answer", SCRIPT, request=WITH_SCHEMA),
     expected(REASONING, BODY)),
    (Case("json_only", "the JSON answer alone (the analysis is optional)",
          f"{FINAL_JSON}{BODY}<|return|>", request=WITH_SCHEMA),
     expected(None, BODY)),
    (Case("json_word", "the other header vLLM's tag allows: `final json`",
          f"{ANALYSIS}<|channel|>final json<|message|>{BODY}<|return|>", request=WITH_SCHEMA),
     expected(REASONING, BODY)),
    (Case("closed_by_end", "the answer closed by <|end|> (<|return|> follows)",
          f"{ANALYSIS}{FINAL_JSON}{BODY}<|end|>", request=WITH_SCHEMA),
     expected(REASONING, BODY)),
    (Case("spaced_json", "JSON with spaces: the body comes out as written",
          f'{ANALYSIS}{FINAL_JSON}{{"city": "Paris", "temp": 20}}<|return|>',
          request=WITH_SCHEMA),
     expected(REASONING, '{"city": "Paris", "temp": 20}')),
    # A tool declared, tool_choice auto: the grammar is still the schema's alone.
    (Case("tools_json", "a tool declared, the JSON answer", SCRIPT, tools=("get_weather",),
          request=WITH_SCHEMA),
     expected(REASONING, BODY)),
]


@pytest.mark.parametrize(("case", "want"), CHAT_CASES, ids=[c.id for c, _ in CHAT_CASES])
def test_chat_json_schema(client: Any, case: Case, want: dict[str, Any]) -> None:
    """The reasoning and the JSON content, finish_reason as scripted; streamed equal to not."""
    whole = run_chat(client, case, stream=False)
    streamed = run_chat(client, case, stream=True)
    assert whole.outcome == want
    if want["content"] is not None:
        assert json.loads(whole.outcome["content"]) == OBJECT
    assert streamed.outcome == whole.outcome
    assert streamed.problems == []


REFUSED = [
    (Case("breaks_schema", "a body that breaks the schema",
          f'{ANALYSIS}{FINAL_JSON}{{"town":"Paris"}}<|return|>', request=WITH_SCHEMA),
     expected(REASONING, '{"town":"Paris"}')),
    (Case("no_json_type", "a final header without the JSON content type",
          f"{ANALYSIS}<|channel|>final<|message|>{BODY}<|return|>", request=WITH_SCHEMA),
     expected(REASONING, BODY)),
    # vLLM joins a tools' tag to the schema's only for a tool parser with a structural-tag
    # model; its gpt-oss parsers (its own and harmony-ext's) have none, so it logs "Tool calls
    # are not constrained for tool_choice=auto with structured outputs because structural tags
    # are unavailable; the structured output constraint applies": a call cannot pass.
    (Case("tools_call", "a tool declared, a call instead of the answer",
          f"{ANALYSIS}{CALL_W}{PARIS}<|call|>", tools=("get_weather",), request=WITH_SCHEMA),
     expected(REASONING, None, (("get_weather", PARIS),), "tool_calls")),
]


@pytest.mark.parametrize(("case", "unconstrained"), REFUSED, ids=[c.id for c, _ in REFUSED])
def test_chat_grammar_refuses_what_the_schema_forbids(client: Any, case: Case,
                                                      unconstrained: dict[str, Any]) -> None:
    """vLLM's grammar is in force: a script outside it ends the request (the scripted model
    cannot take another token), though without ``response_format`` it comes out as written;
    the server keeps serving."""
    assert run_chat(client, case, stream=False).outcome == {"error": "HTTP 500"}
    assert "error" in run_chat(client, case, stream=True).outcome
    free = Case(case.id, case.title, case.script, tools=case.tools)
    assert run_chat(client, free, stream=False).outcome == unconstrained
    ok, want = CHAT_CASES[0]
    assert run_chat(client, ok, stream=False).outcome == want


# ------------------------------------------------------------------------- Responses API

def respond(client: Any, script: str, *, stream: bool) -> dict[str, Any]:
    """One Responses request with the schema as ``text.format``: its status, its output items
    (id-free) and, streamed, each item's deltas joined."""
    response = client.responses.create(
        model=MODEL, input="What is the weather in Paris, as JSON?", text=TEXT_FORMAT,
        stream=stream, extra_body={"vllm_xargs": {"script_text": script}})
    if not stream:
        return {"status": response.status, "items": [item_view(i) for i in response.output]}
    deltas: dict[int, list[str]] = {}
    final: Any = None
    for event in response:
        if event.type == "response.output_item.added":
            deltas[event.output_index] = [event.item.type, ""]
        elif event.type in ("response.reasoning_text.delta", "response.output_text.delta"):
            deltas[event.output_index][1] += event.delta
        elif event.type in ("response.completed", "response.incomplete", "response.failed"):
            final = event.response
    assert final is not None, "the stream ended without a final response"
    return {"status": final.status, "items": [item_view(i) for i in final.output],
            "deltas": [deltas[i] for i in sorted(deltas)]}


def test_responses_json_schema(client: Any) -> None:
    """A reasoning item and the JSON message, streamed (deltas and final items) equal to not."""
    items = [["reasoning", REASONING], ["message", BODY]]
    whole = respond(client, SCRIPT, stream=False)
    streamed = respond(client, SCRIPT, stream=True)
    assert whole == {"status": "completed", "items": items}
    assert json.loads(whole["items"][1][1]) == OBJECT
    assert streamed == {**whole, "deltas": items}
