"""Tools and a response schema together on a real vLLM server (contract section 10).

An agent that wants a typed answer sends tools and a JSON-schema response format together (the
OpenAI Agents SDK does on every call): the model may call a tool or answer in the schema.
harmony-ext's ``adjust_request`` gives such a request one grammar
(:func:`harmony_plugins.answer_or_call`): free analysis messages and preambles, then either a
call to a declared function (its arguments held to its schema where the function is
``strict``) or the final answer whose body the schema holds. vLLM's own tag for the same
request refuses every call to a function that is not strict, and where the functions are
strict it admits the call but masks the answer's header unless it is written
``<|channel|>final <|constrain|>json<|message|>`` (what fails where, with an agent:
``test_agents_sdk_server.py``). On the shared harmony-ext server, scripted (the scripted model
writes exactly its script, so a script the grammar forbids ends the request: HTTP 500, or an
error in the stream, as the CPU engine reports it, while the same script without the response
format comes out as written), each answered as written, whole and streamed, chat and Responses:

- reasoning, a preamble, then a call to a declared function: the call, ``tool_calls``;
- reasoning, then a final answer the schema accepts: the JSON content;
- a call to an undeclared function, an answer the schema refuses: refused;
- a ``strict`` function's arguments its schema refuses: refused (a non-strict one's pass);
- ``tool_choice`` none: a call refused, the answer given; ``required``: an answer refused
  (vLLM's own grammar for a forced call, kept);
- ``parallel_tool_calls`` false: one call, ``tool_calls``; a second call after it is refused.

Expected values are written here by hand. Run:
``.venv-vllm/bin/python -m pytest tests/e2e_vllm/test_tools_with_response_format_server.py``.
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
    TOOL_PARAMETERS,
    Case,
    chat_tools,
    item_view,
    responses_tools,
    run_chat,
)

SCHEMA = {"type": "object",
          "properties": {"city": {"type": "string"}, "temp": {"type": "integer"}},
          "required": ["city", "temp"], "additionalProperties": False}
FORMAT = {"response_format": {"type": "json_schema",
                              "json_schema": {"name": "weather", "schema": SCHEMA}}}
TEXT_FORMAT = {"format": {"type": "json_schema", "name": "weather", "schema": SCHEMA}}
TOOLS = ("get_weather",)
STRICT = {"tools": [{"type": "function", "function": {
    "name": "get_weather", "parameters": {**TOOL_PARAMETERS["get_weather"],
                                          "additionalProperties": False},
    "strict": True}}]}

REASONING, PREAMBLE = "Need the weather.", "Checking."
BODY, OBJECT = '{"city":"Paris","temp":20}', {"city": "Paris", "temp": 20}
ANALYSIS = f"<|channel|>analysis<|message|>{REASONING}<|end|><|start|>assistant"
SAY = f"<|channel|>commentary<|message|>{PREAMBLE}<|end|><|start|>assistant"
CALL = f"{ANALYSIS}{SAY}{CALL_W}{PARIS}<|call|>"
ANSWER = f"{ANALYSIS}<|channel|>final<|message|>{BODY}<|return|>"
TOWN = '{"town":"Paris"}'


def outcome(reasoning: str | None, content: str | None, calls: tuple[tuple[str, str], ...] = (),
            finish: str = "stop") -> dict[str, Any]:
    return {"reasoning": reasoning, "content": content, "tool_calls": [list(c) for c in calls],
            "finish_reason": finish}


CALLED = outcome(REASONING, PREAMBLE, (("get_weather", PARIS),), "tool_calls")
ANSWERED = outcome(REASONING, BODY)

ALLOWED = [
    (Case("call", "reasoning, a preamble, then a call", CALL, tools=TOOLS, request=FORMAT),
     CALLED),
    (Case("answer", "reasoning, then the answer", ANSWER, tools=TOOLS, request=FORMAT),
     ANSWERED),
    (Case("answer_constrained", "the answer's header naming JSON, after two analyses",
          f"{ANALYSIS}{ANALYSIS}<|channel|>final <|constrain|>json<|message|>{BODY}<|return|>",
          tools=TOOLS, request=FORMAT),
     outcome(REASONING * 2, BODY)),
    (Case("call_role_section", "a call written as calls are rendered",
          f" to=functions.get_weather<|channel|>commentary json<|message|>{PARIS}<|call|>",
          tools=TOOLS, request=FORMAT),
     outcome(None, None, (("get_weather", PARIS),), "tool_calls")),
    (Case("strict_call", "a strict function, arguments its schema takes", CALL,
          request={**FORMAT, **STRICT}),
     CALLED),
    (Case("loose_arguments", "a function not strict: any JSON object passes",
          f"{CALL_W}{TOWN}<|call|>", tools=TOOLS, request=FORMAT),
     outcome(None, None, (("get_weather", TOWN),), "tool_calls")),
    (Case("none_answer", "tool_choice none: the answer", ANSWER, tools=TOOLS,
          request={**FORMAT, "tool_choice": "none"}),
     ANSWERED),
    (Case("one_call", "parallel_tool_calls false: one call, the turn over", CALL, tools=TOOLS,
          request={**FORMAT, "parallel_tool_calls": False}),
     CALLED),
    (Case("required_call", "tool_choice required: the call (vLLM's own grammar)",
          f"{CALL_W}{PARIS}<|call|>", tools=TOOLS, request={**FORMAT, "tool_choice": "required"}),
     outcome(None, None, (("get_weather", PARIS),), "tool_calls")),
]


@pytest.mark.parametrize(("case", "want"), ALLOWED, ids=[c.id for c, _ in ALLOWED])
def test_a_call_or_the_answer_as_written(openai_client: Any, case: Case,
                                         want: dict[str, Any]) -> None:
    """Each comes out as written, streamed equal to not; an answer's content is the JSON."""
    whole = run_chat(openai_client, case, stream=False)
    streamed = run_chat(openai_client, case, stream=True)
    assert whole.outcome == want
    assert streamed.outcome == whole.outcome and streamed.problems == []
    if want["content"] == BODY:
        assert json.loads(whole.outcome["content"]) == OBJECT


