"""The Responses API and the server's log on a real vLLM server (harmony-ext selected).

Malformed model output never becomes an HTTP error (contract section 6): a few hundred
fuzzed outputs, each sent streamed and not, all answer 200 and end ``completed`` (or, where
nothing at all is left to show, vLLM's own ``incomplete`` for an empty output). And every
log line the plugin promises reaches vLLM's own log, where an operator reads it.
"""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai", reason="needs the openai client: use .venv-vllm/bin/pytest")

from harmony_ext_testing.client import WEATHER  # noqa: E402
from harmony_ext_testing.vllm_cases import CALL_W, MESSAGES, MODEL, PARIS  # noqa: E402
from tests.data import responses_tool, variant  # noqa: E402

TOOLS = [responses_tool(WEATHER)]
WORDS = ["alpha", "Beta", "gamma 42", "Ω", "x y z", "{", "}", "\"q\"", "to=functions.x"]
CHANNELS = ["analysis", "final", "commentary", "comment", "foo", "\u03a9", "finalx", "", "ary"]
PIECES = [
    "<|channel|>{ch}<|message|>{t}<|end|>",
    "<|channel|>{ch}<|message|>{t}",
    "<|channel|>final<|message|>{t}<|return|>",
    CALL_W + PARIS + "<|call|>",
    CALL_W + '{"city":"{t}"}]<|call|>',
    "<|channel|>analysis to=browser.search<|message|>{t}<|call|>",
    "<|channel|>{ch} to=functions.get_weather json<|message|>{t}<|end|>",
    "{t}<|end|>",
    "<|channel|>final {t}<|end|>",
    "<|channel|>final<|constrain|>{t}<|return|>",
    "<|start|>assistant", "<|start|>", "<|message|>", "<|constrain|>", "<|end|>",
    "<|channel|>", "<|reserved_200017|>", "<|call|>", "to= ",
    "<|start|>user<|message|>{t}",
    "{t}",
]


def fuzzed_outputs(n: int, seed: int = 20261202) -> list[str]:
    """``n`` model outputs put together from well-formed and broken pieces (seeded): each
    piece's ``{ch}`` is a channel name, its ``{t}`` some words."""
    rnd = random.Random(seed)
    outputs = []
    for _ in range(n):
        parts = []
        for _ in range(rnd.randint(1, 6)):
            piece = rnd.choice(PIECES).replace("{ch}", rnd.choice(CHANNELS)).replace(
                "{t}", rnd.choice(WORDS))
            if parts and rnd.random() < 0.5:
                piece = "<|start|>assistant" + piece
            parts.append(piece)
        text = "".join(parts)
        if rnd.random() < 0.3:
            text = text[: rnd.randint(1, len(text))]
        outputs.append(text)
    return outputs


async def _one(client: Any, script: str, stream: bool) -> tuple[str, int] | str:
    """(status, output items) of one Responses request, or what went wrong (an HTTP error,
    a stream without its final event)."""
    kwargs = {"model": MODEL, "input": MESSAGES[0]["content"], "tools": TOOLS,
              "stream": stream, "extra_body": {"vllm_xargs": {"script_text": script}}}
    try:
        response = await client.responses.create(**kwargs)
        if not stream:
            return response.status, len(response.output)
        last = None
        async for event in response:
            last = event
        if last is None or last.type not in ("response.completed", "response.incomplete"):
            return f"stream ended with {getattr(last, 'type', None)}"
        return last.response.status, len(last.response.output)
    except openai.APIError as e:
        return f"{type(e).__name__}: {e}"


async def _shows(client: Any, script: str) -> bool:
    """Whether chat completions show anything for this output (reasoning, content, calls)."""
    response = await client.chat.completions.create(
        model=MODEL, messages=MESSAGES, tools=[WEATHER],
        extra_body={"vllm_xargs": {"script_text": script}})
    message = response.choices[0].message
    return bool(getattr(message, "reasoning", None) or message.content or message.tool_calls)


def test_fuzzed_outputs_never_fail_a_responses_request(vllm_server: str) -> None:
    """Every request answers 200 and completes. The one exception is vLLM's own: a response
    with no output item at all (the whole output was dropped by the contract's rules, e.g. a
    forged turn) is ``incomplete``; chat completions then show nothing either."""
    scripts = fuzzed_outputs(250)

    async def main() -> tuple[list[tuple[str, bool, Any]], dict[str, bool]]:
        client = openai.AsyncOpenAI(base_url=f"{vllm_server}/v1", api_key="unused",
                                    max_retries=0, timeout=300)
        gate = asyncio.Semaphore(16)

        async def run(script: str, stream: bool) -> tuple[str, bool, Any]:
            async with gate:
                return script, stream, await _one(client, script, stream)

        async def shows(script: str) -> tuple[str, bool]:
            async with gate:
                return script, await _shows(client, script)

        async with client:
            results = list(await asyncio.gather(
                *(run(s, stream) for s in scripts for stream in (False, True))))
            empty = {s for s, _, r in results if r == ("incomplete", 0)}
            return results, dict(await asyncio.gather(*(shows(s) for s in sorted(empty))))

    results, empty_shows = asyncio.run(main())
    assert len(results) == 500
    failed = [(script, stream, got) for script, stream, got in results
              if got != ("incomplete", 0) and (isinstance(got, str) or got[0] != "completed")]
    assert failed == []
    assert [s for s, shown in empty_shows.items() if shown] == []  # empty in chat too
    assert len(empty_shows) < len(scripts) // 2  # most fuzzed outputs do show something


def _wait_for(log: Path, needle: str, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if needle in log.read_text(errors="replace"):
            return True
        time.sleep(0.5)
    return False


def test_promised_log_lines_reach_the_server_log(openai_client: Any,
                                                 vllm_server_log: Path) -> None:
    """The plugin's start-up line, a response's line (naming the response's id, each rule and
    each call) and the unchecked-schema warning are in vLLM's own log (a line logged where
    vLLM's logging does not show it is lost)."""
    assert _wait_for(vllm_server_log, "harmony-ext: registered tool and reasoning parser")
    # A declared schema jsonschema cannot apply: the call is counted, and the log says so.
    bogus = [variant(None, {"type": "bogus"})]
    response = openai_client.chat.completions.create(
        model=MODEL, messages=MESSAGES, tools=bogus,
        extra_body={"vllm_xargs": {"script_text": CALL_W + PARIS + "]<|call|>"}})
    assert response.choices[0].message.tool_calls[0].function.arguments == PARIS
    assert _wait_for(vllm_server_log, "a tool declares parameters that could not be checked")
    assert _wait_for(vllm_server_log, f"harmony-ext: request={response.id} "
                     "rules=after_json_value(get_weather) calls=get_weather:unchecked\n")
    # A header written as prose in the answer: flagged, with its excerpt.
    response = openai_client.chat.completions.create(
        model=MODEL, messages=MESSAGES, extra_body={"vllm_xargs": {"script_text": (
            "<|channel|>final<|message|>Now commentary to=functions.get_weather json "
            "please.<|return|>")}})
    assert _wait_for(vllm_server_log, f"harmony-ext: request={response.id} leaks=1 first=")
