"""harmony-ext inside a real vLLM server, end to end, with the real ``openai`` client.

The server runs our parser (``--tool-call-parser harmony-ext --reasoning-parser
harmony-ext``, the defaults of ``scripts/vllm_tiny_server.sh``). Every case of ``cases.py``
goes through it, streamed and not; harmony-ext must give exactly what the contract says.
What vLLM's built-in gpt-oss parsing (``openai`` / ``openai_gptoss``) makes of the same
cases is recorded, not judged, by the page generator ``bash pages/run.sh vllm-comparison``
(pages/vllm_comparison.py, which writes ``docs/vllm-comparison.md``).

Several tokens per streamed delta: vLLM's ``--stream-interval`` is also a per-request
field (``stream_interval``, raised to at least the server's), so it is exercised on the
same server instead of a third one.

Run: ``.venv-vllm/bin/pytest tests/e2e_vllm -q``.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.register_assert_rewrite("harmony_ext_testing.vllm_cases")
openai = pytest.importorskip("openai", reason="needs the openai client: use .venv-vllm/bin/pytest")

from harmony_ext_testing.vllm_cases import (  # noqa: E402
    CASES,
    CASES_BY_ID,
    RESPONSES_CASES,
    Case,
    check_chat,
    check_concurrent,
    check_responses,
    check_stream_interval,
    finish_reason_bug,
    run_chat,
    run_concurrent,
    run_responses,
)


def case_ids(cases: list[Case]) -> list[str]:
    return [c.id for c in cases]


@pytest.fixture(scope="module")
def client(openai_client: Any) -> Any:
    """The harmony-ext server's client (the shared session server)."""
    return openai_client


# ------------------------------------------------------------------- harmony-ext: chat

@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_chat(client: Any, vllm_version: str, case: Case) -> None:
    """Non-streamed and streamed chat give the contract's view; the deltas add up."""
    whole = run_chat(client, case, stream=False)
    streamed = run_chat(client, case, stream=True)
    check_chat(case, whole, streamed, vllm_version)


def test_truncated_call_nonstream_finish_is_length(client: Any, vllm_version: str,
                                                   request: pytest.FixtureRequest) -> None:
    if finish_reason_bug(vllm_version):
        request.applymarker(pytest.mark.xfail(
            strict=True, reason=f"vLLM {vllm_version}'s chat serving (not the parser) reports "
            "finish_reason 'tool_calls' whenever the parser returns a call, even when the "
            "engine stopped at max_tokens; the contract wants 'length' (fixed in vLLM 0.33)"))
    case = CASES_BY_ID["truncated_args"]
    assert run_chat(client, case, stream=False).outcome["finish_reason"] == "length"


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_stream_interval_4(client: Any, case: Case) -> None:
    """Several tokens per delta (stream_interval 4) change nothing."""
    run = run_chat(client, case, stream=True, stream_interval=4, return_token_ids=True)
    check_stream_interval(case, run)


def test_concurrent_streams(vllm_server: str) -> None:
    """32 streaming requests at once (every case, round robin), each exactly right."""
    cases = [CASES[i % len(CASES)] for i in range(32)]
    check_concurrent(cases, run_concurrent(vllm_server, cases))


def test_tool_choice_required_grammar_still_applies(client: Any) -> None:
    """vLLM's structural tag for tool_choice required is kept: a final answer cannot pass.

    The script forces a final answer, which the grammar forbids; on the CPU server the
    engine then terminates the request (HTTP 500, or an error event mid-stream). The
    server must survive it.
    """
    case = Case("forbidden", "final answer under tool_choice required",
                CASES_BY_ID["reasoning_final"].script, tools=("get_weather",),
                request={"tool_choice": "required"})
    assert run_chat(client, case, stream=False).outcome == {"error": "HTTP 500"}
    assert "error" in run_chat(client, case, stream=True).outcome
    assert run_chat(client, CASES[0], stream=False).outcome == CASES[0].expected()


# -------------------------------------------------------------- harmony-ext: Responses

@pytest.mark.parametrize("case", RESPONSES_CASES, ids=case_ids(RESPONSES_CASES))
def test_responses(client: Any, case: Case) -> None:
    """The Responses API: reasoning, message and function_call items, streamed and not."""
    whole = run_responses(client, case, stream=False)
    streamed = run_responses(client, case, stream=True)
    check_responses(case, whole, streamed)