# (the case, the same script's request without the grammar, what that gives): the
# unconstrained request drops the response format, and a tool_choice or parallel_tool_calls
# for which vLLM builds a call grammar of its own.
REFUSED = [
    (Case("undeclared_call", "a call to a function the request did not declare",
          f"{ANALYSIS}<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>"
          '{"tz":"CET"}<|call|>', tools=TOOLS, request=FORMAT),
     {}, outcome(REASONING, None)),  # undeclared: dropped and counted (contract section 3)
    (Case("refused_answer", "an answer the schema refuses",
          f"{ANALYSIS}<|channel|>final<|message|>{TOWN}<|return|>", tools=TOOLS, request=FORMAT),
     {}, outcome(REASONING, TOWN)),
    (Case("strict_refused", "a strict function, arguments its schema refuses",
          f"{CALL_W}{TOWN}<|call|>", request={**FORMAT, **STRICT}),
     {"tools": chat_tools(TOOLS)},  # not strict: vLLM holds a strict function's arguments too
     outcome(None, None, (("get_weather", TOWN),), "tool_calls")),
    (Case("none_call", "tool_choice none: a call", CALL, tools=TOOLS,
          request={**FORMAT, "tool_choice": "none"}),
     {"tool_choice": "none"}, outcome(REASONING, PREAMBLE)),  # no call surfaced with none
    (Case("required_answer", "tool_choice required: an answer without a call", ANSWER,
          tools=TOOLS, request={**FORMAT, "tool_choice": "required"}),
     {}, ANSWERED),
    (Case("second_call", "parallel_tool_calls false: a second call after the first",
          f"{CALL_W}{PARIS}<|end|><|start|>assistant{CALL_W}{PARIS}<|call|>", tools=TOOLS,
          request={**FORMAT, "parallel_tool_calls": False}),
     {}, outcome(None, None, (("get_weather", PARIS), ("get_weather", PARIS)), "tool_calls")),
]


@pytest.mark.parametrize(("case", "free", "unconstrained"), REFUSED,
                         ids=[c.id for c, _, _ in REFUSED])
def test_what_the_grammar_refuses(openai_client: Any, case: Case, free: dict[str, Any],
                                  unconstrained: dict[str, Any]) -> None:
    """The grammar is in force: the script ends the request (the scripted model cannot take
    another token), whole and streamed; without it the same script comes out as the parse
    makes it; the server keeps serving."""
    assert run_chat(openai_client, case, stream=False).outcome == {"error": "HTTP 500"}
    assert "error" in run_chat(openai_client, case, stream=True).outcome
    loose = Case(case.id, case.title, case.script, tools=case.tools, request=free)
    assert run_chat(openai_client, loose, stream=False).outcome == unconstrained
    ok, want = ALLOWED[0]
    assert run_chat(openai_client, ok, stream=False).outcome == want


# ------------------------------------------------------------------------- Responses API

def respond(client: Any, script: str, *, stream: bool, **request: Any) -> dict[str, Any]:
    """One Responses request with the tool and the schema as ``text.format``: its status and
    output items (id-free), and, streamed, whether the final items equal the whole ones."""
    try:
        response = client.responses.create(
            model=MODEL, input="What is the weather in Paris, as JSON?", text=TEXT_FORMAT,
            tools=responses_tools(TOOLS), stream=stream,
            extra_body={"vllm_xargs": {"script_text": script}}, **request)
    except openai.APIError as e:
        return {"error": f"HTTP {getattr(e, 'status_code', None)}"}
    if not stream:
        return {"status": response.status, "items": [item_view(i) for i in response.output]}
    final: Any = None
    try:
        for event in response:
            if event.type in ("response.completed", "response.incomplete", "response.failed"):
                final = event.response
    except openai.APIError as e:
        return {"error": f"stream error ({type(e).__name__})"}
    if final is None or final.status == "failed":
        return {"error": "failed"}
    return {"status": final.status, "items": [item_view(i) for i in final.output]}


RESPONSES = [
    ("call", CALL, [["reasoning", REASONING], ["message", PREAMBLE],
                    ["function_call", "get_weather", PARIS]]),
    ("answer", ANSWER, [["reasoning", REASONING], ["message", BODY]]),
]


@pytest.mark.parametrize(("name", "script", "items"), RESPONSES, ids=[r[0] for r in RESPONSES])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_responses_a_call_or_the_answer(openai_client: Any, name: str, script: str,
                                        items: list[list[str]], stream: bool) -> None:
    assert respond(openai_client, script, stream=stream) == {"status": "completed",
                                                             "items": items}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_responses_refuses_an_answer_the_schema_refuses(openai_client: Any,
                                                        stream: bool) -> None:
    script = f"{ANALYSIS}<|channel|>final<|message|>{TOWN}<|return|>"
    assert "error" in respond(openai_client, script, stream=stream)


def test_the_tools_in_these_requests_are_the_chat_ones() -> None:
    """The strict variant declares the same function, with the same properties."""
    (strict,) = STRICT["tools"]
    (loose,) = chat_tools(TOOLS)
    assert strict["function"]["name"] == loose["function"]["name"] == "get_weather"
    assert strict["function"]["parameters"]["properties"] == loose["function"]["parameters"][
        "properties"]
