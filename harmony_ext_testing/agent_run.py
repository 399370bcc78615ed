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
TURNS = [  # what the model writes on each turn, by hand
    THINK.format("I need the weather in Paris.")
    + '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>'
      '{"city":"Paris"}<|call|>',
    THINK.format("The tool says 20 degrees.")
    + '<|channel|>final<|message|>{"city":"Paris","temp":20}<|return|>',
]


class Weather(BaseModel):
    """The agent's typed answer."""

    city: str
    temp: int


def run_agent(base_url: str, api: str) -> tuple[Any, list[str]]:
    """The agent run against ``base_url`` with the SDK's Chat Completions (``api`` "chat") or
    Responses model; (the run's final output, the cities the tool was asked about). The
    server's errors are raised as the SDK raises them."""
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

    @function_tool
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
            extra_body={"vllm_xargs": {"script_texts_by_calls": json.dumps(TURNS)}}))
    result = Runner.run_sync(agent, "What is the weather in Paris?")
    return result.final_output, asked


def outcome(base_url: str, api: str) -> str:
    """What the run gave, in a line: the final output and the tool's calls, or the error."""
    try:
        final, asked = run_agent(base_url, api)
    except Exception as e:  # what the SDK raised is the finding
        return f"failed: {type(e).__name__}: {str(e)[:80]}"
    return f"final_output {final!r}; tool called for {asked}"
