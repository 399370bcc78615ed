"""An OpenAI Agents SDK agent with a typed answer and a tool, against a scripted vLLM server.

``Agent(output_type=Weather, tools=[get_weather])`` is what an agent that wants a typed answer
sends on every model call: its output schema as the response format (Chat Completions:
``response_format``; Responses: ``text.format``) with the tool, ``tool_choice`` auto, the tool
``strict`` (the SDK's default). ``Runner.run_sync`` loops: the model reasons and calls the tool,
the SDK runs it and sends the result back, the model answers in the schema, the SDK validates
the answer into ``final_output``. The model is scripted per turn (:data:`TURNS`, by
``script_texts_by_calls``: a request whose prompt holds no ``<|call|>`` gets the first, one
that holds the call the second). Shared by ``tests/e2e_vllm/test_agents_sdk_server.py`` and the
comparison page's generator (``pages/vllm_comparison.py``).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from harmony_ext_testing.vllm_cases import MODEL

THINK = "<|channel|>analysis<|message|>{}<|end|><|start|>assistant"
ANSWER_HEADERS = {  # the final answer's header in the three spellings gpt-oss writes
    "final": "<|channel|>final<|message|>",
    "final json": "<|channel|>final json<|message|>",
    "final <|constrain|>json": "<|channel|>final <|constrain|>json<|message|>",
}


def turns(answer: str = "final") -> list[str]:
    """What the model writes on each turn, by hand: it reasons and calls the tool; then it
    reasons and answers, the answer's header spelled ``answer`` (a key of
    :data:`ANSWER_HEADERS`)."""
    return [
        THINK.format("I need the weather in Paris.")
        + '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>'
          '{"city":"Paris"}<|call|>',
        THINK.format("The tool says 20 degrees.")
        + ANSWER_HEADERS[answer] + '{"city":"Paris","temp":20}<|return|>',
    ]


TURNS = turns()


class Weather(BaseModel):
    """The agent's typed answer."""

    city: str
    temp: int


def run_agent(base_url: str, api: str, *, strict: bool = True,
              answer: str = "final") -> tuple[Any, list[str]]:
    """The agent run against ``base_url`` with the SDK's Chat Completions (``api`` "chat") or
    Responses model, its tool ``strict`` (the SDK's default) or not, the model's answer header
    spelled ``answer``; (the run's final output, the cities the tool was asked about). The
    server's errors are raised as the SDK raises them, with the cities asked so far as
    ``asked`` on the exception."""
    from agents import (
        Agent,
        ModelSettings,
        OpenAIChatCompletionsModel,
        OpenAIResponsesModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )
    from openai import AsyncOpenAI

    set_tracing_disabled(True)  # no trace export: no network
    asked: list[str] = []

    @function_tool(strict_mode=strict)
    def get_weather(city: str) -> str:
        """The weather in a city."""
        asked.append(city)
        return "20 degrees Celsius"

    client = AsyncOpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0)
    model_class = OpenAIChatCompletionsModel if api == "chat" else OpenAIResponsesModel
    agent = Agent(
        name="weather", instructions="Answer with the weather, as the schema says.",
        tools=[get_weather], output_type=Weather,
        model=model_class(model=MODEL, openai_client=client),
        model_settings=ModelSettings(
            extra_body={"vllm_xargs": {"script_texts_by_calls": json.dumps(turns(answer))}}))
    try:
        result = Runner.run_sync(agent, "What is the weather in Paris?")
    except Exception as e:
        e.asked = asked  # type: ignore[attr-defined]
        raise
    return result.final_output, asked


def outcome(base_url: str, api: str, *, strict: bool = True, answer: str = "final") -> str:
    """What the run gave, in a line: the final output and the tool's calls, or the error the
    SDK raised and whether the tool had been called (so on which request it came)."""
    try:
        final, asked = run_agent(base_url, api, strict=strict, answer=answer)
    except Exception as e:  # what the SDK raised is the finding
        where = "after the tool call" if getattr(e, "asked", None) else "before any tool call"
        return f"failed {where}: {type(e).__name__}: {str(e)[:80]}"
    return f"final_output {final!r}; tool called for {asked}"
