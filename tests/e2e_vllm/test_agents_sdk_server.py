"""A real agent against a real vLLM server: the OpenAI Agents SDK with a typed answer and a tool.

``Agent(output_type=Weather, tools=[get_weather])`` sends its output schema as the response
format (Chat Completions: ``response_format``; Responses: ``text.format``) together with the
tool, ``tool_choice`` auto, on every call; the tool is ``strict`` by default (the SDK's
``function_tool(strict_mode=True)``: its arguments held to its schema) and not strict where the
agent says so. ``Runner.run`` then loops: the model reasons and calls the tool; the SDK runs it
and sends the result back; the model answers in the schema; the SDK validates the answer into
``result.final_output``. The model is scripted per turn (``harmony_ext_testing/agent_run.py``:
the first request's prompt holds no ``<|call|>``, the second one holds the call), and writes the
answer's header in each of the three spellings gpt-oss uses (``<|channel|>final<|message|>``,
``<|channel|>final json<|message|>``, ``<|channel|>final <|constrain|>json<|message|>``), so
everything between the SDK and the model is the SDK's, vLLM's and harmony-ext's own: one grammar
for the call or the answer (contract section 10), the parse, the prompt rendered back. With
harmony-ext every run gives the typed answer.

With vLLM's built-in gpt-oss parsers (the session's second server) what fails depends on the
tool's strictness and the answer's spelling (:data:`BUILTIN`, written by hand from the runs
docs/vllm-comparison.md records): vLLM's grammar for a response format allows no call, so with a
tool that is not strict the engine cannot write the call and ends the first request (HTTP 500);
a strict tool gets a grammar of vLLM's own that admits the call, and then the answer fails unless
its header names JSON with ``<|constrain|>``: written ``final`` the grammar masks it (HTTP 500),
written ``final json`` the built-in parser takes ``json`` for a function's name (the chat model
gets a call to ``json``, which the SDK refuses; the Responses model an ``mcp_call`` item, which
vLLM refuses when the SDK sends it back).

Run: ``.venv-vllm/bin/python -m pytest tests/e2e_vllm/test_agents_sdk_server.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

agents = pytest.importorskip("agents", reason="needs the OpenAI Agents SDK (openai-agents): "
                             "use .venv-vllm/bin/pytest")

from harmony_ext_testing import agent_run  # noqa: E402
from harmony_ext_testing.agent_run import Weather  # noqa: E402

APIS = ["chat", "responses"]
STRICTNESS = ["strict", "not strict"]
ANSWERS = list(agent_run.ANSWER_HEADERS)  # final, final json, final <|constrain|>json

DONE = f"final_output {Weather(city='Paris', temp=20)!r}; tool called for ['Paris']"
ENDED = "InternalServerError: Error code: 500 - Internal server error"
BUILTIN = {
    ("strict", "final"): {api: f"failed after the tool call: {ENDED}" for api in APIS},
    ("strict", "final json"): {
        "chat": "failed after the tool call: ModelBehaviorError: Tool json not found in agent "
                "weather",
        "responses": "failed after the tool call: BadRequestError: Error code: 400 - Unknown "
                     "input type: mcp_call (parameter=input)"},
    ("strict", "final <|constrain|>json"): {api: DONE for api in APIS},
    **{("not strict", answer): {api: f"failed before any tool call: {ENDED}" for api in APIS}
       for answer in ANSWERS},
}
"""What the run gives with vLLM's built-in parsers (:func:`agent_run.outcome`'s line), by the
tool's strictness and the answer's spelling, then by the SDK's model."""


def run_of(comparison: dict[str, Any], api: str, strict: str, answer: str) -> dict[str, str]:
    """The run's line on each server (``ext``, ``builtin``), as the comparison page's recorder
    ran it (the session's ``comparison`` fixture: :func:`agent_run.outcome` on each server)."""
    return comparison[f"agent:{api}:{strict}:{answer}"]


@pytest.mark.parametrize("answer", ANSWERS)
@pytest.mark.parametrize("strict", STRICTNESS)
@pytest.mark.parametrize("api", APIS)
def test_the_agent_calls_the_tool_then_answers_in_the_schema(comparison: dict[str, Any],
                                                             api: str, strict: str,
                                                             answer: str) -> None:
    """harmony-ext: the tool called for Paris, then the typed answer, in all twelve runs."""
    assert run_of(comparison, api, strict, answer)["ext"] == DONE


@pytest.mark.parametrize("answer", ANSWERS)
@pytest.mark.parametrize("strict", STRICTNESS)
@pytest.mark.parametrize("api", APIS)
def test_with_vllm_s_built_in_parser_the_run_fails_unless_strict_and_constrained(
        comparison: dict[str, Any], api: str, strict: str, answer: str) -> None:
    """The exact symptom per tool strictness and answer spelling; the one combination that
    works is the control showing a run can succeed on that server."""
    assert run_of(comparison, api, strict, answer)["builtin"] == BUILTIN[strict, answer][api]

