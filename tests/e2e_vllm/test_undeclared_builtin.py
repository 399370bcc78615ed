"""An undeclared built-in call (``to=browser.search``) on a real vLLM server: one count, the
same one whether the tools were known from the start or arrived late (contract sections 2, 3, 9).

On vLLM the request's tools are always known before the first token, so this is the "known from
the start" half (SGLang's serving chain tests the late one). The request declares only the
weather function; the model calls ``browser.search`` on ``analysis``. Contract 2: a built-in
recipient the request did not declare is no call and not content; contract 3: dropped and
counted. It is counted once, as the recovery ``undeclared_recipient``; it is no function call, so
no outcome of ``harmony_ext_tool_calls_total`` moves (``undeclared`` is the outcome of a call to a
``functions.*`` name the request did not declare). The increments are written out by hand below.
"""

from __future__ import annotations

from typing import Any

import pytest

openai = pytest.importorskip("openai", reason="needs the openai client: use .venv-vllm/bin/pytest")
pytest.importorskip("prometheus_client", reason="comes with vLLM: use .venv-vllm/bin/pytest")

from harmony_ext_testing.vllm_cases import MODEL, ChunkFolder, chat_tools  # noqa: E402
from tests.e2e_vllm.metrics import increase, scrape  # noqa: E402

SEARCH = '<|channel|>analysis to=browser.search<|message|>{"query": "x"}<|call|>'
ONE_RESPONSE = {
    ("harmony_ext_responses_total", ()): 1,
    ("harmony_ext_recoveries_total", (("rule", "undeclared_recipient"),)): 1,
}
"""What one such response adds on ``/metrics``, and nothing else moves."""


def send(client: Any, *, stream: bool) -> dict[str, Any]:
    """The scripted search call, the request declaring only ``get_weather``; id-free outcome."""
    response = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Search for x."}],
        tools=chat_tools(("get_weather",)), stream=stream,
        extra_body={"vllm_xargs": {"script_text": SEARCH}})
    if stream:
        folder = ChunkFolder()
        for chunk in response:
            folder.add(chunk)
        run = folder.result()
        assert run.problems == []
        return run.outcome
    choice = response.choices[0]
    return {"reasoning": getattr(choice.message, "reasoning", None) or None,
            "content": choice.message.content or None,
            "tool_calls": [[c.function.name, c.function.arguments]
                           for c in choice.message.tool_calls or []],
            "finish_reason": choice.finish_reason}


@pytest.mark.parametrize("stream", [False, True], ids=["nonstream", "stream"])
def test_undeclared_builtin_counts_once(openai_client: Any, vllm_server: str,
                                        stream: bool) -> None:
    """Contract 2/3/9: no call, no content; ``undeclared_recipient`` moves by one per response,
    ``harmony_ext_tool_calls_total`` not at all."""
    before = scrape(vllm_server)
    outcome = send(openai_client, stream=stream)
    moved = increase(before, scrape(vllm_server))
    assert outcome == {"reasoning": None, "content": None, "tool_calls": [],
                       "finish_reason": "stop"}
    assert [key for key in moved if key[0] == "harmony_ext_tool_calls_total"] == []
    assert moved == ONE_RESPONSE


def test_undeclared_builtin_counts_once_per_response(openai_client: Any,
                                                     vllm_server: str) -> None:
    """Three responses, streamed and not mixed, move the rule by exactly three."""
    before = scrape(vllm_server)
    for stream in (False, True, False):
        send(openai_client, stream=stream)
    assert increase(before, scrape(vllm_server)) == {k: 3 * v for k, v in ONE_RESPONSE.items()}
