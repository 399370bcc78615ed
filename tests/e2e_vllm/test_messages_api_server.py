"""vLLM's Anthropic Messages API (``/v1/messages``) served through harmony-ext, streamed and not.

Contract section 4 passes a call on with its arguments as written, and section 6 lets no output
fail the request. On ``/v1/messages`` a call is a ``tool_use`` block whose ``input`` is an
object; a call whose arguments are none (cut short by ``max_tokens``, a bare string, text
before the object) is a ``text`` block in its place holding the function's name and the
arguments as written, and a response left with no ``tool_use`` block says ``end_turn``
(section 4). The outcome is counted on ``/metrics`` and in the response's log line as on the
chat API. The control: vLLM's built-in parsers answer the same requests with HTTP 400.

Plain HTTP (httpx), as ``/v1/messages`` is not OpenAI's API. Expected values are written by
hand from the contract.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("httpx", reason="comes with vLLM: use .venv-vllm/bin/pytest")
pytest.importorskip("prometheus_client", reason="comes with vLLM: use .venv-vllm/bin/pytest")

from harmony_ext_testing.messages_api import messages_body, run_messages
from harmony_ext_testing.vllm_cases import (
    CALL_W,
    PARIS,
    THINK,
    finish_reason_bug,
)
from tests.e2e_vllm.metrics import increase, scrape

W = ("get_weather",)
CUT = {"max_tokens": 15}  # 12 header tokens, then {"city":" : cut inside the arguments

# (id, script, tools, request options, blocks, stop_reason): written from contract section 4.
WELL_FORMED = [
    ("answer", "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final"
     "<|message|>Hi!<|return|>", (), {},
     [["thinking", "Think."], ["text", "Hi!"]], "end_turn"),
    ("call", THINK + CALL_W + PARIS + "<|call|>", W, {},
     [["thinking", "Need the weather."], ["tool_use", "get_weather", {"city": "Paris"}]],
     "tool_use"),
]
NO_OBJECT = [
    ("cut_short", CALL_W + PARIS + "<|call|>", W, CUT,
     [["text", 'get_weather {"city":"']], "max_tokens"),
    ("bare_string", CALL_W + '"Paris"<|call|>', W, {},
     [["text", 'get_weather "Paris"']], "end_turn"),
    ("text_before_object", CALL_W + 'Sure: {"city":"Paris"}<|call|>', W, {},
     [["text", 'get_weather Sure: {"city":"Paris"}']], "end_turn"),
    # Two calls, the first no object: its text block in its place, the second still a call.
    ("one_of_two", CALL_W + '"Paris"<|end|><|start|>assistant' + CALL_W + PARIS + "<|call|>", W,
     {}, [["text", 'get_weather "Paris"'], ["tool_use", "get_weather", {"city": "Paris"}]],
     "tool_use"),
]
OUTCOMES = {"cut_short": "invalid_json", "bare_string": "not_object",
            "text_before_object": "invalid_json"}
"""Each call's outcome (contract section 4), counted as on the chat API."""


def send(base_url: str, case: tuple[Any, ...], *, stream: bool) -> dict[str, Any]:
    _, script, tools, options, _, _ = case
    body = messages_body(script, tools, stream=stream, **options)
    return run_messages(base_url, body).outcome()


def expected(case: tuple[Any, ...], vllm_version: str, *, stream: bool) -> dict[str, Any]:
    _, _, _, options, blocks, stop_reason = case
    if options and not stream and finish_reason_bug(vllm_version):
        # vLLM 0.32's chat serving reports a cut call's finish_reason as "tool_calls", not
        # "length" (README, Limits), which its Messages conversion reads as a call's stop.
        stop_reason = "end_turn"
    return {"status": 200, "blocks": blocks, "stop_reason": stop_reason}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("case", WELL_FORMED + NO_OBJECT, ids=lambda c: c[0])
def test_what_the_model_wrote_reaches_the_client(vllm_server: str, vllm_version: str,
                                                 case: tuple[Any, ...], stream: bool) -> None:
    assert send(vllm_server, case, stream=stream) == expected(case, vllm_version, stream=stream)


def test_the_outcome_is_counted_and_logged(vllm_server: str, vllm_server_log: Path) -> None:
    """Each call shown as text was counted by its outcome on ``/metrics``, once per response,
    and its response's log line names it by the id the client got."""
    cases = [c for c in NO_OBJECT if c[0] in OUTCOMES]
    before = scrape(vllm_server)
    ids = {}
    for case in cases:
        for stream in (False, True):
            run = run_messages(vllm_server, messages_body(case[1], case[2], stream=stream,
                                                          **case[3]))
            assert run.status == 200 and run.id, run
            ids[run.id] = OUTCOMES[case[0]]
    moved = increase(before, scrape(vllm_server))
    assert {k: v for k, v in moved.items() if k[0] in (
        "harmony_ext_responses_total", "harmony_ext_tool_calls_total")} == {
        ("harmony_ext_responses_total", ()): 6.0,
        ("harmony_ext_tool_calls_total", (("outcome", "invalid_json"),)): 4.0,
        ("harmony_ext_tool_calls_total", (("outcome", "not_object"),)): 2.0,
    }
    log = vllm_server_log.read_text(errors="replace")
    for response_id, outcome in ids.items():
        line = re.search(rf"harmony-ext: request={re.escape(response_id)} .*", log)
        assert line is not None, response_id
        assert f"calls=get_weather:{outcome}" in line.group(0)


# (id, the error vLLM's own conversion raises): the control.
BUILTIN_ERRORS = {
    "cut_short": "Unterminated string",
    "bare_string": "Input should be a valid dictionary",
    "text_before_object": "Expecting value",
}


@pytest.mark.parametrize("case", [c for c in NO_OBJECT if c[0] in BUILTIN_ERRORS],
                         ids=lambda c: c[0])
def test_with_vllms_built_in_parsers_the_request_fails(builtin_server: str,
                                                       case: tuple[Any, ...]) -> None:
    """The control: the same requests, parsed by vLLM's own gpt-oss parsers and converted
    by vLLM alone, fail with HTTP 400 and the error of ``json.loads`` or of the block's
    model."""
    got = send(builtin_server, case, stream=False)
    assert got["status"] == 400
    assert BUILTIN_ERRORS[case[0]] in got["error"], got
