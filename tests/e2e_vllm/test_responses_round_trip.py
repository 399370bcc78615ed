"""The Responses API's items round-trip on a real vLLM server (contract section 8, v4).

Turn 1 is an agent turn (analysis, a preamble, a call), scripted and parsed by harmony-ext.
The client then asks for turn 2 the two ways an agent does: it sends every output item back
with the tool's ``function_call_output`` (the OpenAI Agents SDK's default), or it names turn 1
by ``previous_response_id`` and sends the output alone. Either way the prompt vLLM renders for
turn 2 must be, token for token, the turn as the model wrote it, the preamble on
``commentary``. The Responses API returns no prompt ids, so turn 2's script reads the prompt
back (``script_echo_prompt``, harmony_ext_testing/vllm_scripted.py): its answer is the ids the
engine was given. The expected renderings are written by hand below
(harmony_ext_testing/renderings.py).

The same items sent to a server with vLLM's built-in parser show what the hooks fix: vLLM
puts the preamble on ``final`` and drops the analysis before it, as if the turn were answered.
And the message items' ``phase``, streamed and whole, with the built-in parser's none beside.
``previous_response_id`` needs vLLM's response store, which the shared server enables
(``VLLM_ENABLE_RESPONSES_API_STORE``, harmony_ext_testing/vllm_server.py).
"""

from __future__ import annotations

from typing import Any

import pytest

openai = pytest.importorskip("openai", reason="needs the openai client: use .venv-vllm/bin/pytest")

from harmony_ext_testing.renderings import (  # noqa: E402
    START,
    analysis,
    call,
    final,
    preamble,
    result,
    token_ids,
    user,
)
from harmony_ext_testing.vllm_cases import CALL_W, MODEL, PARIS, responses_tools  # noqa: E402
from harmony_ext_testing.vllm_scripted import SCRIPT_ECHO_KEY, echoed_ids  # noqa: E402

USER = "What is the weather in Paris?"
HOT = "It is sunny."
TOOLS = responses_tools(["get_weather"])
AGENT_TURN = ("<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant"
              "<|channel|>commentary<|message|>Checking now.<|end|><|start|>assistant"
              + CALL_W + PARIS + "<|call|>")
ANSWERED = ("<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>commentary"
            "<|message|>One moment.<|end|><|start|>assistant<|channel|>final<|message|>"
            "Sunny.<|return|>")
AS_WRITTEN = (*user(USER), *analysis("Need weather."), *preamble("Checking now."),
              *call("get_weather", PARIS), *result("get_weather", HOT), START, "assistant")
"""Turn 2's prompt from the user's message on: turn 1 as the model wrote it, then the result."""
NO_ANALYSIS = (*user(USER), *preamble("Checking now."), *call("get_weather", PARIS),
               *result("get_weather", HOT), START, "assistant")
"""The same with turn 1's reasoning item sent back without its text: no analysis."""
AS_ANSWER = (*user(USER), *final("Checking now."), *call("get_weather", PARIS),
             *result("get_weather", HOT), START, "assistant")
"""What vLLM alone renders: the preamble as an answer, so the analysis before it dropped."""


@pytest.fixture(scope="module")
def encoding() -> Any:
    from harmony_plugins.vocab.o200k import tiktoken_encoding

    return tiktoken_encoding()


def client_for(base_url: str) -> Any:
    return openai.OpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0)


def turn_one(client: Any) -> Any:
    response = client.responses.create(model=MODEL, input=USER, tools=TOOLS, extra_body={
        "vllm_xargs": {"script_text": AGENT_TURN}})
    assert [item.type for item in response.output] == ["reasoning", "message", "function_call"]
    return response


def sent_back(response: Any) -> list[dict[str, Any]]:
    """Turn 1's output items as the Agents SDK resends them (``model_dump(exclude_unset)``)."""
    return [item.model_dump(exclude_unset=True) for item in response.output]


def output_of(response: Any) -> dict[str, Any]:
    (called,) = [item for item in response.output if item.type == "function_call"]
    return {"type": "function_call_output", "call_id": called.call_id, "output": HOT}


def prompt_of(client: Any, **request: Any) -> list[int]:
    """The prompt ids vLLM renders for a turn-2 request (read back by the scripted model)."""
    response = client.responses.create(model=MODEL, tools=TOOLS, extra_body={
        "vllm_xargs": {SCRIPT_ECHO_KEY: 0}}, **request)
    assert response.status == "completed", response
    ids = echoed_ids(response.output_text)
    assert ids and response.usage.input_tokens == len(ids)
    return ids


def tail(ids: list[int], expected: list[int]) -> list[int]:
    return ids[-len(expected):]


def shown(encoding: Any, ids: list[int]) -> str:
    return encoding.decode(ids)


