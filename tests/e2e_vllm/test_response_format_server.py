"""``response_format`` with a JSON schema, through harmony-ext inside a real vLLM server.

The issue's requirement: on the vLLM tiers, a request whose ``response_format`` is a JSON
schema (chat) or whose ``text.format`` is one (the Responses API), served with harmony-ext's
parsers (``--tool-call-parser harmony-ext --reasoning-parser harmony-ext``, the shared session
server), returns the reasoning and the JSON content, streamed equal to not.

How it is served: harmony-ext's ``adjust_request`` gives such a request (its ``tool_choice``
forcing no call) the core's grammar (:func:`harmony_plugins.answer_or_call`): any number of
analysis messages and preambles, free; then the final message, its header written
``<|channel|>final<|message|>``, ``<|channel|>final json<|message|>`` or ``<|channel|>final
<|constrain|>json<|message|>``, its body the schema's JSON, closed by ``<|end|>`` or a stop
token; or, tools declared, a call (``test_tools_with_response_format_server.py``). The scripted
model (``harmony_ext_testing/vllm_scripted.py``) writes exactly its script, which begins after
the prompt's ``<|start|>assistant``, as gpt-oss writes.

What is checked, against values written here by hand:

- **Chat**: ``message.reasoning`` is the analysis text (None without one), ``message.content``
  is the JSON body exactly as scripted and parses to the scripted object, finish_reason
  ``stop``; the streamed deltas joined give the same outcome, also with a tool declared, and
  with the final header in each spelling.
- **The grammar is on**: a body that breaks the schema, or a call to a function the request
  did not declare, is refused (the CPU engine ends the request: HTTP 500, an error
  mid-stream), while the same script without ``response_format`` comes out as the parse makes
  it, and the server keeps serving. vLLM's own grammar for this request (which harmony-ext
  replaces) masked the plain final header and every call: both are answered here.
- **Responses API** (``text.format`` json_schema): a reasoning item and a message item with
  the JSON text, streamed (deltas and the final response) equal to not.
- **``json_object``** (chat ``response_format`` and Responses ``text.format``): the same
  grammar with any JSON object as the body: each final-header spelling (vLLM's own grammar,
  on the built-in server, masks the plain one), a call where a tool is declared, a body that is
  no object refused (the same script without the format comes out as written).

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
    (Case("plain_final", "the final header without a content type (vLLM's own tag masked it)",
          f"{ANALYSIS}<|channel|>final<|message|>{BODY}<|return|>", request=WITH_SCHEMA),
     expected(REASONING, BODY)),
    (Case("tools_json", "a tool declared, the JSON answer", SCRIPT, tools=("get_weather",),
          request=WITH_SCHEMA),
     expected(REASONING, BODY)),
    (Case("tools_call", "a tool declared, a call instead of the answer (vLLM's own tag "
          "refused it)", f"{ANALYSIS}{CALL_W}{PARIS}<|call|>", tools=("get_weather",),
          request=WITH_SCHEMA),
     expected(REASONING, None, (("get_weather", PARIS),), "tool_calls")),
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
    (Case("undeclared_call", "a call to a function the request did not declare",
          f"{ANALYSIS}<|channel|>commentary to=functions.get_time <|constrain|>json"
          '<|message|>{"tz":"CET"}<|call|>', tools=("get_weather",), request=WITH_SCHEMA),
     expected(REASONING, None)),
]


@pytest.mark.parametrize(("case", "unconstrained"), REFUSED, ids=[c.id for c, _ in REFUSED])
def test_chat_grammar_refuses_what_the_schema_forbids(client: Any, case: Case,
                                                      unconstrained: dict[str, Any]) -> None:
    """The grammar is in force: a script outside it ends the request (the scripted model
    cannot take another token), though without ``response_format`` it comes out as the parse
    makes it; the server keeps serving."""
    assert run_chat(client, case, stream=False).outcome == {"error": "HTTP 500"}
    assert "error" in run_chat(client, case, stream=True).outcome
    free = Case(case.id, case.title, case.script, tools=case.tools)
    assert run_chat(client, free, stream=False).outcome == unconstrained
    ok, want = CHAT_CASES[0]
    assert run_chat(client, ok, stream=False).outcome == want


# ------------------------------------------------------------------------- Responses API

def respond(client: Any, script: str, *, stream: bool,
            text: dict[str, Any] = TEXT_FORMAT) -> dict[str, Any]:
    """One Responses request with ``text`` (the schema as ``text.format``): its status, its
    output items (id-free) and, streamed, each item's deltas joined."""
    response = client.responses.create(
        model=MODEL, input="What is the weather in Paris, as JSON?", text=text,
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



# ------------------------------------------------------------------- response_format json_object

JSON_OBJECT = {"response_format": {"type": "json_object"}}
ANY = '{"any":[1]}'
"""A JSON object of no schema's: what ``json_object`` asks for and nothing more."""

OBJECT_CASES = [
    (Case("object_plain", "json_object, the final header written plainly",
          f"{ANALYSIS}<|channel|>final<|message|>{ANY}<|return|>", request=JSON_OBJECT),
     expected(REASONING, ANY)),
    (Case("object_json", "json_object, `final json`",
          f"{ANALYSIS}<|channel|>final json<|message|>{ANY}<|return|>", request=JSON_OBJECT),
     expected(REASONING, ANY)),
    (Case("object_constrain", "json_object, `final <|constrain|>json`",
          f"{ANALYSIS}{FINAL_JSON}{ANY}<|return|>", request=JSON_OBJECT),
     expected(REASONING, ANY)),
    (Case("object_tools_call", "json_object and a tool: a call",
          f"{ANALYSIS}{CALL_W}{PARIS}<|call|>", tools=("get_weather",), request=JSON_OBJECT),
     expected(REASONING, None, (("get_weather", PARIS),), "tool_calls")),
]


@pytest.mark.parametrize(("case", "want"), OBJECT_CASES, ids=[c.id for c, _ in OBJECT_CASES])
def test_chat_json_object(client: Any, case: Case, want: dict[str, Any]) -> None:
    """README: a JSON object format gets harmony-ext's grammar too: the final header in any
    spelling, any JSON object as the body, a call where a tool is declared; streamed equal to
    not."""
    whole = run_chat(client, case, stream=False)
    streamed = run_chat(client, case, stream=True)
    assert whole.outcome == want
    assert streamed.outcome == whole.outcome and streamed.problems == []


def test_chat_json_object_refuses_an_answer_that_is_no_object(client: Any) -> None:
    """The grammar is in force: a body that is no JSON object ends the request, whole and
    streamed; without the format (the control) it comes out as written."""
    script = f"{ANALYSIS}{FINAL_JSON}Paris.<|return|>"
    held = Case("object_refused", "json_object, a body that is no object", script,
                request=JSON_OBJECT)
    assert run_chat(client, held, stream=False).outcome == {"error": "HTTP 500"}
    assert run_chat(client, held, stream=True).outcome == {
        "error": "stream error (APIError: Internal server error)"}
    free = Case("object_free", "the same without the format", script)
    assert run_chat(client, free, stream=False).outcome == expected(REASONING, "Paris.")


def test_vllm_s_own_grammar_for_json_object_is_not_harmony_ext_s(builtin_server: str) -> None:
    """The control for the two tests above: vLLM's built-in parsers keep vLLM's own grammar
    for a JSON object format, which masks the final header written plainly (the request
    ends) and admits the header naming JSON."""
    from harmony_ext_testing.vllm_round_trips import client_for

    builtin = client_for(builtin_server)
    plain, constrain = OBJECT_CASES[0][0], OBJECT_CASES[2][0]
    assert run_chat(builtin, plain, stream=False).outcome == {"error": "HTTP 500"}
    assert run_chat(builtin, constrain, stream=False).outcome == expected(REASONING, ANY)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_responses_json_object(client: Any, stream: bool) -> None:
    """The Responses API's ``text.format`` json_object: a reasoning item and the message, the
    final header written plainly (vLLM's own grammar masks it: the request ends)."""
    items = [["reasoning", REASONING], ["message", ANY]]
    script = f"{ANALYSIS}<|channel|>final<|message|>{ANY}<|return|>"
    got = respond(client, script, stream=stream, text={"format": {"type": "json_object"}})
    assert got == {"status": "completed", "items": items, **({"deltas": items} if stream else {})}


def test_responses_json_object_refuses_an_answer_that_is_no_object(client: Any) -> None:
    script = f"{ANALYSIS}{FINAL_JSON}Paris.<|return|>"
    text = {"format": {"type": "json_object"}}
    with pytest.raises(openai.InternalServerError):
        respond(client, script, stream=False, text=text)
    with pytest.raises(openai.APIConnectionError):
        respond(client, script, stream=True, text=text)
    assert respond(client, script, stream=False, text={"format": {"type": "text"}}) == {
        "status": "completed", "items": [["reasoning", REASONING], ["message", "Paris."]]}
