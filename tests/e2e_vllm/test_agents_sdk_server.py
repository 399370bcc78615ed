"""A real agent against a real vLLM server: the OpenAI Agents SDK with a typed answer and a tool.

``Agent(output_type=Weather, tools=[get_weather])`` sends its output schema as the response
format (Chat Completions: ``response_format``; Responses: ``text.format``) together with the
tool, ``tool_choice`` auto, on every call; the tool is ``strict`` (the SDK's default), so its
arguments are held to its schema. ``Runner.run`` then loops: the model reasons and calls the
tool; the SDK runs it and sends the result back; the model answers in the schema; the SDK
validates the answer into ``result.final_output``. The model is scripted per turn
(``harmony_ext_testing/agent_run.py``: the first request's prompt holds no ``<|call|>``, the
second one holds the call), so everything between the SDK and the model is the SDK's, vLLM's
and harmony-ext's own: one grammar for the call or the answer (contract section 10), the
parse, the prompt rendered back.

With vLLM's built-in gpt-oss parsers (the session's second server) the same run fails: vLLM's
grammar for a response format allows no call, so the engine cannot write the tool call the
script holds and ends the request (HTTP 500), which the SDK raises; the comparison page
(docs/vllm-comparison.md) records it.

Run: ``.venv-vllm/bin/python -m pytest tests/e2e_vllm/test_agents_sdk_server.py``.
"""

from __future__ import annotations

import pytest

agents = pytest.importorskip("agents", reason="needs the OpenAI Agents SDK (openai-agents): "
                             "use .venv-vllm/bin/pytest")

from harmony_ext_testing.agent_run import Weather, run_agent  # noqa: E402


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_the_agent_calls_the_tool_then_answers_in_the_schema(vllm_server: str,
                                                             api: str) -> None:
    final, asked = run_agent(vllm_server, api)
    assert asked == ["Paris"]
    assert final == Weather(city="Paris", temp=20)


def test_with_vllm_s_built_in_parser_the_run_fails(builtin_server: str) -> None:
    """vLLM's own grammar for the response format refuses the call: the engine ends the first
    request, and the SDK raises the server's error."""
    import openai

    with pytest.raises(openai.InternalServerError):
        run_agent(builtin_server, "chat")