def test_items_sent_back_render_as_the_model_wrote_them(vllm_server: str,
                                                        encoding: Any) -> None:
    client = client_for(vllm_server)
    first = turn_one(client)
    resent = prompt_of(client, input=[{"role": "user", "content": USER}, *sent_back(first),
                                      output_of(first)])
    want = token_ids(encoding, list(AS_WRITTEN))
    assert shown(encoding, tail(resent, want)) == shown(encoding, want)
    assert tail(resent, want) == want


def test_previous_response_id_renders_the_same_prompt(vllm_server: str, encoding: Any) -> None:
    client = client_for(vllm_server)
    first = turn_one(client)
    by_id = prompt_of(client, previous_response_id=first.id, input=[output_of(first)])
    resent = prompt_of(client, input=[{"role": "user", "content": USER}, *sent_back(first),
                                      output_of(first)])
    want = token_ids(encoding, list(AS_WRITTEN))
    assert shown(encoding, tail(by_id, want)) == shown(encoding, want)
    assert by_id == resent  # the whole prompt, system and tools included


def test_without_phase_the_call_after_a_message_makes_it_the_preamble(vllm_server: str,
                                                                     encoding: Any) -> None:
    """A client that drops ``phase``: the call of the same turn says what the message was."""
    client = client_for(vllm_server)
    first = turn_one(client)
    items = [{k: v for k, v in item.items() if k != "phase"} for item in sent_back(first)]
    assert [item.get("phase") for item in sent_back(first)] == [None, "commentary", None]
    got = prompt_of(client, input=[{"role": "user", "content": USER}, *items, output_of(first)])
    want = token_ids(encoding, list(AS_WRITTEN))
    assert tail(got, want) == want


@pytest.mark.parametrize("placeholder", [
    {"type": "reasoning", "summary": []},
    {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Weather."}],
     "encrypted_content": "gAAA"},
], ids=["no_content", "summary_only"])
def test_a_reasoning_item_without_text_renders_nothing(vllm_server: str, encoding: Any,
                                                       placeholder: dict[str, Any]) -> None:
    """A client that keeps a reasoning item but not its text (a placeholder, or a summary):
    there is no analysis to render (contract section 8), on every vLLM; vLLM 0.34's own
    conversion would put an empty assistant message there."""
    client = client_for(vllm_server)
    first = turn_one(client)
    items = [{**placeholder, "id": item["id"]} if item["type"] == "reasoning" else item
             for item in sent_back(first)]
    got = prompt_of(client, input=[{"role": "user", "content": USER}, *items, output_of(first)])
    want = token_ids(encoding, list(NO_ANALYSIS))
    assert shown(encoding, tail(got, want)) == shown(encoding, want)
    assert tail(got, want) == want


def test_vllm_alone_renders_the_preamble_as_an_answer(builtin_server: str, vllm_server: str,
                                                      encoding: Any) -> None:
    """The same items on vLLM's built-in parser: what the test above would see unfixed."""
    first = turn_one(client_for(vllm_server))
    client = client_for(builtin_server)
    got = prompt_of(client, input=[{"role": "user", "content": USER}, *sent_back(first),
                                   output_of(first)])
    want = token_ids(encoding, list(AS_ANSWER))
    assert shown(encoding, tail(got, want)) == shown(encoding, want)
    assert tail(got, token_ids(encoding, list(AS_WRITTEN))) != token_ids(encoding,
                                                                          list(AS_WRITTEN))


def message_phases(items: list[Any]) -> list[Any]:
    return [getattr(item, "phase", None) for item in items if item.type == "message"]


def streamed_phases(client: Any, script: str) -> tuple[list[Any], list[Any], list[Any]]:
    """The message items' phases in ``output_item.added``, ``output_item.done`` and
    ``response.completed`` of one streamed response."""
    added, done, completed = [], [], []
    for event in client.responses.create(model=MODEL, input=USER, tools=TOOLS, stream=True,
                                         extra_body={"vllm_xargs": {"script_text": script}}):
        if event.type == "response.output_item.added":
            added.append(event.item)
        elif event.type == "response.output_item.done":
            done.append(event.item)
        elif event.type == "response.completed":
            completed = list(event.response.output)
    return message_phases(added), message_phases(done), message_phases(completed)


@pytest.mark.parametrize(("script", "phases"), [
    (AGENT_TURN, ["commentary"]),
    (ANSWERED, ["commentary", "final_answer"]),
], ids=["agent_turn", "answered"])
def test_message_items_carry_their_phase_streamed_and_whole(vllm_server: str, builtin_server: str,
                                                            script: str,
                                                            phases: list[str]) -> None:
    client = client_for(vllm_server)
    whole = client.responses.create(model=MODEL, input=USER, tools=TOOLS, extra_body={
        "vllm_xargs": {"script_text": script}})
    assert message_phases(whole.output) == phases
    assert streamed_phases(client, script) == (phases, phases, phases)
    builtin = client_for(builtin_server)
    assert streamed_phases(builtin, script) == ([None] * len(phases),) * 3  # vLLM sets none
