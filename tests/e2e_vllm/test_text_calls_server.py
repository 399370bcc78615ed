"""Calls written as text where a call is forced, on a real vLLM server (contract section 10).

With ``HARMONY_EXT_RECOVER_TEXT_CALLS=1``, a bare JSON object is a call only where it is
plainly one: every key a property the forced function declares (at least one), and its schema
accepts it; a function without ``parameters``, with a bare ``{"type": "object"}`` or with an
empty ``properties`` never receives one, nor does a function whose parameters are all optional
receive a JSON answer made of other keys. On vLLM a forced ``tool_choice``
comes with vLLM's structural tag, which admits no final answer (``tests/test_text_calls.py``'s
forced cases are refused there, as ``test_generation_guard_server.py`` checks) but does admit a
preamble before the call (``<|channel|>commentary<|message|>...<|end|>``): a preamble that is a
bare JSON object is where the rule shows on vLLM. Each script is that preamble, then the call
the grammar asks for.

The server is one of its own (module scope), started with the switch on; the tiny CPU model
writes the scripts (``script_text``). Expected values are written by hand from the contract.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai", reason="needs the openai client: use .venv-vllm/bin/pytest")

from harmony_ext_testing.vllm_cases import Case, run_chat
from harmony_ext_testing.vllm_server import VENV, tiny_vllm_server
from tests.test_text_calls import (
    ANSWER,
    ANYTHING,
    EMPTY_PROPERTIES,
    NOTE,
    OPTIONAL,
    PARIS,
    WEATHER,
)

RECOVER_TEXT_CALLS_ON = {"HARMONY_EXT_RECOVER_TEXT_CALLS": "1"}
PREAMBLE = "<|channel|>commentary<|message|>"
NEXT = "<|end|><|start|>assistant"


def call(name: str, arguments: str) -> str:
    """A call as gpt-oss writes it, closed by ``<|call|>`` (the grammar's end)."""
    return (f"<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>"
            f"{arguments}<|call|>")


def named(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name}}


NOTE_CALLED = PREAMBLE + ANSWER + NEXT + call("note", "{}")
"""A JSON preamble, then the forced call to ``note``."""

# (id, tools, tool_choice, finish_reason): the forced function takes any object. (OpenAI, and
# vLLM's serving, report "stop" for a named tool_choice.)
UNCONSTRAINED = [
    ("no_parameters_required", [NOTE], "required", "tool_calls"),
    ("no_parameters_named", [NOTE, WEATHER], named("note"), "stop"),
    ("object_only_required", [ANYTHING], "required", "tool_calls"),
    ("empty_properties_required", [EMPTY_PROPERTIES], "required", "tool_calls"),
]


@pytest.fixture(scope="module")
def recovering_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a harmony-ext server with ``HARMONY_EXT_RECOVER_TEXT_CALLS=1``."""
    if not (VENV / "bin" / "python").exists():
        pytest.skip(f"{VENV} is missing: run scripts/setup_vllm_env.sh")
    log = Path(tmp_path_factory.mktemp("vllm-text-calls")) / "server.log"
    with tiny_vllm_server(log, env=RECOVER_TEXT_CALLS_ON) as base_url:
        yield base_url


@pytest.fixture(scope="module")
def client(recovering_server: str) -> Any:
    import openai

    return openai.OpenAI(base_url=f"{recovering_server}/v1", api_key="unused", max_retries=0,
                         timeout=300)


def sent(client: Any, script: str, tools: list[dict[str, Any]], choice: Any,
         stream: bool) -> dict[str, Any]:
    """What the client got for ``script``, written by the model under vLLM's grammar for the
    forced ``choice``."""
    case = Case("text_call", "", script, request={"tools": tools, "tool_choice": choice})
    run = run_chat(client, case, stream=stream)
    assert run.problems == []
    return run.outcome


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize(("tools", "choice", "finish"), [c[1:] for c in UNCONSTRAINED],
                         ids=[c[0] for c in UNCONSTRAINED])
def test_a_json_preamble_is_no_call_to_a_function_that_takes_any_object(
        client: Any, tools: list[dict[str, Any]], choice: Any, finish: str,
        stream: bool) -> None:
    """The preamble is shown as written; the one call is the one the model wrote as a call."""
    assert sent(client, NOTE_CALLED, tools, choice, stream) == {
        "reasoning": None, "content": ANSWER, "tool_calls": [["note", "{}"]],
        "finish_reason": finish}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("answer", ['{"answer": "Paris", "confidence": 0.9}', "{}"],
                         ids=["other_keys", "empty"])
def test_a_json_preamble_not_of_an_optional_functions_keys_is_no_call(
        client: Any, answer: str, stream: bool) -> None:
    """A forced function whose parameters are all optional takes any object; a JSON preamble
    made of other keys (or none) is shown as written, and the one call is the one the model
    wrote as a call."""
    script = PREAMBLE + answer + NEXT + call("get_weather", PARIS)
    assert sent(client, script, [OPTIONAL], "required", stream) == {
        "reasoning": None, "content": answer, "tool_calls": [["get_weather", PARIS]],
        "finish_reason": "tool_calls"}
    # The control: the same function, the same place, an object of its own keys is its call.
    script = PREAMBLE + '{"city":"Rome"}' + NEXT + call("get_weather", PARIS)
    assert sent(client, script, [OPTIONAL], "required", stream)["tool_calls"] == [
        ["get_weather", '{"city":"Rome"}'], ["get_weather", PARIS]]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_json_preamble_a_constraining_schema_takes_is_its_call(client: Any,
                                                                 stream: bool) -> None:
    """The same server does recover a bare object where the forced function's schema
    constrains and accepts it: the preamble ``{"city":"Paris"}`` is a call to ``get_weather``,
    before the call the model wrote as one (so the cases above are the rule, not a switch
    left off)."""
    rome = '{"city":"Rome"}'
    script = PREAMBLE + PARIS + NEXT + call("get_weather", rome)
    assert sent(client, script, [WEATHER], "required", stream) == {
        "reasoning": None, "content": None,
        "tool_calls": [["get_weather", PARIS], ["get_weather", rome]],
        "finish_reason": "tool_calls"}
