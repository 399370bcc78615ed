"""A real agent against SGLang's own HTTP app: the OpenAI Agents SDK with a typed answer and a
tool (issue 50).

``Agent(output_type=Weather, tools=[get_weather])`` on the SDK's Chat Completions model sends
its output schema as ``response_format`` together with the tool (``strict``, the SDK's default)
and no ``tool_choice`` (auto) on every call. ``Runner.run`` loops: the model reasons and calls
the tool; the SDK runs it and sends the result back; the model answers in the schema; the SDK
validates the answer into ``result.final_output``. The SDK's ``openai`` client talks to SGLang's
FastAPI app over httpx's ASGI transport (:meth:`ScriptedServer.over_http`): SGLang's route,
request model, ``OpenAIServingChat`` and ``TokenizerManager``, with harmony-ext as both parsers;
the model is scripted per request (:func:`turns_replies`: the first generation the call, the
second the answer). Each turn's output is then walked through the grammar SGLang's scheduler
builds from that request's sampling parameters (:mod:`harmony_ext_testing.sglang_grammar`), so
the engine would let the model write it: one grammar for the call or the answer (contract
section 10). That grammar is what the test proves, so it also walks what it must refuse there:
a call's arguments that are no JSON object and a call to a function the agent did not declare
(both of which an earlier grammar of harmony-ext, started at the final header, admitted), and
the answer without the schema's ``temp``. Its control is the same agent on
SGLang's own ``gpt-oss`` parsers, whose grammar holds the schema from the first ``<|end|>`` on and
so refuses the tool call the agent needs at the ``<|start|>`` after its reasoning.

Turns, tool result and answer are written by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from harmony_ext_testing.sglang_grammar import grammar_walker
from harmony_ext_testing.sglang_serving import shared_server, turns_replies
from harmony_plugins.vocab.o200k import tiktoken_encoding

HX = "harmony-ext"
NEXT = "<|start|>assistant"
CALL = ("<|channel|>analysis<|message|>I need the weather in Paris.<|end|>" + NEXT
        + '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>'
          '{"city":"Paris"}<|call|>')
ANSWER = ("<|channel|>analysis<|message|>The tool says 20 degrees.<|end|>" + NEXT
          + '<|channel|>final<|message|>{"city":"Paris","temp":20}<|return|>')
TURNS = [([CALL], {"type": "stop", "matched": 200012}),  # the detokenizer keeps <|call|>
         ([ANSWER.removesuffix("<|return|>")], {"type": "stop", "matched": 200002})]
THINK = CALL.split("<|start|>")[0]  # the call turn's reasoning, to its <|end|>
CALL_HEAD = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"


class Weather(BaseModel):
    city: str
    temp: int


def run_agent(model_dir: Path, parser: str) -> tuple[Any, list[str], list[Any]]:
    """The agent's run through SGLang's app with ``parser`` as both parsers: its final output,
    the cities the tool was asked for, and the generation requests the model got."""
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        RunConfig,
        Runner,
        function_tool,
        set_tracing_disabled,
    )
    from openai import AsyncOpenAI

    set_tracing_disabled(True)  # nothing leaves the machine
    asked: list[str] = []

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        asked.append(city)
        return "20 degrees"

    async def client(http: Any) -> Any:
        openai = AsyncOpenAI(base_url="http://sglang/v1", api_key="unused", http_client=http)
        agent = Agent(name="weather", instructions="Answer with the weather.",
                      tools=[get_weather], output_type=Weather,
                      model=OpenAIChatCompletionsModel(model="gpt-oss", openai_client=openai))
        result = await Runner.run(agent, "What is the weather in Paris?",
                                  run_config=RunConfig(tracing_disabled=True))
        return result.final_output

    server = shared_server(model_dir)
    answer, requests = server.over_http(turns_replies(TURNS), client, tool_parser=parser,
                                        reasoning_parser=parser)
    return answer, asked, requests


def test_the_agent_reasons_calls_the_tool_and_answers_in_the_schema(
        gpt_oss_model_dir: Path) -> None:
    answer, asked, requests = run_agent(gpt_oss_model_dir, HX)
    assert answer == Weather(city="Paris", temp=20)
    assert asked == ["Paris"]
    assert len(requests) == 2
    second = tiktoken_encoding().decode(list(requests[1].input_ids))
    assert second.endswith(  # the call as the model wrote it, then the tool's result, then us
        '<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>'
        '{"city":"Paris"}<|call|><|start|>functions.get_weather<|channel|>commentary '
        'to=assistant<|message|>20 degrees<|end|><|start|>assistant')  # as docs/render.md
    walk = grammar_walker(gpt_oss_model_dir, HX)
    for request, output in zip(requests, (CALL, ANSWER), strict=True):
        assert walk(request.sampling_params, request.require_reasoning, output) == (output, None)
    short = ANSWER.replace(',"temp":20', "")  # the agent's schema requires the temperature
    assert walk(requests[1].sampling_params, requests[1].require_reasoning, short) == (
        short.split('"Paris"')[0] + '"Paris', '"}')  # o200k writes '"}' as one token
    # What the one grammar refuses in the call's turn, and a grammar started at the final
    # header would not: a call's arguments that are no JSON object (the SDK's Chat Completions
    # tools are not strict, so any object passes, but an object it must be), and a call to a
    # function the agent never declared, at the token where its name leaves the declared one.
    first = requests[0]
    bare = f"{THINK}{NEXT}{CALL_HEAD}Paris<|call|>"
    assert walk(first.sampling_params, first.require_reasoning, bare) == (
        f"{THINK}{NEXT}{CALL_HEAD}", "Paris")
    news = f"{THINK}{NEXT}<|channel|>commentary to=functions.get_news json<|message|>{{}}"
    assert walk(first.sampling_params, first.require_reasoning, news) == (
        f"{THINK}{NEXT}<|channel|>commentary to=functions.get", "_news")


def test_with_sglang_s_own_parsers_the_tool_call_is_refused(gpt_oss_model_dir: Path) -> None:
    """The control: the same agent on SGLang's ``gpt-oss`` parsers. SGLang sends the response
    schema alone as the grammar, held from the first ``<|end|>``: the call after the reasoning
    is refused at its ``<|start|>``, so a model under that grammar could not call the tool."""
    _, _, requests = run_agent(gpt_oss_model_dir, "gpt-oss")
    first = requests[0]
    walk = grammar_walker(gpt_oss_model_dir, "gpt-oss")
    assert walk(first.sampling_params, first.require_reasoning, CALL) == (THINK, "<|start|>")
