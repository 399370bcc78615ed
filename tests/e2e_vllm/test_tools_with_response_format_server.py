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
writes exactly its script, so a script the grammar forbids ends the request at the refused token:
HTTP 500 with vLLM's generic error body; streamed, the deltas up to that token, then chat's error
event or, on the Responses API, a stream closed without a final event; while the same script
without the response format comes out as written), each answered as written, whole and
streamed, chat and Responses:

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

from openai import NOT_GIVEN  # noqa: E402

from harmony_ext_testing.vllm_cases import (  # noqa: E402
    CALL_W,
    MODEL,
    PARIS,
    TOOL_PARAMETERS,
    Case,
    ChunkFolder,
    chat_kwargs,
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


ENDED = {"message": "Internal server error", "type": "InternalServerError", "param": None,
         "code": 500}
"""What vLLM answers a request whose grammar refused the scripted token: the scripted model has
no other token to give, the engine fails the request, and the API server reports it as its
generic error, the body of an HTTP 500 or the error event that ends a chat stream."""
BEFORE = None
"""A streamed request's finish_reason before its refusal: none was sent."""

# (the case, what a chat stream can carry before the grammar refused a token (the script up to
# that token, parsed), the same script's request without the grammar, what that gives): the
# unconstrained request drops the response format, and a tool_choice or parallel_tool_calls
# for which vLLM builds a call grammar of its own. Where each is refused, by contract section
# 10: an undeclared name where it leaves the declared one, an answer or a strict function's
# arguments at the first key the schema refuses ('{"' passes), a call's recipient with
# tool_choice none, the final channel with required, a second call's <|start|>.
REFUSED = [
    (Case("undeclared_call", "a call to a function the request did not declare",
          f"{ANALYSIS}<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>"
          '{"tz":"CET"}<|call|>', tools=TOOLS, request=FORMAT),
     outcome(REASONING, None, finish=BEFORE),
     {}, outcome(REASONING, None)),  # undeclared: dropped and counted (contract section 3)
    (Case("refused_answer", "an answer the schema refuses",
          f"{ANALYSIS}<|channel|>final<|message|>{TOWN}<|return|>", tools=TOOLS, request=FORMAT),
     outcome(REASONING, '{"', finish=BEFORE),
     {}, outcome(REASONING, TOWN)),
    (Case("strict_refused", "a strict function, arguments its schema refuses",
          f"{CALL_W}{TOWN}<|call|>", request={**FORMAT, **STRICT}),
     outcome(None, None, (("get_weather", '{"'),), finish=BEFORE),
     {"tools": chat_tools(TOOLS)},  # not strict: vLLM holds a strict function's arguments too
     outcome(None, None, (("get_weather", TOWN),), "tool_calls")),
    (Case("none_call", "tool_choice none: a call", CALL, tools=TOOLS,
          request={**FORMAT, "tool_choice": "none"}),
     outcome(REASONING, PREAMBLE, finish=BEFORE),
     {"tool_choice": "none"}, outcome(REASONING, PREAMBLE)),  # no call surfaced with none
    (Case("required_answer", "tool_choice required: an answer without a call", ANSWER,
          tools=TOOLS, request={**FORMAT, "tool_choice": "required"}),
     outcome(REASONING, None, finish=BEFORE),
     {}, ANSWERED),
    (Case("second_call", "parallel_tool_calls false: a second call after the first",
          f"{CALL_W}{PARIS}<|end|><|start|>assistant{CALL_W}{PARIS}<|call|>", tools=TOOLS,
          request={**FORMAT, "parallel_tool_calls": False}),
     outcome(None, None, (("get_weather", PARIS),), finish=BEFORE),
     {}, outcome(None, None, (("get_weather", PARIS), ("get_weather", PARIS)), "tool_calls")),
]


def cut_short(seen: dict[str, Any], before: dict[str, Any]) -> bool:
    """Whether a stream that ended in an error carried ``before`` or less of it, the same
    fields and each text a prefix of its own: nothing from the refused token on. (vLLM merges
    the outputs a lagging stream has not sent yet into the next one; when the next is the
    failed request's, its last deltas go with it, so how much of ``before`` arrives depends on
    how far the client lagged.)"""

    def within(got: str | None, whole: str | None) -> bool:
        return got is None if whole is None else (got or "") == whole[:len(got or "")]

    calls, whole_calls = seen["tool_calls"], before["tool_calls"]
    return (seen["finish_reason"] is before["finish_reason"] is None
            and within(seen["reasoning"], before["reasoning"])
            and within(seen["content"], before["content"])
            and len(calls) <= len(whole_calls)
            and all(within(name, whole_name) and within(arguments, whole_arguments)
                    for (name, arguments), (whole_name, whole_arguments)
                    in zip(calls, whole_calls, strict=False)))


def refusal(client: Any, case: Case) -> tuple[tuple[int, Any], dict[str, Any], Any]:
    """What a client gets for a request whose script the grammar refuses: (the non-streamed
    request's HTTP status and error body, what the chat stream carried before its error event
    (folded), that event's error)."""
    try:
        client.chat.completions.create(**chat_kwargs(case, stream=False))
        whole: tuple[int, Any] = (200, None)
    except openai.APIStatusError as e:
        whole = (e.status_code, e.body)
    folder, error = ChunkFolder(), None
    try:
        for chunk in client.chat.completions.create(**chat_kwargs(case, stream=True)):
            folder.add(chunk)
    except openai.APIError as e:
        error = (type(e).__name__, e.body)
    run = folder.result()
    return whole, run.outcome, (error, run.problems)


@pytest.mark.parametrize(("case", "before", "free", "unconstrained"), REFUSED,
                         ids=[c.id for c, _, _, _ in REFUSED])
def test_what_the_grammar_refuses(openai_client: Any, case: Case, before: dict[str, Any],
                                  free: dict[str, Any], unconstrained: dict[str, Any]) -> None:
    """The grammar is in force: the script ends the request at the token it refuses (the
    scripted model cannot take another), whole (HTTP 500, vLLM's generic error) and streamed (at
    most the deltas up to that token, then the error event); without it the same script comes
    out as the parse makes it, whole and streamed; the server keeps serving."""
    whole, streamed, (error, problems) = refusal(openai_client, case)
    assert whole == (500, ENDED)
    assert (error, problems) == (("APIError", ENDED), [])
    assert cut_short(streamed, before)
    loose = Case(case.id, case.title, case.script, tools=case.tools, request=free)
    assert run_chat(openai_client, loose, stream=False).outcome == unconstrained
    assert run_chat(openai_client, loose, stream=True).outcome == unconstrained
    ok, want = ALLOWED[0]
    assert run_chat(openai_client, ok, stream=False).outcome == want


# ------------------------------------------------------------------------- Responses API

FINAL_EVENTS = ("response.completed", "response.incomplete", "response.failed")


def respond(client: Any, script: str, *, stream: bool, **request: Any) -> dict[str, Any]:
    """One Responses request with the tool and the schema as ``text.format`` (``text`` in
    ``request`` replaces it): its status and output items (id-free), and, streamed, whether the
    final items equal the whole ones."""
    request = {"text": TEXT_FORMAT, **request}
    try:
        response = client.responses.create(
            model=MODEL, input="What is the weather in Paris, as JSON?",
            tools=responses_tools(TOOLS), stream=stream,
            extra_body={"vllm_xargs": {"script_text": script}}, **request)
    except openai.APIError as e:
        return {"error": f"HTTP {getattr(e, 'status_code', None)}"}
    if not stream:
        return {"status": response.status, "items": [item_view(i) for i in response.output]}
    final: Any = None
    try:
        for event in response:
            if event.type in FINAL_EVENTS:
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


def responses_refusal(client: Any, script: str, **request: Any) -> tuple[Any, Any]:
    """What a client gets for a Responses request (tool and ``text.format``) whose script the
    grammar refuses: (the non-streamed request's HTTP status and error body; the streamed
    one's reasoning and output text deltas, its last event's type, and how the stream ended)."""
    kwargs = {"model": MODEL, "input": "What is the weather in Paris, as JSON?",
              "text": TEXT_FORMAT, "tools": responses_tools(TOOLS),
              "extra_body": {"vllm_xargs": {"script_text": script}}, **request}
    try:
        client.responses.create(stream=False, **kwargs)
        whole: Any = (200, None)
    except openai.APIStatusError as e:
        whole = (e.status_code, e.body)
    texts = {"response.reasoning_text.delta": "", "response.output_text.delta": ""}
    last, ended = None, "the stream's end"
    try:
        for event in client.responses.create(stream=True, **kwargs):
            last = event.type
            if event.type in texts:
                texts[event.type] += event.delta
    except openai.APIError as e:
        ended = type(e).__name__
    return whole, (*texts.values(), last, ended)


def test_responses_refuses_an_answer_the_schema_refuses(openai_client: Any) -> None:
    """The Responses API holds the answer to ``text.format`` too: the same refusal as chat's,
    whole (HTTP 500 with vLLM's generic error) and streamed: at most the deltas up to the
    refused token (the reasoning, '{"' of the answer), then vLLM closes the stream without a
    final event (the client's APIConnectionError). The control, the same script without
    ``text.format``, comes out as written."""
    script = f"{ANALYSIS}<|channel|>final<|message|>{TOWN}<|return|>"
    whole, (reasoning, text, last, ended) = responses_refusal(openai_client, script)
    assert whole == (500, ENDED)
    assert (last not in FINAL_EVENTS, ended) == (True, "APIConnectionError")
    assert REASONING.startswith(reasoning) and '{"'.startswith(text)  # as cut_short says
    for stream in (False, True):
        assert respond(openai_client, script, stream=stream, text=NOT_GIVEN) == {
            "status": "completed", "items": [["reasoning", REASONING], ["message", TOWN]]}


def test_the_tools_in_these_requests_are_the_chat_ones() -> None:
    """The strict variant declares the same function, with the same properties."""
    (strict,) = STRICT["tools"]
    (loose,) = chat_tools(TOOLS)
    assert strict["function"]["name"] == loose["function"]["name"] == "get_weather"
    assert strict["function"]["parameters"]["properties"] == loose["function"]["parameters"][
        "properties"]
